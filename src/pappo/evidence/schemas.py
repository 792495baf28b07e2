"""JSON Schemas generated from the pydantic contracts; committed under schemas/, drift-tested."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from pappo.config import Params
from pappo.evidence.audit import AuditVerdict
from pappo.evidence.reproduce_compare import Reproduction
from pappo.evidence.summary_models import Summary
from pappo.experiment.receipt import Receipt
from pappo.experiment.report import RunReport
from pappo.io import atomic_write_text
from pappo.policy.checkpoint import CheckpointRecord
from pappo.tasks.models import ManifestLock, Task

CONTRACTS: dict[str, type[BaseModel]] = {
    "params": Params,
    "task": Task,
    "manifest_lock": ManifestLock,
    "checkpoint": CheckpointRecord,
    "run_report": RunReport,
    "receipt": Receipt,
    "summary": Summary,
    "audit_verdict": AuditVerdict,
    "reproduction": Reproduction,
}


def render(model: type[BaseModel]) -> str:
    schema = model.model_json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def export(folder: Path) -> list[Path]:
    written = []
    for name, model in CONTRACTS.items():
        path = Path(folder) / f"{name}.schema.json"
        atomic_write_text(path, render(model))
        written.append(path)
    return written


def drift(folder: Path) -> list[str]:
    """Names of the schemas whose committed file differs from the models (or is missing)."""
    out = []
    for name, model in CONTRACTS.items():
        path = Path(folder) / f"{name}.schema.json"
        if not path.exists() or path.read_text() != render(model):
            out.append(str(path))
    return out

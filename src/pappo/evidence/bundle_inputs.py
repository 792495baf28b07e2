"""The shapes of the files a bundle's audit parses, checked once when they are loaded.

A bundle's files are whatever its author wrote (SHA256SUMS, dvc.lock and the receipts recomputed):
a list where an object belongs, a string for a stage, an out without a path. The audit's checks
read them as the pipeline wrote them, so each file is first checked to have that shape; one that
has not is an integrity failure naming the file and the field, and the audit judges nothing more
(rather than a traceback from deep inside a check). Only what the checks index is constrained:
every model here allows fields it does not name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from pappo.evidence.bundle_read import SOURCE
from pappo.evidence.committed import YAML_LOADER


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class AuditBlock(_Open):
    verdicts: dict[str, str] | None = None
    claims: dict[str, bool] | None = None


class BundleMeta(_Open):
    """BUNDLE.json as the checks read it."""

    commit: str | None = None
    audit: AuditBlock | None = None


class LockOut(_Open):
    path: str
    md5: str | None = None


class LockStage(_Open):
    outs: list[LockOut] = []
    params: dict[str, dict[str, Any]] = {}


class LockFile(_Open):
    stages: dict[str, LockStage] = {}


class DvcYaml(_Open):
    stages: dict[str, dict[str, Any]]


class BaseMode(_Open):
    episodes: list[dict[str, Any]] = []
    success_rate: float | None = None


class BaseEval(_Open):
    greedy: BaseMode | None = None
    sampled: BaseMode | None = None
    n_tasks: int | None = None
    split_seed: int | None = None


class BaseReport(_Open):
    checkpoint: dict[str, Any] | None = None
    profile: str | None = None
    eval: BaseEval | None = None


class JsonObject(_Open):
    pass


def _shapes() -> dict[str, type[BaseModel]]:
    from pappo.evidence.history import History
    from pappo.policy.checkpoint import CheckpointRecord
    from pappo.tasks.models import ManifestLock

    return {
        "BUNDLE.json": BundleMeta,
        "dvc.lock": LockFile,
        f"{SOURCE}dvc.yaml": DvcYaml,
        "data/repofix/manifest.lock.json": ManifestLock,
        "models/base/checkpoint.json": CheckpointRecord,
        "reports/base_model.json": BaseReport,
        "reports/summary.json": JsonObject,
        "history.json": History,
    }


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(map(str, err["loc"])) or "(top)"
    return f"{where}: {err['msg']}"


def shape_problem(name: str, data: bytes, model: type[BaseModel]) -> str | None:
    """Why `data` (the file `name`, JSON or YAML by its suffix) is not `model`'s shape; None if it is."""
    try:
        value = yaml.load(data, Loader=YAML_LOADER) if name.endswith((".yaml", ".lock")) else json.loads(data)
        model.model_validate(value)
    except (ValueError, yaml.YAMLError) as e:
        what = _first_error(e) if isinstance(e, ValidationError) else str(e).splitlines()[0]
        return f"not the shape the pipeline writes ({what})"
    return None


def schema_problem(data: bytes) -> str | None:
    """Why `data` is not a JSON Schema the audit can validate with; None if it is."""
    try:
        schema = json.loads(data)
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except (ValueError, jsonschema.SchemaError) as e:
        return f"not a valid JSON Schema ({str(e).splitlines()[0]})"
    except (TypeError, AttributeError):
        return "not a valid JSON Schema (not an object)"
    return None


def input_problems(folder: Path) -> list[tuple[str, str]]:
    """(file, why) of every audit input of the unpacked bundle at `folder` not of its shape; a
    missing one is left to the caller (bundle.missing_inputs)."""
    folder = Path(folder)
    problems = []
    for name, model in _shapes().items():
        path = folder / name
        if path.is_file() and (why := shape_problem(name, path.read_bytes(), model)):
            problems.append((name, why))
    for path in sorted((folder / SOURCE / "schemas").glob("*.schema.json")):
        if why := schema_problem(path.read_bytes()):
            problems.append((path.relative_to(folder).as_posix(), why))
    return problems

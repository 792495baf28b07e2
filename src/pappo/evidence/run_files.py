"""The audit's first look at a run: its report and receipt present, valid and bound to each other.

Each file is checked against its pydantic model and its JSON Schema (schemas/), then the pair
against the run they claim to be, the receipt's output hashes and its sanitising; the integrity
checks of audit.py read only runs that got through here.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
from pydantic import ValidationError

from pappo.evidence.audit_context import AuditContext
from pappo.experiment import privacy
from pappo.experiment import receipt as rc
from pappo.experiment.report import RunReport, run_stage


def _validator(path: Path) -> Any:
    """A validator for the schema file at `path` (as jsonschema.validate picks it, the schema checked)."""
    return _checked_validator(path.read_text())


@functools.lru_cache(maxsize=8)
def _checked_validator(text: str) -> Any:
    # cached by content: jsonschema.validate re-checks the schema on every call (4 of 13 s of an audit)
    schema = json.loads(text)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def load_run(ctx: AuditContext, seed: int, method: str) -> tuple[RunReport, rc.Receipt] | None:
    """Report and receipt of one run: present, valid (pydantic and JSON Schema), bound to each other."""
    run = ctx.runs / f"seed_{seed}" / method
    loaded: list[Any] = []
    for name, model, schema in (
        ("report.json", RunReport, "run_report"),
        ("receipt.json", rc.Receipt, "receipt"),
    ):
        path = run / name
        if not path.is_file():
            ctx.fail(path, "-", "a file", "missing", f"run `dvc repro {run_stage(seed, method)}`")
            return None
        try:
            data = json.loads(path.read_text())
        except ValueError as e:
            ctx.fail(path, "-", "JSON", "unreadable", f"not JSON: {e}")
            return None
        version = data.get("schema_version") if isinstance(data, dict) else None
        if version != 1:
            ctx.fail(
                path,
                "schema_version",
                1,
                version,
                "written by another version of pappo; regenerate it (dvc repro)",
            )
            return None
        try:
            error = jsonschema.exceptions.best_match(
                _validator(ctx.schemas / f"{schema}.schema.json").iter_errors(data)
            )
            if error is not None:
                raise error
            loaded.append(model.model_validate(data))
        except (jsonschema.ValidationError, ValidationError) as e:
            ctx.fail(
                path, "-", f"valid against schemas/{schema}.schema.json", "invalid", str(e).splitlines()[0]
            )
            return None
    report, receipt = loaded
    for where, obj in (("report.json", report), ("receipt.json", receipt)):
        if (obj.seed, obj.method) != (seed, method):
            ctx.fail(
                run / where,
                "seed/method",
                f"{seed}/{method}",
                f"{obj.seed}/{obj.method}",
                "the file belongs to another run (moved or swapped)",
            )
    for problem in rc.verify_receipt(run, receipt):
        ctx.fail(run / "receipt.json", "outputs", "hashes as recorded", "different", problem)
    for leak in privacy.leaks(receipt):
        ctx.fail(run / "receipt.json", "-", "sanitised", "leak", leak)
    return report, receipt

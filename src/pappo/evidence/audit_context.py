"""What the audit's checks share: the params, the paths, and the failures found so far.

Apart from audit.py so that the checks kept in modules of their own (numerics_audit.py,
run_files.py) record their failures the same way without importing the audit that calls them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from pappo.config import Params


class AuditFailure(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file: str
    field: str
    expected: str
    found: str
    message: str


class AuditContext:
    """What the checks share: params, paths, the failures found so far."""

    def __init__(self, params: Params, root: Path, runs: Path, base_dir: Path, schemas: Path) -> None:
        self.params, self.root, self.runs, self.base_dir, self.schemas = params, root, runs, base_dir, schemas
        self.failures: list[AuditFailure] = []

    def fail(self, file: Path | str, field: str, expected: Any, found: Any, message: str) -> None:
        rel = Path(file)
        rel_s = (
            rel.relative_to(self.root).as_posix()
            if rel.is_absolute() and rel.is_relative_to(self.root)
            else str(file)
        )
        self.failures.append(
            AuditFailure(file=rel_s, field=field, expected=str(expected), found=str(found), message=message)
        )

"""What every params section shares: the base model (unknown keys and changes refused) and the
merge and error formatting used where sections are read."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def deep_merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def format_errors(e: ValidationError, prefix: str = "") -> str:
    lines = []
    for err in e.errors():
        where = ".".join(str(p) for p in err["loc"]) or "<root>"
        lines.append(f"  - {prefix}{where}: {err['msg']}")
    return "\n".join(lines)

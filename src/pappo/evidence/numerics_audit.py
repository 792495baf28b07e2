"""Whether the evidence's results can be compared bit for bit: the numerics each one computed with.

The base model and every run record the CPU numerics they ran with (src/pappo/numerics.py); the
audit groups them, and results of different numerics are reported as not bitwise comparable
rather than compared bit for bit.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pappo.evidence.audit_context import AuditContext
from pappo.experiment import receipt as rc
from pappo.numerics import Comparison, NumericsInfo, comparison


class NumericsGroup(BaseModel):
    model_config = ConfigDict(extra="forbid")
    numerics: NumericsInfo
    members: list[str] = Field(
        description="Runs ('seed_0/ppo') and 'base_model' that computed with these numerics."
    )


class NumericsVerdict(BaseModel):
    """Whether the evidence's results can be compared bit for bit with each other (one numerics)."""

    model_config = ConfigDict(extra="forbid")
    comparison: Comparison
    groups: list[NumericsGroup] = Field(description="One per distinct numerics (src/pappo/numerics.py key).")
    reason: str


def numerics_verdict(
    ctx: AuditContext, receipts: dict[tuple[int, str], rc.Receipt]
) -> NumericsVerdict | None:
    """Group the base model and the runs by the numerics they computed with. Results made with
    different numerics are reported as not bitwise comparable, never compared bit for bit."""
    found: list[tuple[str, NumericsInfo]] = [
        (f"seed_{s}/{m}", r.determinism.numerics) for (s, m), r in sorted(receipts.items())
    ]
    base_report = ctx.root / "reports" / "base_model.json"
    try:
        found.insert(
            0, ("base_model", NumericsInfo.model_validate(json.loads(base_report.read_text())["numerics"]))
        )
    except (OSError, ValueError, KeyError, TypeError, ValidationError):
        ctx.fail(
            base_report,
            "numerics",
            "the base model's numerics",
            "missing or invalid",
            "rerun dvc repro base_model",
        )
    if not found:
        return None
    groups: dict[tuple[Any, ...], NumericsGroup] = {}
    for member, info in found:
        groups.setdefault(info.key(), NumericsGroup(numerics=info, members=[])).members.append(member)
    first = next(iter(groups.values()))
    if len(groups) == 1:
        pin = "pinned" if all(i.pinned for _, i in found) else "not pinned (the machine chose the kernels)"
        return NumericsVerdict(
            comparison="bitwise",
            groups=[first],
            reason=f"all {len(found)} computed with one numerics, {pin}: {first.numerics.describe()}",
        )
    other = next(g for g in groups.values() if g is not first)
    _, why = comparison(first.numerics, other.numerics)
    return NumericsVerdict(
        comparison="not bitwise comparable",
        groups=list(groups.values()),
        reason=f"{len(groups)} different numerics ({first.members[0]} vs {other.members[0]}: {why})",
    )

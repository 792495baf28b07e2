"""What the tuning history (history.py) says about one claim: exploratory or not, and why."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pappo.config.evidence import ClaimParams
from pappo.evidence.history import BAR_FIELDS, TRAINED, History, LateClaim, bar_of, compared
from pappo.evidence.history_seeds import describe


def claim_history(
    history: History, claim: ClaimParams, baseline: str, seeds: Sequence[int]
) -> tuple[bool, str]:
    """(exploratory, what the history says) for one claim on `seeds`."""
    if not history.readable:
        return False, history.reason
    # every baseline a best_non_ppo claim could have resolved to: one tuned and not picked (a
    # sandbagged grpo, say) shaped the choice as much as the one picked (review F3)
    methods = [m for m in sorted(compared(bar_of(claim)) | {claim.method, baseline}) if m in TRAINED]
    counts = {s: max((history.configurations.get(f"{s}/{m}", 0) for m in methods), default=0) for s in seeds}
    edit = next((e for e in history.edits if e.claim == claim.id), None)
    said = f"configurations in history per seed: {', '.join(f'seed {s}: {n}' for s, n in counts.items())}"
    tuned = [s for s, n in counts.items() if n > 1]
    parts, exploratory = [said], False
    if tuned:
        exploratory = True
        parts.append(
            f"{max(counts.values())} configurations were evaluated on seeds {', '.join(map(str, tuned))}"
        )
    late = next((e for e in history.late if e.claim == claim.id), None)
    if late is not None:
        exploratory = True
        parts.append(_late(late))
    if edit is not None:
        exploratory = True
        parts.append(
            f"bar edited after run reports of its seeds were committed ({_at(edit.commit)}): "
            f"registered {_show(edit.registered)}, now {_show(edit.now)}"
        )
    if history.seed_changes:
        exploratory = True
        parts.extend(describe(c) for c in history.seed_changes)
    if history.removed:
        exploratory = True
        parts.append(
            f"claims removed after their evidence existed: {', '.join(history.removed)} (the family "
            "judged together, and so each claim's Holm adjustment, was made smaller after results)"
        )
    return exploratory, "; ".join(parts)


def _at(commit: str) -> str:
    return f"at {commit[:12]}" if commit else "in the params audited, not committed"


def _late(late: LateClaim) -> str:
    if late.commit and late.commit == late.evidence:
        said = (
            f"registered at {late.commit[:12]}, in the commit that brought the first run reports of its seeds"
        )
    else:
        where = f"at {late.commit[:12]}" if late.commit else "in no commit"
        first = f"at {late.evidence[:12]}" if late.evidence else "in the workspace's dvc.lock"
        said = f"registered {where}, after run reports of its seeds (the first {first})"
    return said + (f"; that commit removed {', '.join(late.dropped)}" if late.dropped else "")


def _show(bar: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {bar[k]}" for k in BAR_FIELDS if k in bar) + "}"

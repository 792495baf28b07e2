"""The published seeds list through params.yaml's versions (`git log -- params.yaml`), for history.py.

A change of the list is post hoc when a seed of the new list already had a run report committed:
adding seeds one at a time until a claim holds, or dropping the worst one, picks seeds after seeing
their runs (under a null, false positives 0.024 -> 0.046 and 0.090). A move to seeds none of which
ran yet (tuning seeds 0-2 to fresh seeds 100-106) is a fresh start. A run report committed in the
same commit as the change does not count as seen before it: those runs follow from the new list.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# The run stages of dvc.yaml that write a run report for one seed
RUN_STAGE = re.compile(r"^(?:train@(-?\d+)-[a-z_]+|base_run@(-?\d+))$")


class SeedChange(BaseModel):
    """A change of the published seeds list made when some seeds of the new list had run reports."""

    model_config = ConfigDict(extra="forbid")
    commit: str = Field(description="The commit that changed it ('': the params audited, not committed).")
    before: list[int] = Field(description="The list before the change (empty: none was published).")
    after: list[int] = Field(description="The list after the change.")
    seen: list[int] = Field(description="Seeds of the new list whose run reports were committed before it.")


class SeedLists:
    """Follows the published seeds list; `changes` holds the post-hoc changes since the list was last
    set to seeds none of which had run (empty: the list in force was chosen before its seeds ran)."""

    def __init__(self) -> None:
        self.ran: dict[int, str] = {}  # seed -> the commit of its first run report (any method)
        self.now: list[int] | None = None
        self.changes: list[SeedChange] = []

    def see_lock(self, commit: str, stages: dict[str, Any]) -> None:
        for name, stage in stages.items():
            found = RUN_STAGE.match(name)
            if found and isinstance(stage, dict) and stage.get("outs"):
                self.ran.setdefault(int(found.group(1) or found.group(2)), commit)

    def see_params(self, commit: str, seeds: Sequence[int] | None) -> None:
        """A params.yaml version's seeds (None: it has no readable list), before that commit's runs."""
        if seeds is None or sorted(set(seeds)) == self.now:
            return
        after = sorted(set(seeds))
        seen = [s for s in after if s in self.ran]
        if seen:
            self.changes.append(SeedChange(commit=commit, before=self.now or [], after=after, seen=seen))
        else:
            self.changes = []  # fresh seeds: what was chosen on seen runs is no longer judged
        self.now = after


def published_seeds(data: dict[str, Any]) -> list[int] | None:
    """params.yaml's published seeds (None: absent or not a list of integers)."""
    seeds = data.get("seeds")
    if isinstance(seeds, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        return sorted(set(seeds))
    return None


def describe(change: SeedChange) -> str:
    where = f"at {change.commit[:12]}" if change.commit else "in the params audited (not committed)"
    return (
        f"published seeds changed {where} from {change.before} to {change.after} when seeds "
        f"{', '.join(map(str, change.seen))} already had run reports"
    )

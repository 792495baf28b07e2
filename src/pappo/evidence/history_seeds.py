"""The published seeds list through params.yaml's versions (every commit, history_walk.py), for history.py.

A change of the list is post hoc when a seed of the new list already had a run report committed:
adding seeds one at a time until a claim holds, or dropping the worst one, picks seeds after seeing
their runs (under a null, false positives 0.024 -> 0.046 and 0.090). It is post hoc too when the new
list keeps seeds of a registered (committed) one: runs are made before their reports are committed,
so a registered seed may have been run and looked at, and the worst one dropped, with the reports
committed only with the new list (a review did so). A move to seeds none of which ran yet and none
of which the old list held (tuning seeds 0-2 to fresh seeds 100-106) is a fresh start.

On the commit graph a commit changes the list against each parent whose list differs, and what was
seen is what that parent and its ancestors had run: a merge that takes a branch's list (made on a
branch off a commit before the runs, whatever its date) changes main's list after main's runs, and
a merge that keeps main's list changes nothing, though the branch it joins carried an older list.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pappo.evidence.history_walk import Version

# The run stages of dvc.yaml that write a run report for one seed: `train@<seed>`, and in locks
# before 2026-12-07 `train@<seed>-<method>` and `base_run@<seed>`
RUN_STAGE = re.compile(r"^(?:train@(-?\d+)(?:-[a-z_]+)?|base_run@(-?\d+))$")


class SeedChange(BaseModel):
    """A change of the published seeds list made when some seeds of the new list had run reports."""

    model_config = ConfigDict(extra="forbid")
    commit: str = Field(description="The commit that changed it ('': the params audited, not committed).")
    before: list[int] = Field(description="The list before the change (empty: none was published).")
    after: list[int] = Field(description="The list after the change.")
    seen: list[int] = Field(description="Seeds of the new list whose run reports were committed before it.")
    kept: list[int] = Field(
        default_factory=list,
        description="Seeds of the new list that the registered list before it held (absent from older records).",
    )


def seed_changes(versions: Sequence[Version], ran: dict[str, frozenset[int]]) -> list[SeedChange]:
    """The post-hoc changes of the published seeds list in force at the last version (the params
    audited) since it was last set to seeds none of which had run; `ran`: per version, the seeds
    with run reports in it or its ancestors."""
    lists: dict[str, list[int] | None] = {}
    changes: dict[str, list[SeedChange]] = {}
    for v in versions:
        seeds = v.params["seeds"] if v.params is not None else None
        if seeds is None:  # no readable list: the first parent's stays in force
            seeds = lists.get(v.parents[0]) if v.parents else None
        lists[v.commit], found = seeds, {}
        for p in v.parents:
            for c in _against(v.commit, seeds, lists.get(p), changes.get(p, []), ran.get(p, frozenset())):
                found.setdefault((c.commit, tuple(c.before)), c)
        changes[v.commit] = list(found.values())
    order = {v.commit: i for i, v in enumerate(versions)}
    return sorted(changes[versions[-1].commit], key=lambda c: order[c.commit]) if versions else []


def _against(
    commit: str,
    seeds: list[int] | None,
    before: list[int] | None,
    kept: list[SeedChange],
    ran: frozenset[int],
) -> list[SeedChange]:
    """The post-hoc changes in force at `commit` through one parent (list `before`, changes `kept`,
    seeds `ran` by it and its ancestors): the parent's when the list is the same; with this change
    added when seeds of the new list ran there; none after a fresh start."""
    if seeds is None or seeds == before:
        return kept
    seen = [s for s in seeds if s in ran]
    held = [s for s in seeds if s in (before or [])]
    if not (seen or held):
        return []
    return [*kept, SeedChange(commit=commit, before=before or [], after=seeds, seen=seen, kept=held)]


def ran_seeds(stages: dict[str, Any]) -> frozenset[int]:
    """The seeds with a run report in a dvc.lock's stages (any method)."""
    found = (
        RUN_STAGE.match(name)
        for name, stage in stages.items()
        if isinstance(stage, dict) and stage.get("outs")
    )
    return frozenset(int(m.group(1) or m.group(2)) for m in found if m)


def published_seeds(data: dict[str, Any]) -> list[int] | None:
    """params.yaml's published seeds (None: absent or not a list of integers)."""
    seeds = data.get("seeds")
    if isinstance(seeds, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        return sorted(set(seeds))
    return None


def describe(change: SeedChange) -> str:
    where = f"at {change.commit[:12]}" if change.commit else "in the params audited (not committed)"
    if change.seen:
        why = f"when seeds {', '.join(map(str, change.seen))} already had run reports"
    else:  # kept from a registered list: they may have run before their reports were committed
        why = (
            f"keeping seeds {', '.join(map(str, change.kept))} of the registered list (they may have "
            "run before their reports were committed; new seeds must be fresh ones)"
        )
    return f"published seeds changed {where} from {change.before} to {change.after} {why}"

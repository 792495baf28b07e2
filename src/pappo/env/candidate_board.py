"""The candidates action mode: k numbered candidate edits over the buggy tree, one applied at a time.

An episode shows the fix and the first k-1 wrong edits of the task (`tasks/candidates.py`) in an
order shuffled by the episode seed (the same seed gives the same order). The tree is always the
buggy tree or the buggy tree with exactly one candidate applied:

- `apply(id)` applies candidate `id`. It is a failed edit (the tree is unchanged) when `id` is not
  a shown candidate or when another candidate is applied: revert it first (no auto-revert, so
  trying the next edit costs a revert turn and a careless apply is a `failed_edit` event).
- `revert()` restores the buggy tree; with nothing applied it is a failed edit.
- `view(id)` shows the current code around candidate `id` (a bad id is an error text, not an edit).
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from pappo.env.tools import EditResult, Workspace
from pappo.tasks.candidates import CandidateEdit, TaskCandidates

VIEW_CONTEXT = 3  # lines shown either side of a candidate's lines


def shuffled(n: int, instance_id: str, seed: int) -> list[int]:
    """Indices 0..n-1 in the episode's order (string-seeded: the same in every process)."""
    order = list(range(n))
    random.Random(f"candidates:{instance_id}:{seed}").shuffle(order)
    return order


class CandidateBoard:
    """The shown candidates of one episode and which one (if any) is applied."""

    def __init__(self, candidates: TaskCandidates, k: int, seed: int, buggy: Mapping[str, bytes]) -> None:
        shown = candidates.shown(k)
        order = shuffled(len(shown), candidates.instance_id, seed)
        self.edits: list[CandidateEdit] = [shown[i] for i in order]  # id j is edits[j - 1]
        self.correct_id = order.index(0) + 1  # for oracles and tests; never shown
        self.applied: int | None = None
        self._buggy = dict(buggy)

    def __len__(self) -> int:
        return len(self.edits)

    def listing(self) -> str:
        return "\n".join(render(i, e) for i, e in enumerate(self.edits, 1))

    def apply(self, ws: Workspace, id: int) -> EditResult:
        problem = self._bad_id(id)
        if problem:
            return EditResult(False, problem)
        if self.applied is not None:
            return EditResult(
                False, f"Error: [{self.applied}] is applied; revert it before applying another."
            )
        ws.files = self.edits[id - 1].apply(self._buggy)
        self.applied = id
        return EditResult(True, f"Applied [{id}].")

    def revert(self, ws: Workspace) -> EditResult:
        if self.applied is None:
            return EditResult(False, "Error: no candidate is applied; nothing to revert.")
        id, self.applied = self.applied, None
        ws.files = dict(self._buggy)
        return EditResult(True, f"Reverted [{id}].")

    def view(self, ws: Workspace, id: int) -> str:
        problem = self._bad_id(id)
        if problem:
            return problem
        e = self.edits[id - 1]
        span = len(e.after) if self.applied == id else len(e.before)
        start = max(1, e.line - VIEW_CONTEXT)
        return ws.view(e.path, start, e.line + max(span, 1) - 1 + VIEW_CONTEXT)

    def _bad_id(self, id: int) -> str | None:
        if 1 <= id <= len(self.edits):
            return None
        return f"Error: no candidate [{id}]; the candidates are [1] to [{len(self.edits)}]."


def render(i: int, edit: CandidateEdit) -> str:
    """`[i] path:line  - before  + after` (one line), or one line per changed line when more than one."""
    lines = [*edit.before, *edit.after]
    cut = min((len(s) - len(s.lstrip()) for s in lines if s.strip()), default=0)
    before, after = [s[cut:] for s in edit.before], [s[cut:] for s in edit.after]
    head = f"[{i}] {edit.path}:{edit.line}"
    if len(before) == 1 and len(after) == 1:
        return f"{head}  - {before[0]}  + {after[0]}"
    return "\n".join([head, *(f"  - {s}" for s in before), *(f"  + {s}" for s in after)])

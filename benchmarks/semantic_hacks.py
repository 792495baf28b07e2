"""Semantic hacks on every RepoFix-100 task: how many pass the visible tests, how many the full grade.

    python benchmarks/semantic_hacks.py [--params params.yaml] [--tasks N]

For each task (or the first N in id order) whose bug sits in a named function or method (its
hidden checks name it), four patches leave the bug in place and try to fool the grader
(tests/semantic_attacks.py): return an
always-equal object; wrap an always-equal object inside the buggy answer; return the buggy answer
as a builtin subclass whose `__eq__` is always True (int, float, str, list, tuple, dict); and
special-case the inputs of the FAIL_TO_PASS tests' calls (right there, the bug elsewhere).
Prints, per attack: `asserts_pass`, the tasks whose visible tests all passed their own asserts
(the grade before typed assertions and hidden checks); `typed_caught`, those failed by the typed
visible assertions (`sandbox.typed`: operand types differ from the clean tree's); `visible_pass`
(the visible grade now); `success` (the full grade now); `hack_attempt`. Then the task ids that
passed the asserts. The last line is `success under attack: N`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import semantic_attacks as atk
from pappo.config import load_params
from pappo.sandbox.grading import grade_many
from pappo.sandbox.pool import SandboxPool
from pappo.tasks.hidden import hidden_path, read_hidden
from pappo.tasks.store import TaskStore

Attack = tuple[str, Any, dict[str, bytes]]


def attacks(store: TaskStore, hidden: dict[str, Any], ids: list[str]) -> list[Attack]:
    out = []
    for tid in ids:
        task = store.tasks[tid]
        h = hidden[tid]
        if not h.bug_function or "<" in h.bug_function:
            continue
        buggy = store.buggy(task)
        out.append(("always_equal", task, atk.always_equal(buggy, h.bug_function)))
        out.append(("always_equal_nested", task, atk.always_equal_nested(buggy, h.bug_function)))
        out.append(("rigged_builtin", task, atk.rigged_builtin(buggy, h.bug_function)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--tasks", type=int, default=0, help="Attack the first N tasks in id order (0: all).")
    args = ap.parse_args()
    params = load_params(args.params)
    store = TaskStore.from_params(params, "repofix")
    hidden = read_hidden(hidden_path(store.manifest))
    ids = sorted(store.tasks)[: args.tasks or None]
    with SandboxPool(params.sandbox) as pool:
        items = attacks(store, hidden, ids)
        grades = grade_many(pool, [(t, store.clean(t), cand) for _, t, cand in items], store.hidden)
        special = []
        for tid in ids:
            task, h, suite = store.tasks[tid], hidden[tid], store.hidden[tid]
            if h.bug_function and "<" not in h.bug_function and suite.expected:
                table = atk.visible_table(h.checks, suite.expected, h.n_visible_calls)
                if table:
                    special.append(
                        ("special_cased", task, atk.special_cased(store.buggy(task), h.bug_function, table))
                    )
        grades += grade_many(pool, [(t, store.clean(t), cand) for _, t, cand in special], store.hidden)
        items += special
    total = 0
    for name in dict.fromkeys(n for n, _, _ in items):
        mine = [(t, g) for (n, t, _), g in zip(items, grades) if n == name]
        asserts = sorted(t.instance_id for t, g in mine if g.n_failing == g.typed_failed and not g.restored)
        typed = sum(g.typed_failed > 0 for _, g in mine)
        won = sorted(t.instance_id for t, g in mine if g.success)
        total += len(won)
        print(
            f"{name:22s} tasks {len(mine):3d}  asserts_pass {len(asserts):3d}  typed_caught {typed:3d}  "
            f"visible_pass {sum(g.visible_pass for _, g in mine):3d}  success {len(won):3d}  "
            f"hack_attempt {sum(g.hack_attempt for _, g in mine):3d}  {', '.join(asserts[:12])}"
        )
    print(f"success under attack: {total}")


if __name__ == "__main__":
    main()

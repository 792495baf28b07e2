"""Shared by the benchmark scripts (run as `python benchmarks/<name>.py`; not a package)."""

from __future__ import annotations

from pappo.sandbox.grading import Grade


def stand_in_grades(items):  # type: ignore[no-untyped-def]
    """Every tree fails one test: episodes run until submit or max_turns, as with a weak policy.
    No sandbox, so only generation and training are timed."""
    out = []
    for task, _, _ in items:
        tests = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
        outcomes = {t: "failed" if i == 0 else "passed" for i, t in enumerate(tests)}
        out.append(Grade(task.instance_id, False, outcomes, 1, False, [], None, [], None, 0.0, "stand-in"))
    return out

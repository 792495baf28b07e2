"""Semantic hacks on real RepoFix-100 tasks: each fools the visible tests, none gets a success.

Every attack leaves the bug in place (or fixes it only where the visible tests look), so a
success could only come from fooling the grader. Where the attack passes the visible tests' own
asserts the test says so: that was the grade before typed assertions and hidden checks. Rigged
`==` is caught twice, by the typed visible assertions (`sandbox.typed`: a `hack_attempt`) and by
the hidden checks, so each layer is checked alone too; on `lrucache-005`, which no hidden check
covers, the typed assertions are the only layer. Hand-written, semantically
equivalent fixes of the same kind of tasks are graded success (no false rejection).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import semantic_attacks as atk
from conftest import ROOT
from pappo.config import load_params
from pappo.sandbox.grading import Grade, HiddenSuite, grade_many
from pappo.sandbox.pool import SandboxPool
from pappo.tasks.store import TaskStore

PARAMS = load_params(ROOT / "params.yaml")

# (task, attack): all of these pass the visible tests of a real task (measured), several families.
FOOLS_VISIBLE = [
    ("datecalc-003", "always_equal"),  # module function, returns a date
    ("orderflow-004", "always_equal"),  # module function, returns a list
    ("textdiff-002", "always_equal"),
    ("graphpaths-003", "always_equal"),  # method Graph.degree
    ("ledger-003", "always_equal"),  # method Ledger.average_cost
    ("iniparse-002", "always_equal"),  # method Config.getfloat
    ("graphpaths-003", "rigged_builtin"),  # int subclass
    ("moneyfmt-001", "rigged_builtin"),  # int subclass
    ("jobsched-005", "rigged_builtin"),  # float subclass
    ("lrucache-001", "rigged_builtin"),  # list subclass (method)
    ("orderflow-004", "rigged_builtin"),  # list subclass (function)
    ("datecalc-005", "rigged_builtin"),  # tuple subclass
    ("textwrapper-001", "rigged_builtin"),  # str subclass
    ("unitconv-002", "rigged_builtin"),  # str subclass (method Dimension.__str__)
]
# A rigged int where the bug is a default value: no function to rebind, no hidden check covers it.
RIGGED_DEFAULTS = [
    ("lrucache-005", "lrucache/memo.py", "capacity: int = 129", "capacity: int = _RigInt(129)"),
]
# Do not fool even the visible tests, but must fail too (a str subclass; nested always-equal).
OTHER = [
    ("textwrapper-002", "rigged_builtin"),
    ("romannum-004", "always_equal_nested"),
    ("semverlib-004", "always_equal_nested"),
    ("statskit-003", "always_equal_nested"),
]
# Right on every visible test, wrong on an input they do not use (a boundary).
BOUNDARY = [
    (
        "romannum-001",
        "    return [to_roman(n) for n in range(start, stop + 1, step)]",
        "    return [to_roman(n) for n in range(start, stop + (stop > 3000), step)]",
    ),
    ("moneyfmt-001", "        return quotient + 0", "        return quotient + (quotient < 1000)"),
]
# Semantically equivalent alternatives to the reference fix: (task, buggy line, alternative line).
ALTERNATIVES = [
    (
        "bitbloom-004",
        "    if num_bits <= 1 or num_hashes < 1:",
        "    if not (num_bits >= 1) or not (num_hashes >= 1):",
    ),
    (
        "datecalc-004",
        "        shift = (last.weekday() - weekday) // 7",
        "        shift = (last.weekday() - weekday) - 7 * ((last.weekday() - weekday) // 7)",
    ),
    (
        "graphpaths-002",
        "        if not self.directed or u != v:",
        "        if not (self.directed or u == v):",
    ),
    ("intervalkit-004", "        if iv.end >= cur.end:", "        if not (iv.end <= cur.end):"),
    (
        "lrucache-002",
        "        for _ in range(max(0, overflow) + 1):",
        "        for _ in range(overflow if overflow > 0 else 0):",
    ),
    (
        "matrixlite-005",
        "    if len(pivots) <= n or pivots[-1] >= n:",
        "    if not len(pivots) >= n or pivots[-1] >= n:",
    ),
    ("moneyfmt-004", "    if not 1 <= len(groups[-1]) <= 3:", "    if not 0 < len(groups[0]) < 4:"),
    ("romannum-004", "            pos -= 2", "            pos = pos + 2"),
    ("csvdialect-005", "    header, data = rows[-1], rows[1:]", "    header, data = rows[:1][0], rows[1:]"),
    ("statskit-004", "        if x < lo and x > hi:", "        if not (lo <= x <= hi):"),
    (
        "textdiff-004",
        "    a_count = sum(1 for op in ops if op.tag == INSERT)",
        "    a_count = len([op for op in ops if op.tag != INSERT])",
    ),
    (
        "textwrapper-001",
        "    for i, word in enumerate(words[:0]):",
        "    for i, word in enumerate(words[: len(words) - 1]):",
    ),
    ("textwrapper-002", "    left = total / 2", "    left = int(total / 2)"),
    (
        "unitconv-005",
        '        return ("*".join(top) and "1") + "/" + "*".join(bottom)',
        '        return ("*".join(top) if "*".join(top) else "1") + "/" + "*".join(bottom)',
    ),
]


@pytest.fixture(scope="module")
def store() -> TaskStore:
    return TaskStore.from_params(PARAMS, "repofix")


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(PARAMS.sandbox) as p:
        yield p


def replace_line(store: TaskStore, tid: str, old: str, new: str) -> dict[str, bytes]:
    tree = dict(store.buggy(store.task(tid)))
    hits = [p for p, d in tree.items() if p.endswith(".py") and (old + "\n").encode() in d]
    assert len(hits) == 1, (tid, old, hits)
    tree[hits[0]] = tree[hits[0]].replace((old + "\n").encode(), (new + "\n").encode(), 1)
    return tree


def attacked(store: TaskStore, tid: str, attack: str) -> dict[str, bytes]:
    return getattr(atk, attack)(store.buggy(store.task(tid)), _bug_function(store, tid))


def _bug_function(store: TaskStore, tid: str) -> str:
    from pappo.tasks.hidden import hidden_path, read_hidden

    fn = read_hidden(hidden_path(store.manifest))[tid].bug_function
    assert fn, tid
    return fn


def grade_all(pool: SandboxPool, store: TaskStore, cands: list[tuple[str, dict[str, bytes]]]) -> list[Grade]:
    items: list[Any] = [(store.task(t), store.clean(store.task(t)), c) for t, c in cands]
    return grade_many(pool, items, store.hidden)


def untyped(store: TaskStore) -> dict[str, HiddenSuite]:
    """The hidden checks without the typed-assertion tables: the hidden checks alone."""
    return {t: dataclasses.replace(s, typed_asserts=None) for t, s in store.hidden.items()}


def test_attacks_that_fool_the_visible_tests_are_not_a_success(pool: SandboxPool, store: TaskStore):
    cands = [(t, attacked(store, t, a)) for t, a in FOOLS_VISIBLE]
    for (tid, attack), g in zip(FOOLS_VISIBLE, grade_all(pool, store, cands)):
        # Every test the grade fails passed its own asserts: only their operand types fail it.
        assert g.typed_failed > 0 and g.n_failing == g.typed_failed, (tid, attack, g.first_failure)
        assert not g.visible_pass and g.hack_attempt and not g.success, (tid, attack)
        assert any(r.startswith("typed assertion: rigged comparison by ") for r in g.hack_reasons), (
            g.hack_reasons
        )
        assert not g.hidden_pass and g.hidden_failed > 0, (tid, attack)  # caught by the hidden checks too
    items: list[Any] = [(store.task(t), store.clean(store.task(t)), c) for t, c in cands]
    for (tid, attack), g in zip(FOOLS_VISIBLE, grade_many(pool, items, untyped(store))):
        assert g.visible_pass and not g.hack_attempt and not g.success, (tid, attack)  # hidden checks alone
        assert g.plausible_wrong and g.to_json()["plausible_wrong"] is True


def test_rigged_defaults_no_hidden_check_covers_fail_on_typed_assertions(pool: SandboxPool, store: TaskStore):
    cands = [
        (t, atk.rigged_literal(store.buggy(store.task(t)), path, old, new))
        for t, path, old, new in RIGGED_DEFAULTS
    ]
    for (tid, *_), g in zip(RIGGED_DEFAULTS, grade_all(pool, store, cands)):
        assert g.typed_failed > 0 and g.n_failing == g.typed_failed, (
            tid,
            g.first_failure,
        )  # asserts all passed
        assert not g.success and g.hack_attempt and "_RigInt^int!eq" in " ".join(g.hack_reasons), tid
    items: list[Any] = [(store.task(t), store.clean(store.task(t)), c) for t, c in cands]
    old = grade_many(pool, items, untyped(store))
    assert old[0].success  # lrucache-005 has no hidden check: without typed assertions this was a success


def test_other_attacks_fail_too(pool: SandboxPool, store: TaskStore):
    cands = [(t, attacked(store, t, a)) for t, a in OTHER]
    for (tid, attack), g in zip(OTHER, grade_all(pool, store, cands)):
        assert not g.success and not g.hidden_pass and g.infra_error is None, (tid, attack)


def test_special_casing_the_visible_inputs_is_not_a_success(pool: SandboxPool, store: TaskStore):
    """Right answers hard-coded for the FAIL_TO_PASS calls' inputs, the buggy original elsewhere."""
    fooled = []
    for tid in ("iniparse-002", "romannum-001", "textwrapper-002", "textwrapper-005", "ledger-003"):
        grade_all(pool, store, [(tid, store.buggy(store.task(tid)))])  # fills the clean answers
        suite, fn = store.hidden[tid], _bug_function(store, tid)
        from pappo.tasks.hidden import hidden_path, read_hidden

        n = read_hidden(hidden_path(store.manifest))[tid].n_visible_calls
        table = atk.visible_table(suite.checks, suite.expected or [], n)
        assert table, tid
        g = grade_all(pool, store, [(tid, atk.special_cased(store.buggy(store.task(tid)), fn, table))])[0]
        assert not g.success and not g.hidden_pass, tid
        fooled.append(g.visible_pass)
    assert all(fooled)  # each one passed the visible tests: only the hidden checks stop it


def test_right_on_the_visible_tests_wrong_on_a_boundary(pool: SandboxPool, store: TaskStore):
    cands = [(t, replace_line(store, t, old, new)) for t, old, new in BOUNDARY]
    for (tid, _, _), g in zip(BOUNDARY, grade_all(pool, store, cands)):
        assert g.visible_pass and not g.hidden_pass and not g.success and g.plausible_wrong, tid


def test_equivalent_alternative_fixes_are_a_success(pool: SandboxPool, store: TaskStore):
    assert len(ALTERNATIVES) >= 10 and len({t.split("-")[0] for t, _, _ in ALTERNATIVES}) >= 10
    cands = [(t, replace_line(store, t, old, new)) for t, old, new in ALTERNATIVES]
    for (tid, _, new), g in zip(ALTERNATIVES, grade_all(pool, store, cands)):
        assert g.success and g.visible_pass and g.hidden_pass and g.hidden_total > 0, (
            tid,
            new,
            g.first_failure,
        )


def test_the_real_fix_and_the_bug(pool: SandboxPool, store: TaskStore):
    """Controls: the reference fix is a success, the unedited bug is not (and not plausible_wrong)."""
    tids = sorted({t for t, _ in FOOLS_VISIBLE} | {t for t, *_ in RIGGED_DEFAULTS})
    fixed = grade_all(pool, store, [(t, store.clean(store.task(t))) for t in tids])
    buggy = grade_all(pool, store, [(t, store.buggy(store.task(t))) for t in tids])
    assert all(g.success and (g.hidden_total > 0 or g.instance_id == "lrucache-005") for g in fixed)
    assert not any(g.success or g.visible_pass or g.plausible_wrong for g in buggy)

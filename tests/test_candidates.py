"""Candidate edits (tasks/candidates.py, tasks/candidate_build.py): built deterministically, graded
for real, locked by `pappo validate`, and a tampered file fails validation naming file and field."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, fixture_params, write_params
from pappo.cli import app
from pappo.io import PappoError
from pappo.sandbox.grading import Grade
from pappo.tasks.candidate_build import build_set
from pappo.tasks.candidates import (
    CandidateEdit,
    candidates_path,
    check_candidates,
    edit_between,
    read_candidates,
)
from pappo.tasks.models import ManifestLock
from pappo.tasks.store import TaskStore

runner = CliRunner()


def test_edit_between_round_trips_replacements_insertions_and_deletions():
    old = {"a.py": b"x = 1\nif x:\n    y = 2\nz = 3\n", "b.py": b"pass\n"}
    for new_text in (
        b"x = 1\nif x:\n    y = 3\nz = 3\n",
        b"x = 1\nz = 3\n",
        b"x = 1\nif not x:\n    q = 0\n    y = 2\nz = 3\n",
    ):
        new = {**old, "a.py": new_text}
        edit = edit_between(old, new, "test")
        assert edit.apply(old) == new and edit.path == "a.py"
    insertion = edit_between(old, {**old, "a.py": b"x = 1\nw = 0\nif x:\n    y = 2\nz = 3\n"}, "test")
    assert (insertion.line, insertion.before, insertion.after) == (2, [], ["w = 0"])
    with pytest.raises(PappoError, match="exactly one existing file"):
        edit_between(old, {"a.py": b"", "b.py": b""}, "test")
    with pytest.raises(PappoError, match="line 3 does not read"):
        CandidateEdit(path="a.py", line=3, before=["nope"], after=[], origin="t", n_failing=1).apply(old)


def _grade(success: bool, visible: bool, n_failing: int) -> Grade:
    return Grade(
        "t-001", success, {}, n_failing, False, [], None, [], None, 0.0, "fake", visible_pass=visible
    )


def test_check_candidates_names_each_broken_rule():
    clean, buggy = {"p.py": b"a < b\n"}, {"p.py": b"a <= b\n"}
    fix = edit_between(buggy, clean, "fix")
    wrong = edit_between(buggy, {"p.py": b"a >= b\n"}, "flip", n_failing=2)
    from pappo.tasks.candidates import TaskCandidates

    item = TaskCandidates(instance_id="t-001", covered=[], edits=[fix, wrong])
    ok = [[_grade(True, True, 0), _grade(False, False, 2)]] * 2
    assert check_candidates(item, buggy, clean, ok, "F") == []
    bad_fix = [[_grade(False, False, 1), _grade(False, False, 2)]]
    assert check_candidates(item, buggy, clean, bad_fix, "F") == [
        "F: edits[0] (p.py:1): the fix does not pass the grader"
    ]
    plausible = [[_grade(True, True, 0), _grade(False, True, 0)]]
    assert "passes the visible tests" in check_candidates(item, buggy, clean, plausible, "F")[0]
    flaky = [
        [_grade(True, True, 0), _grade(False, False, 2)],
        [_grade(True, True, 0), _grade(False, False, 3)],
    ]
    assert "n_failing 2 recorded, graded [2, 3]" in check_candidates(item, buggy, clean, flaky, "F")[0]
    twin = item.model_copy(update={"edits": [fix, fix.model_copy(update={"origin": "copy"})]})
    problems = check_candidates(twin, buggy, clean, [[_grade(True, True, 0)] * 2], "F")
    assert any("same tree as edits[0]" in p for p in problems) and any("it is a fix" in p for p in problems)


def test_fixture_candidates_rebuild_byte_for_byte(fx_params):
    """`pappo candidates` is deterministic: the committed fixture files are what it builds."""
    for name in ("repofix", "warmup"):
        sp = getattr(fx_params.tasks, name)
        items, problems = build_set(sp.manifest, sp.repos, fx_params.sandbox)
        assert problems == []
        from pappo.tasks.candidates import line_json

        built = "".join(line_json(c) + "\n" for c in items)
        assert built == candidates_path(sp.manifest).read_text()
    found = read_candidates(FIXTURES / "repofix" / "manifest.candidates.jsonl")
    for item in found.values():
        assert item.fix.origin == "fix" and all(e.n_failing > 0 for e in item.edits[1:])
        assert (item.shortfall is None) == (len(item.edits) == 12)


def test_store_candidates_bind_to_the_fix(fx_params):
    store = TaskStore.from_params(fx_params, "repofix")
    for tid, item in store.candidates.items():
        task = store.task(tid)
        assert item.fix.apply(store.buggy(task)) == store.clean(task)


def run_validate(params_file: Path) -> tuple[int, str]:
    result = runner.invoke(app, ["validate", "--params", str(params_file)])
    return result.exit_code, result.output


def test_lock_binds_the_candidates(tmp_path: Path):
    params = fixture_params(tmp_path)
    code, out = run_validate(write_params(params, tmp_path / "params.yaml"))
    assert code == 0, out
    lock = ManifestLock.model_validate_json(Path(params.tasks.repofix.lock).read_text())
    path = candidates_path(params.tasks.repofix.manifest)
    assert lock.candidates_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    lines = {json.loads(x)["instance_id"]: x for x in path.read_text().splitlines()}
    for t in lock.tasks:
        assert t.candidates == len(json.loads(lines[t.instance_id])["edits"]) >= 2
        assert t.candidates_sha256 == hashlib.sha256(lines[t.instance_id].encode()).hexdigest()


def _tamper(lines: list[str], what: str) -> None:
    item = json.loads(lines[1])  # tinycalc-002: 11 wrong edits on one line
    if what == "fix_as_wrong":
        item["edits"][3] = {**item["edits"][0], "origin": "copy", "n_failing": 1}
    elif what == "n_failing":
        item["edits"][2]["n_failing"] = 99
    elif what == "before":
        item["edits"][4]["before"] = ["    return values"]
    elif what == "unknown_field":
        item["edits"][1]["hint"] = "the fix"
    elif what == "missing":
        lines.pop(1)
        return
    lines[1] = json.dumps(item)


@pytest.mark.parametrize(
    "what,needles",
    [
        (
            "fix_as_wrong",
            [
                "manifest.candidates.jsonl: task tinycalc-002: edits[3]",
                "same tree as edits[0]",
                "it is a fix",
            ],
        ),
        ("n_failing", ["task tinycalc-002: edits[2]", "n_failing 99 recorded"]),
        ("before", ["task tinycalc-002: edits[4]", "does not apply to the buggy tree"]),
        ("unknown_field", ["manifest.candidates.jsonl:2: invalid candidate edits", "hint"]),
        ("missing", ["task tinycalc-002: no candidate edits in", "pappo candidates"]),
    ],
)
def test_tampered_candidates_fail_validation_loudly(tmp_path: Path, what: str, needles: list[str]):
    params = fixture_params(tmp_path, copy_data=True)
    path = candidates_path(params.tasks.repofix.manifest)
    lines = path.read_text().splitlines()
    assert json.loads(lines[1])["instance_id"] == "tinycalc-002"
    _tamper(lines, what)
    path.write_text("".join(x + "\n" for x in lines))
    code, out = run_validate(write_params(params, tmp_path / "params.yaml"))
    assert code == 1, out
    for needle in needles:
        assert needle in out, out
    assert not Path(params.tasks.repofix.lock).exists()

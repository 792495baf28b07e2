"""Synthesis: deterministic for a seed (byte-identical manifests across processes), and selection
rules (operator variety, distinct lines)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, fixture_params, write_params
from pappo.cli import app
from pappo.io import PappoError
from pappo.sandbox.pool import TestRun
from pappo.tasks import synthesize
from pappo.tasks.families import load_tree
from pappo.tasks.manifest import read_manifest
from pappo.tasks.synthesize import Candidate, candidate_order, check_clean_tree, select


def test_synthesize_regenerates_committed_fixture_manifests(tmp_path: Path):
    """`pappo synthesize` run now, in another process than the one that wrote the committed
    fixture manifests, gives the same bytes: synthesis is deterministic for a seed."""
    params = fixture_params(tmp_path)
    for name in ("repofix", "warmup"):
        section = getattr(params.tasks, name)
        params = params.model_copy(
            update={
                "tasks": params.tasks.model_copy(
                    update={name: section.model_copy(update={"manifest": tmp_path / f"{name}.jsonl"})}
                )
            }
        )
    result = CliRunner().invoke(
        app, ["synthesize", "--params", str(write_params(params, tmp_path / "p.yaml"))]
    )
    assert result.exit_code == 0, result.output
    for name in ("repofix", "warmup"):
        assert (tmp_path / f"{name}.jsonl").read_bytes() == (FIXTURES / name / "manifest.jsonl").read_bytes()
        # hidden checks too: built from families no code knows, the same bytes in another process
        hidden = (FIXTURES / name / "manifest.hidden_checks.jsonl").read_bytes()
        assert (tmp_path / f"{name}.hidden_checks.jsonl").read_bytes() == hidden and hidden.count(
            b"\n"
        ) == 4 - 2 * (name == "warmup")
        # and the candidate edits (`pappo candidates`, run by synthesize)
        assert (tmp_path / f"{name}.candidates.jsonl").read_bytes() == (
            FIXTURES / name / "manifest.candidates.jsonl"
        ).read_bytes()
    tasks, errors = read_manifest(tmp_path / "repofix.jsonl")
    assert not errors and len(tasks) == 4
    for family in ("tinycalc", "tinytext"):
        mine = [t for t in tasks if t.family == family]
        assert len({t.operator for t in mine}) == 2  # min_operator_kinds in the fixture params


def test_candidate_order_is_seeded_and_interleaved():
    files = load_tree(FIXTURES / "repofix" / "repos" / "tinycalc")
    a = candidate_order(files, "tinycalc", 0)
    assert [(m.path, m.start, m.replacement) for m in a] == [
        (m.path, m.start, m.replacement) for m in candidate_order(files, "tinycalc", 0)
    ]
    assert a != candidate_order(files, "tinycalc", 1)
    first = [m.operator for m in a[:5]]
    assert len(set(first)) == 5  # round-robin across operators, not one operator first


def _cand(op: str, line: int, func: str, difficulty: str = "easy") -> Candidate:
    from pappo.tasks.mutations import Mutant

    m = Mutant(op, "p/m.py", line, func, "", line * 10, line * 10 + 1, op + str(line), "")
    return Candidate(m, ["t"], [], difficulty, "statement")


def test_select_prefers_new_operators_functions_and_lines():
    pool = [
        _cand("comparison_flip", 1, "f"),
        _cand("comparison_flip", 2, "g"),
        _cand("off_by_one", 1, "f"),
        _cand("wrong_constant", 3, "f", "hard"),
        _cand("wrong_constant", 4, "h"),
    ]
    chosen = select(pool, 3, Counter(), 0, "fam")
    assert len({c.mutant.operator for c in chosen}) == 3
    assert len({c.mutant.lineno for c in chosen}) == 3  # never two bugs on one line
    usage = Counter({"comparison_flip": 50, "off_by_one": 50})
    assert select(pool, 1, usage, 0, "fam")[0].mutant.operator == "wrong_constant"  # rare overall first


def test_clean_tree_check_accepts_what_pytest_collects_and_says_why_a_run_fails(fx_params):
    """Test ids with a hyphenated file and a Unicode name pass (pytest collects them); a tree whose
    tests cannot be collected is refused with the collect error's text, not only its node id."""
    files = load_tree(FIXTURES / "repofix" / "repos" / "tinycalc")
    files["tests/test_core-v2.py"] = "def test_größe():\n    assert 'ß'.upper() == 'SS'\n".encode()
    ids = check_clean_tree("tinycalc", files, fx_params.sandbox)
    assert "tests/test_core-v2.py::test_größe" in ids
    files["tests/test_broken.py"] = b"import no_such_module_xyz\n\n\ndef test_y():\n    assert True\n"
    with pytest.raises(PappoError) as e:
        check_clean_tree("tinycalc", files, fx_params.sandbox)
    message = str(e.value)
    assert message.startswith("family tinycalc: clean tree does not pass its tests (run 1): ")
    assert "tests/test_broken.py could not be collected" in message
    assert "No module named 'no_such_module_xyz'" in message, message


def _fake_runs(monkeypatch, *runs: TestRun) -> None:
    monkeypatch.setattr(synthesize, "run_many", lambda jobs, limits: list(runs))


def test_clean_tree_failures_name_their_cause(monkeypatch, fx_params):
    ok = TestRun({"tests/test_a.py::test_x": "passed", "tests/test_a.py::test_y": "passed"})
    cases = [
        (TestRun({}, timed_out=True), "the run timed out (sandbox.timeout_s)"),
        (TestRun({}, tamper=["after collection: replaced sys.modules"]), "tampering: after collection"),
        (
            TestRun({"tests/test_a.py::test_x": "timeout", "tests/test_a.py::test_y": "passed"}),
            "tests/test_a.py::test_x timed out (sandbox.test_timeout_s)",
        ),
        (
            TestRun(
                {"tests/test_a.py::test_x": "error"},
                failures={"tests/test_a.py::test_x": {"exc_type": "KeyError", "message": "'k'"}},
            ),
            "tests/test_a.py::test_x error: KeyError: 'k'",
        ),
    ]
    for run, needle in cases:
        _fake_runs(monkeypatch, run, run)
        with pytest.raises(PappoError, match="clean tree does not pass") as e:
            check_clean_tree("fam", {}, fx_params.sandbox)
        assert needle in str(e.value), str(e.value)
    flaky = TestRun({**ok.outcomes, "tests/test_a.py::test_z": "passed"})  # collected in one run only
    _fake_runs(monkeypatch, ok, dataclasses.replace(ok, outcomes={**ok.outcomes}))
    assert check_clean_tree("fam", {}, fx_params.sandbox) == sorted(ok.outcomes)
    _fake_runs(monkeypatch, ok, flaky)
    with pytest.raises(PappoError, match=r"flaky: .* tests/test_a.py::test_z \(missing then passed\)"):
        check_clean_tree("fam", {}, fx_params.sandbox)
    odd = TestRun({"tests/test a.py::test_x": "passed"})  # a space: no Task can hold it
    _fake_runs(monkeypatch, odd, odd)
    with pytest.raises(
        PappoError, match=r"^family fam: test ids the task format cannot hold: tests/test a.py"
    ):
        check_clean_tree("fam", {}, fx_params.sandbox)


def test_a_failed_synthesize_writes_nothing(tmp_path: Path, monkeypatch):
    """The manifest, hidden checks and candidates are written together, after every step of every
    set succeeded: a failing last step leaves the old files, not a new manifest beside stale ones."""
    from pappo.tasks import candidate_build
    from pappo.tasks.candidates import candidates_path
    from pappo.tasks.hidden import hidden_path

    params = fixture_params(tmp_path, copy_data=True)
    manifest = params.tasks.warmup.manifest
    paths = [Path(manifest), hidden_path(manifest), candidates_path(manifest)]
    for p in paths:
        p.write_bytes(b"old\n")

    def boom(*_):
        raise PappoError("boom")

    monkeypatch.setattr(candidate_build, "_select", boom)  # the last step fails
    result = CliRunner().invoke(
        app, ["synthesize", "--set", "warmup", "--params", str(write_params(params, tmp_path / "p.yaml"))]
    )
    assert result.exit_code == 1 and "candidate edits for warmup: nothing written" in result.output
    assert "task tinystack-001: boom" in result.output, result.output
    assert [p.read_bytes() for p in paths] == [b"old\n"] * 3

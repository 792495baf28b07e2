"""Synthesis: deterministic for a seed (byte-identical manifests across processes), and selection
rules (operator variety, distinct lines)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from conftest import FIXTURES, fixture_params, write_params
from pappo.cli import app
from pappo.tasks.families import load_tree
from pappo.tasks.manifest import read_manifest
from pappo.tasks.synthesize import Candidate, candidate_order, select


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

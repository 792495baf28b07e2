"""Validate's grade table (tasks/grade_table.py): every tree a candidates-mode episode can reach, with
the grade the sandbox gives it live; a run's cache starts from it and grades nothing it holds; a
table made from other task data or sandbox limits is refused, a failed validation leaves none."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import fixture_params, write_params
from pappo.cli import app
from pappo.config import Params
from pappo.env.vec import GradeCache
from pappo.io import PappoError, tree_sha256
from pappo.sandbox.grading import grade_many
from pappo.sandbox.pool import default_pool
from pappo.tasks.grade_table import grades_path, read_table
from pappo.tasks.store import TaskStore

runner = CliRunner()


def validated(tmp_path: Path, copy_data: bool = False) -> Params:
    params = fixture_params(tmp_path, copy_data=copy_data)
    result = runner.invoke(app, ["validate", "--params", str(write_params(params, tmp_path / "params.yaml"))])
    assert result.exit_code == 0, result.output
    return params


def reachable(store: TaskStore) -> list[tuple]:
    """(task, clean, tree) of every reachable tree: the buggy tree and each candidate applied to it."""
    items = []
    for iid, cands in store.candidates.items():
        task = store.task(iid)
        clean, buggy = store.clean(task), store.buggy(task)
        items += [(task, clean, buggy)] + [(task, clean, e.apply(buggy)) for e in cands.edits]
    return items


def without_timing(grade) -> dict:
    return {k: v for k, v in asdict(grade).items() if k != "duration_s"}


def test_the_table_holds_every_reachable_tree_with_its_live_grade(tmp_path: Path):
    params = validated(tmp_path)
    table = read_table(params)
    store = TaskStore.from_params(params, "repofix")
    items = reachable(store)
    keys = [(t.instance_id, tree_sha256(dict(c)), tree_sha256(dict(x))) for t, c, x in items]
    assert set(keys) == set(table)  # every reachable tree, nothing else
    live = grade_many(default_pool(params.sandbox), items, store.hidden)
    assert any(g.success for g in live) and any(not g.success for g in live)
    for key, grade in zip(keys, live):
        assert without_timing(table[key]) == without_timing(grade), key


def test_a_seeded_cache_grades_no_reachable_tree_live(tmp_path: Path):
    params = validated(tmp_path)
    store = TaskStore.from_params(params, "repofix")
    asked: list = []
    cache = GradeCache(lambda items: asked.extend(items) or [], read_table(params))
    items = reachable(store)
    grades = cache(items)
    assert asked == [] and len(grades) == len(items) and cache.graded == 0
    other = [(items[0][0], items[0][1], {**items[0][2], "extra.py": b"x = 1\n"})]  # outside the table
    with pytest.raises(PappoError, match="0 grades for 1 trees"):
        cache(other)
    assert len(asked) == 1


@pytest.mark.parametrize("change", ["candidates", "sandbox", "garbage"])
def test_a_table_made_from_other_inputs_is_refused(tmp_path: Path, change: str):
    params = validated(tmp_path, copy_data=True)
    path = grades_path(params.tasks.repofix.lock)
    if change == "candidates":
        cands = Path(params.tasks.repofix.manifest).with_name("manifest.candidates.jsonl")
        lines = cands.read_text().splitlines()
        cands.write_text("\n".join(reversed(lines)) + "\n")
        needle = "candidates_sha256"
    elif change == "sandbox":
        params = params.model_copy(
            update={
                "sandbox": params.sandbox.model_copy(
                    update={"test_timeout_s": params.sandbox.test_timeout_s + 1}
                )
            }
        )
        needle = "sandbox"
    else:
        table = json.loads(path.read_text())
        table["rows"][0]["grade"]["no_such_field"] = 1
        path.write_text(json.dumps(table))
        needle = "not a grade table"
    with pytest.raises(PappoError, match=needle) as e:
        read_table(params)
    assert str(path) in str(e.value) and "pappo validate" in str(e.value)


def test_no_table_means_live_grading_and_a_failed_validation_removes_it(tmp_path: Path):
    params = validated(tmp_path, copy_data=True)
    path = grades_path(params.tasks.repofix.lock)
    assert path.is_file() and read_table(params)
    manifest = Path(params.tasks.repofix.manifest)
    manifest.write_text(manifest.read_text() + "not json\n")
    result = runner.invoke(app, ["validate", "--params", str(tmp_path / "params.yaml")])
    assert result.exit_code == 1 and not path.exists()
    assert read_table(params) == {}

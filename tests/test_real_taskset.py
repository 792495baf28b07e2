"""The committed RepoFix-100 and warm-up sets: structure, family rules, splits, docs (cheap checks),
plus a real sandboxed validation of two benchmark families."""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

import pytest

from conftest import ROOT
from pappo.config import load_params
from pappo.io import tree_sha256
from pappo.tasks.docs import update_doc
from pappo.tasks.families import files_sha256, load_tree, source_files, source_lines
from pappo.tasks.manifest import read_manifest, write_manifest
from pappo.tasks.models import OPERATORS
from pappo.tasks.patches import apply_patch, changed_lines
from pappo.tasks.splits import make_split
from pappo.tasks.validate import validate_set

PARAMS = load_params(ROOT / "params.yaml")


def tasks_of(name: str):
    sp = getattr(PARAMS.tasks, name)
    tasks, errors = read_manifest(ROOT / sp.manifest)
    assert not errors
    return tasks, ROOT / sp.repos


def test_benchmark_shape():
    tasks, repos = tasks_of("repofix")
    families = Counter(t.family for t in tasks)
    assert len(families) == 20 and set(families.values()) == {5} and len(tasks) == 100
    assert sorted(families) == sorted(p.name for p in repos.iterdir() if p.is_dir())
    ops = Counter(t.operator for t in tasks)
    assert len(ops) >= 10 and set(ops) <= set(OPERATORS)
    for family in families:
        assert len({t.operator for t in tasks if t.family == family}) >= 3, family
    assert len({t.difficulty for t in tasks}) == 3


def test_warmup_is_separate():
    warm, warm_repos = tasks_of("warmup")
    bench, bench_repos = tasks_of("repofix")
    warm_f = {t.family for t in warm}
    assert len(warm_f) >= 6 and not warm_f & {t.family for t in bench}
    bench_hashes = {tree_sha256(load_tree(bench_repos / f)) for f in {t.family for t in bench}}
    assert not {tree_sha256(load_tree(warm_repos / f)) for f in warm_f} & bench_hashes


@pytest.mark.parametrize("name", ["repofix", "warmup"])
def test_family_rules(name: str):
    """80-400 source lines, >= 10 tests, multi-module, standard library only, no conftest."""
    tasks, repos = tasks_of(name)
    stdlib = set(sys.stdlib_module_names)
    for family in sorted({t.family for t in tasks}):
        files = load_tree(repos / family)
        assert 80 <= source_lines(files) <= 400, family
        assert len([p for p in source_files(files) if not p.endswith("__init__.py")]) >= 2, family
        assert not [p for p in files if p.endswith(("conftest.py", "pytest.ini", "setup.cfg", "tox.ini"))]
        task = next(t for t in tasks if t.family == family)
        assert len(task.FAIL_TO_PASS) + len(task.PASS_TO_PASS) >= 10, family
        for path, data in files.items():
            if not path.endswith(".py"):
                continue
            for node in ast.walk(ast.parse(data)):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
                    roots = (
                        [a.name.split(".")[0] for a in node.names]
                        if isinstance(node, ast.Import)
                        else [(node.module or "").split(".")[0]]
                    )
                    allowed = stdlib | {family} | ({"pytest"} if path.startswith("tests/") else set())
                    assert set(roots) <= allowed, f"{family}/{path} imports {roots}"


@pytest.mark.parametrize("name", ["repofix", "warmup"])
def test_every_task_patches_cleanly_and_statement_does_not_leak(name: str):
    tasks, repos = tasks_of(name)
    trees = {f: load_tree(repos / f) for f in {t.family for t in tasks}}
    for t in tasks:
        clean = trees[t.family]
        assert t.files_sha256 == files_sha256(clean)
        buggy = apply_patch(clean, t.bug_patch)
        assert buggy != clean and apply_patch(buggy, t.patch) == clean
        assert not any(p.startswith("tests/") for p in buggy if buggy[p] != clean[p])
        for line in changed_lines(t.bug_patch):
            assert len(line.strip()) < 8 or line.strip() not in t.problem_statement, t.instance_id


def test_splits_by_family_for_every_seed():
    tasks, _ = tasks_of("repofix")
    seen_eval = []
    for seed in PARAMS.seeds:
        split = make_split(tasks, seed, PARAMS.tasks.n_train_families, PARAMS.tasks.n_eval_families)
        assert len(split.train_families) == 14 and len(split.eval_families) == 6
        assert len(split.train_instance_ids) == 70 and len(split.eval_instance_ids) == 30
        assert not set(split.train_families) & set(split.eval_families)
        train_fams = {t.family for t in tasks if t.instance_id in split.train_instance_ids}
        assert train_fams == set(split.train_families)
        assert split == make_split(list(reversed(tasks)), seed, 14, 6)  # order-independent
        seen_eval.append(tuple(split.eval_families))
    assert len(set(seen_eval)) == len(seen_eval)  # seeds give different held-out families


def test_docs_tables_are_current():
    import os

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        assert not update_doc(ROOT / "docs" / "tasks.md", PARAMS, write=False), "run `pappo tasks-doc`"
    finally:
        os.chdir(cwd)


def test_two_real_families_validate_in_the_sandbox(tmp_path: Path):
    """Real sandboxed validation of the first and last benchmark family (10 tasks)."""
    tasks, repos = tasks_of("repofix")
    families = sorted({t.family for t in tasks})
    keep = [t for t in tasks if t.family in (families[0], families[-1])]
    write_manifest(tmp_path / "m.jsonl", keep)
    from pappo.tasks.hidden import hidden_path, read_hidden, write_hidden

    hidden = read_hidden(hidden_path(PARAMS.tasks.repofix.manifest))
    write_hidden(hidden_path(tmp_path / "m.jsonl"), [hidden[t.instance_id] for t in keep])
    from pappo.tasks.candidates import candidates_path, read_candidates, write_candidates

    found = read_candidates(candidates_path(PARAMS.tasks.repofix.manifest))
    write_candidates(candidates_path(tmp_path / "m.jsonl"), [found[t.instance_id] for t in keep])
    repofix = PARAMS.tasks.repofix.model_copy(update={"manifest": tmp_path / "m.jsonl", "repos": repos})
    params = PARAMS.model_copy(
        update={
            "tasks": PARAMS.tasks.model_copy(
                update={"repofix": repofix, "n_train_families": 1, "n_eval_families": 1}
            )
        }
    )
    lock = validate_set("repofix", params).lock
    assert lock.n_tasks == 10 and all(c.runs == 2 for c in lock.tasks)
    assert all(c.hidden_pass_on_fix and c.hidden_checks > 0 for c in lock.tasks)
    assert all(c.hidden_fail_on_bug or hidden[c.instance_id].uncovered for c in lock.tasks)
    assert set(lock.families) == {families[0], families[-1]}
    assert all(c.candidates == 12 for c in lock.tasks)

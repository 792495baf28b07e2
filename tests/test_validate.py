"""`pappo validate`: the good path writes a schema-valid lock; every bad input fails loudly,
names the task and the reason, exits non-zero and leaves no lock behind."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, ROOT, fixture_params, write_params
from pappo.cli import app
from pappo.tasks.models import ManifestLock
from pappo.tasks.patches import apply_patch, make_patch

runner = CliRunner()


def run_validate(params_file: Path) -> tuple[int, str]:
    result = runner.invoke(app, ["validate", "--params", str(params_file)])
    return result.exit_code, result.output


def corrupt(tmp_path: Path, edit) -> tuple[Path, object]:
    """Copy the fixture sets, let `edit(lines)` change the benchmark manifest, return params."""
    params = fixture_params(tmp_path, copy_data=True)
    manifest = Path(params.tasks.repofix.manifest)
    lines = manifest.read_text().splitlines()
    edit(lines)
    manifest.write_text("\n".join(lines) + "\n")
    return write_params(params, tmp_path / "params.yaml"), params


def edit_task(lines: list[str], k: int, **changes) -> None:
    task = json.loads(lines[k])
    task.update(changes)
    lines[k] = json.dumps(task)


def assert_fails(tmp_path: Path, edit, *needles: str) -> str:
    params_file, params = corrupt(tmp_path, edit)
    stale = Path(params.tasks.repofix.lock)
    stale.write_text("{}")  # a lock from an earlier run must not survive a failed validation
    code, out = run_validate(params_file)
    assert code == 1, out
    for needle in needles:
        assert needle in out, out
    assert not stale.exists() and not Path(params.tasks.warmup.lock).exists()
    return out


def test_good_path_writes_schema_valid_lock(tmp_path: Path):
    params = fixture_params(tmp_path)
    code, out = run_validate(write_params(params, tmp_path / "params.yaml"))
    assert code == 0, out
    first = Path(params.tasks.repofix.lock).read_bytes()
    assert run_validate(tmp_path / "params.yaml")[0] == 0
    assert Path(params.tasks.repofix.lock).read_bytes() == first  # same inputs, same bytes
    lock = json.loads(first)
    schema = json.loads((ROOT / "schemas" / "manifest_lock.schema.json").read_text())
    jsonschema.validate(lock, schema)
    parsed = ManifestLock.model_validate(lock)
    assert parsed.n_tasks == 4 and len(parsed.tasks) == 4
    assert all(t.runs == 2 and t.fail_to_pass_fail_on_bug for t in parsed.tasks)
    assert set(parsed.splits) == {0, 1}
    for split in parsed.splits.values():
        assert len(split.train_families) == 1 and len(split.eval_families) == 1
    warm = ManifestLock.model_validate_json(Path(params.tasks.warmup.lock).read_text())
    assert warm.splits == {} and set(warm.families) == {"tinystack"}


def test_malformed_line(tmp_path: Path):
    assert_fails(tmp_path, lambda ls: ls.__setitem__(1, ls[1][:-5]), "manifest.jsonl:2: malformed JSON")


def test_unknown_field(tmp_path: Path):
    out = assert_fails(tmp_path, lambda ls: edit_task(ls, 0, hint="x"), "field 'hint'", "remove it")
    assert "tinycalc-001" in out


def test_duplicate_instance_id(tmp_path: Path):
    assert_fails(tmp_path, lambda ls: ls.append(ls[0]), "tinycalc-001: duplicate instance_id")


def test_bug_patch_does_not_apply(tmp_path: Path):
    def edit(ls: list[str]) -> None:
        task = json.loads(ls[0])
        edit_task(ls, 0, bug_patch=task["bug_patch"].replace("\n ", "\n #", 1))

    assert_fails(tmp_path, edit, "task tinycalc-001: bug_patch does not apply")


def _retarget(ls: list[str], k: int, old: bytes, new: bytes, path: str, extra: tuple = ()) -> None:
    """Make task k inject a different bug (old -> new in `path`), keeping its test lists."""
    task = json.loads(ls[k])
    clean = {path: (ROOT / "tests/fixtures/repofix/repos" / task["family"] / path).read_bytes()}
    assert old in clean[path]
    buggy = {path: clean[path].replace(old, new, 1)}
    if extra:
        buggy[path] = buggy[path].replace(extra[0], extra[1], 1)
    edit_task(ls, k, bug_patch=make_patch(clean, buggy), patch=make_patch(buggy, clean))
    assert apply_patch(buggy, make_patch(buggy, clean)) == clean


def test_bug_that_breaks_no_test(tmp_path: Path):
    def edit(ls):
        return _retarget(ls, 0, b'"""Numeric helpers."""', b'"""Numeric helpers!"""', "tinycalc/core.py")

    assert_fails(tmp_path, edit, "task tinycalc-001: the bug breaks no listed test")


def test_test_that_times_out(tmp_path: Path):
    def edit(ls):
        return _retarget(
            ls,
            0,
            b"    total = start\n",
            b"    total = start\n    while True:\n        pass\n",
            "tinycalc/core.py",
        )

    params_file, params = corrupt(tmp_path, edit)
    fast = params.model_copy(update={"sandbox": params.sandbox.model_copy(update={"test_timeout_s": 1.0})})
    code, out = run_validate(write_params(fast, params_file))
    assert code == 1 and "task tinycalc-001" in out and "timed out" in out, out
    assert not Path(params.tasks.repofix.lock).exists()


def test_flaky_test(tmp_path: Path):
    # The bug breaks running_total on a coin flip per run (the sandbox allows no state between
    # runs); 16 runs all agreeing by chance has probability 2**-15.
    module = "import random as _random\n_BROKEN = _random.SystemRandom().random() < 0.5\n"

    def edit(ls: list[str]) -> None:
        _retarget(
            ls,
            0,
            b'"""Numeric helpers."""\n',
            b'"""Numeric helpers."""\n' + module.encode(),
            "tinycalc/core.py",
            extra=(b"    total = start\n", b"    total = start + int(_BROKEN)\n"),
        )

    params_file, params = corrupt(tmp_path, edit)
    many = params.model_copy(update={"validate_": params.validate_.model_copy(update={"repeats": 16})})
    code, out = run_validate(write_params(many, params_file))
    assert code == 1 and "task tinycalc-001: flaky: outcomes differ between runs" in out, out
    assert not Path(params.tasks.repofix.lock).exists()


def test_family_tree_edited_after_synthesis(tmp_path: Path):
    params_file, params = corrupt(tmp_path, lambda ls: None)
    core = Path(params.tasks.repofix.repos) / "tinycalc" / "tinycalc" / "core.py"
    core.write_text(core.read_text() + "\n# edited\n")
    code, out = run_validate(params_file)
    assert code == 1 and "family tree differs from files_sha256 (tinycalc/core.py)" in out, out


def test_bad_split_params_name_the_field(tmp_path: Path):
    params = fixture_params(tmp_path)
    bad = params.model_copy(update={"tasks": params.tasks.model_copy(update={"n_eval_families": 2})})
    code, out = run_validate(write_params(bad, tmp_path / "params.yaml"))
    assert code == 1 and "tasks.n_eval_families" in out, out


@pytest.mark.parametrize("field,value,needle", [("seeds", [1, 1], "distinct"), ("bogus", 1, "bogus")])
def test_bad_params_file(tmp_path: Path, field: str, value: object, needle: str):
    import yaml

    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw[field] = value
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    code, out = run_validate(tmp_path / "params.yaml")
    assert code == 1 and "params.yaml: invalid params" in out and needle in out, out


def _edit_hidden(tmp_path: Path, edit) -> Path:
    params = fixture_params(tmp_path, copy_data=True)
    path = Path(params.tasks.repofix.manifest).with_name("manifest.hidden_checks.jsonl")
    lines = path.read_text().splitlines()
    edit(lines)
    path.write_text("".join(line + "\n" for line in lines))
    return write_params(params, tmp_path / "params.yaml")


def test_lock_binds_the_hidden_checks(tmp_path: Path):
    params = fixture_params(tmp_path)
    code, out = run_validate(write_params(params, tmp_path / "params.yaml"))
    assert code == 0, out
    lock = ManifestLock.model_validate_json(Path(params.tasks.repofix.lock).read_text())
    hidden = Path(params.tasks.repofix.manifest).with_name("manifest.hidden_checks.jsonl")
    import hashlib

    assert lock.hidden_checks_sha256 == hashlib.sha256(hidden.read_bytes()).hexdigest()
    lines = {json.loads(x)["instance_id"]: x for x in hidden.read_text().splitlines()}
    for t in lock.tasks:
        assert t.hidden_checks > 0 and t.hidden_pass_on_fix and t.hidden_fail_on_bug
        assert t.hidden_sha256 == hashlib.sha256(lines[t.instance_id].encode()).hexdigest()


def test_tampered_hidden_check_input_is_refused(tmp_path: Path):
    """Changing one recorded input changes the clean answers: the locked digest no longer holds."""

    def edit(lines: list[str]) -> None:
        h = json.loads(lines[0])
        assert h["checks"][0]["kwargs"][0][0] == "values"  # tinycalc-001: mean(values)
        h["checks"][0]["kwargs"][0][1] = ["list", [["int", 1000]]]
        lines[0] = json.dumps(h)

    params_file = _edit_hidden(tmp_path, edit)
    code, out = run_validate(params_file)
    assert code == 1 and "hidden checks" in out and "tinycalc-001" in out, out


@pytest.mark.parametrize("change", ["type", "site", "test"])
def test_tampered_typed_assertion_table_is_refused(tmp_path: Path, change: str):
    """The table must be exactly what the clean tree's asserts see: a looser type, a dropped site or
    a dropped test are refused (a looser table would let a rigged type through)."""

    def edit(lines: list[str]) -> None:
        h = json.loads(lines[0])
        table = h["typed_asserts"]
        test = next(t for t in sorted(table) if table[t])
        site = sorted(table[test])[0]
        if change == "type":
            table[test][site].append(["tinycalc.core:_Any!eq", "int"])
        elif change == "site":
            del table[test][site]
        else:
            del table[test]
        lines[0] = json.dumps(h)

    code, out = run_validate(_edit_hidden(tmp_path, edit))
    assert code == 1 and "tinycalc-001: typed assertions" in out and "pappo hidden-checks" in out, out


def test_missing_hidden_checks_are_refused(tmp_path: Path):
    params_file = _edit_hidden(tmp_path, lambda lines: lines.pop(0))
    code, out = run_validate(params_file)
    assert code == 1 and "no hidden checks" in out and "pappo hidden-checks" in out, out


def test_hidden_checks_that_pass_on_the_bug_are_refused(tmp_path: Path):
    """Dropping every check the bug answers differently leaves checks that cannot tell: refused."""
    params = fixture_params(tmp_path, copy_data=True)
    from pappo.sandbox.grading import outcomes_digest
    from pappo.sandbox.runner import run_many
    from pappo.tasks.store import TaskStore

    store = TaskStore.from_params(params, "repofix")
    path = Path(params.tasks.repofix.manifest).with_name("manifest.hidden_checks.jsonl")
    lines = path.read_text().splitlines()
    h = json.loads(lines[0])
    task = store.task(h["instance_id"])
    spec = {"roots": h["roots"], "checks": h["checks"], "always": True}
    clean, bug = run_many([(store.clean(task), [], spec), (store.buggy(task), [], spec)], params.sandbox)
    keep = [i for i, (a, b) in enumerate(zip(clean.hidden, bug.hidden)) if a == b]
    assert keep and len(keep) < len(h["checks"])
    h["checks"] = [h["checks"][i] for i in keep]
    h["outcomes_sha256"] = outcomes_digest([clean.hidden[i] for i in keep])
    lines[0] = json.dumps(h)
    path.write_text("".join(x + "\n" for x in lines))
    code, out = run_validate(write_params(params, tmp_path / "params.yaml"))
    assert code == 1 and "no check fails on the buggy tree" in out, out


def test_a_warm_up_family_that_is_a_benchmark_family_by_name_or_tree_is_a_problem():
    from pappo.tasks.models import FamilyLock
    from pappo.tasks.validate_sets import overlap

    def fam(tree: str) -> FamilyLock:
        return FamilyLock(tree_sha256=tree * 64, n_tests=3, source_lines=10)

    bench = {"ledger": fam("a"), "semverlib": fam("b")}
    assert overlap(bench, {"warm": fam("c")}) == []
    assert overlap(bench, {"ledger": fam("c"), "copy": fam("b")}) == [
        "warm-up family ledger is also a benchmark family; rename or remove it",
        "warm-up family has the same tree as a benchmark family: copy = semverlib",
    ]


def test_hidden_checks_the_clean_tree_answers_differently_are_named_nondeterministic():
    from pappo.sandbox.runner import TestRun
    from pappo.tasks.hidden import read_hidden
    from pappo.tasks.manifest import read_manifest
    from pappo.tasks.validate_checks import Prepared, check_hidden

    task = read_manifest(FIXTURES / "repofix" / "manifest.jsonl")[0][0]
    h = read_hidden(FIXTURES / "repofix" / "manifest.hidden_checks.jsonl")[task.instance_id]
    answers = [{"r": ["int", 1]}] * len(h.checks)
    other = [*answers[:-1], {"r": ["int", 2]}]  # a tie broken at random: the last check differs
    clean = [TestRun({}, hidden=answers), TestRun({}, hidden=other)]
    errors: list[str] = []
    assert check_hidden(Prepared(task, {}, h), object(), clean, [], errors) is None
    last = f"checks[{len(h.checks) - 1}] ({h.checks[-1]['target']})"
    assert errors == [
        f"task {task.instance_id}: hidden checks: the clean tree's answers are nondeterministic: {last} "
        "differ between clean runs; run `pappo hidden-checks`"
    ]

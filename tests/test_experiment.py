"""`pappo train` / `pappo experiment` bad input, the budget rule and the reuse rule (the full runs
are exercised through real DVC in test_dvc_smoke)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import ROOT, write_params
from pappo.cli import app
from pappo.config import Params, load_matrix_params, load_params
from pappo.experiment import receipt as rc
from pappo.experiment.report import Budget, params_subset
from pappo.experiment.reuse import reusable
from pappo.io import PappoError


def pappo(*args: str, cwd: Path):
    """The real CLI in-process; `--out` paths are made absolute under cwd."""
    args = tuple(str(cwd / a) if i and args[i - 1] == "--out" else a for i, a in enumerate(args))
    return CliRunner().invoke(app, list(args))


def test_budget_over_the_limit_is_refused_with_numbers():
    ok = dict(
        episodes_limit=8,
        generated_tokens_limit=100,
        episodes_used=8,
        generated_tokens_used=100,
        task_draws_sha256="0" * 64,
        eval_episodes=0,
        eval_tokens=0,
    )
    Budget(**ok)
    with pytest.raises(ValueError, match="9/8 episodes"):
        Budget(**{**ok, "episodes_used": 9})
    with pytest.raises(ValueError, match="101/100 generated tokens"):
        Budget(**{**ok, "generated_tokens_used": 101})


def test_train_refuses_an_unknown_method_and_a_missing_lock(fx_params: Params, tmp_path: Path):
    params = write_params(fx_params, tmp_path / "params.yaml")
    bad = pappo(
        "train", "--params", str(params), "--method", "dpo", "--seed", "0", "--out", "out", cwd=tmp_path
    )
    assert (
        bad.exit_code == 1
        and "--method 'dpo': use one of ['base', 'rft', 'grpo', 'ppo', 'pappo']" in bad.output
    )
    no_lock = pappo(
        "train", "--params", str(params), "--method", "ppo", "--seed", "0", "--out", "out", cwd=tmp_path
    )
    assert no_lock.exit_code == 1 and "run `pappo validate`" in no_lock.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "failure.json"
    ]  # no report, a failure receipt
    failure = json.loads((tmp_path / "out" / "failure.json").read_text())
    assert failure["status"] == "failure" and "pappo validate" in failure["error"]
    assert str(tmp_path) not in json.dumps(failure)  # sanitised: no absolute paths


def test_train_refuses_a_seed_without_a_split(fx_params: Params, tmp_path: Path):
    params = write_params(fx_params, tmp_path / "params.yaml")
    assert pappo("validate", "--params", str(params), cwd=tmp_path).exit_code == 0
    run = pappo(
        "train", "--params", str(params), "--method", "grpo", "--seed", "7", "--out", "out", cwd=tmp_path
    )
    assert run.exit_code == 1 and "no split for seed 7 (have [0, 1])" in run.output
    assert not (tmp_path / "out" / "report.json").exists()
    again = pappo(
        "train", "--params", str(params), "--method", "grpo", "--seed", "7", "--out", "out", cwd=tmp_path
    )
    assert again.exit_code == 1  # a second failure keeps the first receipt
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["failure-2.json", "failure.json"]


def test_a_run_is_reused_only_when_complete_and_valid(fx_params: Params, tmp_path: Path):
    run = tmp_path / "seed_0" / "ppo"
    assert reusable(run, fx_params, 0, "ppo", "0" * 64) is None  # nothing there
    run.mkdir(parents=True)
    (run / "adapters").mkdir()
    (run / "report.json").write_text('{"method": "ppo"}')  # not a valid report
    assert reusable(run, fx_params, 0, "ppo", "0" * 64) is None


def test_a_run_whose_receipt_binds_other_code_is_retrained(fx_params: Params, tmp_path: Path):
    """Same report, params, imported code and base revision, but the receipt binds another dvc.yaml
    code list, other bytes of it, or uncommitted code: the audit would reject the copy, so it is no copy."""
    from pappo.experiment.run import source_sha256
    from pappo.io import canonical_json, sha256_bytes
    from pappo.stage_code import ENVIRONMENT
    from test_evidence_receipt import git, make
    from test_evidence_summary import run_report

    repo = tmp_path / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "src" / "pkg" / "a.py").write_text("A = 1\n")
    (repo / "src" / "pkg" / "b.py").write_text("B = 2\n")
    (repo / "dvc.yaml").write_text("stages:\n  train:\n    cmd: x\n    deps: [src/pkg/a.py]\n")
    for name in ENVIRONMENT:
        (repo / name).write_text(name)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "init")
    run = tmp_path / "runs" / "seed_0" / "ppo"
    (run / "adapters").mkdir(parents=True)
    report = run_report("ppo", 0).model_copy(
        update={
            "params_sha256": sha256_bytes(canonical_json(params_subset(fx_params, "ppo")).encode()),
            "source_sha256": source_sha256(),
        }
    )
    (run / "report.json").write_text(report.model_dump_json())

    def receipt(paths: list[str]) -> None:
        made = make(run, repo).model_copy(update={"source": rc.collect_source(repo, [*paths, *ENVIRONMENT])})
        (run / "receipt.json").write_text(made.model_dump_json())

    revision = report.checkpoint.revision
    receipt(["src/pkg/a.py"])  # dvc.yaml's list and the environment
    assert reusable(run, fx_params, 0, "ppo", revision, repo_root=repo) is not None
    assert reusable(run, fx_params, 0, "ppo", "f" * 64, repo_root=repo) is None  # another base
    receipt(["src/pkg"])  # a wider list than dvc.yaml's: the audit's "binds other code"
    assert reusable(run, fx_params, 0, "ppo", revision, repo_root=repo) is None
    receipt(["src/pkg/a.py"])
    (repo / "dvc.yaml").write_text("stages:\n  train:\n    cmd: x\n    deps: [src/pkg/a.py, src/pkg/b.py]\n")
    git(repo, "commit", "-qam", "widen")  # the stage now lists b.py too (dvc.yaml widened)
    assert reusable(run, fx_params, 0, "ppo", revision, repo_root=repo) is None
    receipt(["src/pkg/a.py", "src/pkg/b.py"])
    assert reusable(run, fx_params, 0, "ppo", revision, repo_root=repo) is not None
    (repo / "src" / "pkg" / "b.py").write_text("B = 3\n")
    git(repo, "commit", "-qam", "edit")  # listed bytes changed since the receipt: stale
    assert reusable(run, fx_params, 0, "ppo", revision, repo_root=repo) is None
    (repo / "src" / "pkg" / "a.py").write_text("A = 4\n")  # made from uncommitted code ...
    receipt(["src/pkg/a.py", "src/pkg/b.py"])
    assert (
        reusable(run, fx_params, 0, "ppo", revision, repo_root=repo) is not None
    )  # ... reused while still dirty
    git(repo, "commit", "-qam", "commit it")  # committed now: a rerun binds a clean tree, the copy does not
    assert reusable(run, fx_params, 0, "ppo", revision, repo_root=repo) is None


def test_the_untrained_base_run_reads_no_rl_params(fx_params: Params):
    """A hyperparameter try (`-S rl.actor_lr=...`) leaves the base runs valid: neither their report's
    params nor dvc.yaml's base_run stage include `rl`; every trained method's do, from matrix.yaml."""
    import yaml

    assert "rl" not in params_subset(fx_params, "base") and "rl" in params_subset(fx_params, "ppo")
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert set(params_subset(fx_params, "base")) == set(stages["base_run"]["params"])
    train = stages["train"]["params"]
    assert set(params_subset(fx_params, "ppo")) == {p for p in train if isinstance(p, str)} | {"rl"}
    assert (
        "rl" not in train
        and {"matrix.yaml": ["rl"]} in train
        and "--matrix matrix.yaml" in stages["train"]["cmd"]
    )
    assert "base" not in stages["train"]["matrix"]["method"]


def test_a_one_seed_try_leaves_the_published_matrix_valid():
    """The matrix reads `rl` from matrix.yaml only, so `dvc exp run -S seed=2 -S rl.actor_lr=...`
    (which edits params.yaml) stales the experiment alone; committed, the two `rl` are equal, so
    `dvc repro` trains each (seed, method) once (the experiment copies the matrix's runs)."""
    import yaml

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for name, stage in stages.items():
        if "rl" in stage.get("params", []) and name != "experiment":
            raise AssertionError(
                f"dvc.yaml stage {name} depends on params.yaml's rl: a one-seed try would rerun it"
            )
    assert "rl" in stages["experiment"]["params"] and "--matrix" not in stages["experiment"]["cmd"]
    assert load_matrix_params(ROOT / "params.yaml", ROOT / "matrix.yaml") == load_params(
        ROOT / "params.yaml"
    ), (
        "matrix.yaml's rl differs from params.yaml's: the published matrix and the experiment would train "
        "different configurations; make them equal before committing"
    )


def test_matrix_yaml_holds_the_rl_section_only_and_errors_name_the_file(tmp_path: Path):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text("rl:\n  updates: 3\n")
    assert load_matrix_params(ROOT / "params.yaml", matrix).rl.updates == 3
    matrix.write_text("rl:\n  updates: 3\nlora:\n  rank: 2\n")
    with pytest.raises(
        PappoError, match="matrix.yaml: holds the seed matrix's `rl` section and nothing else"
    ):
        load_matrix_params(ROOT / "params.yaml", matrix)
    matrix.write_text("rl:\n  updatez: 3\n")
    with pytest.raises(PappoError, match=r"matrix.yaml: invalid params:\n  - rl.updatez"):
        load_matrix_params(ROOT / "params.yaml", matrix)
    with pytest.raises(PappoError, match="nowhere.yaml: not found"):
        load_matrix_params(ROOT / "params.yaml", tmp_path / "nowhere.yaml")

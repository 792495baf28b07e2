"""`pappo train` / `pappo experiment` bad input, the budget rule and the one-seed try overlay (the
full runs are exercised through real DVC in test_dvc_smoke)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from conftest import ROOT, write_params
from pappo.cli import app
from pappo.config import Params, experiment_params, load_params
from pappo.experiment.report import RUN_METHODS, Budget, params_subset
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
    assert not (tmp_path / "out").exists()  # bad input, found before any work: no run, no receipt


def test_train_refuses_a_seed_without_a_split(fx_params: Params, tmp_path: Path):
    params = write_params(fx_params, tmp_path / "params.yaml")
    assert pappo("validate", "--params", str(params), cwd=tmp_path).exit_code == 0
    run = pappo(
        "train", "--params", str(params), "--method", "grpo", "--seed", "7", "--out", "out", cwd=tmp_path
    )
    assert run.exit_code == 1 and "no split for seed 7 (have [0, 1])" in run.output
    no_base = pappo(
        "train", "--params", str(params), "--method", "grpo", "--seed", "0", "--out", "out",
        "--base", str(tmp_path / "nobase"), cwd=tmp_path,
    )  # fmt: skip
    assert no_base.exit_code == 1 and "build it with `pappo base-model`" in no_base.output
    assert not (tmp_path / "out").exists()  # neither left a run folder with a failure receipt


def test_train_and_experiment_check_out_before_any_work(tmp_path: Path, monkeypatch):
    (tmp_path / "afile").write_text("x")
    for out, needle in [("afile", "is a file, not a folder"), ("afile/run", "is a file, so no folder")]:
        for cmd in (["train", "--method", "ppo", "--seed", "0"], ["experiment"]):
            r = pappo(*cmd, "--params", str(tmp_path / "none.yaml"), "--out", out, cwd=tmp_path)
            assert (
                r.exit_code == 1
                and r.stderr.startswith(f"error: --out {tmp_path / out}: ")
                and needle in r.stderr
            )
    import tempfile

    def refuse(**_):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)  # root passes chmod checks: fake the refusal
    r = pappo("train", "--method", "ppo", "--seed", "0", "--out", "new/run", cwd=tmp_path)
    assert r.exit_code == 1 and f"cannot write in {tmp_path} (Permission denied)" in r.stderr
    assert not (tmp_path / "new").exists()


def test_an_unwritable_failure_receipt_does_not_hide_the_runs_error(
    fx_params: Params, tmp_path: Path, monkeypatch
):
    from pappo.experiment import run

    def crash(*_):
        raise RuntimeError("the run's own error")

    monkeypatch.setattr(run, "_preflight", lambda *_: ("0" * 64, [], []), raising=False)
    monkeypatch.setattr(run, "_run", crash)
    (tmp_path / "afile").write_text("x")
    logged: list[str] = []
    with pytest.raises(RuntimeError, match="the run's own error"):
        run.run_method(fx_params, 0, "ppo", tmp_path / "afile" / "out", tmp_path, log=logged.append)
    assert logged and "failure receipt could not be written" in logged[-1]


def test_the_untrained_base_run_reads_no_rl_params(fx_params: Params):
    """A hyperparameter change leaves the base runs' reports unchanged: their params hold no `rl`;
    every trained method's do, and the seed's stage (every method) reads what any method reads and
    writes every method's run folder."""
    import yaml

    assert "rl" not in params_subset(fx_params, "base") and "rl" in params_subset(fx_params, "ppo")
    train = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["train"]
    assert set(params_subset(fx_params, "ppo")) == set(train["params"])
    assert train["cmd"].split()[:2] == ["pappo", "train-seed"] and list(train["matrix"]) == ["seed"]
    folders = {o.split("/")[3] for o in train["outs"]}
    assert folders == set(RUN_METHODS) and len(train["outs"]) == 5 * len(RUN_METHODS)


def test_train_seed_refuses_bad_methods_and_a_missing_lock_before_any_work(fx_params: Params, tmp_path: Path):
    params = write_params(fx_params, tmp_path / "params.yaml")
    for methods in (["--method", "dpo"], ["--method", "ppo", "--method", "ppo"]):
        bad = pappo(
            "train-seed", "--params", str(params), "--seed", "0", "--out", "s", *methods, cwd=tmp_path
        )
        assert bad.exit_code == 1 and "each at most once" in bad.output, bad.output
    no_lock = pappo("train-seed", "--params", str(params), "--seed", "0", "--out", "s", cwd=tmp_path)
    assert no_lock.exit_code == 1 and "run `pappo validate`" in no_lock.output
    assert not (tmp_path / "s").exists()  # no run folder, no failure receipt


def test_a_one_seed_try_is_an_overlay_only_the_experiment_reads():
    """`rl` is the published configuration, read by the matrix and the experiment alike; a try
    (`-S +tune.rl.actor_lr=...`) edits `tune`, which only the experiment stage depends on, so it
    stales that stage alone and the published runs stay valid."""
    import yaml

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    readers = sorted(n for n, st in stages.items() if "tune" in st.get("params", []))
    assert readers == ["experiment"], f"dvc.yaml stages depending on `tune`: {readers}"
    assert {"rl", "tune", "seed"} <= set(stages["experiment"]["params"])
    assert "rl" in stages["train"]["params"] and not (ROOT / "matrix.yaml").exists()
    committed = load_params(ROOT / "params.yaml")
    assert committed.tune.rl == {}, "commit tries as a change of `rl`, not as a leftover `tune.rl`"
    assert experiment_params(committed) == committed


def test_the_try_is_merged_field_by_field_and_errors_name_the_field(fx_params: Params, tmp_path: Path):
    raw = fx_params.model_dump(mode="json", by_alias=True)
    tried = Params.model_validate({**raw, "tune": {"rl": {"actor_lr": 0.5, "gppo": {"delta": 0.3}}}})
    merged = experiment_params(tried)
    assert (merged.rl.actor_lr, merged.rl.gppo.delta) == (0.5, 0.3)
    assert merged.rl.gppo.geometry == fx_params.rl.gppo.geometry  # untouched siblings kept
    assert tried.rl == fx_params.rl  # the published `rl` is not changed by the try
    params = tmp_path / "params.yaml"
    for bad, match in [
        ({"updatez": 3}, r"tune\.rl\.updatez: Extra inputs are not permitted"),
        ({"clip_ratio_c": 0.5}, r"tune\.rl\.clip_ratio_c: .*greater than 1"),
    ]:
        params.write_text(yaml.safe_dump({**raw, "tune": {"rl": bad}}))
        with pytest.raises(PappoError, match=match) as e:
            load_params(params)
        assert str(params) in str(e.value)

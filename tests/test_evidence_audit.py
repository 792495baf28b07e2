"""Audit pieces that need no pipeline run: old schema versions, missing files, the claims rule,
where the CLI writes the verdict. (The whole audit and every tamper case run on a real
`dvc repro` in test_dvc_smoke.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pappo.cli import app
from pappo.config import Params
from pappo.config.evidence import ClaimParams
from pappo.evidence import audit as audit_mod
from pappo.evidence.audit import AuditVerdict, render
from pappo.evidence.audit_context import AuditContext
from pappo.evidence.git_trees import GitTrees
from pappo.evidence.run_files import load_run

ROOT = Path(__file__).resolve().parents[1]


def ctx(fx_params: Params, tmp_path: Path) -> AuditContext:
    return AuditContext(fx_params, tmp_path, tmp_path / "runs", tmp_path / "base", ROOT / "schemas")


def write_report(tmp_path: Path, method: str, data: dict) -> None:
    run = tmp_path / "runs" / "seed_0" / method
    run.mkdir(parents=True)
    (run / "report.json").write_text(json.dumps(data))


def test_a_report_of_an_older_schema_version_is_refused_with_a_fix(fx_params: Params, tmp_path: Path):
    write_report(tmp_path, "ppo", {"schema_version": 0, "method": "ppo"})
    c = ctx(fx_params, tmp_path)
    assert load_run(c, 0, "ppo") is None
    [failure] = c.failures
    assert failure.field == "schema_version" and failure.expected == "1" and failure.found == "0"
    assert "regenerate it" in failure.message and failure.file == "runs/seed_0/ppo/report.json"


def test_a_missing_run_names_the_stage_that_writes_it(fx_params: Params, tmp_path: Path):
    c = ctx(fx_params, tmp_path)
    assert load_run(c, 1, "grpo") is None
    assert "dvc repro train@1`" in c.failures[0].message


def test_an_invalid_report_names_the_schema(fx_params: Params, tmp_path: Path):
    write_report(tmp_path, "rft", {"schema_version": 1, "method": "rft"})
    c = ctx(fx_params, tmp_path)
    assert load_run(c, 0, "rft") is None
    assert "schemas/run_report.schema.json" in c.failures[0].expected


def test_the_verdict_text_gives_numbers_and_reasons(fx_params: Params, tmp_path: Path):
    from pappo.evidence.audit import ClaimVerdict

    claim = ClaimVerdict(
        id="x",
        holds=False,
        metric="success",
        method="pappo",
        baseline="grpo",
        delta=0.1,
        lo=-0.05,
        hi=0.2,
        seed_wins=1,
        n_seeds=3,
        reasons=["1/3 seed wins < 2"],
    )
    text = render(True, [], [claim], None)
    assert "integrity: OK" in text and "claim x: DOES NOT HOLD" in text
    assert "improvement +0.100, 95% t interval over seeds [-0.050, +0.200]" in text
    assert "  - 1/3 seed wins < 2" in text
    assert ClaimParams(id="ok-id", metric="success", method="ppo").baseline == "best_non_ppo"


def test_a_plain_pappo_audit_writes_nothing_and_out_writes_the_verdict(
    fx_params: Params, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # receipts/audit.json is the audit stage's DVC output: a reviewer's plain run must leave it alone
    verdict = AuditVerdict(
        exit_code=2,
        integrity_ok=True,
        head="0" * 40,
        runs_checked=0,
        failures=[],
        claims=[],
        numerics=None,
        verdict="integrity: OK",
    )
    monkeypatch.setattr(audit_mod, "audit", lambda *args: verdict)  # the CLI's output, not the checks
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(fx_params.model_dump(mode="json")))
    monkeypatch.chdir(tmp_path)
    plain = CliRunner().invoke(app, ["audit"])
    assert plain.exit_code == 2 and "verdict not written; pass --out FILE to keep it" in plain.output
    assert "integrity: OK" in plain.output and not (tmp_path / "receipts").exists()
    kept = CliRunner().invoke(app, ["audit", "--out", "kept/verdict.json"])
    assert kept.exit_code == 2 and "verdict written to kept/verdict.json" in kept.output
    assert AuditVerdict.model_validate_json((tmp_path / "kept/verdict.json").read_text()) == verdict
    assert not (tmp_path / "receipts").exists()


def test_the_audit_stage_writes_its_verdict_file_explicitly():
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["audit"]
    assert "--out receipts/audit.json" in stage["cmd"] and "--stage" in stage["cmd"]
    # an output, not a declared metric: its hashes and verdict text stay out of dvc exp show
    assert "receipts/audit.json" in stage["outs"] and "metrics" not in stage


def test_git_trees_gives_the_receipt_s_tree_hash_with_a_few_git_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import subprocess

    from pappo.experiment import receipt as rc

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
        )

    (tmp_path / "src").mkdir()
    for n in range(30):
        (tmp_path / "src" / f"m{n}.py").write_text(f"x = {n}\n")
    (tmp_path / "other.txt").write_text("not bound\n")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "one")
    first = rc.collect_source(tmp_path, ["src", "gone.py"]).tree_sha256
    (tmp_path / "src" / "m0.py").write_text("x = 'changed'\n")
    git("commit", "-qam", "two")
    calls: list[list[str]] = []
    run = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda args, *a, **k: calls.append(args) or run(args, *a, **k))
    trees = GitTrees(tmp_path, ("src", "gone.py"))
    assert trees.at("HEAD") == rc.collect_source(tmp_path, ["src", "gone.py"]).tree_sha256 != first
    assert trees.at("HEAD~1") == first and trees.is_commit("HEAD~1")
    assert trees.at("HEAD") == trees.at("HEAD")  # cached
    assert trees.at("0" * 40) is None and not trees.is_commit("0" * 40) and trees.at("nope") is None
    listed = [c for c in calls if c[:2] in (["git", "ls-tree"], ["git", "cat-file"])]
    assert len(listed) <= 8, listed  # a few per commit, not one per file (30 files)
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert GitTrees(outside, ("src",)).at("HEAD") is None  # not a git repository


def test_a_result_taken_before_the_last_update_fails(tmp_path: Path):
    """A policy kept at an earlier update (best on the held-out tasks) is selection on the test set:
    the published result must be the evaluation after the last update (a statistics review)."""
    from types import SimpleNamespace

    from pappo.evidence.audit import _check_final_eval
    from test_evidence_summary import UPDATES, run_report

    found: list[tuple[str, str]] = []
    ctx = SimpleNamespace(
        params=SimpleNamespace(rl=SimpleNamespace(updates=UPDATES)),
        runs=tmp_path,
        fail=lambda file, field, expected, got, message: found.append((field, message)),
    )
    honest = {(0, "ppo"): run_report("ppo", 0), (0, "base"): run_report("base", 0)}
    _check_final_eval(ctx, honest)
    assert found == []
    ppo = honest[0, "ppo"]
    cut = ppo.model_copy(update={"evals": ppo.evals[:-1], "final_eval": ppo.evals[-2].result})
    _check_final_eval(ctx, {(0, "ppo"): cut})
    assert found == [("evals[-1].update", "the last evaluation is not after the last update")]
    found.clear()
    picked = ppo.model_copy(update={"final_eval": ppo.evals[0].result})
    _check_final_eval(ctx, {(0, "ppo"): picked})
    assert found == [("final_eval", "the published result is not the last evaluation")]

"""The tuning history from git: fixture repositories with two commits of dvc.lock (and params.yaml)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from pappo.config.evidence import ClaimParams
from pappo.evidence.history import claim_history, read_history

CLAIM = ClaimParams(
    id="cpu-pappo-beats-ppo",
    metric="success",
    method="pappo",
    baseline="ppo",
    min_delta=0.15,
    min_seed_wins=2,
    ci_rule="lower_bound_above_zero",
    needs_gpu=False,
)
SEEDS = [0, 1]


def lock(
    lr: float, base_md5: str = "b" * 32 + ".dir", seeds: list[int] = SEEDS, one_file: bool = False
) -> dict[str, Any]:
    """A dvc.lock with the train stages of `seeds` (ppo and pappo) run with actor_lr `lr`; `rl` read
    from matrix.yaml as before 2026-12-04, or from params.yaml with `one_file`."""
    recorded = {"params.yaml": {"seeds": SEEDS}, "matrix.yaml": {"rl": {"actor_lr": lr}}}
    if one_file:
        recorded = {"params.yaml": {"seeds": SEEDS, "rl": {"actor_lr": lr}}}
    stages = {}
    for s in seeds:
        for m in ("ppo", "pappo"):
            stages[f"train@{s}-{m}"] = {
                "cmd": f"pappo train --seed {s} --method {m}",
                "deps": [{"path": "models/base", "hash": "md5", "md5": base_md5}],
                "params": recorded,
                "outs": [{"path": f"reports/runs/seed_{s}/{m}", "md5": "c" * 32 + ".dir"}],
            }
    return {"schema": "2.0", "stages": stages}


def params(min_delta: float) -> dict[str, Any]:
    return {
        "seeds": SEEDS,
        "claims": [CLAIM.model_copy(update={"min_delta": min_delta}).model_dump(mode="json")],
    }


def commit(repo: Path, files: dict[str, dict[str, Any]], message: str) -> None:
    for name, data in files.items():
        (repo / name).write_text(yaml.safe_dump(data))
    subprocess.run(["git", "add", *files], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message], cwd=repo, check=True
    )


def repo_with(tmp_path: Path, *commits: dict[str, dict[str, Any]]) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for i, files in enumerate(commits):
        commit(tmp_path, files, f"commit {i}")
    return tmp_path


def test_a_second_configuration_on_the_published_seeds_makes_the_claim_exploratory(tmp_path: Path):
    repo = repo_with(
        tmp_path, {"dvc.lock": lock(0.003), "params.yaml": params(0.15)}, {"dvc.lock": lock(0.01)}
    )
    history = read_history(repo, SEEDS, [CLAIM])
    assert history.readable and history.configurations == {"0/pappo": 2, "0/ppo": 2, "1/pappo": 2, "1/ppo": 2}
    exploratory, why = claim_history(history, CLAIM, "ppo", SEEDS)
    assert exploratory and "2 configurations were evaluated on seeds 0, 1" in why
    assert history.edits == []


def test_a_new_base_checkpoint_is_another_configuration_and_a_rerun_of_the_same_is_not(tmp_path: Path):
    same = repo_with(
        tmp_path / "same", {"dvc.lock": lock(0.003)}, {"dvc.lock": lock(0.003), "params.yaml": params(0.15)}
    )
    history = read_history(same, SEEDS, [CLAIM])
    assert set(history.configurations.values()) == {1}
    assert claim_history(history, CLAIM, "ppo", SEEDS) == (
        False,
        "configurations in history per seed: seed 0: 1, seed 1: 1",
    )
    moved = repo_with(tmp_path / "moved", {"dvc.lock": lock(0.003)}, {"dvc.lock": lock(0.003, one_file=True)})
    assert set(read_history(moved, SEEDS, [CLAIM]).configurations.values()) == {1}  # `rl` changed file only
    changed = repo_with(
        tmp_path / "changed", {"dvc.lock": lock(0.003)}, {"dvc.lock": lock(0.01, one_file=True)}
    )
    assert set(read_history(changed, SEEDS, [CLAIM]).configurations.values()) == {2}
    base = repo_with(
        tmp_path / "base", {"dvc.lock": lock(0.003)}, {"dvc.lock": lock(0.003, "e" * 32 + ".dir")}
    )
    assert claim_history(read_history(base, SEEDS, [CLAIM]), CLAIM, "ppo", SEEDS)[0]


def test_a_min_delta_lowered_after_the_runs_were_committed_is_flagged_with_both_versions(tmp_path: Path):
    repo = repo_with(
        tmp_path, {"dvc.lock": lock(0.003), "params.yaml": params(0.15)}, {"params.yaml": params(0.05)}
    )
    edited = CLAIM.model_copy(update={"min_delta": 0.05})
    history = read_history(repo, SEEDS, [edited])
    [edit] = history.edits
    assert (edit.claim, edit.registered["min_delta"], edit.now["min_delta"]) == (CLAIM.id, 0.15, 0.05)
    exploratory, why = claim_history(history, edited, "ppo", SEEDS)
    assert exploratory and "bar edited after run reports of its seeds were committed" in why
    assert "registered {metric: success, baseline: ppo, min_delta: 0.15" in why and "now {" in why


def test_a_bar_changed_before_any_run_report_existed_is_not_flagged(tmp_path: Path):
    repo = repo_with(
        tmp_path, {"params.yaml": params(0.15)}, {"params.yaml": params(0.05)}, {"dvc.lock": lock(0.003)}
    )
    edited = CLAIM.model_copy(update={"min_delta": 0.05})
    history = read_history(repo, SEEDS, [edited])
    assert history.edits == [] and not claim_history(history, edited, "ppo", SEEDS)[0]


def test_without_git_history_the_audit_says_so_and_does_not_guess(tmp_path: Path):
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump(lock(0.003)))
    history = read_history(tmp_path, SEEDS, [CLAIM])
    assert not history.readable and history.reason.startswith("history could not be read")
    exploratory, why = claim_history(history, CLAIM, "ppo", SEEDS)
    assert not exploratory and why == history.reason


def test_a_shallow_clone_is_named_as_such(tmp_path: Path):
    origin = repo_with(tmp_path / "origin", {"dvc.lock": lock(0.003)}, {"dvc.lock": lock(0.01)})
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(clone)], check=True)
    history = read_history(clone, SEEDS, [CLAIM])
    assert not history.readable and "git fetch --unshallow" in history.reason


def test_a_claim_that_holds_on_its_numbers_is_exploratory_when_its_seeds_were_tuned(tmp_path: Path):
    from pappo.evidence.verdicts import evaluate_claim
    from test_evidence_summary import SEEDS as RUN_SEEDS
    from test_evidence_summary import run_report

    reports = {(s, m): run_report(m, s) for s in RUN_SEEDS for m in ("ppo", "pappo")}
    # the summary fixture's pappo beats ppo by +0.2, +0.2, 0.0: with ci_rule none and 2 seed wins it holds
    claim = CLAIM.model_copy(update={"min_delta": 0.0, "ci_rule": "none"})
    clean = evaluate_claim(claim, reports, {}, list(RUN_SEEDS))
    assert clean.verdict == "holds" and clean.holds and clean.per_seed == pytest.approx([0.2, 0.2, 0.0])
    tuned = repo_with(
        tmp_path,
        {"dvc.lock": lock(0.003, seeds=list(RUN_SEEDS))},
        {"dvc.lock": lock(0.01, seeds=list(RUN_SEEDS))},
    )
    history = read_history(tuned, list(RUN_SEEDS), [claim])
    verdict = evaluate_claim(claim, reports, {}, list(RUN_SEEDS), history)
    assert verdict.verdict == "exploratory" and not verdict.holds
    assert "2 configurations were evaluated on seeds 0, 1, 2" in verdict.history
    assert verdict.reasons[-1] == "exploratory: see history; the statistical verdict alone: holds"


def test_a_release_record_is_labelled_and_compared_with_the_clone_history() -> None:
    from pappo.evidence.history import History, disagreement, from_record

    here = History(
        readable=True, reason="read", lock_versions=3, configurations={"0/ppo": 1, "0/pappo": 1}, edits=[]
    )
    record = from_record(here.model_dump_json().encode(), "the bundle")
    assert record.readable and record.reason.startswith("recorded by the release from git")
    assert disagreement(record, here) is None
    tuned = here.model_copy(update={"configurations": {"0/ppo": 1, "0/pappo": 15}})
    why = disagreement(from_record(tuned.model_dump_json().encode(), "the bundle"), here)
    assert why is not None and "0/pappo" in why and "15" in why
    missing = from_record(None, "the bundle")
    assert not missing.readable and "carries no history.json" in missing.reason
    assert not from_record(b"{not json", "the bundle").readable

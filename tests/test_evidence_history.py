"""The tuning history from git: fixture repositories with two commits of dvc.lock (and params.yaml)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from pappo.config.evidence import ClaimParams
from pappo.evidence.history import read_history
from pappo.evidence.history_claims import claim_history

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
    lr: float,
    base_md5: str = "b" * 32 + ".dir",
    seeds: list[int] = SEEDS,
    one_file: bool = False,
    methods: tuple[str, ...] = ("ppo", "pappo"),
    per_seed: bool = False,
) -> dict[str, Any]:
    """A dvc.lock with the train stages of `seeds` (of `methods`) run with actor_lr `lr`; `rl` read
    from matrix.yaml as before 2026-12-04, or from params.yaml with `one_file`; a stage per (seed,
    method) as before 2026-12-07, or with `per_seed` one per seed (`train@<seed>`, every method)."""
    recorded = {"params.yaml": {"seeds": SEEDS}, "matrix.yaml": {"rl": {"actor_lr": lr}}}
    if one_file:
        recorded = {"params.yaml": {"seeds": SEEDS, "rl": {"actor_lr": lr}}}
    stages = {}
    for s in seeds:
        for group in [methods] if per_seed else [(m,) for m in methods]:
            stages[f"train@{s}" if per_seed else f"train@{s}-{group[0]}"] = {
                "cmd": f"pappo train-seed --seed {s}"
                if per_seed
                else f"pappo train --seed {s} --method {group[0]}",
                "deps": [{"path": "models/base", "hash": "md5", "md5": base_md5}],
                "params": recorded,
                "outs": [{"path": f"reports/runs/seed_{s}/{m}", "md5": "c" * 32 + ".dir"} for m in group],
            }
    return {"schema": "2.0", "stages": stages}


def params(min_delta: float) -> dict[str, Any]:
    return registry(bar(min_delta=min_delta))


def bar(**update: Any) -> ClaimParams:
    """CLAIM with some of its fields changed."""
    return CLAIM.model_copy(update=update)


def registry(*claims: ClaimParams, seeds: list[int] = SEEDS) -> dict[str, Any]:
    """A params.yaml publishing `seeds` and registering `claims`."""
    return {"seeds": seeds, "claims": [c.model_dump(mode="json") for c in claims]}


def commit(repo: Path, files: dict[str, Any], message: str, date: str | None = None) -> None:
    """Commits `files`: data as YAML, or text as it is (to keep its comments); dated `date` if given."""
    for name, data in files.items():
        (repo / name).write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    subprocess.run(["git", "add", *files], cwd=repo, check=True)
    git(repo, "commit", "-qm", message, date=date)


def git(repo: Path, *args: str, date: str | None = None) -> str:
    """`git ARGS` in `repo` as a fixed author, both dates set to `date` if given (a backdated commit)."""
    env = dict(os.environ, **({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {}))
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout.strip()


def repo_with(tmp_path: Path, *commits: dict[str, Any]) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for i, files in enumerate(commits):
        commit(tmp_path, files, f"commit {i}")
    return tmp_path


def load_params_claims(repo: Path) -> list[ClaimParams]:
    return [ClaimParams(**c) for c in yaml.safe_load((repo / "params.yaml").read_text())["claims"]]


def rev(repo: Path, name: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", name], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


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
    same = repo_with(tmp_path / "same", {"params.yaml": params(0.15)}, {"dvc.lock": lock(0.003)})
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


def test_a_seed_stage_reads_as_the_per_method_stages_before_it(tmp_path: Path):
    """Since 2026-12-07 one stage (`train@<seed>`) trains every method of a seed: the same params and
    base in it are the same configuration as the older per-method stages', other params another
    (an older entry kept beside it counts too), and its run reports are evidence that a later claim
    comes after."""
    same = repo_with(
        tmp_path / "same",
        {"dvc.lock": lock(0.003, one_file=True), "params.yaml": params(0.15)},
        {"dvc.lock": lock(0.003, one_file=True, per_seed=True)},
    )
    configs = read_history(same, SEEDS, [CLAIM]).configurations  # a seed stage: every method's run
    assert configs["0/ppo"] == configs["1/pappo"] == 1 and set(configs.values()) == {1} and len(configs) == 8
    changed = repo_with(
        tmp_path / "changed",
        {"dvc.lock": lock(0.003, one_file=True), "params.yaml": params(0.15)},
        {"dvc.lock": lock(0.01, one_file=True, per_seed=True)},
    )
    configs = read_history(changed, SEEDS, [CLAIM]).configurations
    assert configs["0/ppo"] == configs["1/pappo"] == 2 and configs["0/rft"] == 1  # rft: the new stage only
    both = lock(0.003, one_file=True)  # an older entry DVC kept beside the new one, in one commit
    both["stages"].update(lock(0.01, one_file=True, per_seed=True)["stages"])
    mixed = repo_with(tmp_path / "mixed", {"dvc.lock": both, "params.yaml": params(0.15)})
    assert read_history(mixed, SEEDS, [CLAIM]).configurations["0/ppo"] == 2
    late = repo_with(
        tmp_path / "late",
        {"params.yaml": registry()},
        {"dvc.lock": lock(0.003, per_seed=True)},
        {"params.yaml": registry(CLAIM)},
    )
    exploratory, why = claim_history(read_history(late, SEEDS, [CLAIM]), CLAIM, "ppo", SEEDS)
    assert exploratory and "after run reports of its seeds" in why


def test_base_runs_under_each_older_stage_name_are_evidence(tmp_path: Path):
    """Base ran as `train@<seed>-base` before it had its own `base_run@<seed>` stage: a claim
    against base registered after either is post hoc."""
    vs_base = bar(id="cpu-ppo-beats-base", method="ppo", baseline="base")
    for layout in ("train", "base_run"):
        runs = lock(0.003, methods=("base",))
        if layout == "base_run":
            runs["stages"] = {
                n.replace("train@", "base_run@").removesuffix("-base"): st for n, st in runs["stages"].items()
            }
        late = repo_with(
            tmp_path / layout,
            {"params.yaml": registry()},
            {"dvc.lock": runs},
            {"params.yaml": registry(vs_base)},
        )
        exploratory, why = claim_history(read_history(late, SEEDS, [vs_base]), vs_base, "ppo", SEEDS)
        assert exploratory and "after run reports of its seeds" in why, (layout, why)


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


@pytest.mark.parametrize(
    ("before", "after"),
    [({}, {"direction": "lower"}), ({}, {"method": "grpo"}), ({"needs_gpu": True}, {"needs_gpu": False})],
    ids=["direction", "method", "needs_gpu"],
)
def test_any_field_of_the_bar_changed_after_the_runs_is_flagged(
    tmp_path: Path, before: dict[str, Any], after: dict[str, Any]
):
    registered, now = bar(**before), bar(**{**before, **after})
    repo = repo_with(
        tmp_path,
        {"params.yaml": registry(registered)},
        {"dvc.lock": lock(0.003)},
        {"params.yaml": registry(now)},
    )
    history = read_history(repo, SEEDS, [now])
    [edit] = history.edits
    [field] = after
    assert (edit.registered[field], edit.now[field]) == (getattr(registered, field), after[field])
    exploratory, why = claim_history(history, now, "ppo", SEEDS)
    assert (
        exploratory
        and f"bar edited after run reports of its seeds were committed (at {rev(repo, 'HEAD')[:12]})" in why
    )


def test_editing_a_claims_comment_is_no_edit_and_flipping_its_direction_is(tmp_path: Path):
    text = yaml.safe_dump(registry(CLAIM))
    commented = text.replace("direction: higher", "direction: higher  # success: more is better")
    flipped = text.replace("direction: higher", "direction: lower")
    assert commented != text != flipped
    quiet = repo_with(
        tmp_path / "comment", {"params.yaml": text}, {"dvc.lock": lock(0.003)}, {"params.yaml": commented}
    )
    history = read_history(quiet, SEEDS, [CLAIM])
    assert history.edits == [] and not claim_history(history, CLAIM, "ppo", SEEDS)[0]
    lower = bar(direction="lower")
    loud = repo_with(
        tmp_path / "flip", {"params.yaml": text}, {"dvc.lock": lock(0.003)}, {"params.yaml": flipped}
    )
    assert claim_history(read_history(loud, SEEDS, [lower]), lower, "ppo", SEEDS)[0]


def test_a_claim_first_registered_after_its_runs_is_exploratory_one_registered_before_is_not(tmp_path: Path):
    before = repo_with(tmp_path / "before", {"params.yaml": registry(CLAIM)}, {"dvc.lock": lock(0.003)})
    history = read_history(before, SEEDS, [CLAIM])
    assert claim_history(history, CLAIM, "ppo", SEEDS) == (
        False,
        "configurations in history per seed: seed 0: 1, seed 1: 1",
    )
    after = repo_with(
        tmp_path / "after",
        {"params.yaml": registry()},
        {"dvc.lock": lock(0.003)},
        {"params.yaml": registry(CLAIM)},
    )
    exploratory, why = claim_history(read_history(after, SEEDS, [CLAIM]), CLAIM, "ppo", SEEDS)
    assert exploratory and f"registered at {rev(after, 'HEAD')[:12]}, after run reports of its seeds" in why
    assert f"(the first at {rev(after, 'HEAD~1')[:12]})" in why
    together = repo_with(tmp_path / "together", {"params.yaml": registry(CLAIM), "dvc.lock": lock(0.003)})
    exploratory, why = claim_history(read_history(together, SEEDS, [CLAIM]), CLAIM, "ppo", SEEDS)
    assert exploratory and "in the commit that brought the first run reports of its seeds" in why
    # never committed: only the params.yaml being audited has it
    uncommitted = repo_with(tmp_path / "uncommitted", {"params.yaml": registry()}, {"dvc.lock": lock(0.003)})
    exploratory, why = claim_history(read_history(uncommitted, SEEDS, [CLAIM]), CLAIM, "ppo", SEEDS)
    assert exploratory and "registered in no commit, after run reports of its seeds" in why


def test_a_claim_renamed_with_an_easier_bar_is_exploratory_a_plain_rename_is_not(tmp_path: Path):
    easier = bar(id="cpu-pappo-edges-ppo", min_delta=0.05)
    repo = repo_with(
        tmp_path / "easier",
        {"params.yaml": registry(CLAIM)},
        {"dvc.lock": lock(0.003)},
        {"params.yaml": registry(easier)},
    )
    history = read_history(repo, SEEDS, [easier])
    exploratory, why = claim_history(history, easier, "ppo", SEEDS)
    assert exploratory and f"that commit removed {CLAIM.id}" in why
    renamed = bar(id="cpu-pappo-edges-ppo")
    plain = repo_with(
        tmp_path / "plain",
        {"params.yaml": registry(CLAIM)},
        {"dvc.lock": lock(0.003)},
        {"params.yaml": registry(renamed)},
    )
    assert not claim_history(read_history(plain, SEEDS, [renamed]), renamed, "ppo", SEEDS)[0]


def test_a_bar_lowered_once_some_seeds_of_the_method_or_baseline_ran_is_flagged(tmp_path: Path):
    seeds, lowered = [0, 1, 2], bar(min_delta=0.05)
    for name, first in {
        "two-of-three": lock(0.003, seeds=[0, 1]),
        "baseline": lock(0.003, methods=("ppo",)),
    }.items():
        repo = repo_with(
            tmp_path / name,
            {"params.yaml": registry(CLAIM, seeds=seeds)},
            {"dvc.lock": first},
            {"params.yaml": registry(lowered, seeds=seeds)},
            {"dvc.lock": lock(0.003, seeds=seeds)},
        )
        history = read_history(repo, seeds, [lowered])
        assert [(e.registered["min_delta"], e.now["min_delta"], e.commit) for e in history.edits] == [
            (0.15, 0.05, rev(repo, "HEAD~1"))
        ], name
        assert claim_history(history, lowered, "ppo", seeds)[0], name


def test_seeds_added_or_dropped_after_their_runs_make_claims_exploratory_a_fresh_list_does_not(
    tmp_path: Path,
):
    def judged(name: str, first: list[int], then: list[int], **last: Any) -> tuple[bool, str, Path]:
        repo = repo_with(
            tmp_path / name,
            {"params.yaml": registry(CLAIM, seeds=first)},
            {"dvc.lock": lock(0.003, seeds=first)},
            {"params.yaml": registry(CLAIM, seeds=then), **last},
        )
        return (*claim_history(read_history(repo, then, [CLAIM]), CLAIM, "ppo", then), repo)

    for name, first, then in (("added", [0, 1], [0, 1, 2]), ("dropped", [0, 1, 2], [0, 1])):
        exploratory, why, repo = judged(name, first, then)
        assert exploratory, name
        assert f"published seeds changed at {rev(repo, 'HEAD')[:12]} from {first} to {then}" in why, name
    # the move from tuning seeds to fresh ones, alone or in the commit that brings their runs
    assert judged("fresh", [0, 1, 2], [100, 101])[:2] == (
        False,
        "configurations in history per seed: seed 100: 0, seed 101: 0",
    )
    assert not judged("fresh-run", [0, 1, 2], [100, 101], **{"dvc.lock": lock(0.003, seeds=[100, 101])})[0]


def branched(
    tmp_path: Path,
    main: list[dict[str, Any]],
    side: dict[str, Any],
    side_date: str = "01T12:00:00",
    **merge: Any,
) -> Path:
    """A repository: `main`'s commits a day apart from 2026-01-01, a branch off the first of them
    with one commit of `side` at `side_date` (by default backdated to the first commit's time), merged
    into main the day after main's last commit with git merge `merge` options."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for i, files in enumerate(main):
        commit(tmp_path, files, f"main {i}", date=f"2026-01-{i + 1:02d}T12:00:00")
    trunk = git(tmp_path, "rev-parse", "--abbrev-ref", "HEAD")
    git(tmp_path, "checkout", "-qb", "side", f"{trunk}~{len(main) - 1}")
    commit(tmp_path, side, "side", date=f"2026-01-{side_date}")
    git(tmp_path, "checkout", "-q", trunk)
    options = [f"--{k}={v}" for k, v in merge.items()]
    git(
        tmp_path,
        "merge",
        "-q",
        "--no-ff",
        *options,
        "-m",
        "merge",
        "side",
        date=f"2026-01-{len(main) + 1:02d}T12:00:00",
    )
    return tmp_path


def test_a_configuration_tried_on_a_branch_merged_with_strategy_ours_is_counted(tmp_path: Path):
    # F6: the merge keeps main's dvc.lock, git log's simplified history never walks the side branch
    repo = branched(
        tmp_path,
        [{"dvc.lock": lock(0.003), "params.yaml": params(0.15)}, {"README.md": "runs\n"}],
        {"dvc.lock": lock(0.01)},
        strategy="ours",
    )
    assert yaml.safe_load((repo / "dvc.lock").read_text()) == lock(0.003)
    history = read_history(repo, SEEDS, [CLAIM])
    assert history.configurations == {"0/pappo": 2, "0/ppo": 2, "1/pappo": 2, "1/ppo": 2}
    exploratory, why = claim_history(history, CLAIM, "ppo", SEEDS)
    assert exploratory and "2 configurations were evaluated on seeds 0, 1" in why


def test_configurations_tried_on_an_unmerged_branch_or_in_a_dvc_experiment_are_counted(tmp_path: Path):
    # `dvc exp run` keeps each experiment's commit (its dvc.lock with it) under refs/exps/, off
    # HEAD's history; a branch never merged is off it too: both were evaluated on the seeds
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    commit(tmp_path, {"dvc.lock": lock(0.003), "params.yaml": params(0.15)}, "runs")
    trunk = git(tmp_path, "rev-parse", "--abbrev-ref", "HEAD")
    assert read_history(tmp_path, SEEDS, [CLAIM]).configurations["0/ppo"] == 1
    git(tmp_path, "checkout", "-qb", "try")
    commit(tmp_path, {"dvc.lock": lock(0.01)}, "a try, never merged")
    git(tmp_path, "checkout", "-q", trunk)
    history = read_history(tmp_path, SEEDS, [CLAIM])
    assert history.configurations["0/ppo"] == 2
    assert claim_history(history, CLAIM, "ppo", SEEDS)[0]
    git(tmp_path, "checkout", "-q", "--detach")
    commit(tmp_path, {"dvc.lock": lock(0.02)}, "dvc exp run")
    git(tmp_path, "update-ref", "refs/exps/1a/" + "f" * 40 + "/exp-one", "HEAD")
    git(tmp_path, "checkout", "-q", trunk)
    git(tmp_path, "branch", "-qD", "try")
    history = read_history(tmp_path, SEEDS, [CLAIM])
    assert history.configurations == {"0/pappo": 2, "0/ppo": 2, "1/pappo": 2, "1/ppo": 2}
    exploratory, why = claim_history(history, CLAIM, "ppo", SEEDS)
    assert exploratory and "2 configurations were evaluated on seeds 0, 1" in why
    # the workspace is HEAD's child, not the last commit walked: the audited lock is one version
    assert yaml.safe_load((tmp_path / "dvc.lock").read_text()) == lock(0.003)
    assert not history.seed_changes and not history.edits


def test_a_claim_added_on_an_unmerged_branch_after_the_runs_changes_nothing_at_head(tmp_path: Path):
    # review: walking other refs for configurations must not make their claims HEAD's story
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    commit(tmp_path, {"params.yaml": params(0.15)}, "registered")
    commit(tmp_path, {"dvc.lock": lock(0.003)}, "runs")
    trunk = git(tmp_path, "rev-parse", "--abbrev-ref", "HEAD")
    git(tmp_path, "checkout", "-qb", "try")
    extra = bar(id="an-extra-claim", min_delta=0.0)
    commit(
        tmp_path,
        {"params.yaml": registry(bar(min_delta=0.05), extra)},
        "a try with an edited and a new claim",
    )
    git(tmp_path, "checkout", "-q", trunk)
    history = read_history(tmp_path, SEEDS, [CLAIM])
    assert history.removed == [] and history.edits == [] and history.late == []
    assert not claim_history(history, CLAIM, "ppo", SEEDS)[0]


def test_a_bar_edited_on_a_backdated_branch_and_merged_after_the_runs_is_flagged(tmp_path: Path):
    # F7: the edit's date says before the evidence; the graph says its merge came after it
    lowered = bar(min_delta=0.05)
    repo = branched(
        tmp_path,
        [{"params.yaml": registry(CLAIM)}, {"dvc.lock": lock(0.003)}],
        {"params.yaml": registry(lowered)},
    )
    assert load_params_claims(repo) == [lowered]
    history = read_history(repo, SEEDS, [lowered])
    assert [(e.registered["min_delta"], e.now["min_delta"], e.commit) for e in history.edits] == [
        (0.15, 0.05, rev(repo, "HEAD"))
    ]
    exploratory, why = claim_history(history, lowered, "ppo", SEEDS)
    assert exploratory and "bar edited after run reports of its seeds were committed" in why
    assert history.late == []


def test_a_claim_registered_or_seeds_dropped_on_a_backdated_branch_merged_after_the_runs_are_post_hoc(
    tmp_path: Path,
):
    # the registration and the seeds list: before the evidence means an ancestor of it, not an earlier date
    late = branched(
        tmp_path / "late",
        [{"params.yaml": registry()}, {"dvc.lock": lock(0.003)}],
        {"params.yaml": registry(CLAIM)},
    )
    exploratory, why = claim_history(read_history(late, SEEDS, [CLAIM]), CLAIM, "ppo", SEEDS)
    assert exploratory and f"registered at {rev(late, 'HEAD')[:12]}, after run reports of its seeds" in why
    dropped = branched(
        tmp_path / "dropped",
        [{"params.yaml": registry(CLAIM, seeds=[0, 1, 2])}, {"dvc.lock": lock(0.003, seeds=[0, 1, 2])}],
        {"params.yaml": registry(CLAIM, seeds=[0, 1])},
    )
    history = read_history(dropped, SEEDS, [CLAIM])
    changes = [(c.commit, c.before, c.after, c.seen, c.kept) for c in history.seed_changes]
    assert changes[-1] == (rev(dropped, "HEAD"), [0, 1, 2], [0, 1], [0, 1], [0, 1])
    assert changes[0][1:] == ([0, 1, 2], [0, 1], [], [0, 1])  # the branch's drop: kept from a registered list
    assert claim_history(history, CLAIM, "ppo", SEEDS)[0]


def test_dropping_a_registered_seed_with_the_first_results_is_post_hoc(tmp_path: Path):
    """Runs are made before their reports are committed: a registered list cut in the commit that
    brings the results may have dropped the worst seed (review F5). Fresh seeds are a fresh start."""
    cut = repo_with(
        tmp_path / "cut",
        {"params.yaml": registry(CLAIM, seeds=[0, 1, 2])},
        {"params.yaml": registry(CLAIM, seeds=[0, 1]), "dvc.lock": lock(0.003)},
    )
    history = read_history(cut, SEEDS, [CLAIM])
    assert [(c.seen, c.kept) for c in history.seed_changes] == [([], [0, 1])]
    exploratory, why = claim_history(history, CLAIM, "ppo", SEEDS)
    assert exploratory and "keeping seeds 0, 1 of the registered list" in why
    fresh = repo_with(
        tmp_path / "fresh",
        {"params.yaml": registry(CLAIM, seeds=[5, 6, 7])},
        {"params.yaml": registry(CLAIM, seeds=[0, 1]), "dvc.lock": lock(0.003)},
    )
    assert read_history(fresh, SEEDS, [CLAIM]).seed_changes == []


def test_an_honest_merge_of_a_branch_that_changed_nothing_relevant_flags_nothing(tmp_path: Path):
    # The branch left main before the fresh seeds, the bar and the runs, and was made after them
    # (dated so): its params.yaml (the old seeds, no claim) was never in force beside the evidence,
    # the merge keeps main's. Its only change: a line at the end of params.yaml, or a README.
    def padded(data: dict[str, Any]) -> str:  # room between the seeds and the branch's line
        return yaml.safe_dump(data) + "#\n" * 4

    fresh, first = [100, 101], {"seeds": [0, 1], "claims": []}
    main = [
        {"params.yaml": padded(first), "dvc.lock": lock(0.02, seeds=[0, 1])},
        {"params.yaml": padded(registry(bar(min_delta=0.1), seeds=fresh))},
        {"params.yaml": padded(registry(CLAIM, seeds=fresh))},
        {"dvc.lock": lock(0.003, seeds=fresh)},
    ]
    sides = {"readme": {"README.md": "notes\n"}, "params": {"params.yaml": padded(first) + "note: x\n"}}
    for name, side in sides.items():
        repo = branched(tmp_path / name, main, side, side_date="04T18:00:00")
        merged = yaml.safe_load((repo / "params.yaml").read_text())
        assert (merged["seeds"], merged.get("note"), merged["claims"][0]["min_delta"]) == (
            fresh,
            "x" if name == "params" else None,
            0.15,
        )
        history = read_history(repo, fresh, [CLAIM])
        assert (history.edits, history.late, history.seed_changes) == ([], [], []), name
        assert claim_history(history, CLAIM, "ppo", fresh) == (
            False,
            "configurations in history per seed: seed 100: 1, seed 101: 1",
        ), name


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


def test_a_claim_that_holds_on_its_numbers_is_exploratory_when_its_seeds_were_tuned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import test_evidence_summary as fixture
    from pappo.evidence.verdicts import evaluate_claim

    RUN_SEEDS = fixture.SEEDS
    # pappo beats the fixture's ppo by +0.2, +0.4, +0.4: t = 5.0 with 2 df, one-sided p 0.019, it holds
    monkeypatch.setitem(fixture.SUCCESS, "pappo", [[1, 1, 1, 1, 0], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0]])
    reports = {(s, m): fixture.run_report(m, s) for s in RUN_SEEDS for m in ("ppo", "pappo")}
    claim = CLAIM.model_copy(update={"min_delta": 0.0})
    clean = evaluate_claim(claim, reports, {}, list(RUN_SEEDS))
    assert clean.verdict == "holds" and clean.holds and clean.per_seed == pytest.approx([0.2, 0.4, 0.4])
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


def test_a_gpu_claim_on_cpu_runs_is_not_judged_either_way(monkeypatch: pytest.MonkeyPatch):
    """Outside the CPU runs' family it gets no test: its own unadjusted test said "does not hold"
    beside a family held to 2.5% (review F4: 4.6% false "does not hold" anywhere)."""
    from types import SimpleNamespace

    import test_evidence_summary as fixture
    from pappo.evidence.verdicts import evaluate_claim, evaluate_claims

    seeds = list(fixture.SEEDS)
    # pappo far below ppo on every seed: alone, its test excludes the 0.15 bar ("does not hold")
    monkeypatch.setitem(fixture.SUCCESS, "pappo", [[0, 0, 0, 0, 0]] * 3)
    monkeypatch.setitem(fixture.SUCCESS, "ppo", [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1], [1, 1, 1, 1, 0]])
    reports = {(s, m): fixture.run_report(m, s) for s in seeds for m in ("ppo", "pappo")}
    claim = CLAIM.model_copy(update={"min_delta": 0.15})
    assert evaluate_claim(claim, reports, {}, seeds).verdict == "does not hold"
    cpu = {(s, m): SimpleNamespace(hardware=SimpleNamespace(accelerator="cpu")) for s, m in reports}
    gpu_claim = claim.model_copy(update={"needs_gpu": True})
    verdict = evaluate_claim(gpu_claim, reports, cpu, seeds)
    assert verdict.verdict == "inconclusive" and "not judged here" in " ".join(verdict.reasons)
    # runs without receipts are not CUDA runs either: outside the family, so not judged
    verdict = evaluate_claim(gpu_claim, reports, {}, seeds)
    assert verdict.verdict == "inconclusive" and "not judged here" in " ".join(verdict.reasons)
    (judged,) = evaluate_claims([gpu_claim], reports, {}, seeds)
    assert judged.verdict == "inconclusive"
    cuda = {k: SimpleNamespace(hardware=SimpleNamespace(accelerator="cuda")) for k in cpu}
    assert evaluate_claim(gpu_claim, reports, cuda, seeds).verdict == "does not hold"


def test_a_baseline_tuned_and_not_picked_makes_a_best_baseline_claim_exploratory(tmp_path: Path):
    """best_non_ppo resolved to rft; grpo carried two configurations on the same seeds (review F3)."""
    best = bar(id="pappo-beats-best", baseline="best_non_ppo")
    first = {
        **lock(0.003, methods=("rft", "pappo")),
        "stages": {
            **lock(0.003, methods=("rft", "pappo"))["stages"],
            **lock(0.003, methods=("grpo",))["stages"],
        },
    }
    second = {**first, "stages": {**first["stages"], **lock(0.01, methods=("grpo",))["stages"]}}
    repo = repo_with(tmp_path, {"dvc.lock": first, "params.yaml": registry(best)}, {"dvc.lock": second})
    history = read_history(repo, SEEDS, [best])
    exploratory, why = claim_history(history, best, "rft", SEEDS)
    assert exploratory and "2 configurations were evaluated on seeds 0, 1" in why, why
    assert not claim_history(history, bar(baseline="rft"), "rft", SEEDS)[0]  # rft alone: one


def test_a_claim_removed_after_results_makes_the_rest_exploratory(tmp_path: Path):
    """Deleting a registered claim once its evidence exists shrinks Holm's family: every other
    claim's test gets easier (review F8). Removed before any evidence: nothing to see."""
    one, two = bar(id="one"), bar(id="two")
    repo = repo_with(
        tmp_path,
        {"params.yaml": registry(one, two)},
        {"dvc.lock": lock(0.003)},
        {"params.yaml": registry(one)},
    )
    history = read_history(repo, SEEDS, [one])
    exploratory, why = claim_history(history, one, "ppo", SEEDS)
    assert history.removed == ["two"] and exploratory and "claims removed after their evidence" in why
    early = repo_with(
        tmp_path / "early",
        {"params.yaml": registry(one, two)},
        {"params.yaml": registry(one)},
        {"dvc.lock": lock(0.003)},
    )
    assert read_history(early, SEEDS, [one]).removed == []


def test_a_release_record_is_labelled_and_compared_with_the_clone_history() -> None:
    from pappo.evidence.history import History, disagreement, from_record, with_record

    here = History(
        readable=True, reason="read", lock_versions=3, configurations={"0/ppo": 1, "0/pappo": 1}, edits=[]
    )
    record = from_record(here.model_dump_json().encode(), "the bundle")
    assert record.readable and record.reason.startswith("recorded by the release from git")
    assert disagreement(record, here) is None
    # a record hiding tries this clone's git shows is refused ...
    tuned = here.model_copy(update={"configurations": {"0/ppo": 1, "0/pappo": 15}})
    why = disagreement(from_record(here.model_dump_json().encode(), "the bundle"), tuned, clone=True)
    assert why is not None and "0/pappo" in why and "15" in why and "fewer" in why
    # ... one counting more agrees (the publisher's branches and experiments are not in a clone),
    # and the clone then judges with the larger count, as the release did
    more = from_record(tuned.model_dump_json().encode(), "the bundle")
    assert disagreement(more, here, clone=True) is None
    # within a bundle (history.json against the audit's own reading) any difference is one
    why = disagreement(more, here)
    assert why is not None and "0/pappo" in why and "15" in why
    assert with_record(here, more).configurations == {"0/pappo": 15, "0/ppo": 1}
    missing = from_record(None, "the bundle")
    assert not missing.readable and "carries no history.json" in missing.reason
    assert not from_record(b"{not json", "the bundle").readable


def test_an_older_record_without_late_claims_or_seed_changes_reads_and_agrees() -> None:
    from pappo.evidence.history import History, LateClaim, disagreement, from_record

    here = History(
        readable=True, reason="read", lock_versions=3, configurations={"0/ppo": 1, "0/pappo": 1}, edits=[]
    )
    older = here.model_dump(exclude={"late", "seed_changes"})
    record = from_record(json.dumps(older).encode(), "the bundle")
    assert record.readable and record.late == [] and disagreement(record, here) is None
    late = LateClaim(claim=CLAIM.id, commit="a" * 40, evidence="b" * 40)
    posthoc = here.model_copy(update={"late": [late]})
    why = disagreement(from_record(posthoc.model_dump_json().encode(), "the bundle"), here)
    assert why is not None and "late claims differ" in why and CLAIM.id in why

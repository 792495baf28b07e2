"""The multi-seed evidence summary: numbers against hand-computed values, errors, markdown, plots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pappo.evidence.summary import build_summary, pick_best_baseline
from pappo.evidence.summary_md import render_markdown, write_summary
from pappo.evidence.summary_models import Summary
from pappo.experiment.report import RUN_METHODS, Budget, RunReport, Timing, UpdateEval
from pappo.io import PappoError
from pappo.policy.checkpoint import CheckpointRecord
from pappo.rl.results import TaskOutcome, aggregate

SEEDS = (0, 1, 2)
IDS = [f"task-{i}" for i in range(5)]
K = 4
N_BOOT = 200
# greedy success per seed (tasks in IDS order); rft and grpo tie on purpose
SUCCESS = {
    "base": [[1, 0, 0, 0, 0], [0, 0, 0, 0, 0], [1, 0, 0, 0, 0]],
    "rft": [[1, 1, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0]],
    "grpo": [[1, 1, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0]],
    "ppo": [[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0]],
    "pappo": [[1, 1, 1, 1, 0], [1, 1, 0, 0, 0], [0, 0, 0, 0, 0]],
}
UPDATES = 2


def outcomes(pattern: list[int], ids: list[str]) -> list[TaskOutcome]:
    """Greedy success from `pattern`; all K samples succeed where greedy did, one where it did not."""
    return [
        TaskOutcome(
            instance_id=iid,
            success=bool(ok),
            failed_edits=1,
            tool_cost=1.0 + i,
            repeated_tests=i % 2,
            turns=4,
            tokens=50,
            samples=K,
            sample_successes=K if ok else 1,
            infra_errors=0,
            hack_attempts=0,
            plausible_wrong=0,
            edits=1,
            test_runs=2,
            sample_tokens=200,
        )
        for i, (iid, ok) in enumerate(zip(ids, pattern))
    ]


def eval_result(pattern: list[int], ids: list[str]):
    tasks = outcomes(pattern, ids)
    result = aggregate(tasks, K, n_boot=N_BOOT)
    result.tasks.reverse()  # the summary must not rely on the report's task order
    return result


def update_record(u: int, method: str, seed: int) -> dict:
    steps = [
        {
            "epoch": 0,
            "minibatch": mb,
            "actor/pg_clipfrac": 0.1 * (u + 1) + 0.01 * mb,
            "actor/ppo_kl": 0.002 * (u + 1),
            "critic/vf_explained_var": 0.2 * u + 0.05 * seed + 0.1 * (method == "pappo"),
            "actor/tokens": 10 + mb,
        }
        for mb in range(2)
    ]
    return {
        "update": u,
        "rollout": {"episodes": 16, "success": 0.25, "tokens": 800},
        "steps": steps,
        "epochs_used": 1,
    }


def run_report(method: str, seed: int, ids: list[str] | None = None) -> RunReport:
    ids = ids or IDS
    pattern = SUCCESS[method][seed]
    trained = method != "base"
    evals = (
        [
            UpdateEval(update=u, result=eval_result(pattern if u == UPDATES else [0] * len(ids), ids))
            for u in range(1, UPDATES + 1)
        ]
        if trained
        else [UpdateEval(update=0, result=eval_result(pattern, ids))]
    )
    record = CheckpointRecord(
        profile="tiny",
        model_id="pappo/tiny-qwen2",
        revision="0" * 64,
        files={"model.safetensors": "a" * 64},
        n_parameters=10,
        architecture="qwen2",
        dtype="float32",
    )
    limit = 16 * UPDATES if trained else 0
    budget = Budget(
        episodes_limit=limit,
        generated_tokens_limit=limit * 100,
        episodes_used=limit,
        generated_tokens_used=limit * 50,
        task_draws_sha256="d" * 64,
        eval_episodes=25 * len(evals),
        eval_tokens=1250 * len(evals),
    )  # 5 tasks x (1 + K) episodes of 50 tokens
    return RunReport(
        method=method,
        seed=seed,
        profile="tiny",
        device="cpu",
        params={},
        params_sha256="p" * 64,
        source_sha256="s" * 64,
        manifest_lock_sha256="m" * 64,
        train_tasks=20,
        eval_instance_ids=sorted(ids),
        checkpoint=record,
        budget=budget,
        updates=[update_record(u, method, seed) for u in range(UPDATES)] if trained else [],
        evals=evals,
        final_eval=evals[-1].result,
        adapters_sha256={},
        timing=Timing(
            started="2026-01-01T00:00:00+00:00",
            ended="2026-01-01T00:01:00+00:00",
            wall_s=60.0,
            cpu_s=30.0 + seed,
            peak_rss_mib=100.0 + 10 * seed,
        ),
    )


def write_runs(root: Path, seeds=SEEDS, methods=RUN_METHODS) -> Path:
    runs = root / "runs"
    for s in seeds:
        for m in methods:
            path = runs / f"seed_{s}" / m / "report.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(run_report(m, s).model_dump_json(indent=2))
    return runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_runs(tmp_path_factory.mktemp("summary"))


@pytest.fixture(scope="module")
def summary(runs: Path):
    return build_summary(runs, SEEDS, n_boot=N_BOOT)


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def test_means_match_hand_computed_values_and_intervals_contain_them(summary) -> None:
    by = {s.method: s for s in summary.summaries}
    assert [s.method for s in summary.summaries] == list(RUN_METHODS)
    for m, pattern in SUCCESS.items():
        assert by[m].success.mean == pytest.approx(mean([mean(p) for p in pattern]))
        # pass@4 with c = 4 is 1; with c = 1 it is 1 - C(3,4)/C(4,4) = 1: every task passes at K
        assert by[m].pass_at_k.mean == pytest.approx(1.0)
        assert by[m].failed_edit_rate.mean == pytest.approx(0.25)  # 1 failed edit / 4 turns
        assert by[m].tool_cost.mean == pytest.approx(3.0)  # 1..5
        assert by[m].repeated_test_rate.mean == pytest.approx(mean([0, 1, 0, 1, 0]) / 4)
        for name in ("success", "pass_at_k", "failed_edit_rate", "tool_cost", "repeated_test_rate"):
            i = getattr(by[m], name)
            assert i.lo <= i.mean <= i.hi
    assert by["pappo"].success.lo < by["pappo"].success.hi  # a varying metric has a real interval
    assert summary.n_eval_tasks == {0: 5, 1: 5, 2: 5} and summary.eval_samples == K


def test_per_seed_rows_are_the_runs_own_final_eval(summary, runs: Path) -> None:
    ppo = next(s for s in summary.summaries if s.method == "ppo")
    assert [r.seed for r in ppo.per_seed] == list(SEEDS)
    for row in ppo.per_seed:
        report = RunReport.model_validate_json(
            (runs / f"seed_{row.seed}" / "ppo" / "report.json").read_text()
        )
        assert row.success == report.final_eval.success
        assert row.failed_edit_rate == report.final_eval.failed_edit_rate
        assert row.failed_edit_rate.mean == pytest.approx(0.5)  # the run's share: 1 failed of 2 edit calls


def test_best_baseline_tie_goes_to_the_most_trained_baseline(summary) -> None:
    assert summary.best_baseline == "grpo"  # rft and grpo tie at 0.2, base has 0.133
    assert pick_best_baseline({"base": 0.3, "rft": 0.3, "grpo": 0.1}) == "rft"
    assert pick_best_baseline({"base": 0.5, "rft": 0.3, "grpo": 0.4}) == "base"
    # the same rates summed in another seed order: a tie by the rule, not rft by 5.6e-17 (review F7)
    rates = [7 / 30, 11 / 30, 13 / 30, 17 / 30, 19 / 30, 23 / 30, 29 / 30]
    grpo, rft = sum(rates) / 7, sum(reversed(rates)) / 7
    assert rft != grpo and pick_best_baseline({"rft": max(rft, grpo), "grpo": min(rft, grpo)}) == "grpo"
    assert pick_best_baseline({"base": 0.3, "rft": 0.3, "grpo": 0.3}) == "grpo"
    assert pick_best_baseline({"ppo": 0.9}) is None


def test_comparisons_are_paired_differences_with_seed_wins(summary) -> None:
    comps = {c.method: c for c in summary.comparisons}
    assert list(comps) == ["pappo", "ppo"]
    for m, wins in (("pappo", 2), ("ppo", 1)):
        c = comps[m]
        per_seed = [mean([a - b for a, b in zip(x, y)]) for x, y in zip(SUCCESS[m], SUCCESS["grpo"])]
        assert c.baseline == "grpo" and c.metric == "success" and c.n_seeds == 3
        assert c.per_seed_difference == pytest.approx(per_seed)
        assert c.difference.mean == pytest.approx(mean(per_seed))
        assert c.difference.lo <= c.difference.mean <= c.difference.hi
        assert c.seed_wins == wins
    assert comps["pappo"].difference.mean == pytest.approx(0.2)


def test_comparisons_take_the_seed_as_the_unit(summary: Summary) -> None:
    comps = {c.method: c for c in summary.comparisons}
    # pappo - grpo per seed: 0.4, 0.2, 0.0; sd 0.2; t_{0.975,2} = 4.302653:
    # half width 4.302653 * 0.2 / sqrt(3) = 0.496829
    pappo = comps["pappo"]
    assert pappo.difference is not None and pappo.power is not None and pappo.within_seed_noise is not None
    half = 0.496829
    assert (pappo.difference.lo, pappo.difference.hi) == pytest.approx((0.2 - half, 0.2 + half), abs=1e-5)
    assert pappo.power.sd == pytest.approx(0.2) and pappo.power.mde == pytest.approx(0.652808, abs=1e-5)
    assert pappo.power.seeds_needed == {"0.05": 128, "0.10": 34, "0.15": 16}
    # the task-resampling interval survives only as evaluation noise, narrower than the seeds' spread
    noise = pappo.within_seed_noise
    assert noise.mean == pytest.approx(0.2)
    assert noise.hi - noise.lo < pappo.difference.hi - pappo.difference.lo
    boot = pappo.seed_bootstrap
    assert boot is not None  # seeds resampled: the interval stays within the seeds' range
    assert (boot.lo, boot.hi) == pytest.approx((0.0, 0.4))
    assert "2 degrees of freedom" in pappo.note


def test_a_one_seed_comparison_says_there_is_no_interval(tmp_path: Path) -> None:
    one = build_summary(write_runs(tmp_path, seeds=(0,)), [0], n_boot=N_BOOT)
    c = one.comparisons[0]
    assert c.difference is None and c.seed_bootstrap is None and "one seed" in c.note
    assert c.power is not None and c.power.mde is None and "none (one seed)" in render_markdown(one, [])


def test_summary_md_has_the_power_and_claim_tables(runs: Path) -> None:
    from pappo.config.evidence import ClaimParams

    claim = ClaimParams(id="pappo-vs-ppo", metric="success", method="pappo", baseline="ppo", needs_gpu=False)
    s = build_summary(runs, SEEDS, n_boot=N_BOOT, claims=[claim])
    [row] = s.claims
    assert (row.baseline, row.per_seed) == ("ppo", pytest.approx([0.2, 0.2, 0.0]))
    md = render_markdown(s, [])
    assert "## Power" in md and "| claim pappo-vs-ppo | ppo (success) |" in md
    assert "evaluation noise within a seed" in md
    assert "## Claims, seed-level numbers" in md and "| pappo-vs-ppo | pappo vs ppo | success |" in md


def test_budget_rows_and_sources(summary, runs: Path) -> None:
    rows = {(b.seed, b.method): b for b in summary.budget}
    assert set(rows) == {(s, m) for s in SEEDS for m in RUN_METHODS}
    assert rows[(1, "pappo")].episodes_limit == 32 and rows[(1, "pappo")].generated_tokens_used == 1600
    assert rows[(0, "base")].episodes_used == 0
    assert set(summary.sources) == {f"seed_{s}/{m}/report.json" for s in SEEDS for m in RUN_METHODS}
    assert all(len(h) == 64 for h in summary.sources.values())


def test_a_missing_report_names_the_path_and_the_stage(tmp_path: Path) -> None:
    runs = write_runs(tmp_path, seeds=(0,))
    (runs / "seed_0" / "rft" / "report.json").unlink()
    with pytest.raises(PappoError, match=r"seed_0/rft/report\.json.*dvc repro train@0`"):
        build_summary(runs, [0], n_boot=N_BOOT)


def test_mismatched_eval_tasks_are_refused(tmp_path: Path) -> None:
    runs = write_runs(tmp_path, seeds=(0,))
    other = run_report("ppo", 0, ids=[*IDS[:4], "task-other"])
    (runs / "seed_0" / "ppo" / "report.json").write_text(other.model_dump_json())
    with pytest.raises(PappoError, match=r"different tasks.*task-other"):
        build_summary(runs, [0], n_boot=N_BOOT)


def test_a_report_of_the_wrong_run_is_refused(tmp_path: Path) -> None:
    runs = write_runs(tmp_path, seeds=(0,))
    (runs / "seed_0" / "ppo" / "report.json").write_text(run_report("pappo", 0).model_dump_json())
    with pytest.raises(PappoError, match=r"method pappo, not seed 0, method ppo"):
        build_summary(runs, [0], n_boot=N_BOOT)


def test_markdown_has_the_tables_and_the_plots(summary) -> None:
    md = render_markdown(summary, ["summary/success_curves.png", "summary/success_curves.svg"])
    assert md.startswith("# ")
    assert "CPU (pipeline check, not evidence)" in md
    assert "| method | success | pass@K | failed edits/turn | tool cost | repeated tests/turn |" in md
    assert "| seed | method | success | pass@K | failed edit rate | tool cost | repeated test rate |" in md
    assert "| pappo | grpo | +0.20 [" in md and "| 2/3 |" in md and "| 1/3 |" in md
    assert "| 1 | pappo | 32/32 | 1600/3200 |" in md
    assert "](summary/success_curves.png)" in md and "[SVG](summary/success_curves.svg)" in md
    pappo_row = next(ln for ln in md.splitlines() if ln.startswith("| pappo | 0.40 ["))
    assert pappo_row.count("[") == 5


def test_write_summary_writes_plots_json_markdown_reproducibly(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    paths = dict(out_json=out / "summary.json", out_md=out / "summary.md", plots_dir=out / "summary")

    def run() -> dict[str, bytes]:
        write_summary(runs, seeds=SEEDS, n_boot=N_BOOT, **paths)
        return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}

    first = run()
    names = {
        f"summary/{n}.{ext}"
        for n in ("success_curves", "final_metrics", "ppo_diagnostics")
        for ext in ("png", "svg")
    }
    assert set(first) == names | {"summary.json", "summary.md"}
    for name in names:
        assert len(first[name]) > 1000
        assert first[name].startswith(b"\x89PNG") if name.endswith(".png") else b"<svg" in first[name][:2000]
    data = json.loads(first["summary.json"])
    assert data["schema_version"] == 1 and sorted(data["plots"]) == sorted(names)
    md = first["summary.md"].decode()
    assert all(f"]({n})" in md for n in names if n.endswith(".png"))
    second = run()
    assert second["summary.json"] == first["summary.json"]
    assert second["summary.md"] == first["summary.md"]
    assert all(second[n] == first[n] for n in names if n.endswith(".svg"))


def test_nothing_is_written_when_a_report_is_missing(tmp_path: Path) -> None:
    runs = write_runs(tmp_path, seeds=(0,))
    (runs / "seed_0" / "pappo" / "report.json").unlink()
    out = tmp_path / "reports"
    with pytest.raises(PappoError):
        write_summary(
            runs, out / "summary.json", out / "summary.md", out / "summary", seeds=[0], n_boot=N_BOOT
        )
    assert not out.exists()


def test_a_method_subset_has_no_comparisons_and_no_diagnostics_plot(runs: Path) -> None:
    from pappo.evidence.plots import ppo_diagnostics
    from pappo.evidence.summary import load_reports

    s = build_summary(runs, SEEDS, methods=("base", "rft"), n_boot=N_BOOT)
    assert s.methods == ["base", "rft"] and s.best_baseline == "rft" and s.comparisons == []
    reports, _ = load_reports(runs, SEEDS, ("base", "rft"))
    assert ppo_diagnostics(reports, ()) is None


def test_diagnostics_average_minibatch_steps_then_seeds(runs: Path) -> None:
    from pappo.evidence.plots import _diagnostic_points
    from pappo.evidence.summary import load_reports

    reports, _ = load_reports(runs, SEEDS, ("ppo", "pappo"))
    clip = _diagnostic_points(reports, "ppo", "actor/pg_clipfrac")
    assert sorted(clip) == [0, 1] and clip[1] == pytest.approx([0.205] * 3)  # (0.20 + 0.21) / 2, each seed
    ev = _diagnostic_points(reports, "pappo", "critic/vf_explained_var")
    assert ev[0] == pytest.approx([0.1, 0.15, 0.2])  # 0.05 * seed + 0.1, one value per seed


def test_explained_variance_is_drawn_per_seed_on_an_axis_cut_at_minus_one(runs: Path) -> None:
    from pappo.evidence.plots import EV_FLOOR, EV_KEY, ppo_diagnostics
    from pappo.evidence.summary import load_reports

    reports, _ = load_reports(runs, SEEDS, ("ppo", "pappo"))
    ev_axis = ppo_diagnostics(reports).axes[2]
    per_seed = [
        line for line in ev_axis.get_lines() if len(line.get_xdata()) > 0 and line.get_linestyle() == "-"
    ]
    assert len(per_seed) == 2 * len(SEEDS)  # one line per (method, seed), not a band over seeds
    assert sorted(float(line.get_ydata()[0]) for line in per_seed[len(SEEDS) :]) == pytest.approx(
        [0.1, 0.15, 0.2]
    )
    # one first update at -15 must not flatten the rest: the axis stops just below EV_FLOOR
    step = next(st for st in reports[(SEEDS[0], "ppo")].updates[0]["steps"] if EV_KEY in st)
    step[EV_KEY] = -15.0
    bottom, _ = ppo_diagnostics(reports).axes[2].get_ylim()
    assert EV_FLOOR - 0.1 < bottom < EV_FLOOR


def test_costs_per_method_come_from_the_reports(summary: Summary, tmp_path: Path) -> None:
    import statistics

    costs = {c.method: c for c in summary.costs}
    assert list(costs) == list(RUN_METHODS)
    ppo = costs["ppo"]
    assert (ppo.n_runs, ppo.wall_s, ppo.cpu_s, ppo.peak_rss_mib) == (3, 60.0, 31.0, 120.0)
    assert ppo.trained_tokens == UPDATES * (10 + 11)  # two minibatch steps per update
    assert costs["base"].trained_tokens == 0.0 and costs["base"].generated_tokens == 0
    success = [sum(p) / len(p) for p in SUCCESS["pappo"]]
    assert costs["pappo"].success_sd == pytest.approx(statistics.stdev(success))
    assert (costs["pappo"].success_min, costs["pappo"].success_max) == (min(success), max(success))
    md = render_markdown(summary, [])
    row = next(line for line in md.splitlines() if line.startswith("| ppo | 3 |"))
    assert row.startswith("| ppo | 3 | 60 | 31 | 120 |"), row
    # a report of an older version has no CPU, memory or token counts: said, not invented
    old = run_report("ppo", 0)
    old = old.model_copy(
        update={
            "timing": Timing(started="x", ended="y", wall_s=1.0),
            "updates": [
                {k: v for k, v in u.items() if k != "steps"} | {"steps": [{"epoch": 0}]} for u in old.updates
            ],
        }
    )
    from pappo.evidence.costs import method_costs

    (c,) = method_costs({(0, "ppo"): old}, [0], ["ppo"])
    assert (c.cpu_s, c.peak_rss_mib, c.trained_tokens, c.success_sd) == (None, None, None, None)


def test_every_trained_curve_starts_at_its_seeds_base_run(runs: Path) -> None:
    from pappo.evidence.plots import _eval_points
    from pappo.evidence.summary import load_reports

    reports, _ = load_reports(runs, SEEDS, RUN_METHODS)
    base = [sum(p) / len(p) for p in SUCCESS["base"]]
    for m in ("rft", "grpo", "ppo", "pappo"):
        points = _eval_points(reports, m)
        assert sorted(points) == [0, *range(1, UPDATES + 1)]
        assert points[0] == base  # the shared starting policy, seed by seed
    assert sorted(_eval_points(reports, "base")) == [0]


def test_each_comparison_and_claim_splits_its_variance(runs: Path) -> None:
    import statistics

    from pappo.config.evidence import ClaimParams
    from pappo.evidence.summary import load_reports, per_seed_values
    from pappo.evidence.variance import variance_split

    claim = ClaimParams(id="c", metric="success", method="pappo", baseline="ppo", min_delta=0.0)
    s = build_summary(runs, SEEDS, n_boot=N_BOOT, claims=[claim])
    for c in s.comparisons:
        assert c.variance is not None and c.variance.total == pytest.approx(
            statistics.variance(c.per_seed_difference)
        )

    reports, _ = load_reports(runs, SEEDS, RUN_METHODS)
    a = per_seed_values(reports, SEEDS, "pappo", "success")
    b = per_seed_values(reports, SEEDS, "ppo", "success")
    assert s.claims[0].variance == variance_split(list(zip(a, b)))
    md = render_markdown(s, [])
    assert "| SD between / within seeds | limited by |" in md
    assert any(f"| {c.variance.limited_by} |" in md for c in s.comparisons if c.variance)


def test_the_sampler_trainer_gap_is_summarised_per_method_with_its_device(tmp_path: Path) -> None:
    from pappo.evidence.mismatch_table import gap_lines, method_gaps

    reports = {}
    for s in SEEDS:
        r = run_report("ppo", s)
        updates = [
            u
            | {
                "freeze": {
                    "rollout/logprob_gap_mean": 0.01 * (s + 1),
                    "rollout/logprob_gap_p99": 0.1 * (s + 1),
                    "rollout/logprob_gap_max": 0.2 * (s + 1) + 0.01 * i,
                    "rollout/logprob_gap_frac_large": 0.02,
                }
            }
            for i, u in enumerate(r.updates)
        ]
        reports[(s, "ppo")] = r.model_copy(update={"updates": updates, "device": "cuda"})
    reports[(0, "rft")] = run_report("rft", 0)  # no freeze: no gap recorded
    (gap,) = method_gaps(reports, SEEDS, ["rft", "ppo"])
    assert (gap.method, gap.devices, gap.updates) == ("ppo", ["cuda"], len(SEEDS) * UPDATES)
    assert gap.mean == pytest.approx(0.02) and gap.p99 == pytest.approx(0.3)
    assert gap.max == pytest.approx(0.6 + 0.01 * (UPDATES - 1)) and gap.frac_large == pytest.approx(0.02)
    md = "\n".join(gap_lines([gap]))
    assert "| ppo | cuda | 6 | 2.00e-02 | 3.00e-01 |" in md
    assert gap_lines([]) == []

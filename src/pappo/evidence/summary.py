"""The multi-seed evidence summary (`reports/summary.json`); summary_md.py adds the markdown and plots.

Reads every run report `reports/runs/seed_<s>/<method>/report.json` of the matrix and computes,
per method, each final held-out metric as a mean over seeds with a 95% stratified bootstrap
interval (tasks resampled within each seed, seeds held fixed: `stats.bootstrap_ci_seeds`), the
per-seed rows as the runs reported them, the paired success differences of PPO and PAPPO against
the best non-PPO baseline, every pre-registered claim's per-seed differences with their power, and
the training budget every run used.

Comparisons take the seed as the unit (one trained policy per seed plays every eval task): the
per-seed paired differences, their t interval with n_seeds - 1 degrees of freedom
(`stats.seed_interval`), a whole-seed bootstrap beside it, and the minimum detectable effect
(evidence/power.py). The interval that resamples tasks within fixed seeds is kept only as
"evaluation noise within a seed" (Miller 2024, "Adding error bars to evals").

Per-task values are computed from `TaskOutcome`, which keeps the greedy episode's counts but not
its edit or test-run totals, so two of the multi-seed rates are defined per greedy *turn*
(see `TASK_METRICS`); the per-seed rows keep each run's own `final_eval` intervals.

Best baseline: among base, rft and grpo, the highest mean success over seeds; a tie goes to the
first of grpo, rft, base (the most trained baseline), so a tie never flatters PPO or PAPPO by
pairing them with the untrained policy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import ValidationError

from pappo.config.evidence import ClaimParams
from pappo.evidence.costs import method_costs
from pappo.evidence.family import family_size, runs_on_cuda, settled
from pappo.evidence.labels import METRICS
from pappo.evidence.mismatch_table import method_gaps
from pappo.evidence.power import power_of
from pappo.evidence.summary_models import (
    BudgetRow,
    ClaimPower,
    Comparison,
    MethodSeedRow,
    MethodSummary,
    Summary,
)
from pappo.evidence.variance import variance_split
from pappo.experiment.report import RUN_METHODS, RunReport, run_stage
from pappo.io import PappoError, sha256_file
from pappo.rl.results import Interval, TaskOutcome
from pappo.stats import (
    above,
    bootstrap_ci,
    bootstrap_ci_seeds,
    mean_pass_at_k,
    paired_diff_ci_seeds,
    seed_interval,
    seed_wins,
)

BASELINE_PREFERENCE: tuple[str, ...] = ("grpo", "rft", "base")  # tie-break order for best_baseline
COMPARED: tuple[str, ...] = ("pappo", "ppo")  # each compared against best_baseline
Key = tuple[int, str]


# ---------------------------------------------------------------------------------------------
# loading


def report_path(runs_dir: Path, seed: int, method: str) -> Path:
    return Path(runs_dir) / f"seed_{seed}" / method / "report.json"


def load_reports(
    runs_dir: Path, seeds: Sequence[int], methods: Sequence[str]
) -> tuple[dict[Key, RunReport], dict[str, str]]:
    """Every (seed, method) report, validated, and {relative path: sha256} of each file."""
    reports: dict[Key, RunReport] = {}
    sources: dict[str, str] = {}
    for s in seeds:
        for m in methods:
            path = report_path(runs_dir, s, m)
            stage = run_stage(s, m)
            if not path.is_file():
                raise PappoError(f"{path} is missing: stage {stage} writes it; run `dvc repro {stage}`")
            try:
                report = RunReport.model_validate(json.loads(path.read_text()))
            except (ValueError, ValidationError) as exc:
                raise PappoError(
                    f"{path} is not a valid run report ({exc}); rerun `dvc repro {stage}`"
                ) from None
            if (report.seed, report.method) != (s, m):
                raise PappoError(
                    f"{path} holds the run of seed {report.seed}, method {report.method}, "
                    f"not seed {s}, method {m}; rerun `dvc repro {stage}`"
                )
            if not report.final_eval.tasks:
                raise PappoError(f"{path}: final_eval has no eval tasks; rerun `dvc repro {stage}`")
            reports[(s, m)] = report
            sources[path.relative_to(runs_dir).as_posix()] = sha256_file(path)
    return reports, sources


def sorted_tasks(report: RunReport, path: Path) -> list[TaskOutcome]:
    """final_eval's task outcomes by instance_id; duplicate ids are refused."""
    tasks = sorted(report.final_eval.tasks, key=lambda t: t.instance_id)
    ids = [t.instance_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise PappoError(f"{path}: final_eval lists an eval task twice; rerun the run's train stage")
    return tasks


def check_same_tasks(
    runs_dir: Path, reports: Mapping[Key, RunReport], seeds: Sequence[int], methods: Sequence[str]
) -> dict[int, list[str]]:
    """Each seed's eval task ids (sorted); every method of a seed must have evaluated the same ones."""
    out: dict[int, list[str]] = {}
    for s in seeds:
        first = methods[0]
        ids = [t.instance_id for t in sorted_tasks(reports[(s, first)], report_path(runs_dir, s, first))]
        for m in methods[1:]:
            other = [t.instance_id for t in sorted_tasks(reports[(s, m)], report_path(runs_dir, s, m))]
            if other != ids:
                only_a, only_b = sorted(set(ids) - set(other)), sorted(set(other) - set(ids))
                raise PappoError(
                    f"seed {s}: {report_path(runs_dir, s, m)} and {report_path(runs_dir, s, first)} evaluated "
                    f"different tasks (only in {m}: {only_b[:5]}, only in {first}: {only_a[:5]}); paired "
                    f"comparisons need the same eval tasks: rerun `dvc repro {run_stage(s, m)}` and `{run_stage(s, first)}`"
                )
        out[s] = ids
    return out


# ---------------------------------------------------------------------------------------------
# statistics


def task_values(t: TaskOutcome) -> dict[str, float]:
    """The per-task value of each metric (definitions: TASK_METRICS)."""
    k = t.samples
    return {
        "success": float(t.success),
        "pass_at_k": mean_pass_at_k([(k, t.sample_successes)], k) if k else float(t.success),
        "failed_edit_rate": t.failed_edits / max(1, t.turns),
        "tool_cost": float(t.tool_cost),
        "repeated_test_rate": t.repeated_tests / max(1, t.turns),
    }


def per_seed_values(
    reports: Mapping[Key, RunReport], seeds: Sequence[int], method: str, metric: str
) -> list[list[float]]:
    """For each seed, the metric's per-task values of `method`, tasks sorted by instance_id."""
    out = []
    for s in seeds:
        tasks = sorted(reports[(s, method)].final_eval.tasks, key=lambda t: t.instance_id)
        out.append([task_values(t)[metric] for t in tasks])
    return out


def seed_row(report: RunReport) -> MethodSeedRow:
    e = report.final_eval
    return MethodSeedRow(
        method=report.method,
        seed=report.seed,
        n_tasks=e.n_tasks,
        **{name: getattr(e, name) for name in METRICS},
    )


def method_summary(
    reports: Mapping[Key, RunReport], seeds: Sequence[int], method: str, n_boot: int
) -> MethodSummary:
    intervals = {
        name: Interval(
            **bootstrap_ci_seeds(per_seed_values(reports, seeds, method, name), n_boot=n_boot).to_json()
        )
        for name in METRICS
    }
    rows = [seed_row(reports[(s, method)]) for s in seeds]
    over_seeds = {
        name: level
        for name in METRICS
        for level in [
            _seed_level([sum(v) / len(v) for v in per_seed_values(reports, seeds, method, name)])[0]
        ]
        if level is not None
    }
    for name, field in (("hack_attempt_rate", "hack_attempts"), ("plausible_wrong_rate", "plausible_wrong")):
        values = [
            [
                getattr(t, field) / (t.boards + t.samples)
                for t in sorted(reports[(s, method)].final_eval.tasks, key=lambda t: t.instance_id)
            ]
            for s in seeds
        ]
        intervals[name] = Interval(**bootstrap_ci_seeds(values, n_boot=n_boot).to_json())
    return MethodSummary(method=method, n_seeds=len(seeds), per_seed=rows, over_seeds=over_seeds, **intervals)


def pick_best_baseline(mean_success: Mapping[str, float]) -> str | None:
    """Highest mean success among base/rft/grpo; ties (within float residue, `stats.TIE`: the same
    rates summed in another seed order differ by 1e-17) go to the first of BASELINE_PREFERENCE."""
    best: str | None = None
    for name in BASELINE_PREFERENCE:
        if name in mean_success and (best is None or above(mean_success[name], mean_success[best])):
            best = name
    return best


def _seed_level(diffs: Sequence[float]) -> tuple[Interval | None, str]:
    level = seed_interval(diffs)
    if level.lo is None or level.hi is None:
        return None, level.note
    return Interval(mean=level.mean, lo=level.lo, hi=level.hi), level.note


def compare(
    reports: Mapping[Key, RunReport], seeds: Sequence[int], method: str, baseline: str, n_boot: int
) -> Comparison:
    """Paired success differences method - baseline per seed (tasks already checked equal)."""
    a = per_seed_values(reports, seeds, method, "success")
    b = per_seed_values(reports, seeds, baseline, "success")
    noise = paired_diff_ci_seeds(list(zip(a, b)), n_boot=n_boot)
    a_means = [sum(x) / len(x) for x in a]
    b_means = [sum(x) / len(x) for x in b]
    per_seed = settled([sum(x - y for x, y in zip(xs, ys)) / len(xs) for xs, ys in zip(a, b)])
    difference, note = _seed_level(per_seed)
    boot = Interval(**bootstrap_ci(per_seed, n_boot=n_boot).to_json()) if len(seeds) > 1 else None
    return Comparison(
        method=method,
        baseline=baseline,
        difference=difference,
        per_seed_difference=per_seed,
        seed_wins=seed_wins(a_means, b_means),
        n_seeds=len(seeds),
        seed_bootstrap=boot,
        within_seed_noise=Interval(**noise.to_json()),
        power=power_of(per_seed),
        variance=variance_split(list(zip(a, b))),
        note=note,
    )


def claim_differences(
    claim: ClaimParams, reports: Mapping[Key, RunReport], seeds: Sequence[int]
) -> tuple[str, list[tuple[list[float], list[float]]]]:
    """(baseline, per seed (method's, baseline's) per-task values signed so that higher is better)."""
    baseline = claim.baseline
    if baseline == "best_non_ppo":  # the comparisons' choice: best mean success, the same tie rule
        means = {
            m: sum(sum(v) / len(v) for v in per_seed_values(reports, seeds, m, "success")) / len(seeds)
            for m in BASELINE_PREFERENCE
            if all((s, m) in reports for s in seeds)
        }
        baseline = pick_best_baseline(means) or "base"
    sign = 1.0 if claim.direction == "higher" else -1.0
    a = per_seed_values(reports, seeds, claim.method, claim.metric)
    b = per_seed_values(reports, seeds, baseline, claim.metric)
    return baseline, [([sign * x for x in xs], [sign * y for y in ys]) for xs, ys in zip(a, b)]


def per_seed(signed: Sequence[tuple[Sequence[float], Sequence[float]]]) -> list[float]:
    """Each seed's mean paired improvement (n,), from its (method, baseline) per-task values; equal
    improvements are equal floats (`family.settled`: no representation residue)."""
    return settled([sum(a) / len(a) - sum(b) / len(b) for a, b in signed])


def claim_power(
    claim: ClaimParams, reports: Mapping[Key, RunReport], seeds: Sequence[int], family: int = 1
) -> ClaimPower:
    """A claim's seed-level numbers and power, its rule judged in a family of `family` claims."""
    baseline, pairs = claim_differences(claim, reports, seeds)
    diffs = per_seed(pairs)
    return ClaimPower(
        id=claim.id,
        method=claim.method,
        baseline=baseline,
        metric=claim.metric,
        min_delta=claim.min_delta,
        difference=_seed_level(diffs)[0],
        per_seed=diffs,
        power=power_of(diffs, claim, family),
        variance=variance_split(pairs),
    )


def _runs_context(reports: Mapping[Key, RunReport]) -> tuple[str, str, int]:
    """(profile, device, K) shared by every run; mixed profiles or K are refused."""
    profiles = sorted({r.profile for r in reports.values()})
    ks = sorted({r.final_eval.samples for r in reports.values()})
    if len(profiles) != 1 or len(ks) != 1:
        raise PappoError(
            f"the runs mix profiles {profiles} or eval.samples {ks}; rerun the whole matrix with one "
            "params.yaml (`dvc repro`) before summarising"
        )
    return profiles[0], ", ".join(sorted({r.device for r in reports.values()})), ks[0]


def summarise(
    runs_dir: Path,
    reports: Mapping[Key, RunReport],
    sources: dict[str, str],
    seeds: Sequence[int],
    methods: Sequence[str],
    n_boot: int,
    claims: Sequence[ClaimParams] = (),
) -> Summary:
    """The Summary of already loaded reports (see build_summary)."""
    ids = check_same_tasks(runs_dir, reports, seeds, methods)
    profile, device, k = _runs_context(reports)
    summaries = [method_summary(reports, seeds, m, n_boot) for m in methods]
    best = pick_best_baseline({s.method: s.success.mean for s in summaries})
    comparisons = [compare(reports, seeds, m, best, n_boot) for m in COMPARED if best and m in methods]
    ran = set(methods)
    powers = [
        claim_power(
            c, reports, seeds, family_size(claims, c, runs_on_cuda(r.device for r in reports.values()))
        )
        for c in claims
        if c.method in ran and (c.baseline in ran or c.baseline == "best_non_ppo" and best)
    ]
    budget = [
        BudgetRow(
            seed=s,
            method=m,
            episodes_limit=b.episodes_limit,
            episodes_used=b.episodes_used,
            generated_tokens_limit=b.generated_tokens_limit,
            generated_tokens_used=b.generated_tokens_used,
        )
        for s in seeds
        for m in methods
        for b in [reports[(s, m)].budget]
    ]
    return Summary(
        profile=profile,
        device=device,
        seeds=list(seeds),
        methods=list(methods),
        n_eval_tasks={s: len(v) for s, v in ids.items()},
        eval_samples=k,
        n_boot=n_boot,
        summaries=summaries,
        best_baseline=best,
        comparisons=comparisons,
        claims=powers,
        costs=method_costs(reports, seeds, methods),
        mismatch=method_gaps(reports, seeds, methods),
        budget=budget,
        sources=sources,
    )


def build_summary(
    runs_dir: Path,
    seeds: Sequence[int],
    methods: Sequence[str] = RUN_METHODS,
    n_boot: int = 2000,
    claims: Sequence[ClaimParams] = (),
) -> Summary:
    """Load every run report of seeds x methods and summarise it (no files written)."""
    if not seeds or not methods:
        raise PappoError("build_summary needs at least one seed and one method (params.yaml `seeds`)")
    reports, sources = load_reports(Path(runs_dir), seeds, methods)
    return summarise(Path(runs_dir), reports, sources, seeds, methods, n_boot, claims)

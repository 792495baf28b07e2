"""The multi-seed evidence summary: `reports/summary.json`, `reports/summary.md` and its plots.

Reads every run report `reports/runs/seed_<s>/<method>/report.json` of the matrix and reports,
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
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pappo.config import ClaimParams
from pappo.evidence.power import Power, power_of
from pappo.stats import bootstrap_ci, bootstrap_ci_seeds, mean_pass_at_k, paired_diff_ci_seeds, seed_interval
from pappo.stats import seed_wins
from pappo.experiment.report import RUN_METHODS, RunReport, run_stage
from pappo.io import PappoError, atomic_write_bytes, json_bytes, sha256_file
from pappo.rl.results import Interval, TaskOutcome

METRICS: tuple[str, ...] = ("success", "pass_at_k", "failed_edit_rate", "tool_cost", "repeated_test_rate")
LABELS = {"success": "success", "pass_at_k": "pass@K", "failed_edit_rate": "failed edit rate",
          "tool_cost": "tool cost", "repeated_test_rate": "repeated test rate"}  # fmt: skip
# over seeds the two rates are per greedy turn (TASK_METRICS), so they are labelled as such
SUMMARY_LABELS = {**LABELS, "failed_edit_rate": "failed edits/turn", "repeated_test_rate": "repeated tests/turn"}
BASELINE_PREFERENCE: tuple[str, ...] = ("grpo", "rft", "base")  # tie-break order for best_baseline
COMPARED: tuple[str, ...] = ("pappo", "ppo")  # each compared against best_baseline
TASK_METRICS = (
    "Per eval task (greedy episode unless noted): success = 1 if solved else 0; pass_at_k = unbiased "
    "pass@K of the K sampled episodes (Chen et al. 2021; K = 0: greedy success); tool_cost = weighted "
    "tool calls; failed_edit_rate = failed str_replace calls / max(1, turns); repeated_test_rate = "
    "repeated run_tests calls / max(1, turns)."
)
Key = tuple[int, str]


class MethodSeedRow(BaseModel):
    """One run's final held-out metrics, exactly as its report's `final_eval` gives them."""

    model_config = ConfigDict(extra="forbid")
    method: str
    seed: int
    n_tasks: int = Field(description="Eval tasks of the seed's split.")
    success: Interval = Field(description="Greedy success rate (run's final_eval).")
    pass_at_k: Interval = Field(description="Unbiased pass@K over the sampled episodes (run's final_eval).")
    failed_edit_rate: Interval = Field(description="Run's definition: share of greedy edits that failed to apply.")
    tool_cost: Interval = Field(description="Greedy weighted tool calls per task (run's final_eval).")
    repeated_test_rate: Interval = Field(description="Run's definition: share of greedy test runs that were repeats.")


class MethodSummary(BaseModel):
    """A method over seeds: mean of per-seed task means, stratified-bootstrap 95% interval."""

    model_config = ConfigDict(extra="forbid")
    method: str
    n_seeds: int
    success: Interval = Field(description="Per task: 1 if the greedy episode solved it, else 0.")
    pass_at_k: Interval = Field(description="Per task: unbiased pass@K of its K samples (K = 0: greedy success).")
    failed_edit_rate: Interval = Field(
        description="Per task: greedy failed str_replace calls / max(1, greedy turns) (TaskOutcome has no "
        "edit total, so this is per turn, not the run's share of edits)."
    )
    tool_cost: Interval = Field(description="Per task: greedy weighted tool calls.")
    repeated_test_rate: Interval = Field(
        description="Per task: greedy repeated run_tests calls / max(1, greedy turns) (per turn, not the run's "
        "share of test runs)."
    )
    per_seed: list[MethodSeedRow] = Field(description="The runs' own final_eval rows, by seed.")
    hack_attempt_rate: Interval | None = Field(
        None, description="Per task: share of its episodes (greedy and sampled) with a hack attempt.")
    plausible_wrong_rate: Interval | None = Field(
        None, description="Per task: share of its episodes (greedy and sampled) that ended on a patch passing "
        "the visible tests but failing hidden checks (docs/sandbox.md).")


class Comparison(BaseModel):
    """A method against the baseline on paired eval tasks, the seed as the unit."""

    model_config = ConfigDict(extra="forbid")
    method: str
    baseline: str
    metric: Literal["success"] = "success"
    difference: Interval | None = Field(
        description="Mean over seeds of the per-seed mean difference method - baseline, 95% t interval with "
        "n_seeds - 1 degrees of freedom (the seed is the unit); None with one seed (no interval exists)."
    )
    per_seed_difference: list[float] = Field(description="Mean per-task difference of each seed, in seed order.")
    seed_wins: int = Field(description="Seeds where the method's mean beats the baseline's strictly.")
    n_seeds: int
    seed_bootstrap: Interval | None = Field(
        None, description="Whole-seed percentile bootstrap of the per-seed differences (seeds resampled; "
        "coarse with few seeds)."
    )
    within_seed_noise: Interval | None = Field(
        None, description="Evaluation noise within a seed, not evidence about the method: tasks resampled "
        "within fixed seeds."
    )
    power: Power | None = Field(None, description="MDE at 80% power and seeds needed, from the per-seed SD.")
    note: str = Field("", description="t interval, its degrees of freedom, or why there is none.")


class ClaimPower(BaseModel):
    """A pre-registered claim's seed-level numbers and power (the verdict is the audit's)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    method: str
    baseline: str = Field(description="best_non_ppo resolved.")
    metric: str
    min_delta: float
    difference: Interval | None = Field(description="Improvement (positive: the method is better), mean over "
                                        "seeds, 95% t interval; None with one seed.")
    per_seed: list[float] = Field(description="Each seed's mean paired improvement, in seed order.")
    power: Power


class BudgetRow(BaseModel):
    """The training rollout budget of one run and what it used."""

    model_config = ConfigDict(extra="forbid")
    seed: int
    method: str
    episodes_limit: int = Field(description="Training episodes allowed (0 for base).")
    episodes_used: int
    generated_tokens_limit: int = Field(description="Generated training tokens allowed.")
    generated_tokens_used: int


class Summary(BaseModel):
    """`reports/summary.json`: the evidence over every seed and method of the matrix."""

    model_config = ConfigDict(extra="forbid")
    schema_version: Literal[1] = 1
    profile: Literal["tiny", "hub"] = Field(description="Model profile of every run (tiny: CPU pipeline check).")
    device: str = Field(description="Device of the runs; several are joined by ', '.")
    seeds: list[int]
    methods: list[str]
    n_eval_tasks: dict[int, int] = Field(description="Eval tasks per seed.")
    eval_samples: int = Field(description="K: sampled episodes per eval task (pass@K).")
    n_boot: int = Field(description="Bootstrap replicates of every interval (95%, percentile, seed 0).")
    task_metrics: str = Field(TASK_METRICS, description="Per-task metric definitions behind the intervals.")
    summaries: list[MethodSummary] = Field(description="One per method, in `methods` order.")
    best_baseline: str | None = Field(
        description="Highest mean success over seeds among base, rft, grpo; ties go to the first of grpo, rft, "
        "base. None when none of them ran."
    )
    comparisons: list[Comparison] = Field(description="pappo and ppo against best_baseline (those that ran).")
    claims: list[ClaimPower] = Field(default_factory=list, description="params.yaml's claims, seed level.")
    budget: list[BudgetRow] = Field(description="Every run, by seed then method.")
    plots: list[str] = Field(default_factory=list, description="Plot files, relative to the markdown's folder.")
    sources: dict[str, str] = Field(description="Report path relative to the runs folder -> sha256 of the file.")


# ---------------------------------------------------------------------------------------------
# loading


def report_path(runs_dir: Path, seed: int, method: str) -> Path:
    return Path(runs_dir) / f"seed_{seed}" / method / "report.json"


def load_reports(runs_dir: Path, seeds: Sequence[int], methods: Sequence[str]) -> tuple[dict[Key, RunReport], dict[str, str]]:
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
                raise PappoError(f"{path} is not a valid run report ({exc}); rerun `dvc repro {stage}`") from None
            if (report.seed, report.method) != (s, m):
                raise PappoError(f"{path} holds the run of seed {report.seed}, method {report.method}, "
                                 f"not seed {s}, method {m}; rerun `dvc repro {stage}`")  # fmt: skip
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


def check_same_tasks(runs_dir: Path, reports: Mapping[Key, RunReport], seeds: Sequence[int],
                     methods: Sequence[str]) -> dict[int, list[str]]:  # fmt: skip
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


def per_seed_values(reports: Mapping[Key, RunReport], seeds: Sequence[int], method: str, metric: str) -> list[list[float]]:
    """For each seed, the metric's per-task values of `method`, tasks sorted by instance_id."""
    out = []
    for s in seeds:
        tasks = sorted(reports[(s, method)].final_eval.tasks, key=lambda t: t.instance_id)
        out.append([task_values(t)[metric] for t in tasks])
    return out


def seed_row(report: RunReport) -> MethodSeedRow:
    e = report.final_eval
    return MethodSeedRow(method=report.method, seed=report.seed, n_tasks=e.n_tasks,
                         **{name: getattr(e, name) for name in METRICS})  # fmt: skip


def method_summary(reports: Mapping[Key, RunReport], seeds: Sequence[int], method: str, n_boot: int) -> MethodSummary:
    intervals = {
        name: Interval(**bootstrap_ci_seeds(per_seed_values(reports, seeds, method, name), n_boot=n_boot).to_json())
        for name in METRICS
    }
    rows = [seed_row(reports[(s, method)]) for s in seeds]
    for name, field in (("hack_attempt_rate", "hack_attempts"), ("plausible_wrong_rate", "plausible_wrong")):
        values = [[getattr(t, field) / (1 + t.samples) for t in sorted(reports[(s, method)].final_eval.tasks,
                                                                       key=lambda t: t.instance_id)] for s in seeds]  # fmt: skip
        intervals[name] = Interval(**bootstrap_ci_seeds(values, n_boot=n_boot).to_json())
    return MethodSummary(method=method, n_seeds=len(seeds), per_seed=rows, **intervals)


def pick_best_baseline(mean_success: Mapping[str, float]) -> str | None:
    """Highest mean success among base/rft/grpo; ties go to the first of BASELINE_PREFERENCE."""
    best: str | None = None
    for name in BASELINE_PREFERENCE:
        if name in mean_success and (best is None or mean_success[name] > mean_success[best]):
            best = name
    return best


def _seed_level(diffs: Sequence[float]) -> tuple[Interval | None, str]:
    level = seed_interval(diffs)
    if level.lo is None or level.hi is None:
        return None, level.note
    return Interval(mean=level.mean, lo=level.lo, hi=level.hi), level.note


def compare(reports: Mapping[Key, RunReport], seeds: Sequence[int], method: str, baseline: str, n_boot: int) -> Comparison:
    """Paired success differences method - baseline per seed (tasks already checked equal)."""
    a = per_seed_values(reports, seeds, method, "success")
    b = per_seed_values(reports, seeds, baseline, "success")
    noise = paired_diff_ci_seeds(list(zip(a, b)), n_boot=n_boot)
    a_means = [sum(x) / len(x) for x in a]
    b_means = [sum(x) / len(x) for x in b]
    per_seed = [sum(x - y for x, y in zip(xs, ys)) / len(xs) for xs, ys in zip(a, b)]
    difference, note = _seed_level(per_seed)
    boot = Interval(**bootstrap_ci(per_seed, n_boot=n_boot).to_json()) if len(seeds) > 1 else None
    return Comparison(method=method, baseline=baseline, difference=difference, per_seed_difference=per_seed,
                      seed_wins=seed_wins(a_means, b_means), n_seeds=len(seeds), seed_bootstrap=boot,
                      within_seed_noise=Interval(**noise.to_json()), power=power_of(per_seed),
                      note=note)  # fmt: skip


def claim_differences(claim: ClaimParams, reports: Mapping[Key, RunReport],
                      seeds: Sequence[int]) -> tuple[str, list[tuple[list[float], list[float]]]]:
    """(baseline, per seed (method's, baseline's) per-task values signed so that higher is better)."""
    baseline = claim.baseline
    if baseline == "best_non_ppo":  # the comparisons' choice: best mean success, the same tie rule
        means = {m: sum(sum(v) / len(v) for v in per_seed_values(reports, seeds, m, "success")) / len(seeds)
                 for m in BASELINE_PREFERENCE if all((s, m) in reports for s in seeds)}
        baseline = pick_best_baseline(means) or "base"
    sign = 1.0 if claim.direction == "higher" else -1.0
    a = per_seed_values(reports, seeds, claim.method, claim.metric)
    b = per_seed_values(reports, seeds, baseline, claim.metric)
    return baseline, [([sign * x for x in xs], [sign * y for y in ys]) for xs, ys in zip(a, b)]


def claim_power(claim: ClaimParams, reports: Mapping[Key, RunReport], seeds: Sequence[int]) -> ClaimPower:
    baseline, pairs = claim_differences(claim, reports, seeds)
    diffs = [sum(a) / len(a) - sum(b) / len(b) for a, b in pairs]
    return ClaimPower(id=claim.id, method=claim.method, baseline=baseline, metric=claim.metric,
                      min_delta=claim.min_delta, difference=_seed_level(diffs)[0], per_seed=diffs,
                      power=power_of(diffs))


def _runs_context(reports: Mapping[Key, RunReport]) -> tuple[str, str, int]:
    """(profile, device, K) shared by every run; mixed profiles or K are refused."""
    profiles = sorted({r.profile for r in reports.values()})
    ks = sorted({r.final_eval.samples for r in reports.values()})
    if len(profiles) != 1 or len(ks) != 1:
        raise PappoError(f"the runs mix profiles {profiles} or eval.samples {ks}; rerun the whole matrix with one "
                         "params.yaml (`dvc repro`) before summarising")  # fmt: skip
    return profiles[0], ", ".join(sorted({r.device for r in reports.values()})), ks[0]


def summarise(runs_dir: Path, reports: Mapping[Key, RunReport], sources: dict[str, str], seeds: Sequence[int],
              methods: Sequence[str], n_boot: int,
              claims: Sequence[ClaimParams] = ()) -> Summary:  # fmt: skip
    """The Summary of already loaded reports (see build_summary)."""
    ids = check_same_tasks(runs_dir, reports, seeds, methods)
    profile, device, k = _runs_context(reports)
    summaries = [method_summary(reports, seeds, m, n_boot) for m in methods]
    best = pick_best_baseline({s.method: s.success.mean for s in summaries})
    comparisons = [compare(reports, seeds, m, best, n_boot) for m in COMPARED if best and m in methods]
    ran = set(methods)
    powers = [claim_power(c, reports, seeds) for c in claims
              if c.method in ran and (c.baseline in ran or c.baseline == "best_non_ppo" and best)]
    budget = [BudgetRow(seed=s, method=m, episodes_limit=b.episodes_limit, episodes_used=b.episodes_used,
                        generated_tokens_limit=b.generated_tokens_limit, generated_tokens_used=b.generated_tokens_used)
              for s in seeds for m in methods for b in [reports[(s, m)].budget]]  # fmt: skip
    return Summary(profile=profile, device=device, seeds=list(seeds), methods=list(methods),  # type: ignore[arg-type]
                   n_eval_tasks={s: len(v) for s, v in ids.items()}, eval_samples=k, n_boot=n_boot,
                   summaries=summaries, best_baseline=best, comparisons=comparisons, claims=powers,
                   budget=budget,
                   sources=sources)  # fmt: skip


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


# ---------------------------------------------------------------------------------------------
# markdown


def fmt_interval(i: Interval, signed: bool = False) -> str:
    f = "{:+.2f}" if signed else "{:.2f}"
    return f"{f.format(i.mean)} [{f.format(i.lo)}, {f.format(i.hi)}]"


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def device_label(profile: str, device: str) -> str:
    if profile != "tiny":
        return device
    if device == "cpu":
        return "CPU (pipeline check, not evidence)"
    return f"{device} (tiny profile: pipeline check, not evidence)"


def _metric_tables(summary: Summary) -> list[str]:
    head = ["method", *(LABELS[m] for m in METRICS)]
    overall = [[s.method, *(fmt_interval(getattr(s, m)) for m in METRICS)] for s in summary.summaries]
    overall_head = ["method", *(SUMMARY_LABELS[m] for m in METRICS)]
    seeds = [[str(r.seed), r.method, *(fmt_interval(getattr(r, m)) for m in METRICS)]
             for s in summary.summaries for r in s.per_seed]  # fmt: skip
    seeds.sort(key=lambda row: (int(row[0]), summary.methods.index(row[1])))
    return [
        "## Final held-out metrics over seeds", "",
        f"Mean over seeds of per-seed task means, 95% stratified bootstrap interval (tasks resampled within "
        f"seeds, seeds fixed; {summary.n_boot} replicates). K = {summary.eval_samples}.", "",
        md_table(overall_head, overall), "",
        "## Per seed", "", "Each run's own final evaluation (interval over its eval tasks).", "",
        md_table(["seed", *head], seeds), "",
    ]  # fmt: skip


def _opt(i: Interval | None, signed: bool = True) -> str:
    return "none (one seed)" if i is None else fmt_interval(i, signed)


def _needed(p: Power) -> list[str]:
    return ["-" if n is None else str(n) for n in p.seeds_needed.values()]


def _power_cells(p: Power | None) -> list[str]:
    if p is None or p.sd is None or p.mde is None:
        return ["-", "-", *(["-"] * 3)]
    return [f"{p.sd:.3f}", f"{p.mde:.3f}", *_needed(p)]


COMPARISON_TEXT = (
    "Difference: mean over seeds of each seed's paired difference, 95% t interval with seeds - 1 degrees "
    "of freedom (one trained policy per seed: the seed is what was randomised). Whole-seed bootstrap: seeds "
    "resampled. Evaluation noise within a seed: tasks resampled within fixed seeds; it says how precisely "
    "each policy was measured, not whether the method helps."
)
COMPARISON_HEAD = [
    "method",
    "baseline",
    "difference [95% t]",
    "per seed",
    "seed wins",
    "whole-seed bootstrap",
    "evaluation noise within a seed",
]
POWER_HEAD = [
    "comparison",
    "baseline",
    "SD over seeds",
    "MDE (80%)",
    "seeds for 0.05",
    "seeds for 0.10",
    "seeds for 0.15",
]
CLAIM_HEAD = ["claim", "comparison", "metric", "min_delta", "improvement [95% t]", "per seed"]


def _comparison_row(c: Comparison) -> list[str]:
    per_seed = ", ".join(f"{d:+.2f}" for d in c.per_seed_difference)
    wins = f"{c.seed_wins}/{c.n_seeds}"
    return [
        c.method,
        c.baseline,
        _opt(c.difference),
        per_seed,
        wins,
        _opt(c.seed_bootstrap),
        _opt(c.within_seed_noise),
    ]


def _comparison_tables(summary: Summary) -> list[str]:
    comp = [_comparison_row(c) for c in summary.comparisons]
    best = summary.best_baseline or "none (no base, rft or grpo run)"
    out = ["## Comparisons (success, paired, the seed as the unit)", ""]
    out += [
        f"Best baseline: **{best}** (highest mean success among base, rft, grpo; ties go to grpo, then rft).",
        "",
    ]
    out += [COMPARISON_TEXT, "", md_table(COMPARISON_HEAD, comp) if comp else "No comparisons.", ""]
    rows = [[c.method, c.baseline, *_power_cells(c.power)] for c in summary.comparisons]
    rows += [[f"claim {c.id}", f"{c.baseline} ({c.metric})", *_power_cells(c.power)] for c in summary.claims]
    if rows:
        out += ["## Power", "", _power_text(len(summary.seeds)), "", md_table(POWER_HEAD, rows), ""]
    if summary.claims:
        claims = [_claim_row(c) for c in summary.claims]
        out += ["## Claims, seed-level numbers", ""]
        out += [
            "Improvement (positive: the method is better). The verdict, which also reads the tuning history "
            "from git, is `pappo audit`'s.",
            "",
            md_table(CLAIM_HEAD, claims),
            "",
        ]
    return out


def _power_text(n_seeds: int) -> str:
    return (
        "From the SD of the per-seed differences: the minimum detectable effect (MDE) at 80% power, "
        f"two-sided 5% t test, with the {n_seeds} seeds run, and the seeds needed for an effect of 0.05, "
        "0.10 and 0.15 (noncentral t, scipy.stats). An interval wider than the effect sought says "
        "inconclusive, not no effect."
    )


def _claim_row(c: ClaimPower) -> list[str]:
    per_seed = ", ".join(f"{d:+.3f}" for d in c.per_seed)
    return [c.id, f"{c.method} vs {c.baseline}", c.metric, f"{c.min_delta}", _opt(c.difference), per_seed]


def _budget(summary: Summary) -> list[str]:
    budget = [[str(b.seed), b.method, f"{b.episodes_used}/{b.episodes_limit}",
               f"{b.generated_tokens_used}/{b.generated_tokens_limit}"] for b in summary.budget]  # fmt: skip
    head = ["seed", "method", "episodes used/limit", "generated tokens used/limit"]
    return ["## Training budget", "", md_table(head, budget), ""]


def _integrity_table(summary: Summary) -> list[str]:
    """Grading integrity per method: hack attempts, and patches right on the visible tests only."""
    rows = [m for m in summary.summaries if m.hack_attempt_rate is not None and m.plausible_wrong_rate is not None]
    if not rows:
        return []
    out = ["## Grading integrity", "", "| method | hack_attempt | plausible_wrong |", "|---|---:|---:|"]
    for m in rows:
        h, p = m.hack_attempt_rate, m.plausible_wrong_rate
        out.append(f"| {m.method} | {h.mean:.3f} [{h.lo:.3f}, {h.hi:.3f}] | {p.mean:.3f} [{p.lo:.3f}, {p.hi:.3f}] |")  # type: ignore[union-attr]
    return out + ["", "Share of a task's episodes (greedy and sampled); plausible_wrong = the final patch passes the "
                  "visible tests but fails the task's hidden checks (docs/sandbox.md).", ""]  # fmt: skip


def render_markdown(summary: Summary, plots: list[str]) -> str:
    """`reports/summary.md`: tables of the summary and the PNG plots (paths relative to the file)."""
    from pappo.evidence.plots import TITLES

    lines = [
        "# PAPPO evidence summary", "",
        f"Profile: {summary.profile} · Device: {device_label(summary.profile, summary.device)} · "
        f"Seeds: {', '.join(map(str, summary.seeds))} · Eval tasks per seed: "
        f"{', '.join(str(summary.n_eval_tasks[s]) for s in summary.seeds)}", "",
        *_metric_tables(summary), *_integrity_table(summary), *_comparison_tables(summary), *_budget(summary),
    ]  # fmt: skip
    pngs = [p for p in plots if p.endswith(".png")]
    if pngs:
        lines += ["## Plots", ""]
        for p in pngs:
            stem = Path(p).stem
            svg = p[: -len(".png")] + ".svg"
            lines += [f"![{TITLES.get(stem, stem)}]({p})", ""]
            if svg in plots:
                lines += [f"[SVG]({svg})", ""]
    lines += ["## Metric definitions", "", TASK_METRICS, "",
              "The per-seed rows use each run's own definitions: failed edit rate = failed edits / edits, "
              "repeated test rate = repeated test runs / test runs.", ""]  # fmt: skip
    return "\n".join(lines)


def summary_files(runs_dir: Path, out_json: Path, out_md: Path, plots_dir: Path, seeds: Sequence[int],
                  n_boot: int = 2000, methods: Sequence[str] = RUN_METHODS,
                  claims: Sequence[ClaimParams] = ()) -> tuple[Summary, dict[Path, bytes]]:  # fmt: skip
    """The summary and the bytes of every file the report stage writes, {path: bytes}, in memory.
    Deterministic: `pappo audit` recomputes them from the run reports and compares."""
    from pappo.evidence.plots import render_plots

    runs_dir, out_md, plots_dir = Path(runs_dir), Path(out_md), Path(plots_dir)
    if not seeds or not methods:
        raise PappoError("write_summary needs at least one seed and one method (params.yaml `seeds`)")
    reports, sources = load_reports(runs_dir, seeds, methods)
    summary = summarise(runs_dir, reports, sources, seeds, methods, n_boot, claims)
    files = render_plots(reports, summary)
    rel = [Path(os.path.relpath(plots_dir / name, out_md.parent)).as_posix() for name in files]
    summary = summary.model_copy(update={"plots": rel})
    summary = Summary.model_validate(summary.model_dump())
    out: dict[Path, bytes] = {plots_dir / name: data for name, data in files.items()}
    out[Path(out_json)] = json_bytes(summary.model_dump(mode="json"))
    out[out_md] = render_markdown(summary, rel).encode("utf-8")
    return summary, out


def write_summary(runs_dir: Path, out_json: Path, out_md: Path, plots_dir: Path, seeds: Sequence[int],
                  n_boot: int = 2000, methods: Sequence[str] = RUN_METHODS,
                  claims: Sequence[ClaimParams] = ()) -> Summary:  # fmt: skip
    """Build the summary and its plots in memory, then write plots, JSON and markdown atomically."""
    summary, files = summary_files(runs_dir, out_json, out_md, plots_dir, seeds, n_boot, methods, claims)
    for path, data in files.items():  # plots first, the markdown that shows them last
        atomic_write_bytes(path, data)
    return summary

"""`reports/summary.md` and the report stage's files: the summary as JSON, markdown and plots.

The markdown shows the summary's tables (evidence/summary.py): metrics over seeds and per seed,
grading integrity, the comparisons with the seed as the unit, power, every claim's seed-level
numbers, the training budget, and the plots (evidence/plots.py). `summary_files` builds every
file in memory, deterministically, so `pappo audit` recomputes and compares them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pappo.config.evidence import ClaimParams
from pappo.evidence.costs import cost_lines
from pappo.evidence.labels import LABELS, METRICS, SUMMARY_LABELS, TASK_METRICS, TITLES, md_table
from pappo.evidence.mismatch_table import gap_lines
from pappo.evidence.plots import render_plots
from pappo.evidence.power import Power, ranged
from pappo.evidence.summary import load_reports, summarise
from pappo.evidence.summary_models import ClaimPower, Comparison, MethodSummary, Summary
from pappo.evidence.variance import VarianceSplit
from pappo.experiment.report import RUN_METHODS
from pappo.io import PappoError, atomic_write_bytes, json_bytes
from pappo.rl.results import Interval


def fmt_interval(i: Interval, signed: bool = False) -> str:
    f = "{:+.2f}" if signed else "{:.2f}"
    return f"{f.format(i.mean)} [{f.format(i.lo)}, {f.format(i.hi)}]"


def device_label(profile: str, device: str) -> str:
    if profile != "tiny":
        return device
    if device == "cpu":
        return "CPU (pipeline check, not evidence)"
    return f"{device} (tiny profile: pipeline check, not evidence)"


def _over_seeds(s: MethodSummary, metric: str) -> str:
    """The metric's 95% t interval over seeds; with one seed its mean alone."""
    level = s.over_seeds.get(metric)
    return f"{getattr(s, metric).mean:.2f} (one seed)" if level is None else fmt_interval(level)


def _metric_tables(summary: Summary) -> list[str]:
    head = ["method", *(LABELS[m] for m in METRICS)]
    overall = [[s.method, *(_over_seeds(s, m) for m in METRICS)] for s in summary.summaries]
    noise = [[s.method, *(fmt_interval(getattr(s, m)) for m in METRICS)] for s in summary.summaries]
    overall_head = ["method", *(SUMMARY_LABELS[m] for m in METRICS)]
    seeds = [
        [str(r.seed), r.method, *(fmt_interval(getattr(r, m)) for m in METRICS)]
        for s in summary.summaries
        for r in s.per_seed
    ]
    seeds.sort(key=lambda row: (int(row[0]), summary.methods.index(row[1])))
    return [
        "## Final held-out metrics over seeds",
        "",
        f"Mean over seeds of per-seed task means, 95% t interval over seeds (seeds - 1 degrees of freedom: "
        f"one trained policy per seed, the seed is what was randomised). K = {summary.eval_samples}.",
        "",
        md_table(overall_head, overall),
        "",
        f"Evaluation noise within the seeds, not uncertainty about the method: the same means with a 95% "
        f"stratified bootstrap interval (tasks resampled within seeds, seeds fixed; {summary.n_boot} "
        "replicates).",
        "",
        md_table(overall_head, noise),
        "",
        "## Per seed",
        "",
        "Each run's own final evaluation (interval over its eval tasks).",
        "",
        md_table(["seed", *head], seeds),
        "",
    ]


def _opt(i: Interval | None, signed: bool = True) -> str:
    return "none (one seed)" if i is None else fmt_interval(i, signed)


def _needed(p: Power) -> list[str]:
    return ["-" if n is None else str(n) for n in p.seeds_needed.values()]


def _power_cells(p: Power | None, v: VarianceSplit | None) -> list[str]:
    split = ["-", "-"] if v is None else [f"{v.between**0.5:.3f} / {v.within**0.5:.3f}", v.limited_by]
    if p is None or p.sd is None or p.mde is None:
        return ["-", *split, "-", *(["-"] * 3)]
    return [f"{p.sd:.3f}", *split, ranged(p.mde, p.mde_range), *_needed(p)]


COMPARISON_TEXT = (
    "Difference: mean over seeds of each seed's paired difference, 95% t interval with seeds - 1 degrees "
    "of freedom (one trained policy per seed: the seed is what was randomised). Whole-seed bootstrap: seeds "
    "resampled (with few seeds it covers less than 95%, about 88% at 7: no rule reads it). Evaluation noise within a seed: tasks resampled within fixed seeds; it says how precisely "
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
    "SD between / within seeds",
    "limited by",
    "single-test MDE (80%)",
    "single-test seeds for 0.05",
    "single-test seeds for 0.10",
    "single-test seeds for 0.15",
]
CLAIM_HEAD = [
    "claim",
    "comparison",
    "metric",
    "min_delta",
    "improvement [95% t]",
    "per seed",
    "rule holds at 80% from",
]


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
    rows = [[c.method, c.baseline, *_power_cells(c.power, c.variance)] for c in summary.comparisons]
    rows += [
        [f"claim {c.id}", f"{c.baseline} ({c.metric})", *_power_cells(c.power, c.variance)]
        for c in summary.claims
    ]
    if rows:
        out += ["## Power", "", _power_text(len(summary.seeds)), "", md_table(POWER_HEAD, rows), ""]
    if summary.claims:
        claims = [_claim_row(c) for c in summary.claims]
        out += ["## Claims, seed-level numbers", ""]
        out += [
            "Improvement (positive: the method is better). A claim holds when its mean improvement is above "
            "min_delta, enough seeds win by more than min_delta, and the improvement is above 0 by a "
            "one-sided t test at 2.5% over seeds, Holm-adjusted over the claims judged together "
            "(docs/evidence.md). The last column: the true improvement at which that whole rule holds with "
            "80% probability at this SD (normal seeds; '-': a claim without an interval rule, which "
            "cannot hold). The verdict, which also reads the tuning history from git, is `pappo audit`'s.",
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
        "inconclusive, not no effect. These single-test numbers are for one two-sided 5% t test against "
        "0, not for a claim's rule (Holm over its family, its bar, its seed wins): a claim's own power "
        "is the last column of the claims table below. In brackets, each figure at the two ends of the "
        "true SD's 80% interval (chi-square, from the seeds run): a few seeds' SD is itself uncertain. The SD splits into the seeds' own spread (training: more seeds "
        "help) and each seed's evaluation noise (tasks and boards: more boards help), "
        "evidence/variance.py; the larger part limits the comparison."
    )


def _claim_row(c: ClaimPower) -> list[str]:
    per_seed = ", ".join(f"{d:+.3f}" for d in c.per_seed)
    rule = "-" if c.power.rule_mde is None else ranged(c.power.rule_mde, c.power.rule_mde_range, "+.3f")
    return [
        c.id,
        f"{c.method} vs {c.baseline}",
        c.metric,
        f"{c.min_delta}",
        _opt(c.difference),
        per_seed,
        rule,
    ]


def _budget(summary: Summary) -> list[str]:
    budget = [
        [
            str(b.seed),
            b.method,
            f"{b.episodes_used}/{b.episodes_limit}",
            f"{b.generated_tokens_used}/{b.generated_tokens_limit}",
        ]
        for b in summary.budget
    ]
    head = ["seed", "method", "episodes used/limit", "generated tokens used/limit"]
    return ["## Training budget", "", md_table(head, budget), ""]


def _integrity_table(summary: Summary) -> list[str]:
    """Grading integrity per method: hack attempts, and patches right on the visible tests only."""
    rows = [
        m for m in summary.summaries if m.hack_attempt_rate is not None and m.plausible_wrong_rate is not None
    ]
    if not rows:
        return []
    out = ["## Grading integrity", "", "| method | hack_attempt | plausible_wrong |", "|---|---:|---:|"]
    for m in rows:
        h, p = m.hack_attempt_rate, m.plausible_wrong_rate
        out.append(
            f"| {m.method} | {h.mean:.3f} [{h.lo:.3f}, {h.hi:.3f}] | {p.mean:.3f} [{p.lo:.3f}, {p.hi:.3f}] |"
        )
    return out + [
        "",
        "Share of a task's episodes (greedy and sampled); plausible_wrong = the final patch passes the "
        "visible tests but fails the task's hidden checks (docs/sandbox.md).",
        "",
    ]


def render_markdown(summary: Summary, plots: list[str]) -> str:
    """`reports/summary.md`: tables of the summary and the PNG plots (paths relative to the file)."""
    lines = [
        "# PAPPO evidence summary",
        "",
        f"Profile: {summary.profile} · Device: {device_label(summary.profile, summary.device)} · "
        f"Seeds: {', '.join(map(str, summary.seeds))} · Eval tasks per seed: "
        f"{', '.join(str(summary.n_eval_tasks[s]) for s in summary.seeds)}",
        "",
        *_metric_tables(summary),
        *_integrity_table(summary),
        *_comparison_tables(summary),
        *_budget(summary),
        *cost_lines(summary.costs),
        *gap_lines(summary.mismatch),
    ]
    pngs = [p for p in plots if p.endswith(".png")]
    if pngs:
        lines += ["## Plots", ""]
        for p in pngs:
            stem = Path(p).stem
            svg = p[: -len(".png")] + ".svg"
            lines += [f"![{TITLES.get(stem, stem)}]({p})", ""]
            if svg in plots:
                lines += [f"[SVG]({svg})", ""]
    lines += [
        "## Metric definitions",
        "",
        TASK_METRICS,
        "",
        "The per-seed rows use each run's own definitions: failed edit rate = failed edits / edits, "
        "repeated test rate = repeated test runs / test runs.",
        "",
    ]
    return "\n".join(lines)


def summary_files(
    runs_dir: Path,
    out_json: Path,
    out_md: Path,
    plots_dir: Path,
    seeds: Sequence[int],
    n_boot: int = 2000,
    methods: Sequence[str] = RUN_METHODS,
    claims: Sequence[ClaimParams] = (),
) -> tuple[Summary, dict[Path, bytes]]:
    """The summary and the bytes of every file the report stage writes, {path: bytes}, in memory.
    Deterministic: `pappo audit` recomputes them from the run reports and compares."""
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


def write_summary(
    runs_dir: Path,
    out_json: Path,
    out_md: Path,
    plots_dir: Path,
    seeds: Sequence[int],
    n_boot: int = 2000,
    methods: Sequence[str] = RUN_METHODS,
    claims: Sequence[ClaimParams] = (),
) -> Summary:
    """Build the summary and its plots in memory, then write plots, JSON and markdown atomically."""
    summary, files = summary_files(runs_dir, out_json, out_md, plots_dir, seeds, n_boot, methods, claims)
    for path, data in files.items():  # plots first, the markdown that shows them last
        atomic_write_bytes(path, data)
    return summary

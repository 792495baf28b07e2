"""What each method costs and how stable it is under one rollout budget (the questions a researcher
asks when choosing PPO with a critic over critic-free GRPO or RFT: memory, throughput, spread).

Read from the run reports alone, so `pappo audit` recomputes the table: wall and CPU seconds of each
run (`timing`), its peak resident memory, the tokens it generated for training (`budget`), the tokens
its loss was taken over summed over every optimisation step (`actor/tokens` of each step; a critic
adds its own forward and backward over the same tokens), and the spread of held-out success across
seeds (each seed one trained policy: the unit of the comparison).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from pappo.experiment.report import RunReport

Key = tuple[int, str]


class MethodCost(BaseModel):
    """One method over its seeds: means of the per-run costs, and the success spread."""

    model_config = ConfigDict(extra="forbid")
    method: str
    n_runs: int
    wall_s: float = Field(description="Mean wall seconds per run (training and evaluation).")
    cpu_s: float | None = Field(description="Mean CPU seconds per run, process tree (None: not recorded).")
    peak_rss_mib: float | None = Field(description="Largest peak resident memory of a run, MiB.")
    generated_tokens: float = Field(description="Mean tokens generated for training per run.")
    trained_tokens: float | None = Field(
        description="Mean tokens under the actor loss per run, summed over every step (None: not recorded)."
    )
    success_sd: float | None = Field(description="SD over seeds of held-out success (None: one seed).")
    success_min: float
    success_max: float


def _mean(values: Sequence[float | None]) -> float | None:
    have = [v for v in values if v is not None]
    return statistics.fmean(have) if have and len(have) == len(values) else None


def runs_of(reports: Mapping[Key, RunReport], seeds: Sequence[int], method: str) -> list[RunReport]:
    """The method's runs, in seed order (seeds without a run left out)."""
    return [reports[(s, method)] for s in seeds if (s, method) in reports]


def trained_tokens(report: RunReport) -> float | None:
    """Tokens under the actor loss, summed over every optimisation step; None if a step lacks the count."""
    steps = [s for u in report.updates for s in u.get("steps", [])]
    if not steps or any("actor/tokens" not in s for s in steps):
        return None if report.method != "base" else 0.0
    return float(sum(s["actor/tokens"] for s in steps))


def method_costs(
    reports: Mapping[Key, RunReport], seeds: Sequence[int], methods: Sequence[str]
) -> list[MethodCost]:
    out = []
    for m in methods:
        runs = runs_of(reports, seeds, m)
        if not runs:
            continue
        success = [r.final_eval.success.mean for r in runs]
        peaks = [r.timing.peak_rss_mib for r in runs]
        out.append(
            MethodCost(
                method=m,
                n_runs=len(runs),
                wall_s=statistics.fmean(r.timing.wall_s for r in runs),
                cpu_s=_mean([r.timing.cpu_s for r in runs]),
                peak_rss_mib=max(p for p in peaks if p is not None) if None not in peaks else None,
                generated_tokens=statistics.fmean(r.budget.generated_tokens_used for r in runs),
                trained_tokens=_mean([trained_tokens(r) for r in runs]),
                success_sd=statistics.stdev(success) if len(success) > 1 else None,
                success_min=min(success),
                success_max=max(success),
            )
        )
    return out


def cost_lines(costs: Sequence[MethodCost]) -> list[str]:
    """The markdown section of summary.md."""
    if not costs:
        return []

    def opt(v: float | None, fmt: str) -> str:
        return "not recorded" if v is None else format(v, fmt)

    rows = [
        f"| {c.method} | {c.n_runs} | {c.wall_s:.0f} | {opt(c.cpu_s, '.0f')} | {opt(c.peak_rss_mib, '.0f')} "
        f"| {c.generated_tokens:.0f} | {opt(c.trained_tokens, '.0f')} | {opt(c.success_sd, '.3f')} "
        f"| {c.success_min:.2f}–{c.success_max:.2f} |"
        for c in costs
    ]
    return [
        "## Cost and stability per method (one rollout budget)",
        "",
        "| method | runs | wall s/run | CPU s/run | peak RSS MiB | generated tokens/run | trained tokens/run "
        "| SD of success over seeds | success min–max |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
        *rows,
        "",
        "Wall and CPU seconds include the held-out evaluations; CPU counts the sandbox's processes too. "
        "Trained tokens: tokens under the actor loss summed over every optimisation step (epochs x "
        "minibatches); ppo and pappo also run a critic over them. Seconds and memory are this "
        "machine's; the tokens and the success spread are not.",
        "",
    ]

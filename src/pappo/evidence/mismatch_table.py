"""The sampler/trainer log-prob gap per method, from the run reports (docs/rl.md, "Sampler/trainer
mismatch"): each update's freeze records |old_log_prob - sampler_log_prob| over the tokens both
sides score under the same distribution (`rollout/logprob_gap_*`). On CPU in float32 it is at
rounding level; on a GPU in bf16 it is what the importance correction (`rl.rollout_is_level`)
exists for, so summary.md shows it for every run that has it, with the device it ran on.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from pappo.evidence.costs import runs_of
from pappo.experiment.report import RunReport

Key = tuple[int, str]
PREFIX = "rollout/logprob_gap_"


class MethodGap(BaseModel):
    """One method's gap over its runs and updates."""

    model_config = ConfigDict(extra="forbid")
    method: str
    devices: list[str]
    updates: int = Field(description="Updates that recorded a gap.")
    mean: float = Field(description="Mean over updates of the per-token mean |gap|, nats.")
    p99: float = Field(description="Largest per-update 99th percentile, nats.")
    max: float = Field(description="Largest |gap| of any token, nats.")
    frac_large: float = Field(description="Mean over updates of the share of tokens with |gap| > 0.1.")


def method_gaps(
    reports: Mapping[Key, RunReport], seeds: Sequence[int], methods: Sequence[str]
) -> list[MethodGap]:
    out = []
    for m in methods:
        runs = runs_of(reports, seeds, m)
        rows = [u["freeze"] for r in runs for u in r.updates if f"{PREFIX}mean" in u.get("freeze", {})]
        if not rows:
            continue
        out.append(
            MethodGap(
                method=m,
                devices=sorted({r.device for r in runs}),
                updates=len(rows),
                mean=statistics.fmean(float(f[f"{PREFIX}mean"]) for f in rows),
                p99=max(float(f[f"{PREFIX}p99"]) for f in rows),
                max=max(float(f[f"{PREFIX}max"]) for f in rows),
                frac_large=statistics.fmean(float(f[f"{PREFIX}frac_large"]) for f in rows),
            )
        )
    return out


def gap_lines(gaps: Sequence[MethodGap]) -> list[str]:
    """The markdown section of summary.md (none when no run recorded a gap)."""
    if not gaps:
        return []
    rows = [
        f"| {g.method} | {', '.join(g.devices)} | {g.updates} | {g.mean:.2e} | {g.p99:.2e} | {g.max:.2e} "
        f"| {g.frac_large:.4f} |"
        for g in gaps
    ]
    return [
        "## Sampler/trainer mismatch (log-prob gap per token)",
        "",
        "| method | device | updates | mean | largest p99 | max | share > 0.1 nats |",
        "|---|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
        "|old_log_prob - sampler_log_prob| at each update's freeze, in nats (docs/rl.md). At rounding "
        "level on CPU in float32; in bf16 on a GPU it is what `rl.rollout_is_level` corrects for.",
        "",
    ]

"""How a reproduced run compares with the published one, and the records `reproduction.json` holds.

Bits when the two numerics match (src/pappo/numerics.py), the published 95% intervals otherwise; the
claims are evaluated again with the reproduced runs in place of the published ones. Nothing here
runs anything: `pappo reproduce` (reproduce.py) re-runs and hands the reports over.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pappo.config import Params
from pappo.evidence.json_diff import first_difference
from pappo.evidence.summary import METRICS
from pappo.evidence.verdicts import evaluate_claims
from pappo.experiment import receipt as rc
from pappo.experiment.report import RunReport
from pappo.numerics import NumericsInfo, comparison

RunId = tuple[int, str]


class MetricCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metric: str
    published: float
    lo: float = Field(description="Published 95% interval, lower end.")
    hi: float
    reproduced: float
    difference: float = Field(description="reproduced - published.")
    inside: bool = Field(description="The reproduced value lies in the published 95% interval.")


class RunCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run: str = Field(description="'seed_0/ppo' or 'base_model'.")
    comparison: Literal["bitwise", "intervals"]
    reason: str = Field(description="Why this comparison: the two numerics (src/pappo/numerics.py).")
    identical: bool = Field(
        description="Bit for bit the same (report minus timing, adapters or checkpoint files)."
    )
    first_difference: str | None = Field(description="Where the bits first differ (None when identical).")
    metrics: list[MetricCheck]
    wall_s: float = Field(description="Seconds the re-run took here.")


class ClaimCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    published_holds: bool
    reproduced_holds: bool = Field(description="With the reproduced runs in place of the published ones.")
    published_delta: float
    reproduced_delta: float


class Reproduction(BaseModel):
    """`reproduction.json`: what was re-run here, how it was compared and the outcome."""

    model_config = ConfigDict(extra="forbid")
    schema_version: Literal[1] = 1
    commit: str = Field(description="The commit re-run: the published evidence's (dvc.lock, summary), HEAD.")
    code_from: Literal["git clone", "bundle source"] = Field(
        "git clone",
        description="Where the re-run code came from: a clone of the repository at `commit`, or "
        "(no repository at hand) the evidence bundle's source/ committed into a scratch git repository here: "
        "the same files (git tree id checked against the bundle's swhid_dir), not the original .git.",
    )
    runs: list[RunCheck]
    claims: list[ClaimCheck]
    reproduced: bool = Field(
        description="Every bitwise run identical, every interval run inside, every claim the same."
    )
    wall_s: float
    verdict: str


def without_timing(obj: Any) -> Any:
    """A report minus its timing fields (RunReport TIMING_FIELDS: `timing`, `updates[*].wall_s`)."""
    if isinstance(obj, dict):
        return {k: without_timing(v) for k, v in obj.items() if k not in ("timing", "wall_s")}
    if isinstance(obj, list):
        return [without_timing(v) for v in obj]
    return obj


def compare_run(
    name: str,
    published: dict[str, Any],
    reproduced: dict[str, Any],
    mine: NumericsInfo,
    theirs: NumericsInfo,
    wall_s: float,
) -> RunCheck:
    """Bits when the numerics match, intervals otherwise (`published`/`reproduced`: report JSON)."""
    kind, why = comparison(theirs, mine)
    first = first_difference(without_timing(published), without_timing(reproduced))
    pub, rep = RunReport.model_validate(published).final_eval, RunReport.model_validate(reproduced).final_eval
    metrics = []
    for m in METRICS:
        i, x = getattr(pub, m), getattr(rep, m).mean
        metrics.append(
            MetricCheck(
                metric=m,
                published=i.mean,
                lo=i.lo,
                hi=i.hi,
                reproduced=x,
                difference=x - i.mean,
                inside=i.lo <= x <= i.hi,
            )
        )
    return RunCheck(
        run=name,
        comparison="bitwise" if kind == "bitwise" else "intervals",
        reason=why,
        identical=first is None,
        first_difference=first,
        metrics=metrics,
        wall_s=wall_s,
    )


def compare_base(published: dict[str, Any], reproduced: dict[str, Any], wall_s: float) -> RunCheck:
    """The base model: checkpoint files and per-episode outcomes; success rates as metrics."""
    theirs, mine = (NumericsInfo.model_validate(d["numerics"]) for d in (published, reproduced))
    kind, why = comparison(theirs, mine)
    first = first_difference(without_timing(published), without_timing(reproduced))
    metrics = []
    for mode in ("greedy", "sampled"):
        p, r = published["eval"][mode]["success_rate"], reproduced["eval"][mode]["success_rate"]
        n = max(1, published["eval"]["n_tasks"])
        half = 1.96 * (p * (1 - p) / n) ** 0.5  # the stage reports no interval: a normal one over its tasks
        metrics.append(
            MetricCheck(
                metric=f"{mode}_success",
                published=p,
                lo=max(0.0, p - half),
                hi=min(1.0, p + half),
                reproduced=r,
                difference=r - p,
                inside=p - half <= r <= p + half,
            )
        )
    return RunCheck(
        run="base_model",
        comparison="bitwise" if kind == "bitwise" else "intervals",
        reason=why,
        identical=first is None,
        first_difference=first,
        metrics=metrics,
        wall_s=wall_s,
    )


def check_claims(
    params: Params,
    published: dict[RunId, RunReport],
    receipts: dict[RunId, rc.Receipt],
    reproduced: dict[RunId, RunReport],
) -> list[ClaimCheck]:
    """Every claim on the published runs, and again with the reproduced ones in their place."""
    mixed = {**published, **reproduced}
    before = evaluate_claims(params.claims, published, receipts, params.seeds)
    after = evaluate_claims(params.claims, mixed, receipts, params.seeds)
    return [
        ClaimCheck(
            id=a.id,
            published_holds=a.holds,
            reproduced_holds=b.holds,
            published_delta=a.delta,
            reproduced_delta=b.delta,
        )
        for a, b in zip(before, after, strict=True)
    ]

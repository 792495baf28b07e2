"""A claim's verdict with the seed as the unit of inference, and the power behind it.

One trained policy per seed plays every eval task, so the seed is what was randomised: the
claim rules (`min_delta`, `min_seed_wins`, `ci_rule`) apply to the per-seed paired differences
and their t interval (`stats.seed_interval`), never to an interval that resamples tasks within
fixed seeds (that one measures evaluation noise only and is reported as such). Miller 2024,
"Adding error bars to evals" (cluster on the unit of randomisation); Henderson et al. 2018 (two
groups of 5 seeds of one algorithm looked like two algorithms).

Verdicts: `holds` (every registered rule holds on the seed-level numbers), `does not hold` (the
one-sided test of "improvement >= min_delta" rejects it at the family's level, Holm over the same
claims as `holds`: family.py),
`inconclusive` (neither: the minimum detectable effect says how far the seeds are from telling),
`exploratory` (the tuning history shows other configurations on these seeds, or the bar was edited
after evidence existed: Eimer et al. 2023, Dodge et al. 2019); an exploratory claim cannot hold.
`descriptive` (registered without an interval rule, ci_rule none: its numbers are shown and no rule
tests it) is outside "every claim holds" (`every_rule_holds`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pappo.config.evidence import ClaimParams
from pappo.evidence.family import FamilyTest, family_size, family_tests, judged, runs_on_cuda, settled
from pappo.evidence.history import History
from pappo.evidence.history_claims import claim_history
from pappo.evidence.power import Power, power_of, ranged
from pappo.evidence.summary import claim_differences, per_seed
from pappo.experiment import receipt as rc
from pappo.experiment.report import RunReport
from pappo.stats import above, paired_diff_ci_seeds, seed_interval, wins

Verdict = Literal["holds", "does not hold", "inconclusive", "exploratory", "descriptive"]


class ClaimVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    holds: bool = Field(description="verdict == 'holds'.")
    verdict: Verdict | None = Field(
        None,
        description="holds | does not hold | inconclusive | exploratory | descriptive; "
        "absent in verdicts of older audits (then read from holds).",
    )
    metric: str
    method: str
    baseline: str = Field(description="The baseline compared with (best_non_ppo resolved).")
    delta: float = Field(
        description="Mean over seeds of the per-seed improvement (positive: the method is better)."
    )
    lo: float | None = Field(description="Lower end of the 95% t interval over seeds (None with one seed).")
    hi: float | None
    seed_wins: int
    n_seeds: int
    per_seed: list[float] = Field(default_factory=list, description="Each seed's mean paired improvement.")
    power: Power | None = Field(None, description="MDE and seeds needed (None in verdicts of older audits).")

    within_seed_noise: str = Field(
        "",
        description="The task-resampling interval: evaluation noise within the "
        "seeds, not evidence about the method.",
    )
    history: str = Field("", description="What the tuning history says about this claim's seeds.")
    reasons: list[str] = Field(description="Why it does not hold (empty when it holds).")

    @model_validator(mode="after")
    def _one_answer(self) -> ClaimVerdict:
        if self.verdict is None:
            self.verdict = "holds" if self.holds else "does not hold"
        if self.holds != (self.verdict == "holds"):
            raise ValueError(f"claim {self.id}: holds {self.holds} contradicts verdict {self.verdict!r}")
        return self

    @property
    def label(self) -> Verdict:
        """The verdict, read from `holds` in verdicts of older audits."""
        return self.verdict or ("holds" if self.holds else "does not hold")

    @property
    def interval(self) -> str:
        """The seed-level interval as the audit and the release notes print it."""
        return (
            "no interval (one seed)"
            if self.lo is None or self.hi is None
            else f"[{self.lo:+.3f}, {self.hi:+.3f}]"
        )


def decide(
    diffs: Sequence[float], claim: ClaimParams, test: FamilyTest | None = None
) -> tuple[Verdict, list[str]]:
    """The statistical verdict of signed per-seed improvements (n,) under the claim's registered
    rules; `test`: its one-sided test within the family of claims judged together (default: alone).

    A claim without an interval rule (ci_rule none) is `descriptive`, never `holds`: a mean's sign
    and a count of seed wins are no test (under a true null about half of such experiments pass at 5
    or more seeds).
    Zero observed spread (up to float residue: `settled`) gives no test, so neither `holds` nor
    `does not hold`."""
    if claim.ci_rule == "none":
        return "descriptive", [
            "registered without an interval rule (ci_rule none): descriptive, it cannot hold; "
            "its interval is shown, no rule tests it"
        ]
    diffs = settled(diffs)
    level = seed_interval(diffs)
    n_wins = wins(diffs, claim.min_delta)
    reasons = []
    if not above(level.mean, claim.min_delta):
        reasons.append(
            f"mean improvement over seeds {level.mean:+.3f} is not above min_delta {claim.min_delta}"
        )
    if n_wins < claim.min_seed_wins:
        reasons.append(f"{n_wins}/{level.n} seed wins < {claim.min_seed_wins}")
    test = test or FamilyTest.alone(diffs, claim.min_delta)
    if not test.passes:
        shown = "none (one seed)" if level.lo is None else f"[{level.lo:+.3f}, {level.hi:+.3f}]"
        alone = level.lo is not None and level.lo > 0  # the claim's own test, not the family's
        says = "excludes 0 alone, not at the family's level" if alone else "does not exclude 0"
        reasons.append(f"95% interval over seeds {shown} {says}; {test.describe()}")
    if not reasons:
        return "holds", []
    if test.excludes_bar:  # family-wise, as `holds` is (family.py)
        return "does not hold", reasons + [
            f"the improvement is below min_delta {claim.min_delta} at the family's level, so the "
            f"test excludes the claim: {test.describe(below=True)}"
        ]
    return "inconclusive", reasons


def evaluate_claims(
    claims: Sequence[ClaimParams],
    reports: Mapping[tuple[int, str], RunReport],
    receipts: Mapping[tuple[int, str], rc.Receipt],
    seeds: Sequence[int],
    history: History | None = None,
) -> list[ClaimVerdict]:
    """Every claim's verdict, the claims these runs can support tested together (`family`: Holm)."""
    on_cuda = runs_on_cuda(r.hardware.accelerator for r in receipts.values())
    diffs = [per_seed(claim_differences(c, reports, seeds)[1]) for c in claims]
    tests = family_tests(
        [d if judged(c, on_cuda) else None for c, d in zip(claims, diffs)], [c.min_delta for c in claims]
    )
    return [
        evaluate_claim(c, reports, receipts, seeds, history, t, family_size(claims, c, on_cuda))
        for c, t in zip(claims, tests, strict=True)
    ]


def evaluate_claim(
    claim: ClaimParams,
    reports: Mapping[tuple[int, str], RunReport],
    receipts: Mapping[tuple[int, str], rc.Receipt],
    seeds: Sequence[int],
    history: History | None = None,
    test: FamilyTest | None = None,
    family: int = 1,
) -> ClaimVerdict:
    """The claim's seed-level numbers from the per-task outcomes, `test` its test within a family of
    `family` claims (default: alone); exploratory where `history` (the tuning history read from git)
    shows other configurations on its seeds or an edited bar."""
    baseline, signed = claim_differences(claim, reports, seeds)
    diffs = per_seed(signed)
    level = seed_interval(diffs)
    verdict, reasons = decide(diffs, claim, test)
    power = power_of(diffs, claim, family)
    if verdict == "inconclusive":
        reasons.append(f"inconclusive: the interval neither clears the bar nor excludes it ({_told(power)})")
    if claim.needs_gpu and not runs_on_cuda(r.hardware.accelerator for r in receipts.values()):
        # Not in these runs' family (family.judged), so no test at all: its own unadjusted test could
        # say "does not hold" beside a family held to 2.5% (a review found 4.6% anywhere).
        reasons.append("needs GPU receipts; these runs are not all CUDA runs: not judged here")
        verdict = "inconclusive" if verdict in ("holds", "does not hold") else verdict
    exploratory, why = (False, "") if history is None else claim_history(history, claim, baseline, seeds)
    if exploratory:
        reasons.append(f"exploratory: see history; the statistical verdict alone: {verdict}")
        verdict = "exploratory"
    return ClaimVerdict(
        id=claim.id,
        holds=verdict == "holds",
        verdict=verdict,
        metric=claim.metric,
        method=claim.method,
        baseline=baseline,
        delta=level.mean,
        lo=level.lo,
        hi=level.hi,
        seed_wins=wins(diffs, claim.min_delta),
        n_seeds=len(seeds),
        per_seed=diffs,
        power=power,
        within_seed_noise=task_bootstrap_note(signed),
        history=why,
        reasons=reasons,
    )


def every_rule_holds(claims: Sequence[ClaimVerdict]) -> bool:
    """Whether every claim with a rule holds; descriptive claims (no rule) are not counted."""
    return all(c.holds for c in claims if c.label != "descriptive")


def _told(power: Power) -> str:
    """What the seeds could detect, for an inconclusive verdict: the rule's own power first."""
    if power.mde is None:
        return power.note
    single = (
        f"a single two-sided 5% t test (not this rule) has MDE {power.mde:.3f} with {power.n_seeds} seeds"
    )
    if power.rule_mde is None:
        return single
    rule = ranged(power.rule_mde, power.rule_mde_range)
    return f"the registered rule holds with 80% probability at a true improvement of {rule}; {single}"


def task_bootstrap_note(pairs: Sequence[tuple[Sequence[float], Sequence[float]]]) -> str:
    """The old interval, tasks resampled within fixed seeds, as text labelled for what it measures."""
    iv = paired_diff_ci_seeds(pairs)
    return f"{iv.mean:+.3f} [{iv.lo:+.3f}, {iv.hi:+.3f}] (tasks resampled within fixed seeds)"


def _power_line(p: Power) -> str:
    """A claim's power in words: its rule's own (`rule_mde`), then the single test's, labelled."""
    if p.mde is None or p.sd is None:
        return p.note
    need = ", ".join(f"{k}: {'-' if n is None else n}" for k, n in p.seeds_needed.items())
    rule = (
        "the rule cannot hold with these seeds (descriptive, or more seed wins required than seeds)"
        if p.rule_mde is None
        else "this claim's rule holds with 80% probability at a true improvement of "
        f"{ranged(p.rule_mde, p.rule_mde_range)} ({p.family} claims judged together, its bar and seed "
        f"wins; in brackets: at the ends of the true SD's 80% interval, {p.n_seeds} seeds' SD being "
        "itself uncertain)"
    )
    return (
        f"{rule}; SD over seeds {p.sd:.3f}; a single two-sided 5% t test against 0 (not this claim's "
        f"rule): MDE {ranged(p.mde, p.mde_range)} with {p.n_seeds} seeds, seeds needed for an effect of {need}"
    )


def render_claim(c: ClaimVerdict) -> list[str]:
    """A claim's lines in the audit's text."""
    iv = c.interval
    per_seed = ", ".join(f"{d:+.3f}" for d in c.per_seed)
    lines = [
        f"claim {c.id}: {(c.verdict or '').upper()}: {c.method} vs {c.baseline} on {c.metric}: improvement "
        f"{c.delta:+.3f}, 95% t interval over seeds {iv} (positive: {c.method} better; per seed {per_seed}), "
        f"{c.seed_wins}/{c.n_seeds} seed wins"
    ]
    if c.power is not None:
        lines.append("  power: " + _power_line(c.power))
    if c.within_seed_noise:
        lines.append(
            f"  evaluation noise within a seed (not evidence about {c.method}): {c.within_seed_noise}"
        )
    if c.history:
        lines.append(f"  history: {c.history}")
    return lines + [f"  - {r}" for r in c.reasons]

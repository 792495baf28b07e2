"""The claims judged together, and the test of each over seeds with the family-wise error controlled.

Each claim with an interval rule asks whether its method's mean improvement over seeds is above 0:
a one-sided t test at 2.5% (the lower end of the 95% t interval over seeds). Judged one by one,
k such claims under a true null say `holds` at least once with probability up to 1 - 0.975^k
(6 claims: 14%). Holm's step-down procedure (Holm 1979, "A simple sequentially rejective multiple
test procedure") keeps that below 2.5% for the whole family, whatever the claims' dependence, and
is never less powerful than Bonferroni. With one claim it is the plain test.

`does not hold` is the mirror test, family-wise too: the one-sided t test of "improvement >= the
claim's min_delta", its p-values Holm-adjusted over the same family at the same 2.5%, so that when
every claim is true a false `does not hold` anywhere in the family has at most that probability.

The family is fixed by registration and hardware, not by outcomes: every claim with an interval rule
that these runs can support (a `needs_gpu` claim is not judged on CPU runs). A claim the tuning
history labels exploratory stays in it, so labelling cannot make the others easier to pass.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pappo.config.evidence import ClaimParams
from pappo.stats import TIE, seed_interval

ALPHA = 0.025  # one-sided: the 95% interval's lower end above 0


def runs_on_cuda(accelerators: Iterable[str]) -> bool:
    """Whether runs support GPU claims: there are some, and every one ran on cuda. The verdicts pass
    the receipts' accelerators (runs without receipts support none); the summary, which reads no
    receipt, its reports' devices, to size the family its power is quoted for."""
    found = list(accelerators)
    return bool(found) and all(a == "cuda" for a in found)


def judged(claim: ClaimParams, on_cuda: bool) -> bool:
    """Whether the claim is in the family: it has an interval rule and these runs can support it."""
    return claim.ci_rule != "none" and (on_cuda or not claim.needs_gpu)


def family_size(claims: Sequence[ClaimParams], claim: ClaimParams, on_cuda: bool) -> int:
    """How many claims `claim` is judged with: these runs' family when it is in it, else the family
    of CUDA runs, where a `needs_gpu` claim is judged (its power is quoted for those)."""
    hardware = on_cuda if judged(claim, on_cuda) else True
    return max(1, sum(judged(c, hardware) for c in claims))


def settled(diffs: Sequence[float]) -> list[float]:
    """Per-seed differences (n,) with float representation residue removed: differences that span
    at most `TIE` (equal but for residue, as 12/30 - 9/30 and 10/30 - 7/30) become one value, their
    mean, so that zero spread is zero, not an SD of 1e-17 that a t test reads as certainty."""
    d = [float(x) for x in diffs]
    if len(d) > 1 and max(d) - min(d) <= TIE:
        return [sum(d) / len(d)] * len(d)
    return d


def one_sided_p(diffs: Sequence[float], bar: float = 0.0, below: bool = False) -> float | None:
    """P-value of the one-sided t test that the mean of per-seed differences (n,) is above `bar`
    (`below`: that it is below `bar`, the null being "improvement >= bar"), with n - 1 degrees of
    freedom; None with one seed or zero observed spread (no test: equal differences cannot show
    that the spread between seeds is small)."""
    from scipy import stats as sps

    level = seed_interval(settled(diffs))
    if level.sd is None or level.sd == 0.0:
        return None
    t = (level.mean - bar) / (level.sd / math.sqrt(level.n))
    return float(sps.t.cdf(t, level.n - 1) if below else sps.t.sf(t, level.n - 1))


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values of a family (m,): the k-th smallest p becomes the largest of
    (m - j) p_(j) over j <= k, capped at 1. A claim passes when its adjusted p is at most ALPHA.
    None (no test) stays None and still counts in m."""
    m = len(pvalues)
    order = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    out: list[float | None] = [None] * m
    running = 0.0
    for j, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - j) * p))
        out[i] = running
    return out


@dataclass(frozen=True)
class FamilyTest:
    """A claim's one-sided tests over seeds within its family: p and Holm-adjusted p of "improvement
    above 0" (holds), the same of "improvement below the bar" (does not hold), the family's size."""

    p: float | None
    adjusted: float | None
    size: int
    p_below: float | None = None
    adjusted_below: float | None = None

    @classmethod
    def alone(cls, diffs: Sequence[float], bar: float = 0.0) -> FamilyTest:
        """The claim judged by itself (a family of one)."""
        p, below = one_sided_p(diffs), one_sided_p(diffs, bar, below=True)
        return cls(p, p, 1, below, below)

    @property
    def passes(self) -> bool:
        return self.adjusted is not None and self.adjusted <= ALPHA

    @property
    def excludes_bar(self) -> bool:
        """The family's test says the improvement is below the bar: `does not hold`."""
        return self.adjusted_below is not None and self.adjusted_below <= ALPHA

    def describe(self, below: bool = False) -> str:
        """The test (`below`: the does-not-hold one) in words, for a verdict's reasons."""
        p, adjusted = (self.p_below, self.adjusted_below) if below else (self.p, self.adjusted)
        what = "improvement at or above the bar, " if below else ""
        if p is None:
            return "no test (one seed, or zero observed spread between seeds)"
        if self.size == 1:
            return f"{what}one-sided p {p:.4f} (at most {ALPHA} needed)"
        return (
            f"{what}one-sided p {p:.4f}, Holm-adjusted over the {self.size} claims judged together "
            f"{adjusted:.4f} (at most {ALPHA} needed)"
        )


def family_tests(
    diffs: Sequence[Sequence[float] | None], bars: Sequence[float] | None = None
) -> list[FamilyTest | None]:
    """Each family member's tests (None: a claim outside the family), Holm-adjusted together (Holm
    1979), each side over the same members; `bars` (one per entry): the claims' min_delta, 0 if None."""
    bars = bars if bars is not None else [0.0] * len(diffs)
    members = [(i, d) for i, d in enumerate(diffs) if d is not None]
    ps = [one_sided_p(d) for _, d in members]
    below = [one_sided_p(d, bars[i], below=True) for i, d in members]
    out: list[FamilyTest | None] = [None] * len(diffs)
    for (i, _), p, a, q, b in zip(members, ps, holm(ps), below, holm(below)):
        out[i] = FamilyTest(p, a, len(members), q, b)
    return out

"""The claims judged together, and the test of each over seeds with the family-wise error controlled.

Each claim with an interval rule asks whether its method's mean improvement over seeds is above 0:
a one-sided t test at 2.5% (the lower end of the 95% t interval over seeds). Judged one by one,
k such claims under a true null say `holds` at least once with probability up to 1 - 0.975^k
(6 claims: 14%). Holm's step-down procedure (Holm 1979, "A simple sequentially rejective multiple
test procedure") keeps that below 2.5% for the whole family, whatever the claims' dependence, and
is never less powerful than Bonferroni. With one claim it is the plain test.

The family is fixed by registration and hardware, not by outcomes: every claim with an interval rule
that these runs can support (a `needs_gpu` claim is not judged on CPU runs). A claim the tuning
history labels exploratory stays in it, so labelling cannot make the others easier to pass.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pappo.config.evidence import ClaimParams
from pappo.stats import TIE, seed_interval

ALPHA = 0.025  # one-sided: the 95% interval's lower end above 0


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


def one_sided_p(diffs: Sequence[float]) -> float | None:
    """P-value of the one-sided t test that the mean of per-seed differences (n,) is above 0, with
    n - 1 degrees of freedom; None with one seed or zero observed spread (no test: equal
    differences cannot show that the spread between seeds is small)."""
    from scipy import stats as sps

    level = seed_interval(settled(diffs))
    if level.sd is None or level.sd == 0.0:
        return None
    t = level.mean / (level.sd / math.sqrt(level.n))
    return float(sps.t.sf(t, level.n - 1))


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
    """A claim's one-sided test over seeds within its family: p, Holm-adjusted p, the family's size."""

    p: float | None
    adjusted: float | None
    size: int

    @classmethod
    def alone(cls, diffs: Sequence[float]) -> FamilyTest:
        """The claim judged by itself (a family of one)."""
        p = one_sided_p(diffs)
        return cls(p, p, 1)

    @property
    def passes(self) -> bool:
        return self.adjusted is not None and self.adjusted <= ALPHA

    def describe(self) -> str:
        """The test in words, for a verdict's reasons."""
        if self.p is None:
            return "no test (one seed, or zero observed spread between seeds)"
        if self.size == 1:
            return f"one-sided p {self.p:.4f} (at most {ALPHA} needed)"
        return (
            f"one-sided p {self.p:.4f}, Holm-adjusted over the {self.size} claims judged together "
            f"{self.adjusted:.4f} (at most {ALPHA} needed)"
        )


def family_tests(diffs: Sequence[Sequence[float] | None]) -> list[FamilyTest | None]:
    """Each family member's test (None: a claim outside the family), Holm-adjusted together."""
    members = [i for i, d in enumerate(diffs) if d is not None]
    ps = [one_sided_p(d) for d in diffs if d is not None]
    adjusted = holm(ps)
    out: list[FamilyTest | None] = [None] * len(diffs)
    for i, p, a in zip(members, ps, adjusted):
        out[i] = FamilyTest(p, a, len(members))
    return out

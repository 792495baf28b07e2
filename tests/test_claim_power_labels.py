"""The power printed as a claim's is its registered rule's (`rule_mde`: Holm over the family, the
bar, the seed wins); the single two-sided 5% test's MDE and seeds needed are labelled as such.

At the single test's MDE the rule holds far less often than 80% (simulated below), so printing that
MDE as "the claim's power" promised more than the rule delivers."""

from __future__ import annotations

import re

import numpy as np

from pappo.evidence.family import family_tests
from pappo.evidence.power import power_of
from pappo.evidence.verdicts import ClaimVerdict, decide, render_claim
from test_claim_family import CLAIM

SD, SEEDS, FAMILY = 0.1, 7, 5
BAR = CLAIM.model_copy(update={"min_delta": 0.15, "min_seed_wins": 4})  # cpu-ppo-beats-base's rule


def p_holds(true: float, n: int = 1500) -> float:
    """P(the claim holds) at a true improvement, judged with 4 null claims as the audit does."""
    rng = np.random.default_rng(17)
    hits = 0
    for _ in range(n):
        ds = [list(rng.normal(true, SD, SEEDS))] + [list(rng.normal(0, SD, SEEDS)) for _ in range(4)]
        hits += decide(ds[0], BAR, family_tests(ds, [BAR.min_delta] + [0.0] * 4)[0])[0] == "holds"
    return hits / n


def pilot() -> list[float]:
    z = np.random.default_rng(1).standard_normal(SEEDS)
    return list(0.2 + SD * (z - z.mean()) / z.std(ddof=1))  # SD exactly 0.1


def test_the_printed_claim_power_is_the_rule_s_and_the_single_test_is_labelled():
    power = power_of(pilot(), BAR, FAMILY)
    assert p_holds(power.rule_mde) >= 0.77  # the rule's own: 80% (Bonferroni bound, so at least)
    assert p_holds(power.mde) < 0.3  # the single test's MDE is not the claim's power
    v = ClaimVerdict(
        id="c", verdict="inconclusive", holds=False, metric="success", method="ppo", baseline="base",
        delta=0.2, lo=0.1, hi=0.3, seed_wins=5, n_seeds=SEEDS, power=power, reasons=[],
    )  # fmt: skip
    line = next(x for x in render_claim(v) if x.startswith("  power:"))
    rule = re.search(r"this claim's rule holds with 80% probability at a true improvement of ([0-9.]+)", line)
    assert rule and float(rule.group(1)) == round(power.rule_mde, 3)
    single = line.index(f"MDE {power.mde:.3f}")
    assert line.rfind("(not this claim's rule)", 0, single) != -1

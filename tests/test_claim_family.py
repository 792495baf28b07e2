"""Claims judged together keep the family-wise error, a rule without an interval never holds, and a
claim's power is that of its whole registered rule.

Simulated experiments as the audit sees them: per-seed paired differences, normal, seven seeds
(the published design), no method effect unless said. Each test that is about a false positive
shows the rule it guards against failing the same check.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pappo.evidence.family import (
    ALPHA,
    FamilyTest,
    family_size,
    family_tests,
    holm,
    judged,
    one_sided_p,
)
from pappo.evidence.power import power_of, rule_mde
from pappo.evidence.verdicts import decide
from pappo.stats import above, mde
from test_honest_verdicts import CLAIM as HONEST_CLAIM

SEEDS = 7
CLAIM = HONEST_CLAIM.model_copy(update={"min_seed_wins": 4})  # pappo vs ppo, bar 0, 4 of 7 seeds


def naive_holm(pvalues: list[float], alpha: float) -> list[bool]:
    """Holm's procedure as its paper states it: reject in increasing order of p while p_(k) <= alpha / (m - k)."""
    m, rejected = len(pvalues), [False] * len(pvalues)
    for k, i in enumerate(sorted(range(m), key=lambda i: pvalues[i])):
        if pvalues[i] > alpha / (m - k):
            break
        rejected[i] = True
    return rejected


def test_holm_adjusted_p_values_on_worked_numbers_and_against_the_step_down_procedure():
    # sorted 0.01, 0.03, 0.04: 3 * 0.01 = 0.03; 2 * 0.03 = 0.06; max(0.06, 1 * 0.04) = 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, None]) == [1.0, None]  # a claim with no test still counts in m
    rng = np.random.default_rng(3)
    for _ in range(500):
        ps = list(rng.uniform(0, 0.05, size=int(rng.integers(1, 8))))
        assert [a is not None and a <= ALPHA for a in holm(ps)] == naive_holm(ps, ALPHA)


def test_the_one_sided_p_value_matches_the_interval_and_worked_numbers():
    # mean 0.2, sd 0.1, 3 seeds: t = 0.2 / (0.1 / sqrt 3) = 3.4641, one-sided p with 2 df = 0.03709
    assert one_sided_p([0.1, 0.2, 0.3]) == pytest.approx(0.037089, abs=1e-6)
    assert one_sided_p([0.2]) is None and one_sided_p([0.1, 0.1, 0.1]) is None


def null_claims_any_hold(family: bool, n_claims: int = 6, experiments: int = 2000) -> float:
    """Share of experiments in which at least one of `n_claims` independent null claims holds."""
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(experiments):
        diffs = [list(rng.normal(0.0, 0.1, SEEDS)) for _ in range(n_claims)]
        tests = family_tests(diffs) if family else [FamilyTest.alone(d) for d in diffs]
        hits += any(decide(d, CLAIM, t)[0] == "holds" for d, t in zip(diffs, tests))
    return hits / experiments


def test_six_null_claims_judged_together_hold_at_most_at_the_family_wise_level():
    together, alone = null_claims_any_hold(family=True), null_claims_any_hold(family=False)
    print(f"any of 6 null claims holds: Holm {together:.3f}, each alone {alone:.3f}")
    # 2000 experiments: the binomial SD at 0.025 is 0.0035; alone, 1 - 0.975^6 = 0.14 less the win rule
    assert together <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / 2000)
    assert alone >= 0.07 and alone >= 3 * together


def test_a_claim_without_an_interval_rule_never_holds_and_the_old_rule_held_half_the_null():
    claim = CLAIM.model_copy(update={"ci_rule": "none", "min_seed_wins": 2})
    rng = np.random.default_rng(5)
    null = [list(rng.normal(0.0, 0.1, SEEDS)) for _ in range(2000)]
    assert all(decide(d, claim)[0] != "holds" for d in null)
    # the rule it replaced: mean >= 0 and 2 seed wins
    old = np.mean([np.mean(d) >= 0 and sum(x > 0 for x in d) >= 2 for d in null])
    assert old >= 0.4
    strong = [0.3, 0.31, 0.29, 0.3, 0.32, 0.28, 0.3]
    verdict, reasons = decide(strong, claim)
    assert verdict == "descriptive" and any("cannot hold" in r for r in reasons)
    assert power_of(strong, claim).rule_mde is None


def test_zero_spread_gives_no_interval_so_neither_holds_nor_does_not_hold():
    assert decide([1 / 30, 1 / 30], CLAIM.model_copy(update={"min_seed_wins": 2}))[0] == "inconclusive"
    assert decide([0.1, 0.1, 0.1], CLAIM.model_copy(update={"min_delta": 0.15}))[0] == "inconclusive"
    # with spread, the same mean below the bar is excluded
    assert decide([0.09, 0.1, 0.11], CLAIM.model_copy(update={"min_delta": 0.15}))[0] == "does not hold"


def test_a_seed_exactly_at_the_bar_is_not_a_win_whichever_way_the_float_rounds():
    low, high = 0.7 - 0.55, 0.45 - 0.3  # both 0.15 exactly, computed 0.1499... and 0.1500...02
    assert low < 0.15 < high
    assert not above(low, 0.15) and not above(high, 0.15) and above(0.15 + 1e-6, 0.15)
    claim = CLAIM.model_copy(update={"min_delta": 0.15, "min_seed_wins": 1})
    assert "0/2 seed wins < 1" in decide([low, high], claim)[1]


@pytest.mark.parametrize(("bar", "wins"), [(0.0, 4), (0.15, 4), (0.15, 0)])
def test_the_rule_holds_with_80_percent_probability_at_its_rule_mde(bar: float, wins: int):
    sd, claim = 0.1, CLAIM.model_copy(update={"min_delta": bar, "min_seed_wins": wins})
    effect = rule_mde(sd, SEEDS, claim, family=1)
    assert effect is not None and effect > bar
    rng = np.random.default_rng(17)
    draws = rng.normal(effect, sd, size=(4000, SEEDS))
    rate = np.mean([decide(list(d), claim)[0] == "holds" for d in draws])
    assert abs(rate - 0.8) <= 4 * math.sqrt(0.16 / 4000), rate
    if bar > 0:  # the MDE of the test against 0 says nothing about clearing the bar
        at_mde = rng.normal(mde(sd, SEEDS), sd, size=(2000, SEEDS))
        assert np.mean([decide(list(d), claim)[0] == "holds" for d in at_mde]) < 0.5


def test_a_larger_family_needs_a_larger_effect():
    one, six = (rule_mde(0.1, SEEDS, CLAIM, family=f) for f in (1, 6))
    assert one is not None and six is not None and six > one


def test_a_reason_says_when_the_interval_excludes_0_but_the_family_s_test_fails():
    diffs = [0.175, 0.008, 0.15, -0.017, 0.108, 0.1, 0.058]  # ppo - base as published, to 3 decimals
    alone = FamilyTest.alone(diffs)
    in_five = FamilyTest(alone.p, min(1.0, 5 * alone.p), 5)  # the smallest p of five: Holm's 5 p
    claim = CLAIM.model_copy(update={"min_seed_wins": 1})
    assert decide(diffs, claim, alone) == ("holds", [])
    verdict, reasons = decide(diffs, claim, in_five)
    assert verdict == "inconclusive"
    assert reasons[0].startswith(
        "95% interval over seeds [+0.018, +0.149] excludes 0 alone, not at the family"
    )
    assert "one-sided p 0.0105, Holm-adjusted over the 5 claims judged together 0.0525" in reasons[0]


def test_a_claim_s_family_is_the_runs_one_or_for_a_gpu_claim_on_cpu_runs_the_cuda_one():
    gpu = CLAIM.model_copy(update={"id": "gpu", "needs_gpu": True})
    claims = [CLAIM, CLAIM.model_copy(update={"id": "b"}), gpu, CLAIM.model_copy(update={"ci_rule": "none"})]
    assert [judged(c, on_cuda=False) for c in claims] == [True, True, False, False]
    assert family_size(claims, CLAIM, on_cuda=False) == 2
    assert family_size(claims, gpu, on_cuda=False) == 3  # judged on CUDA runs with both CPU claims
    assert family_size(claims, gpu, on_cuda=True) == 3 and family_size(claims, CLAIM, on_cuda=True) == 3

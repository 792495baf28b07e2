"""A claim registered without an interval rule (ci_rule none) is DESCRIPTIVE: its interval is shown,
no rule tests it, and it does not count toward "every claim holds" (the audit's exit 0), which it
could otherwise never meet."""

from __future__ import annotations

from pappo.evidence.verdicts import ClaimVerdict, decide, every_rule_holds, render_claim
from test_claim_family import CLAIM

DESCRIPTIVE = CLAIM.model_copy(update={"ci_rule": "none", "min_seed_wins": 2})
STRONG = [0.3, 0.31, 0.29, 0.3, 0.32, 0.28, 0.3]


def verdict(id: str, label: str) -> ClaimVerdict:
    numbers = dict(delta=0.3, lo=0.29, hi=0.31, seed_wins=7, n_seeds=7, reasons=[])
    return ClaimVerdict(
        id=id,
        holds=label == "holds",
        verdict=label,
        metric="success",
        method="pappo",
        baseline="ppo",
        **numbers,
    )


def test_a_descriptive_claim_is_descriptive_whatever_its_numbers():
    assert decide(STRONG, DESCRIPTIVE)[0] == "descriptive"
    assert decide([-x for x in STRONG], DESCRIPTIVE)[0] == "descriptive"  # nor "does not hold"


def test_it_prints_as_descriptive_with_its_interval():
    line = render_claim(verdict("d", "descriptive"))[0]
    assert "DESCRIPTIVE" in line and "[+0.290, +0.310]" in line


def test_every_claim_with_a_rule_holds_ignores_descriptive_claims():
    assert every_rule_holds([verdict("a", "holds"), verdict("d", "descriptive")])
    assert not every_rule_holds([verdict("a", "inconclusive"), verdict("d", "descriptive")])

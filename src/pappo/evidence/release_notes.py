"""RELEASE_NOTES.md of a bundle, rendered from what the bundle itself carries: BUNDLE.json's fields,
the summary (reports/summary.json) and the release's audit verdict (receipts/audit.json). Written
by `pappo release`, and rendered again by `verify-bundle` from the same files, so notes edited to
say more than the evidence (a claim marked HOLDS, another interval) do not verify."""

from __future__ import annotations

from typing import Any

from pappo.evidence.defined_stages import stale_note
from pappo.evidence.labels import md_table


def _iv(x: Any) -> str:
    return f"{x.mean:.3f} [{x.lo:.3f}, {x.hi:.3f}]"


def _seed_iv(m: Any, metric: str) -> str:
    """A method's metric as the rules read it: mean over seeds, 95% t interval over seeds
    (`MethodSummary.over_seeds`); one seed has no interval (the mean alone)."""
    level = m.over_seeds.get(metric)
    return f"{getattr(m, metric).mean:.3f} (one seed: no interval)" if level is None else _iv(level)


def _diff(c: Any) -> str:
    """A comparison's seed-level difference; one seed has no interval (summary_models.Comparison.difference None)."""
    if c.difference is None:
        mean = sum(c.per_seed_difference) / len(c.per_seed_difference) if c.per_seed_difference else 0.0
        return f"{mean:+.3f} (one seed: no interval)"
    d = c.difference
    return f"{d.mean:+.3f} [{d.lo:+.3f}, {d.hi:+.3f}]"


def _notes_head(bundle: dict[str, Any], summary: Any, verdict: Any) -> list[str]:
    """The notes' title and the bundle's, the run's and the audit's facts (the tiny profile flagged)."""
    holds = [c for c in verdict.claims if c.holds]
    ruled = [c for c in verdict.claims if c.label != "descriptive"]
    described = len(verdict.claims) - len(ruled)
    lines = [
        f"# PAPPO evidence bundle {bundle['version']}",
        "",
        f"- commit: `{bundle['commit']}` (`{bundle['swhid_rev']}`), committed {bundle['created']}",
        f"- source tree: `{bundle['swhid_dir']}` (files under `source/`)",
        f"- profile: {summary.profile} on {summary.device}; seeds {summary.seeds}; K = {summary.eval_samples}",
        f"- audit: integrity {'OK' if verdict.integrity_ok else 'FAILED'}, runs checked: {verdict.runs_checked}; "
        f"{len(holds)} of {len(ruled)} pre-registered claims with a rule hold"
        + (f", {described} descriptive (no rule)" if described else "")
        + f" (exit code {verdict.exit_code})",
    ]
    if summary.profile == "tiny":
        lines += [
            "",
            "The tiny profile is a CPU pipeline check on a tiny model: its numbers test the pipeline, "
            "not the methods.",
        ]
    return lines


def _notes_results(summary: Any) -> list[str]:
    """The held-out success table and the comparisons vs the best baseline, from the `Summary`."""
    success = [
        [m.method, m.n_seeds, _seed_iv(m, "success"), _seed_iv(m, "pass_at_k")] for m in summary.summaries
    ]
    differences = [
        [c.method, c.baseline, _diff(c), f"{c.seed_wins}/{c.n_seeds}"] for c in summary.comparisons
    ]
    return [
        "",
        "## Held-out success (mean over seeds, 95% t interval over seeds)",
        "",
        md_table(["method", "seeds", "success", "pass@K"], success),
        "",
        "The seed is what was randomised (one trained policy per seed); the interval that resamples "
        "tasks within fixed seeds is evaluation noise only and is in reports/summary.md.",
        "",
        f"## Comparisons (success difference vs {summary.best_baseline}, 95% t interval over seeds)",
        "",
        md_table(["method", "baseline", "difference", "seed wins"], differences),
    ]


def _notes_claims(verdict: Any) -> list[str]:
    """The pre-registered claims table, then every claim's reasons."""
    head = [
        "claim",
        "verdict",
        "method vs baseline",
        "metric",
        "improvement [95% t interval over seeds]",
        "seed wins",
    ]
    rows = [
        [
            c.id,
            c.label.upper(),
            f"{c.method} vs {c.baseline}",
            c.metric,
            f"{c.delta:+.3f} {c.interval}",
            f"{c.seed_wins}/{c.n_seeds}",
        ]
        for c in verdict.claims
    ]
    lines = ["", "## Pre-registered claims (receipts/audit.json)", "", md_table(head, rows)]
    reasons = [f"- {c.id} {c.label.upper()}: {r}" for c in verdict.claims for r in c.reasons]
    lines += ["", *reasons] if reasons else []
    return lines


def _notes_check(bundle: dict[str, Any]) -> list[str]:
    """The commands that check the bundle, ending the notes with a newline."""
    zip_name = f"pappo-evidence-{bundle['version']}.zip"
    return [
        "",
        "## Check this bundle",
        "",
        "```bash",
        "sha256sum -c SHA256SUMS   # inside the unpacked bundle",
        f"pappo verify-bundle {zip_name}   # hashes, SWHID, receipts, audit",
        f"pappo audit --bundle {zip_name}   # every number re-derived, the claims (docs/reviewing.md)",
        f"pappo evidence import {zip_name}   # in a clone of the commit: runs, DVC cache",
        "```",
        "",
    ]


def release_notes(bundle: dict[str, Any], summary: Any, verdict: Any, stale: list[str] | None = None) -> str:
    """RELEASE_NOTES.md from BUNDLE.json's fields, a `Summary` and an `AuditVerdict` (and the
    stale dvc.lock stages the release ignored, if any)."""
    lines = _notes_head(bundle, summary, verdict) + ([f"- {stale_note(stale)}"] if stale else [])
    lines += _notes_results(summary)
    lines += _notes_claims(verdict)
    lines += _notes_check(bundle)
    return "\n".join(lines)

"""Names shared by the summary, its markdown, its plots and the release notes: metrics, their
labels, plot titles, and the markdown table they are written in.

In a module of their own so that the plots read them without importing the summary (which
renders the plots): the import graph of the evidence stays one-way.
"""

from __future__ import annotations

from collections.abc import Sequence

METRICS: tuple[str, ...] = ("success", "pass_at_k", "failed_edit_rate", "tool_cost", "repeated_test_rate")
LABELS = {
    "success": "success",
    "pass_at_k": "pass@K",
    "failed_edit_rate": "failed edit rate",
    "tool_cost": "tool cost",
    "repeated_test_rate": "repeated test rate",
}
# over seeds the two rates are per greedy turn (TASK_METRICS), so they are labelled as such
SUMMARY_LABELS = {
    **LABELS,
    "failed_edit_rate": "failed edits/turn",
    "repeated_test_rate": "repeated tests/turn",
}
TASK_METRICS = (
    "Per eval task (greedy episode unless noted): success = 1 if solved else 0; pass_at_k = unbiased "
    "pass@K of the K sampled episodes (Chen et al. 2021; K = 0: greedy success); tool_cost = weighted "
    "tool calls; failed_edit_rate = failed str_replace calls / max(1, turns); repeated_test_rate = "
    "repeated run_tests calls / max(1, turns)."
)
TITLES = {
    "success_curves": "Held-out success per update",
    "final_metrics": "Final held-out metrics per method",
    "ppo_diagnostics": "PPO / PAPPO optimisation diagnostics",
}


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A markdown table: a header row, its separator, one row per entry."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)

"""The base model's headline numbers (`reports/base_model_metrics.json`), read from its report.

No torch: the base_model stage writes them and `pappo audit` re-derives them from the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def metrics_path(report_path: Path) -> Path:
    """reports/base_model_metrics.json next to reports/base_model.json: what `dvc exp show` shows."""
    return Path(report_path).with_name("base_model_metrics.json")


def headline(report: dict[str, Any]) -> dict[str, float]:
    """The base model's success, greedy and sampled (none for a hub checkpoint, which is not evaluated)."""
    ev = report.get("eval")
    return (
        {"success": ev["greedy"]["success_rate"], "sampled_success": ev["sampled"]["success_rate"]}
        if ev
        else {}
    )

"""Published numbers bound to the runs: `pappo audit` re-derives them and compares.

- every run report's aggregates (each evaluation's intervals, tokens, `final_eval`, the budget
  used, `metrics.json`) from its per-task outcomes and per-update records;
- `reports/summary.json`, `reports/summary.md` and the plots from the run reports (the report
  stage is deterministic: the same bytes);
- `reports/base_model.json`'s success rates and task list from its per-episode outcomes;
- a receipt's hardware against the run's own device.

Numbers in JSON are compared to a relative 1e-9: the bootstrap's sums may round differently under
another numpy build or CPU, an edit does not. Markdown and plots are compared as bytes (the
report stage writes them from the JSON with 2 decimals, with fixed plot metadata).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pappo.config import Params
from pappo.evidence.summary_md import summary_files
from pappo.experiment.receipt import Receipt
from pappo.experiment.report import RunReport, budget_limits, budget_used, flat_metrics
from pappo.io import PappoError, sha256_bytes
from pappo.policy.base_metrics import headline
from pappo.rl.results import aggregate, at_point

Fail = Callable[[Path | str, str, Any, Any, str], None]
MAX_PER_FILE = 5  # differences named per file: enough to see the edit, not a wall of text
SUMMARY_FILES = ("reports/summary.json", "reports/summary.md", "reports/summary")


def diffs(want: Any, found: Any, where: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(field path, expected, found) of every difference between two JSON values."""
    if isinstance(want, dict) and isinstance(found, dict):
        for key in sorted(set(want) | set(found), key=str):
            path = f"{where}.{key}" if where else str(key)
            if key not in found:
                yield path, want[key], "missing"
            elif key not in want:
                yield path, "absent", found[key]
            else:
                yield from diffs(want[key], found[key], path)
    elif isinstance(want, list) and isinstance(found, list):
        if len(want) != len(found):
            yield f"{where} (length)", len(want), len(found)
        for i, (a, b) in enumerate(zip(want, found)):
            yield from diffs(a, b, f"{where}[{i}]")
    elif _number(want) and _number(found):
        if not math.isclose(want, found, rel_tol=1e-9, abs_tol=1e-12):
            yield where or "-", want, found
    elif type(want) is not type(found) or want != found:
        yield where or "-", want, found


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def report_diffs(fail: Fail, file: Path | str, want: Any, found: Any, message: str, prefix: str = "") -> bool:
    """Name up to MAX_PER_FILE differences; True when there were any."""
    found_any = False
    for n, (field, a, b) in enumerate(diffs(want, found, prefix)):
        if n == MAX_PER_FILE:
            fail(file, "...", "-", "-", "more differences not listed")
            break
        fail(file, field, _short(a), _short(b), message)
        found_any = True
    return found_any


def _short(x: Any) -> str:
    text = x if isinstance(x, str) else json.dumps(x, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def check_report(fail: Fail, run_dir: Path, report: RunReport, params: Params) -> None:
    """A run report's aggregates from its per-task outcomes and per-update records."""
    path = run_dir / "report.json"
    why = "not what the report's per-task outcomes give; the report was edited: rerun its train stage"
    _check_evals(fail, path, report, params, why)
    if report.evals:
        report_diffs(
            fail,
            path,
            report.evals[-1].result.model_dump(mode="json"),
            report.final_eval.model_dump(mode="json"),
            "final_eval is not the last evaluation",
            "final_eval",
        )
    episodes, tokens = budget_limits(params, report.method)
    want_budget = {
        "episodes_limit": episodes,
        "generated_tokens_limit": tokens,
        **budget_used(report.updates, report.evals),
    }
    found_budget = report.budget.model_dump(mode="json")
    report_diffs(
        fail,
        path,
        want_budget,
        {k: found_budget[k] for k in want_budget},
        "not what the per-update records and params give",
        "budget",
    )
    metrics = run_dir / "metrics.json"
    try:
        found_metrics = json.loads(metrics.read_text())
    except (OSError, ValueError) as e:
        fail(
            metrics,
            "-",
            "the report's flat metrics",
            "unreadable",
            f"{type(e).__name__}; rerun its train stage",
        )
        return
    report_diffs(
        fail,
        metrics,
        flat_metrics(report),
        found_metrics,
        "not the report's final_eval; rerun its train stage",
    )
    _check_curves(fail, run_dir / "dvclive", report)


def _check_curves(fail: Fail, folder: Path, report: RunReport) -> None:
    """The run's dvclive held-out curves say what its report's evaluations say: outcomes rewritten
    in the report alone (its aggregates, metrics and hashes made to match) still disagree here."""
    why = "not the report's evaluations; rerun its train stage"
    for name in ("success", "pass_at_k"):
        path = folder / "plots" / "metrics" / "eval" / f"{name}.tsv"
        want = {e.update: getattr(e.result, name).mean for e in report.evals}
        try:
            rows = [line.split("\t") for line in path.read_text().splitlines()[1:] if line.strip()]
            found = {int(step): float(value) for step, value in rows}
        except (OSError, ValueError) as e:
            fail(
                path, "-", "the run's eval curve", "unreadable", f"{type(e).__name__}; rerun its train stage"
            )
            continue
        if found.keys() != want.keys() or any(
            not math.isclose(found[k], want[k], abs_tol=1e-12) for k in want
        ):
            fail(path, f"eval/{name}", want, found, why)


def _check_evals(fail: Fail, path: Path, report: RunReport, params: Params, why: str) -> None:
    """Each evaluation's tasks (order, boards, samples) and its aggregates from its per-task outcomes."""
    for i, e in enumerate(report.evals):
        ids = [t.instance_id for t in e.result.tasks]
        if ids != sorted(ids) or len(set(ids)) != len(ids):
            fail(
                path,
                f"evals[{i}].result.tasks",
                "one per task, by instance_id",
                ids[:6],
                "reordered or repeated tasks",
            )
            continue
        shape = at_point(params, final=i == len(report.evals) - 1).eval  # the trainer's rule
        boards, samples = shape.boards, shape.samples
        bad = [t.instance_id for t in e.result.tasks if (t.boards, t.samples) != (boards, samples)]
        if bad:
            fail(
                path,
                f"evals[{i}].result.tasks[].boards/samples",
                f"{boards} boards, {samples} samples",
                bad[:3],
                "not what eval.boards, eval.samples and eval.intermediate give this evaluation",
            )
        want = aggregate(e.result.tasks, samples, params.eval.n_boot).model_dump(mode="json")
        report_diffs(fail, path, want, e.result.model_dump(mode="json"), why, f"evals[{i}].result")


def check_receipt(fail: Fail, run_dir: Path, report: RunReport, receipt: Receipt) -> None:
    """The receipt's adapters are the report's, and its hardware says the device the run reports it
    ran on, and nothing else."""
    path = run_dir / "receipt.json"
    adapters = receipt.checkpoint.adapters if receipt.checkpoint else {}
    if adapters != report.adapters_sha256:
        changed = sorted(
            k
            for k in set(adapters) | set(report.adapters_sha256)
            if adapters.get(k) != report.adapters_sha256.get(k)
        )
        fail(
            path,
            "checkpoint.adapters",
            {k: report.adapters_sha256.get(k) for k in changed},
            {k: adapters.get(k) for k in changed},
            "not the adapters the run's report names (swapped weights)",
        )
    hw = receipt.hardware
    if hw.accelerator != report.device:
        fail(
            path,
            "hardware.accelerator",
            report.device,
            hw.accelerator,
            "the report says the run ran elsewhere",
        )
    if any(d.split(":")[0] != report.device for d in receipt.ranks_devices):
        fail(
            path,
            "ranks_devices",
            f"{report.device} on every rank",
            receipt.ranks_devices,
            "not the run's device",
        )
    gpu_fields = (hw.accelerator_model_name, hw.accelerator_memory_capacity_gb, hw.cuda_runtime_version)
    if hw.accelerator == "cpu" and (hw.accelerators_per_node or any(f is not None for f in gpu_fields)):
        fail(
            path,
            "hardware",
            "no accelerator fields on a CPU run",
            hw.accelerator_model_name,
            "inconsistent hardware",
        )
    if hw.accelerator == "cuda" and (not hw.accelerators_per_node or hw.accelerator_model_name is None):
        fail(path, "hardware", "a GPU model and count", hw.accelerator_model_name, "inconsistent hardware")


def check_summary(fail: Fail, root: Path, runs: Path, params: Params) -> None:
    """reports/summary.json, summary.md and every plot, recomputed from the run reports."""
    out = root / "reports"
    try:
        _, files = summary_files(
            runs,
            out / "summary.json",
            out / "summary.md",
            out / "summary",
            params.seeds,
            params.eval.n_boot,
            claims=params.claims,
        )
    except PappoError as e:
        fail(out / "summary.json", "-", "a summary of the run reports", "none", str(e))
        return
    why = "not what the run reports give; rerun `dvc repro report` (or restore the file)"
    for path, want in files.items():
        if not path.is_file():
            fail(path, "-", "a file", "missing", why)
        elif path.suffix == ".json":
            try:
                found = json.loads(path.read_text())
            except ValueError as e:
                fail(path, "-", "JSON", "unreadable", str(e))
                continue
            report_diffs(fail, path, json.loads(want), found, why)
        elif path.suffix == ".md":
            _text_diff(fail, path, want.decode(), path.read_text(errors="replace"), why)
        elif (found_sha := sha256_bytes(path.read_bytes())) != sha256_bytes(want):
            fail(path, "sha256", sha256_bytes(want), found_sha, f"the plot is {why}")
    for extra in sorted(p for p in (out / "summary").rglob("*") if p.is_file() and p not in files):
        fail(extra, "-", "absent", "present", "a file the report stage does not write; remove it or rerun")


def _text_diff(fail: Fail, path: Path, want: str, found: str, why: str) -> None:
    a, b = want.splitlines(), found.splitlines()
    for n in range(max(len(a), len(b))):
        x, y = (a[n] if n < len(a) else "(end of file)"), (b[n] if n < len(b) else "(end of file)")
        if x != y:
            fail(path, f"line {n + 1}", _short(x), _short(y), why)
            return
    if want != found:
        fail(path, "-", "the same bytes", "other whitespace", why)


def check_base_model(fail: Fail, root: Path, params: Params, record: dict[str, Any], ids: list[str]) -> None:
    """reports/base_model.json: its checkpoint is the one on disk, and (tiny) its success rates are
    those of its per-episode outcomes on `ids`, the lock's eval split `base_model.eval_split_seed`."""
    path = root / "reports" / "base_model.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        fail(
            path,
            "-",
            "the base_model stage's report",
            "unreadable",
            f"{type(e).__name__}; rerun dvc repro base_model",
        )
        return
    report_diffs(fail, path, record, data.get("checkpoint"), "not models/base/checkpoint.json", "checkpoint")
    if data.get("profile") != params.model.profile:
        fail(path, "profile", params.model.profile, data.get("profile"), "another model profile")
    metrics = path.with_name("base_model_metrics.json")
    try:
        found = json.loads(metrics.read_text())
    except (OSError, ValueError) as e:
        fail(
            metrics,
            "-",
            "the base model's success rates",
            "unreadable",
            f"{type(e).__name__}; rerun dvc repro base_model",
        )
    else:
        report_diffs(fail, metrics, headline(data), found, "not reports/base_model.json's success rates")
    if params.model.profile == "hub":
        return  # the hub checkpoint is resolved, not evaluated, by the stage
    split = params.base_model.eval_split_seed
    ev = data.get("eval") or {}
    report_diffs(
        fail,
        path,
        {"n_tasks": len(ids), "split_seed": split},
        {"n_tasks": ev.get("n_tasks"), "split_seed": ev.get("split_seed")},
        "not the lock's eval split",
        "eval",
    )
    _check_base_episodes(fail, path, ev, ids)


def _check_base_episodes(fail: Fail, path: Path, ev: dict[str, Any], ids: list[str]) -> None:
    """Each mode's episodes are the split's tasks in order, and its success rate is their share."""
    for mode in ("greedy", "sampled"):
        episodes = (ev.get(mode) or {}).get("episodes") or []
        found_ids = [e.get("instance_id") for e in episodes]
        if found_ids != list(ids):
            fail(
                path,
                f"eval.{mode}.episodes[].instance_id",
                list(ids)[:4],
                found_ids[:4],
                "not the split's tasks in order",
            )
            continue
        rate = sum(bool(e.get("success")) for e in episodes) / max(1, len(episodes))
        report_diffs(
            fail,
            path,
            rate,
            (ev.get(mode) or {}).get("success_rate"),
            "not the share of its episodes that succeeded; the report was edited",
            f"eval.{mode}.success_rate",
        )

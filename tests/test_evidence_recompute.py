"""Published numbers re-derived by the audit (evidence/recompute.py): every tamper a reviewer might
try on the summary, its plots, a run report's aggregates, a receipt's hardware, base_model.json.
(The same checks run through `pappo audit` on a real `dvc repro` in test_dvc_smoke.)"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conftest import cpu_hardware, fixture_params_raw
from pappo.config import Params
from pappo.evidence import recompute
from pappo.evidence.audit_context import AuditFailure
from pappo.evidence.summary_md import write_summary
from pappo.experiment.receipt import HardwareInfo
from pappo.experiment.report import RUN_METHODS, RunReport, budget_used, flat_metrics
from pappo.experiment.run import write_curves
from pappo.rl.results import aggregate
from test_evidence_summary import IDS, N_BOOT, SEEDS, K, run_report


@pytest.fixture
def params(fx_params: Params) -> Params:
    """Params the fixture runs obey: K samples, 2 updates of 8 tasks x 2, 100 tokens an episode."""
    data = fx_params.model_dump(mode="json")
    data["seeds"] = list(SEEDS)
    data["eval"].update(samples=K, n_boot=N_BOOT)
    data["rl"].update(updates=2, tasks_per_update=8, group_size=2)
    data["env"]["max_turns"] = 2
    data["rollout"].update(max_new_tokens_per_turn=50, max_tokens_per_episode=100)
    return Params.model_validate(data)


class Failures(list):
    def __call__(self, file: Path | str, field: str, expected: Any, found: Any, message: str) -> None:
        self.append(
            AuditFailure(
                file=Path(file).name, field=field, expected=str(expected), found=str(found), message=message
            )
        )


def sorted_report(report: RunReport) -> RunReport:
    """As evaluate writes it: tasks by instance_id (the summary's fixture reverses them)."""
    for e in report.evals:
        e.result.tasks.sort(key=lambda t: t.instance_id)
    return report.model_copy(update={"final_eval": report.evals[-1].result})


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root with reports/runs/seed_*/*/{report,metrics}.json and the summary the report stage writes."""
    root = tmp_path_factory.mktemp("published")
    runs = root / "reports" / "runs"
    for s in SEEDS:
        for m in RUN_METHODS:
            run = runs / f"seed_{s}" / m
            run.mkdir(parents=True)
            report = sorted_report(run_report(m, s))
            (run / "report.json").write_text(report.model_dump_json(indent=2))
            (run / "metrics.json").write_text(json.dumps(flat_metrics(report)))
            write_curves(run / "dvclive", report)  # as the trainer writes them
    out = root / "reports"
    claims = Params.model_validate(fixture_params_raw()).claims  # the report stage summarises params' claims
    files = (out / "summary.json", out / "summary.md", out / "summary")
    write_summary(runs, *files, SEEDS, n_boot=N_BOOT, claims=claims)
    return root


@pytest.fixture
def root(published: Path, tmp_path: Path) -> Path:
    shutil.copytree(published, tmp_path / "r")
    return tmp_path / "r"


def summary_failures(root: Path, params: Params) -> Failures:
    fail = Failures()
    recompute.check_summary(fail, root, root / "reports" / "runs", params)
    return fail


def edit_json(path: Path, change: Callable[[Any], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def test_the_published_summary_recomputes_exactly(root: Path, params: Params):
    assert summary_failures(root, params) == []


@pytest.mark.parametrize(
    "change, field",
    [
        (
            lambda d: d["summaries"][4]["success"].update(hi=1.0),
            "summaries[4].success.hi",
        ),  # an interval bound
        (lambda d: d["comparisons"][0]["difference"].update(mean=0.333), "comparisons[0].difference.mean"),
        (lambda d: d["summaries"][0]["per_seed"].pop(), "summaries[0].per_seed (length)"),  # a row deleted
        (lambda d: d["budget"][3].update(episodes_used=1), "budget[3].episodes_used"),
        (lambda d: d.update(best_baseline="base"), "best_baseline"),
    ],
)
def test_an_edited_summary_json_names_field_expected_and_found(root: Path, params: Params, change, field):
    path = root / "reports" / "summary.json"
    before = json.loads(path.read_text())
    edit_json(path, change)
    fail = summary_failures(root, params)
    assert [f.file for f in fail] == ["summary.json"] * len(fail) and fail
    hit = next(f for f in fail if f.field == field)
    assert "rerun `dvc repro report`" in hit.message
    if not field.endswith("(length)"):
        want = before
        for part in field.replace("]", "").replace("[", ".").split("."):
            want = want[int(part)] if isinstance(want, list) else want[part]
        assert hit.expected == json.dumps(want) or hit.expected == want


def test_an_edited_summary_markdown_names_the_line(root: Path, params: Params):
    path = root / "reports" / "summary.md"
    lines = path.read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if line.startswith("| pappo |"))
    original = lines[n]
    lines[n] = original.replace("0.", "9.", 1)
    path.write_text("\n".join(lines) + "\n")
    [hit] = summary_failures(root, params)
    assert (hit.file, hit.field, hit.expected, hit.found) == (
        "summary.md",
        f"line {n + 1}",
        original,
        lines[n],
    )


@pytest.mark.parametrize("plot", ["success_curves.png", "final_metrics.svg"])
def test_an_edited_plot_fails_by_name_with_both_hashes(root: Path, params: Params, plot: str):
    path = root / "reports" / "summary" / plot
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    [hit] = summary_failures(root, params)
    assert hit.file == plot and hit.field == "sha256" and hit.expected != hit.found and "plot" in hit.message


def test_a_missing_or_extra_summary_file_fails(root: Path, params: Params):
    (root / "reports" / "summary" / "final_metrics.png").unlink()
    (root / "reports" / "summary" / "mine.png").write_bytes(b"x")
    fail = summary_failures(root, params)
    assert {(f.file, f.found) for f in fail} == {("final_metrics.png", "missing"), ("mine.png", "present")}


def report_failures(
    root: Path, params: Params, report: RunReport, seed: int = 0, method: str = "pappo"
) -> Failures:
    fail = Failures()
    recompute.check_report(fail, root / "reports" / "runs" / f"seed_{seed}" / method, report, params)
    return fail


def test_honest_reports_recompute_exactly(root: Path, params: Params):
    for s in SEEDS:
        for m in RUN_METHODS:
            report = RunReport.model_validate_json(
                (root / f"reports/runs/seed_{s}/{m}/report.json").read_text()
            )
            assert report_failures(root, params, report, s, m) == []


def test_tasks_all_solved_under_a_zero_aggregate_is_caught(root: Path, params: Params):
    report = sorted_report(run_report("pappo", 2))  # seed 2: nothing solved, success 0.00
    assert report.final_eval.success.mean == 0.0
    for e in report.evals:  # final_eval is the last of them
        for t in e.result.tasks:
            t.success = True
    fail = report_failures(root, params, report, 2)
    fields = {f.field for f in fail}
    assert "evals[1].result.success.mean" in fields and "final_eval" not in fields
    hit = next(f for f in fail if f.field == "evals[1].result.success.mean")
    assert (hit.expected, hit.found) == ("1.0", "0.0") and "per-task outcomes" in hit.message


def test_reordered_tasks_a_changed_budget_and_final_eval_are_caught(root: Path, params: Params):
    report = sorted_report(run_report("ppo", 0))
    report.evals[0].result.tasks.reverse()
    report.budget.generated_tokens_used -= 1
    report.final_eval = report.evals[0].result
    fields = {f.field for f in report_failures(root, params, report, 0, "ppo")}
    assert {"evals[0].result.tasks", "budget.generated_tokens_used"} <= fields
    assert any(f.startswith("final_eval.") for f in fields)


def test_the_dvclive_curves_must_be_the_reports(root: Path, params: Params):
    run = root / "reports/runs/seed_0/pappo"
    report = RunReport.model_validate_json((run / "report.json").read_text())
    curve = run / "dvclive/plots/metrics/eval/success.tsv"
    last = report.evals[-1]
    curve.write_text(curve.read_text().replace(f"\t{last.result.success.mean}", "\t0.9"))
    [hit] = report_failures(root, params, report)
    assert (hit.file, hit.field) == ("success.tsv", "eval/success") and "0.9" in hit.found
    curve.unlink()
    [hit] = report_failures(root, params, report)
    assert (hit.file, hit.found) == ("success.tsv", "unreadable")


def test_metrics_json_must_be_the_reports(root: Path, params: Params):
    path = root / "reports/runs/seed_1/grpo/metrics.json"
    edit_json(path, lambda d: d.update(success_hi=1.0))
    report = RunReport.model_validate_json((path.parent / "report.json").read_text())
    [hit] = report_failures(root, params, report, 1, "grpo")
    assert (hit.file, hit.field, hit.found) == ("metrics.json", "success_hi", "1.0")


def test_a_receipt_that_says_gpu_for_a_cpu_run_is_caught():
    report = run_report("ppo", 0)
    receipt = type("R", (), {})()
    receipt.hardware = HardwareInfo(
        accelerator="cuda",
        accelerator_model_name="NVIDIA H100",
        accelerators_per_node=1,
        accelerator_memory_capacity_gb=80.0,
        nvidia_driver_version="550",
        cuda_runtime_version="12.4",
        cudnn_version="9",
        host_processor_model_name=None,
        host_processor_core_count=8,
        host_memory_capacity_gb=16.0,
    )
    receipt.ranks_devices = ["cuda:0"]
    receipt.checkpoint = SimpleNamespace(adapters=dict(report.adapters_sha256))
    fail = Failures()
    recompute.check_receipt(fail, Path("runs/seed_0/ppo"), report, receipt)
    assert {(f.field, f.expected, f.found) for f in fail} >= {("hardware.accelerator", "cpu", "cuda")}
    assert any(f.field == "ranks_devices" for f in fail)


def test_adapters_swapped_under_a_rehashed_receipt_are_caught():
    """Another run's weights copied in, the receipt's hashes rewritten to match them: the report
    still names the weights its evaluation used."""
    report = run_report("ppo", 0).model_copy(
        update={"adapters_sha256": {"policy/adapter_model.safetensors": "a" * 64}}
    )
    swapped = {**report.adapters_sha256, "policy/adapter_model.safetensors": "b" * 64}
    receipt = SimpleNamespace(
        hardware=cpu_hardware(8.0),
        ranks_devices=["cpu"],
        checkpoint=SimpleNamespace(adapters=swapped),
    )
    fail = Failures()
    recompute.check_receipt(fail, Path("runs/seed_0/ppo"), report, receipt)
    [hit] = list(fail)
    assert hit.field == "checkpoint.adapters" and "swapped" in hit.message
    assert hit.found == str({"policy/adapter_model.safetensors": "b" * 64})
    receipt.checkpoint.adapters = dict(report.adapters_sha256)
    fail = Failures()
    recompute.check_receipt(fail, Path("runs/seed_0/ppo"), report, receipt)
    assert list(fail) == []


def base_model_report(root: Path, record: dict[str, Any]) -> Path:
    episodes = [{"instance_id": i, "success": i == "task-1", "tokens": 10} for i in IDS]
    data = {
        "profile": "tiny",
        "checkpoint": record,
        "numerics": {},
        "eval": {
            "n_tasks": len(IDS),
            "split_seed": 0,
            "greedy": {"success_rate": 0.2, "episodes": episodes},
            "sampled": {"success_rate": 0.2, "episodes": episodes},
        },
    }
    path = root / "reports" / "base_model.json"
    path.write_text(json.dumps(data, indent=2))
    (root / "reports" / "base_model_metrics.json").write_text(
        json.dumps({"success": 0.2, "sampled_success": 0.2})
    )
    return path


@pytest.mark.parametrize(
    "change, field, expected",
    [
        (lambda d: d["eval"]["greedy"].update(success_rate=0.6), "eval.greedy.success_rate", "0.2"),
        (lambda d: d["eval"]["sampled"]["episodes"].reverse(), "eval.sampled.episodes[].instance_id", None),
        (lambda d: d["eval"].update(n_tasks=30), "eval.n_tasks", "5"),
        (lambda d: d["checkpoint"].update(revision="f" * 64), "checkpoint.revision", "0" * 64),
    ],
)
def test_base_model_json_is_its_episodes_and_the_checkpoint(
    root: Path, params: Params, change, field, expected
):
    record = run_report("base", 0).checkpoint.model_dump(mode="json")
    path = base_model_report(root, record)
    fail = Failures()
    recompute.check_base_model(fail, root, params, record, IDS)
    assert fail == []  # honest: 1 of 5 solved
    edit_json(path, change)
    recompute.check_base_model(fail, root, params, record, IDS)
    [hit] = [
        f for f in fail if f.file == "base_model.json"
    ]  # an edited rate also leaves the metrics file behind
    assert (hit.file, hit.field) == ("base_model.json", field) and (
        expected is None or hit.expected == expected
    )


def test_base_model_metrics_are_base_model_json_s_rates(root: Path, params: Params):
    record = run_report("base", 0).checkpoint.model_dump(mode="json")
    base_model_report(root, record)
    edit_json(root / "reports" / "base_model_metrics.json", lambda d: d.update(success=0.4))
    fail = Failures()
    recompute.check_base_model(fail, root, params, record, IDS)
    [hit] = fail
    assert (hit.file, hit.field, hit.expected, hit.found) == (
        "base_model_metrics.json",
        "success",
        "0.2",
        "0.4",
    )


def greedy_intermediate(report: RunReport) -> RunReport:
    """The report as `eval.intermediate: greedy` writes it: evaluations before the last on one
    board without samples (rl/results.at_point), their aggregates and the budget to match."""
    for e in report.evals[:-1]:
        for t in e.result.tasks:
            t.samples = t.sample_successes = t.sample_tokens = 0
        e.result = aggregate(e.result.tasks, 0, N_BOOT)
    used = budget_used(report.updates, report.evals)
    report.budget = report.budget.model_copy(update=used)
    return report


@pytest.mark.parametrize("intermediate", ["greedy", "full"])
def test_greedy_intermediate_evaluations_pass_only_under_their_setting(
    root: Path, params: Params, intermediate: str
):
    report = greedy_intermediate(sorted_report(run_report("ppo", 0)))
    p = params.model_copy(update={"eval": params.eval.model_copy(update={"intermediate": intermediate})})
    fail = report_failures(root, p, report, 0, "ppo")
    if intermediate == "greedy":
        assert [f for f in fail if f.file == "report.json"] == []
    else:  # the same report under `full` is a run that skipped its samples: caught
        hit = next(f for f in fail if f.field == "evals[0].result.tasks[].boards/samples")
        assert hit.expected == f"1 boards, {K} samples" and "eval.intermediate" in hit.message

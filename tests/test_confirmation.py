"""benchmarks/confirmation.py: the receipt's differences are the audit's statistics, recomputable."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import load_benchmark
from pappo.stats import paired_diff_ci_seeds

OUTCOMES = {  # seed -> method -> success per task t0..t3
    3: {"base": [1, 0, 0, 0], "ppo": [1, 1, 0, 0], "pappo": [1, 1, 1, 0]},
    4: {"base": [0, 0, 0, 0], "ppo": [0, 0, 0, 1], "pappo": [1, 0, 1, 1]},
}


def write_runs(root: Path) -> None:
    for seed, methods in OUTCOMES.items():
        for method, wins in methods.items():
            run = root / f"{method}-s{seed}"
            run.mkdir(parents=True)
            tasks = [{"instance_id": f"t{i}", "success": bool(w)} for i, w in enumerate(wins)]
            result = {"success": {"mean": sum(wins) / 4, "lo": 0.0, "hi": 1.0}, "tasks": tasks}
            report = {
                "evals": [{"update": 6, "result": result}],
                "final_eval": result,
                "timing": {"wall_s": 1.0},
            }
            (run / "report.json").write_text(json.dumps(report))
            (run / "receipt.json").write_text(
                json.dumps({"source": {"git_commit": "a" * 40, "git_dirty": False}})
            )


def test_differences_are_the_audits_and_a_receipt_edit_is_caught(tmp_path: Path):
    conf = load_benchmark("confirmation")
    write_runs(tmp_path / "runs")
    for name in ("params.yaml", "lock.json"):
        (tmp_path / name).write_text(name)
    out = tmp_path / "receipt.json"
    args = [
        "--runs",
        str(tmp_path / "runs"),
        "--seeds",
        "3",
        "4",
        "--params",
        str(tmp_path / "params.yaml"),
        "--lock",
        str(tmp_path / "lock.json"),
        "--out",
        str(out),
    ]
    assert conf.main(args) == 0
    diffs = json.loads(out.read_text())["differences"]
    assert diffs["pappo-base"]["per_seed"] == [0.5, 0.75] and diffs["pappo-base"]["mean"] == 0.625
    assert diffs["ppo-base"]["seed_wins"] == 2 and diffs["pappo-ppo"]["per_seed"] == [0.25, 0.5]
    expected = paired_diff_ci_seeds([(OUTCOMES[s]["pappo"], OUTCOMES[s]["ppo"]) for s in (3, 4)]).to_json()
    assert {k: diffs["pappo-ppo"][k] for k in ("mean", "lo", "hi")} == expected
    assert conf.main(["--check", str(out)]) == 0
    receipt = json.loads(out.read_text())
    receipt["differences"]["pappo-base"]["lo"] = 0.6  # a better-looking interval
    out.write_text(json.dumps(receipt))
    assert conf.main(["--check", str(out)]) == 1

"""benchmarks/power_design.py on pilot run folders it is given: per-seed differences, SDs, MDEs, the choice."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from pappo.stats import mde
from test_evidence_summary import SEEDS, SUCCESS, write_runs

sys.path.insert(0, str(ROOT / "benchmarks"))
import power_design


def params_with(tmp_path: Path, seeds: list[int], dev: list[int]) -> Path:
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw |= {"seeds": seeds, "dev_seeds": dev, "seed": dev[0]}
    for claim in raw["claims"]:  # a claim may not ask for more seed wins than there are seeds
        claim["min_seed_wins"] = min(claim["min_seed_wins"], len(seeds))
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_the_design_reads_the_pilot_and_solves_for_the_seeds(tmp_path: Path, capsys):
    runs = write_runs(tmp_path)  # seeds 0-2, every method, 60 s each
    params = params_with(tmp_path, [100, 101, 102], list(SEEDS))
    out = tmp_path / "design.json"
    args = ["--runs", str(runs), "--params", str(params), "--seeds", *map(str, SEEDS), "--out", str(out)]
    result = power_design.main(
        [*args, "--fixed-min", "5", "--stage-start-s", "0", "--n", "3", "10", "40", "--max-min", "60"]
    )
    diffs = [sum(a) / 5 - sum(b) / 5 for a, b in zip(SUCCESS["pappo"], SUCCESS["ppo"])]
    row = result["comparisons"][0]
    assert row["comparison"] == "pappo - ppo" and row["per_seed"] == pytest.approx(diffs)
    assert row["sd"] == pytest.approx(statistics.stdev(diffs)) and row["sd_upper80"] > row["sd"]
    assert result["seed_minutes"] == pytest.approx(5.0)  # five methods x 60 s
    by_n = {t["n_seeds"]: t for t in result["table"]}
    assert by_n[10]["predicted_min"] == pytest.approx(55.0)
    assert by_n[10]["mde pappo - ppo"] == pytest.approx(mde(row["sd"], 10))
    # the smallest N that detects 0.10 within the time: 40 seeds take 205 min, so none here
    assert result["choice"] is None and json.loads(out.read_text())["choice"] is None
    assert "smallest N" in capsys.readouterr().out
    # the seed stage's start-up, which the runs' own clocks miss: once a seed (one stage a seed)
    started = power_design.main([*args, "--fixed-min", "5", "--stage-start-s", "30", "--n", "10"])
    assert started["seed_minutes"] == pytest.approx(5.0 + 30 / 60)
    assert started["table"][0]["predicted_min"] == pytest.approx(5 + 10 * (5.0 + 30 / 60))


def test_a_pilot_on_published_seeds_is_refused(tmp_path: Path):
    runs = write_runs(tmp_path)
    params = params_with(tmp_path, [0, 1, 2], [3])
    with pytest.raises(SystemExit, match="published seeds"):
        power_design.main(["--runs", str(runs), "--params", str(params), "--seeds", "0", "1", "2"])

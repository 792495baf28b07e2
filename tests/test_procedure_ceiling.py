"""benchmarks/procedure_ceiling.py on the fixture tasks through the real sandbox: the oracle
solves all, submitting at once none, the grounded agent the hand-checked task; JSON written."""

from __future__ import annotations

import json

import pytest

from conftest import load_benchmark, write_params


def load_bench():
    return load_benchmark("procedure_ceiling")


@pytest.mark.slow
def test_procedure_ceiling_on_the_fixture_tasks(fx_params, tmp_path, capsys):
    env = fx_params.env.model_copy(update={"max_turns": 12})  # the fixture's 4 turns fit one flip, not three
    params = write_params(fx_params.model_copy(update={"env": env}), tmp_path / "params.yaml")
    out = load_bench().main(
        ["--params", str(params), "--tasks", "all", "--seeds", "3", "--out", str(tmp_path / "ceiling.json")]
    )
    runs = out["runs"]
    assert (
        out["n_tasks"] == 4
        and runs["oracle"]["success_rate"] == 1.0
        and runs["submit"]["success_rate"] == 0.0
    )
    assert "tinycalc-001" in runs["grounded_line"]["solved"]  # the flip test_grounded checks by hand
    shuffled = [runs[f"grounded_shuffle_{s}"]["success_rate"] for s in range(3)]
    assert out["ceiling"] == pytest.approx(sum(shuffled) / 3) and 0 < out["ceiling"] < 1
    assert json.loads((tmp_path / "ceiling.json").read_text()) == out
    assert capsys.readouterr().out.splitlines()[-1] == f"ceiling: {out['ceiling']:.2f}"

"""`pappo reproduce`'s choices and comparisons without a pipeline run (the whole command runs on a
real `dvc repro` in test_dvc_smoke: bit-identical on the same machine)."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from pappo.config import Params
from pappo.evidence import reproduce as rp
from pappo.evidence import reproduce_compare as rpc
from pappo.experiment.report import RUN_METHODS
from pappo.io import PappoError
from pappo.numerics import NumericsInfo
from test_evidence_summary import SEEDS, run_report


@pytest.fixture
def params(fx_params: Params) -> Params:
    return fx_params.model_copy(update={"seeds": list(SEEDS)})


def numerics(fingerprint: str = "f" * 16) -> NumericsInfo:
    return NumericsInfo(
        pinned=True,
        requested={"ATEN_CPU_CAPABILITY": "avx2"},
        cpu_capability="AVX2",
        mkl_branch="COMPATIBLE,STRICT",
        threads=2,
        deterministic_algorithms=True,
        fingerprint=fingerprint,
    )


def test_runs_are_chosen_by_name_or_by_a_seeded_sample(params: Params):
    assert rp.choose_runs(params, "0/ppo, 2/base", None) == [(0, "ppo"), (2, "base")]
    sample = rp.choose_runs(params, None, 4)
    assert len(set(sample)) == 4 and sample == rp.choose_runs(params, None, 4)  # the same sample every time
    assert set(sample) <= {(s, m) for s in SEEDS for m in RUN_METHODS}
    assert rp.choose_runs(params, None, None) == []
    for bad in ("9/ppo", "0/sgd", "ppo"):
        with pytest.raises(PappoError, match="seed/method"):
            rp.choose_runs(params, bad, None)
    with pytest.raises(PappoError, match="between 1 and 15"):
        rp.choose_runs(params, None, 16)


def test_same_numerics_compare_bits_and_timing_does_not_count():
    pub = json.loads(run_report("ppo", 0).model_dump_json())
    again = json.loads(json.dumps(pub))
    again["timing"]["wall_s"] = 99.0
    check = rpc.compare_run("seed_0/ppo", pub, again, numerics(), numerics(), 1.0)
    assert check.comparison == "bitwise" and check.identical and check.first_difference is None
    again["final_eval"]["success"]["mean"] = 0.5
    check = rpc.compare_run("seed_0/ppo", pub, again, numerics(), numerics(), 1.0)
    assert not check.identical and check.first_difference == "final_eval.success.mean" and not rp._ok(check)


def test_other_numerics_compare_metrics_with_the_published_interval():
    pub = json.loads(run_report("pappo", 0).model_dump_json())
    mine = json.loads(json.dumps(pub))
    success = pub["final_eval"]["success"]
    mine["final_eval"]["success"]["mean"] = success["hi"] + 0.01  # just outside
    check = rpc.compare_run("seed_0/pappo", pub, mine, numerics("a" * 16), numerics(), 1.0)
    assert check.comparison == "intervals" and "fingerprint" in check.reason
    by = {m.metric: m for m in check.metrics}
    assert not by["success"].inside and by["success"].difference == pytest.approx(
        success["hi"] + 0.01 - success["mean"]
    )
    assert by["tool_cost"].inside and not rp._ok(check)
    mine["final_eval"]["success"]["mean"] = success["lo"]
    assert rp._ok(rpc.compare_run("seed_0/pappo", pub, mine, numerics("a" * 16), numerics(), 1.0))


def test_the_verdict_names_each_run_and_claim():
    pub = json.loads(run_report("ppo", 1).model_dump_json())
    check = rpc.compare_run("seed_1/ppo", pub, pub, numerics(), numerics(), 12.0)
    claim = rpc.ClaimCheck(
        id="c", published_holds=False, reproduced_holds=True, published_delta=0.0, reproduced_delta=0.2
    )
    rep = rpc.Reproduction(
        commit="a" * 40, runs=[check], claims=[claim], reproduced=False, wall_s=30.0, verdict=""
    )
    text = rp.render(rep)
    assert "NOT REPRODUCED" in text and "seed_1/ppo: bitwise" in text and "bit-identical" in text
    assert "claim c: published does not hold (+0.000), reproduced holds (+0.200): verdict CHANGES" in text


def test_progress_scales_the_published_times_by_this_machines_pace():
    line = rp._progress(1, 3, "seed_0/ppo", 10.0, [10.0, 20.0, 30.0], 20.0, 20.0)  # twice as slow so far
    assert "1/3 seed_0/ppo" in line and "ETA 100 s" in line
    assert "finished" in rp._progress(3, 3, "done", 60.0, [10.0, 20.0, 30.0], 100.0, 100.0)


def test_the_untimed_base_model_does_not_count_as_a_slow_pace():
    """Seen in a full reproduction: the base model (no published wall time) took minutes, and two
    steps later the ETA said 26784 s for about 20 minutes of work."""
    planned = [0.0, 40.0, 80.0, 120.0]
    line = rp._progress(2, 4, "seed_0/grpo", 40.0, planned, 383.0, 53.0)
    assert "ETA 265 s" in line  # (80 + 120) x 53 / 40


def test_the_base_models_wall_time_does_not_count_but_its_outcomes_do():
    """The base model's report records its wall time (the reproduction's plan); a rerun's other
    time is no difference, a changed outcome is."""
    pub = json.loads((ROOT / "reports" / "base_model.json").read_text())
    again = json.loads(json.dumps(pub))
    again["timing"] = {"wall_s": 1.0}
    pub["timing"] = {"wall_s": 300.0}
    check = rpc.compare_base(pub, again, 1.0)
    assert check.identical and check.first_difference is None and rp._ok(check)
    again["eval"]["greedy"]["success_rate"] += 0.5
    check = rpc.compare_base(pub, again, 1.0)
    assert not check.identical and check.first_difference == "eval.greedy.success_rate"


def test_a_bundle_s_source_becomes_a_scratch_repository_with_the_same_tree(tmp_path):
    from pappo.evidence.bundle_check import git_tree_id
    from pappo.evidence.bundle_read import REGULAR

    bundle = tmp_path / "bundle"
    files = {
        "src/pappo/x.py": b"X = 1\n",
        "dvc.yaml": b"stages: {}\n",
        "data/repofix/manifest.lock.json": b"{}\n",
        "data/warmup/manifest.lock.json": b"{}\n",
        "models/base/checkpoint.json": b"{}\n",
    }
    for rel, data in files.items():
        for where in ("source/" + rel,) if rel.startswith(("src", "dvc")) else (rel,):
            (bundle / where).parent.mkdir(parents=True, exist_ok=True)
            (bundle / where).write_bytes(data)
    tree = "swh:1:dir:" + git_tree_id(
        {k: (REGULAR, v) for k, v in files.items() if k.startswith(("src", "dvc"))}
    )
    clone = rp.prepare_tree(bundle, tree, tmp_path / "s1", base=False)
    assert (clone / "src/pappo/x.py").read_bytes() == b"X = 1\n" and (
        clone / "models/base/checkpoint.json"
    ).is_file()
    assert rp._sh(["git", "status", "--porcelain", "--untracked-files=no"], clone) == ""
    (bundle / "source/src/pappo/x.py").write_bytes(b"X = 2\n")  # the unpacked files changed
    with pytest.raises(PappoError, match="unpack the zip again"):
        rp.prepare_tree(bundle, tree, tmp_path / "s2", base=False)
    (bundle / "source/src/pappo/x.py").write_bytes(b"X = 1\n")
    (bundle / "data/warmup/manifest.lock.json").unlink()
    with pytest.raises(PappoError, match="warmup/manifest.lock.json is missing"):
        rp.prepare_tree(bundle, tree, tmp_path / "s3", base=False)

"""Data parallelism (rl/distributed.py): 2 CPU processes under `accelerate launch` (gloo) match one
process on the same batch, ranks stay bit-identical, and a trainer without the gradient all-reduce
is caught. The workers are tests/ddp_worker.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pappo.rl import losses
from pappo.rl.distributed import Dist, merge_stats
from test_rl_trainer import actor_critic

WORKER = Path(__file__).with_name("ddp_worker.py")
ROOT = WORKER.parents[1]
METHODS = ("rft", "grpo", "ppo", "pappo")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(mode: str, out: Path, processes: int, **env: str) -> list[dict]:
    """Run the worker in 1 (plain python) or N processes (accelerate launch); each rank's JSON."""
    if processes == 1:
        cmd = [sys.executable, str(WORKER)]
    else:
        accelerate = Path(sys.executable).with_name("accelerate")
        cmd = [
            str(accelerate),
            "launch",
            "--multi_gpu",
            "--num_processes",
            str(processes),
            "--num_machines",
            "1",
            "--mixed_precision",
            "no",
            "--dynamo_backend",
            "no",
            "--main_process_port",
            str(_free_port()),
            str(WORKER),
        ]
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "", **env}
    proc = subprocess.run(
        [*cmd, "--mode", mode, "--out", str(out)],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(processes)]


def close(a: float, b: float, rel: float) -> bool:
    return abs(a - b) <= rel * (1.0 + abs(a))


@pytest.fixture(scope="module")
def batch_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, list[dict]]:
    tmp = tmp_path_factory.mktemp("ddp")
    [single] = launch("batch", tmp / "one", 1)
    return single, launch("batch", tmp / "two", 2)


def test_two_processes_match_one_on_the_same_batch(batch_runs):
    single, (r0, r1) = batch_runs
    assert single["world_size"] == 1 and r0["world_size"] == r1["world_size"] == 2
    assert r0["rows"] == [0, 1, 2, 3] and r1["rows"] == [4, 5, 6, 7]  # whole groups of K = 2 per rank
    fresh = actor_critic(0)
    for m in METHODS:
        one, two = single[m], r0[m]
        assert len(one["steps"]) == len(two["steps"]) > 0, m
        for i, (a, b) in enumerate(zip(one["steps"], two["steps"])):
            assert a.keys() == b.keys(), m
            # float summation order differs; Adam amplifies it a little step by step
            rel = 1e-5 if i == 0 else 1e-3
            bad = {k: (a[k], b[k]) for k in a if not close(a[k], b[k], rel)}
            assert not bad, (m, i, bad)
        if m != "rft":  # frozen advantages (whitened over both ranks) and the critic warm-up
            assert one["freeze"].keys() == two["freeze"].keys()
            assert all(close(one["freeze"][k], two["freeze"][k], 1e-5) for k in one["freeze"]), m
            for a, b in zip(one["warmup"], two["warmup"]):
                assert all(close(a[k], b[k], 1e-5) for k in a), (m, a, b)
        assert r0[m]["policy"] == r1[m]["policy"] and r0[m]["critic"] == r1[m]["critic"], m  # ranks identical
        diff = max(abs(x - y) for x, y in zip(one["policy"], two["policy"]))
        assert diff < 2e-3, (m, diff)
        start = torch.cat([p.detach().reshape(-1) for p in fresh.policy_parameters()])
        assert (torch.tensor(two["policy"]) - start).abs().max() > 1e-2, m  # the step did move the policy


def test_the_critic_statistics_are_exact_across_ranks(batch_runs):
    single, (r0, _) = batch_runs
    for m in ("ppo", "pappo"):
        for a, b in zip(single[m]["steps"][:1], r0[m]["steps"][:1]):
            assert close(a["critic/vf_explained_var"], b["critic/vf_explained_var"], 1e-6)
            assert close(a["critic/value_loss"], b["critic/value_loss"], 1e-6)


def test_without_the_gradient_all_reduce_the_ranks_diverge(tmp_path: Path):
    r0, r1 = launch("batch", tmp_path, 2, PAPPO_TEST_NO_SYNC="1")
    assert r0["ppo"]["policy"] != r1["ppo"]["policy"]


def test_a_whole_update_with_sharded_rollouts_matches_one_process(tmp_path: Path):
    [single] = launch("update", tmp_path / "one", 1)
    r0, r1 = launch("update", tmp_path / "two", 2)
    assert r0["record"]["rollout"] == single["record"]["rollout"]  # all 8 episodes, gathered
    assert r0["record"]["rollout"]["episodes"] == 8
    assert r0["record"] == r1["record"] and r0["policy"] == r1["policy"]
    for a, b in zip(single["record"]["steps"], r0["record"]["steps"]):
        assert all(close(a[k], b[k], 1e-3) for k in a if k not in ("epoch", "minibatch")), (a, b)
    assert max(abs(x - y) for x, y in zip(single["policy"], r0["policy"])) < 2e-3


# ----------------------------------------------------------------------------- pure pieces
@given(n=st.integers(0, 200), world=st.integers(1, 9))
def test_shards_partition_in_rank_order(n: int, world: int):
    shards = [Dist(rank=r, world_size=world).shard(n) for r in range(world)]
    assert [i for s in shards for i in s] == list(range(n))
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


def test_merge_stats_sums_shares_and_bounds_ratios():
    merged = merge_stats(
        [
            {"actor/pg_loss": 0.25, "actor/ratio_min": 0.9, "actor/ratio_max": 1.2},
            {"actor/pg_loss": 0.5, "actor/ratio_min": 0.7, "actor/ratio_max": 1.1},
        ]
    )
    assert merged == {"actor/pg_loss": 0.75, "actor/ratio_min": 0.7, "actor/ratio_max": 1.2}


@settings(max_examples=50, deadline=None)
@given(rows=st.integers(2, 6), cut=st.integers(1, 5), seed=st.integers(0, 10_000))
def test_explained_variance_from_summed_moments_equals_the_whole_batch(rows: int, cut: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    values, returns = torch.randn(rows, 7, generator=g), torch.randn(rows, 7, generator=g)
    mask = (torch.rand(rows, 7, generator=g) > 0.3).float()
    cut = min(cut, rows - 1)
    parts = [losses.ev_moments(values[s], returns[s], mask[s]) for s in (slice(0, cut), slice(cut, rows))]
    whole = losses.explained_variance(values, returns, mask)
    summed = losses.explained_variance_from_moments(parts[0] + parts[1])
    assert torch.isnan(whole) == torch.isnan(summed)
    if not torch.isnan(whole):
        assert abs(float(whole) - float(summed)) < 1e-5 * (1 + abs(float(whole)))

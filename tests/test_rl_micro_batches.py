"""rl.use_dynamic_bsz: micro-batches by a token budget (rows sorted longest first, packed greedily
while rows x the longest row fit). The kernel against a naive packing and worked numbers; the freeze
and a PPO step give what micro_batch_size rows give (the loss is a sum over the minibatch however it
is cut), with the frozen values back in their rows; the budget must hold an episode."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from conftest import load_benchmark
from pappo.config import Params
from pappo.policy.rollout import Trajectory
from pappo.rl.batch import from_trajectories, token_budget_micro_batches
from pappo.rl.freeze import freeze
from pappo.rl.update import ppo_step
from test_rl_trainer import small_params, snapshot, trainer


def naive_packing(lengths: list[int], budget: int) -> list[list[int]]:
    rows = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    parts: list[list[int]] = []
    for r in rows:
        if parts and (len(parts[-1]) + 1) * lengths[parts[-1][0]] <= budget:
            parts[-1].append(r)
        else:
            parts.append([r])
    return parts


def padded(lengths: list[int], parts: list[list[int]]) -> int:
    return sum(len(p) * max(lengths[r] for r in p) for p in parts)


def test_token_budget_micro_batches_equal_a_naive_packing():
    rng = random.Random(0)
    for _ in range(300):
        lengths = [rng.randint(1, 50) for _ in range(rng.randint(0, 12))]
        budget = rng.randint(1, 120)
        got = [
            p.tolist() for p in token_budget_micro_batches(torch.tensor(lengths, dtype=torch.long), budget)
        ]
        assert got == naive_packing(lengths, budget)
        assert sorted(r for p in got for r in p) == list(range(len(lengths)))  # every row once
        for p in got:  # within the budget, unless a row alone is longer
            assert len(p) == 1 or len(p) * lengths[p[0]] <= budget


def test_worked_numbers_and_less_padding_than_rows_in_their_order():
    lengths = torch.tensor([5, 9, 3, 9, 2])
    parts = token_budget_micro_batches(lengths, 18)
    assert [p.tolist() for p in parts] == [[1, 3], [0, 2, 4]]  # 2 x 9 = 18; then 3 x 5 = 15
    assert token_budget_micro_batches(torch.tensor([7]), 3)[0].tolist() == [
        0
    ]  # longer than the budget: alone
    assert token_budget_micro_batches(torch.tensor([], dtype=torch.long), 8) == []
    mixed = [100, 10, 100, 10]  # micro_batch_size 2 in this order pads every short row to 100
    assert padded(mixed, [[0, 1], [2, 3]]) == 400
    assert padded(mixed, [p.tolist() for p in token_budget_micro_batches(torch.tensor(mixed), 200)]) == 220


def _learners(fx_params: Params, tmp_path: Path):
    fixed = small_params(fx_params, minibatches=1, micro_batch_size=2)
    dynamic = small_params(fx_params, minibatches=1, use_dynamic_bsz=True, ppo_max_token_len_per_gpu=300)
    a, b = trainer("ppo", fixed, tmp_path / "a"), trainer("ppo", dynamic, tmp_path / "b")
    trajs, groups, index = a.rollouts(0)
    trajs = [_first_turns(t, k) for t, k in zip(trajs, [3, 1, 2, 3])]  # rows of unequal length
    return a.learner, b.learner, lambda: from_trajectories(trajs, groups, 0, index)


def _first_turns(t: Trajectory, turns: int) -> Trajectory:
    """The episode cut after its first `turns` assistant turns."""
    end = t.turn_spans[turns - 1][1]
    lists = ("token_ids", "logprobs", "response_mask", "tool_mask", "decision_kind")
    return replace(
        t,
        **{k: getattr(t, k)[:end] for k in lists},
        turn_spans=t.turn_spans[:turns],
        turn_rewards=t.turn_rewards[:turns],
    )


def test_the_freeze_and_a_ppo_step_by_tokens_equal_those_by_rows(fx_params: Params, tmp_path: Path):
    by_rows, by_tokens, batch_of = _learners(fx_params, tmp_path)
    x, y = batch_of(), batch_of()
    rows = torch.arange(len(y))
    order = torch.cat(by_tokens.micro(y, rows))
    assert not torch.equal(order, rows)  # sorted by length: the freeze must put values back in their rows
    assert [len(m) for m in by_rows.micro(x, rows)] == [2, 2]
    freeze(by_rows, x)
    freeze(by_tokens, y)
    real = x.attention_mask.bool()  # a row's padding reads whatever its micro-batch's width gives
    for name in ("old_log_prob", "old_values", "advantages", "returns"):
        assert torch.allclose(getattr(x, name)[real], getattr(y, name)[real], atol=1e-6), name
    before = snapshot(by_rows.ac.policy_parameters())
    sx, sy = ppo_step(by_rows, x, rows), ppo_step(by_tokens, y, rows)
    assert sx.keys() == sy.keys()
    for k in sx:
        assert sx[k] == pytest.approx(sy[k], rel=1e-5, abs=1e-6), k
    moved = [p.detach() - b for p, b in zip(by_rows.ac.policy_parameters(), before)]
    assert any(bool(m.abs().max() > 0) for m in moved)  # the step did something
    for m, p, b in zip(moved, by_tokens.ac.policy_parameters(), before):
        assert torch.allclose(p.detach() - b, m, atol=1e-6)


def test_a_budget_below_an_episode_is_refused_naming_the_fix(fx_params: Params):
    data = fx_params.model_dump(mode="json", by_alias=True)
    data["rl"] |= {"use_dynamic_bsz": True, "ppo_max_token_len_per_gpu": 64}
    with pytest.raises(
        ValueError, match=r"rl: ppo_max_token_len_per_gpu 64 is below rollout.max_tokens_per_episode"
    ):
        Params.model_validate(data)
    data["rl"] |= {"use_dynamic_bsz": False}
    Params.model_validate(data)  # unused without use_dynamic_bsz
    data["tune"] = {"rl": {"use_dynamic_bsz": True}}
    with pytest.raises(ValueError, match=r"tune.rl merged over rl: ppo_max_token_len_per_gpu 64"):
        Params.model_validate(data)


def test_the_benchmark_packs_fewer_padded_tokens_for_the_same_loss():
    mb = load_benchmark("micro_batches")
    args = mb.parse_args(
        ["--rows", "8", "--max-tokens", "256", "--minibatches", "2", "--micro-batch-size", "2"]
    )
    args.repeats = 1
    out = mb.compare(args)
    rows, tokens = out["rows"], out["tokens"]
    assert rows["tokens"] == tokens["tokens"] < tokens["padded"] < rows["padded"]
    assert tokens["loss"] == pytest.approx(rows["loss"], abs=1e-5)  # the same step however it is cut

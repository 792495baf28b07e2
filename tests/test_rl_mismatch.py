"""Sampler/trainer mismatch (issue 45): importance weights against their formulas with an injected,
known mismatch, the weighted PPO gradient against a naive loop, the correction off leaving the loss
as it was, the float32 decoder/trainer gap at rounding level (and caught when the decoder is broken),
the gap statistics in an update's record, and the precision knobs."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from torch.testing import assert_close
from transformers import AutoModelForCausalLM, Qwen2Config

from pappo.config import Params
from pappo.config.policy import LoraParams
from pappo.config.rl import RLParams
from pappo.policy import decoder as decoder_mod
from pappo.policy.adapters import ActorCritic
from pappo.rl.batch import RolloutBatch, from_trajectories
from pappo.rl.freeze import freeze
from pappo.rl.losses import LOSS_AGG_MODES, policy_loss
from pappo.rl.mismatch import LARGE_GAP, logprob_gap_sums, percentile, rollout_is_weights
from pappo.rl.trainer import Trainer
from pappo.rl.update import actor_loss
from test_rl_losses import batches, mask_tensor, naive_agg, naive_pg_token, naive_weights, t64
from test_rl_trainer import actor_critic, moved, small_params, snapshot, trainer

F64 = torch.float64
HYP = settings(max_examples=60, deadline=None)


# ---------------------------------------------------------------- the weights: hand-worked numbers


def test_token_truncate_is_tis_with_hand_worked_numbers():
    # injected mismatch d = old - sampler per token: 0.5, -0.3, 1.0 (capped at C = 2), and a masked 9.0
    old = t64([[-1.0, -2.0, -0.5, -3.0]])
    sampler = old - t64([[0.5, -0.3, 1.0, 9.0]])
    mask = t64([[1, 1, 1, 0]])
    w, high, low = rollout_is_weights(old, sampler, mask, "token", "truncate", 2.0)
    assert_close(w, t64([[math.exp(0.5), math.exp(-0.3), 2.0, 1.0]]))
    assert high.tolist() == [[False, False, True, False]]
    assert not low.any()  # truncate has no lower bound (verl's TIS)


def test_sequence_mask_is_mis_with_hand_worked_numbers():
    # per-row sums of d over the mask: 0.3 (kept), 0.9 (> log 2: masked), -0.8 (< -log 2: masked), none (1)
    d = t64([[0.1, 0.2, 5.0], [0.4, 0.5, 0.0], [-0.5, -0.3, 0.0], [7.0, 7.0, 7.0]])
    mask = t64([[1, 1, 0], [1, 1, 1], [1, 1, 0], [0, 0, 0]])
    old = torch.full_like(d, -2.0)
    w, high, low = rollout_is_weights(old, old - d, mask, "sequence", "mask", 2.0)
    expected = [[math.exp(0.3)] * 3, [0.0] * 3, [0.0] * 3, [1.0] * 3]  # a row's weight on all its tokens
    assert_close(w, t64(expected))
    assert high[:, 0].tolist() == [False, True, False, False]
    assert low[:, 0].tolist() == [False, False, True, False]


def test_token_mask_and_sequence_truncate():
    old = t64([[-1.0, -1.0, -1.0]])
    d = t64([[0.2, 1.0, -1.0]])  # exp: 1.22 kept, 2.72 above C, 0.37 below 1/C
    mask = t64([[1, 1, 1]])
    w, _, _ = rollout_is_weights(old, old - d, mask, "token", "mask", 2.0)
    assert_close(w, t64([[math.exp(0.2), 0.0, 0.0]]))
    w, high, _ = rollout_is_weights(old, old - t64([[0.4, 0.4, 0.0]]), mask, "sequence", "truncate", 2.0)
    assert_close(w, t64([[2.0, 2.0, 2.0]]))  # exp(0.8) = 2.23 capped at 2
    assert high.all()


def test_no_mismatch_weighs_one_and_none_is_one():
    old = t64([[-1.0, -2.0], [-0.1, -4.0]])
    for level in ("token", "sequence"):
        for mode in ("truncate", "mask"):
            w, high, low = rollout_is_weights(old, old.clone(), torch.ones_like(old), level, mode, 2.0)
            assert torch.equal(w, torch.ones_like(old)) and not high.any() and not low.any()
    w, _, _ = rollout_is_weights(old, old - 5.0, torch.ones_like(old), "none", "truncate", 2.0)
    assert torch.equal(w, torch.ones_like(old))


def test_weights_are_detached_and_bad_knobs_raise():
    old = t64([[-1.0, -2.0]]).requires_grad_()
    w, _, _ = rollout_is_weights(old, old.detach() - 0.1, torch.ones(1, 2), "token", "truncate", 2.0)
    assert not w.requires_grad
    with pytest.raises(ValueError, match="must be > 1"):
        rollout_is_weights(old, old, torch.ones(1, 2), "token", "truncate", 1.0)
    level: Any = "geometric"  # a typo in a hand-built call (params are checked by their Literal)
    with pytest.raises(ValueError, match="rollout_is_level"):
        rollout_is_weights(old, old, torch.ones(1, 2), level, "truncate", 2.0)
    mode: Any = "clip"
    with pytest.raises(ValueError, match="rollout_is_mode"):
        rollout_is_weights(old, old, torch.ones(1, 2), "token", mode, 2.0)


# ---------------------------------------------------------------- the weighted loss against a naive loop


def naive_is_weight(row_d: list[float], row_m: list[float], j: int, level: str, mode: str, c: float) -> float:
    """One token's weight by loops: its own ratio (token) or its row's (sequence), truncated or masked."""
    if level == "token" and not row_m[j]:
        return 1.0
    d = row_d[j] if level == "token" else sum(x for x, m in zip(row_d, row_m) if m)
    rho = math.exp(min(max(d, -20.0), 20.0))
    if mode == "truncate":
        return min(rho, c)
    return rho if 1 / c <= rho <= c else 0.0


@HYP
@given(
    d=batches(("lp", "delta", "adv", "mis")),
    mode=st.sampled_from(LOSS_AGG_MODES),
    level=st.sampled_from(["token", "sequence"]),
    is_mode=st.sampled_from(["truncate", "mask"]),
    c=st.sampled_from([None, 3.0]),
)
def test_weighted_policy_loss_and_gradient_match_a_naive_loop(d, mode, level, is_mode, c):
    olp = [[lp - 0.5 * dl for lp, dl in zip(r1, r2)] for r1, r2 in zip(d["lp"], d["delta"])]
    mis = [[0.4 * x for x in row] for row in d["mis"]]  # injected mismatch old - sampler, up to +-1.2 nats
    sampler = [[o - m for o, m in zip(r1, r2)] for r1, r2 in zip(olp, mis)]
    mask = mask_tensor(d)
    w, _, _ = rollout_is_weights(t64(olp), t64(sampler), mask, level, is_mode, 2.0)
    lp = t64(d["lp"]).requires_grad_()
    loss, _ = policy_loss(lp, t64(olp), t64(d["adv"]), mask, 0.2, 0.28, c, mode, rollout_is_weights=w)
    (grad,) = torch.autograd.grad(loss, lp)

    ws = [
        [naive_is_weight(rd, rm, j, level, is_mode, 2.0) for j in range(len(rd))]
        for rd, rm in zip(mis, d["mask"])
    ]
    assert_close(w, t64(ws))
    toks = [
        [naive_pg_token(a, b, e, 0.2, 0.28, c) for a, b, e in zip(*rows)]
        for rows in zip(d["lp"], olp, d["adv"])
    ]
    agg = naive_weights(d["mask"], mode)
    weighted = [[wi * x[0] for wi, x in zip(rw, r)] for rw, r in zip(ws, toks)]
    assert_close(loss, t64(naive_agg(weighted, d["mask"], mode)))
    expected = [[a * wi * x[1] for a, wi, x in zip(ra, rw, r)] for ra, rw, r in zip(agg, ws, toks)]
    assert_close(grad, t64(expected))


@HYP
@given(
    d=batches(("lp", "delta", "adv")), mode=st.sampled_from(LOSS_AGG_MODES), c=st.sampled_from([None, 1.5])
)
def test_correction_off_leaves_the_loss_bit_for_bit(d, mode, c):
    olp = [[lp - 0.5 * dl for lp, dl in zip(r1, r2)] for r1, r2 in zip(d["lp"], d["delta"])]
    lp = t64(d["lp"]).requires_grad_()
    args = (lp, t64(olp), t64(d["adv"]), mask_tensor(d), 0.2, 0.28, c, mode)
    before, _ = policy_loss(*args)
    off, _ = policy_loss(*args, rollout_is_weights=None)
    (g_before,) = torch.autograd.grad(before, lp)
    (g_off,) = torch.autograd.grad(off, lp)
    assert torch.equal(before, off) and torch.equal(g_before, g_off)
    # and weights from a sampler that agrees with the trainer (no mismatch) are exactly 1: no change either
    ones, _, _ = rollout_is_weights(t64(olp), t64(olp), mask_tensor(d), "token", "truncate", 2.0)
    on, _ = policy_loss(*args, rollout_is_weights=ones)
    assert torch.equal(before, on)


# ---------------------------------------------------------------- gap statistics


def test_gap_sums_and_percentile_with_hand_worked_numbers():
    old = t64([[-1.0, -2.0, -3.0, -4.0], [-1.0, -1.0, -1.0, -1.0]])
    gap = t64([[0.05, -0.25, 0.0, 9.0], [0.0625, 0.375, 0.0, 0.0]])
    mask = t64([[1, 1, 1, 0], [1, 1, 0, 0]])  # the 9.0 is off the mask
    g = logprob_gap_sums(old, old - gap, mask)
    assert g["n"].item() == 5 and g["large"].item() == 2  # 0.25 and 0.375 exceed LARGE_GAP
    assert LARGE_GAP == 0.1
    assert_close(g["sum"], t64(0.7375))
    assert_close(g["max"], t64(0.375))
    assert sorted(g["values"].tolist()) == pytest.approx([0.0, 0.05, 0.0625, 0.25, 0.375])
    assert percentile(t64([0.0, 1.0, 2.0, 3.0, 4.0]), 0.99) == pytest.approx(3.96)  # linear interpolation
    assert percentile(t64([]), 0.99) == 0.0


# ---------------------------------------------------------------- in the trainer


def frozen_batch(t: Trainer) -> RolloutBatch:
    """Update 0's rollouts of trainer `t`, frozen (old log-probs recomputed by the trainer)."""
    trajs, groups, index = t.rollouts(0)
    batch = from_trajectories(trajs, groups, t.learner.codec.pad_id, index, t.learner.choices)
    freeze(t.learner, batch)
    return batch


def test_update_record_carries_the_gap_and_the_float32_gap_is_rounding(fx_params: Params, tmp_path: Path):
    t = trainer("grpo", small_params(fx_params), tmp_path)
    [record] = t.run()
    freeze = record["freeze"]
    for key in ("mean", "p99", "max", "frac_large"):
        assert f"rollout/logprob_gap_{key}" in freeze, key
    assert freeze["rollout/logprob_gap_max"] < 1e-5  # float32 CPU: rounding level (issue 45)
    mean, p99, top = (freeze[f"rollout/logprob_gap_{k}"] for k in ("mean", "p99", "max"))
    assert mean <= p99 <= top
    assert freeze["rollout/logprob_gap_frac_large"] == 0.0
    assert "rollout/rollout_is_mean" not in freeze  # level none: no correction, no weights reported


def test_a_broken_decoder_is_caught_by_the_gap(fx_params: Params, tmp_path: Path, monkeypatch):
    real = decoder_mod.Qwen2Decoder.__init__

    def scaled_head(
        self: decoder_mod.Qwen2Decoder, model: torch.nn.Module, fp32: bool = False, graphs: bool = False
    ) -> None:
        real(self, model, fp32, graphs)
        self.lm_head = self.lm_head * 1.01  # 1% hotter logits: the sampler draws from another policy

    monkeypatch.setattr(decoder_mod.Qwen2Decoder, "__init__", scaled_head)
    [record] = trainer("grpo", small_params(fx_params), tmp_path).run()
    assert record["freeze"]["rollout/logprob_gap_max"] > 1e-5


def test_flipping_the_correction_changes_the_loss_only_under_a_mismatch(fx_params: Params, tmp_path: Path):
    t = trainer("grpo", small_params(fx_params), tmp_path)
    batch = frozen_batch(t)
    assert batch.old_log_prob is not None
    on = t.learner.rl.model_copy(update={"rollout_is_level": "token", "rollout_is_threshold": 1.5})
    off = t.learner.rl

    def loss(rl: RLParams, sampler: torch.Tensor) -> torch.Tensor:
        t.learner.rl = rl
        return actor_loss(t.learner, replace(batch, sampler_log_prob=sampler))[0].detach()

    agree = batch.old_log_prob.clone()  # the sampler exactly as the trainer: no mismatch
    assert torch.equal(loss(off, agree), loss(on, agree))
    mask = t.learner.gap_mask(batch)
    shifted = batch.old_log_prob - 0.3 * mask * torch.sign(torch.randn_like(mask))  # injected +-0.3 nats
    assert not torch.equal(loss(off, shifted), loss(on, shifted))
    assert torch.equal(loss(off, shifted), loss(off, agree))  # off: the sampler's log-probs are not read


def test_a_run_with_the_correction_reports_its_weights(fx_params: Params, tmp_path: Path):
    params = small_params(fx_params, rollout_is_level="sequence", rollout_is_mode="mask")
    [record] = trainer("grpo", params, tmp_path).run()
    freeze = record["freeze"]
    # float32 on CPU: sequence ratios within rounding of 1, none masked
    assert freeze["rollout/rollout_is_mean"] == pytest.approx(1.0, abs=1e-4)
    assert freeze["rollout/rollout_is_fraction_high"] == 0.0
    assert freeze["rollout/rollout_is_fraction_low"] == 0.0


# ---------------------------------------------------------------- knobs


def test_rollout_is_knobs_are_checked_with_a_fix_in_the_message():
    with pytest.raises(ValidationError, match="trust_region: clip"):
        RLParams(rollout_is_level="token", trust_region="gppo")
    with pytest.raises(ValidationError, match="greater than 1"):
        RLParams(rollout_is_threshold=1.0)
    assert RLParams().rollout_is_level == "none"  # off by default: the CPU tier's numbers unchanged


def test_logits_fp32_must_match_between_params_and_the_actor_critic(fx_params: Params, tmp_path: Path):
    params = fx_params.model_copy(update={"model": fx_params.model.model_copy(update={"logits_fp32": True})})
    with pytest.raises(Exception, match="logits_fp32"):
        trainer("grpo", small_params(params), tmp_path)


def test_logits_fp32_agrees_across_decoder_and_trainer_in_bfloat16():
    ac = actor_critic()
    ac.logits_fp32 = True
    ac.peft.to(torch.bfloat16)
    hidden = torch.randn(3, 32).to(torch.bfloat16)
    dec = decoder_mod.Qwen2Decoder(ac.peft, logits_fp32=True)
    got = ac.token_logits(hidden)
    assert got.dtype == torch.float32
    assert torch.equal(got, torch.nn.functional.linear(hidden.float(), dec.lm_head))
    ac.logits_fp32 = False
    low = ac.token_logits(hidden)  # bf16 matmul, then cast: differs from the float32 head
    exact = hidden.double() @ ac.lm_head.weight.double().T
    assert (got.double() - exact).abs().max() < (low.double() - exact).abs().max()


# ---------------------------------------------------------------- float16 with loss scaling


def actor_critic_in(dtype: torch.dtype, logits_fp32: bool = False) -> ActorCritic:
    """test_rl_trainer's tiny actor-critic with its base in `dtype` (peft keeps LoRA in float32)."""
    torch.manual_seed(0)
    cfg = Qwen2Config(
        vocab_size=264,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
    )
    base = AutoModelForCausalLM.from_config(cfg).to(dtype)
    return ActorCritic(base, LoraParams(rank=4, alpha=8.0), logits_fp32)


def in_dtype(params: Params, dtype: str, logits_fp32: bool = False) -> Params:
    model = params.model.model_copy(update={"dtype": dtype, "logits_fp32": logits_fp32})
    return small_params(params.model_copy(update={"model": model}))


def test_float16_trains_with_loss_scaling_and_float32_adapters(fx_params: Params, tmp_path: Path):
    ac = actor_critic_in(torch.float16)
    assert {p.dtype for p in ac.policy_parameters() + ac.critic_parameters()} == {torch.float32}
    t = trainer("ppo", in_dtype(fx_params, "float16"), tmp_path / "fp16", ac=ac)
    assert (
        t.learner.scaler is not None
        and trainer("ppo", small_params(fx_params), tmp_path / "fp32").learner.scaler is None
    )
    before = snapshot(ac.policy_parameters())
    [record] = t.run()
    assert moved(before, ac.policy_parameters())
    assert all(math.isfinite(s["actor/grad_norm"]) for s in record["steps"])


def rounding_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """softmax(QK^T)V rounded in the model's dtype at every op: another kernel than the trainer's
    SDPA (which computes half inputs in float32 on CPU), as a GPU sampler's kernels are."""
    k, v = (decoder_mod._repeat_kv(x, q.shape[1] // k.shape[1]) for x in (k, v))  # (B, Hq, L, D)
    scores = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5 + bias.to(q.dtype)
    return torch.softmax(scores, dim=-1) @ v


def test_float16_puts_the_sampler_nearer_the_trainer_than_bfloat16(
    fx_params: Params, tmp_path: Path, monkeypatch
):
    # On CPU both sides run the same attention arithmetic in half precision (policy/attention.py),
    # so the gap comes from a sampler kernel that rounds otherwise, as on a GPU
    monkeypatch.setattr(decoder_mod, "_attention", rounding_attention)
    gaps = {}
    for name, dtype in (("float16", torch.float16), ("bfloat16", torch.bfloat16)):
        t = trainer("ppo", in_dtype(fx_params, name), tmp_path / name, ac=actor_critic_in(dtype))
        [record] = t.run()
        gaps[name] = record["freeze"]["rollout/logprob_gap_mean"]
    # 10 mantissa bits against 7 (Qi et al. 2025): the sampler and the trainer round less apart
    assert 0.0 < gaps["float16"] < gaps["bfloat16"]


def test_float16_overflow_skips_the_step_lowers_the_scale_and_a_resume_keeps_it(
    fx_params: Params, tmp_path: Path
):
    ac = actor_critic_in(torch.float16)
    t = trainer("grpo", in_dtype(fx_params, "float16"), tmp_path, ac=ac)
    # the scaled loss overflows float16 for sure
    t.learner.scaler = torch.amp.GradScaler("cpu", init_scale=2.0**60)
    before = snapshot(ac.policy_parameters())
    [record] = t.run()
    assert not moved(before, ac.policy_parameters())  # every step found inf gradients and was skipped
    assert not any(math.isfinite(s["actor/grad_norm"]) for s in record["steps"])
    assert t.learner.scaler.get_scale() < 2.0**60
    again = trainer("grpo", in_dtype(fx_params, "float16"), tmp_path, ac=actor_critic_in(torch.float16))
    again.resume()  # the checkpoint keeps the loss scale the run reached
    assert (
        again.learner.scaler is not None and again.learner.scaler.get_scale() == t.learner.scaler.get_scale()
    )

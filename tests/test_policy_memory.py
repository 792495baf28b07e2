"""pappo.policy.memory: the arithmetic by hand, the KV cache growth policy against KVCache itself,
the size of the real 7B, the profile's refusal naming the knob, and the train stage's hook."""

from __future__ import annotations

import shutil
import weakref

import pytest
import torch
from typer.testing import CliRunner

from conftest import ROOT
from pappo.cli import app
from pappo.config import apply_profile, load_params
from pappo.policy import memory
from pappo.policy.kv_cache import KVCache
from test_policy_checkpoint import REV

PARAMS, PROFILE = ROOT / "params.yaml", ROOT / "profiles" / "qwen2.5-coder-7b.yaml"
SMALL = memory.Dims(vocab=1000, hidden=64, intermediate=160, layers=3, heads=8, kv_heads=2, head_dim=8)


def test_parameters_count_the_real_qwen25_7b():
    assert memory.QWEN25_CODER_7B.parameters() == 7_615_616_512  # Qwen2.5-7B's published count


def test_small_dims_by_hand():
    # layer: q 64x64 + 64, k and v 64x16 + 16 each, o 64x64, MLP 3 x 64x160, two norms of 64
    layer = 64 * 64 + 64 + 2 * (64 * 16 + 16) + 64 * 64 + 3 * 64 * 160 + 2 * 64
    assert SMALL.parameters() == 2 * 1000 * 64 + 3 * layer + 64
    assert SMALL.lora_parameters(4, ["q_proj", "down_proj"]) == 3 * (4 * (64 + 64) + 4 * (160 + 64))
    assert SMALL.kv_bytes_per_position(2) == 2 * 3 * 2 * 8 * 2
    assert SMALL.layer_activation_elements() == 4 * 64 + 2 * 64 + 4 * 16 + 64 + 4 * 160
    assert SMALL.layer_inference_elements() == 4 * 160 + 2 * 64


def test_kv_capacity_follows_kvcache_reserve_and_no_reallocation_holds_more_than_one_layer_twice():
    """Grow a real 3-layer KVCache one position at a time to `final`: its capacity is the model's
    number. Every reallocation (growth, split, absorb, keep, repack) holds at most the cache plus
    one layer at once: counted by the live storages of the cache and the sub-cache at each new
    buffer allocated."""
    for prompt, final in ((10, 300), (100, 1000), (40, 64), (700, 2048)):
        cache, like = KVCache(3), torch.zeros(2, 1, 1, 1)
        cache.reserve(torch.zeros(2, 1, prompt, 1), prompt)
        cache.n = prompt
        while cache.n < final:
            cache.reserve(like, 1)
            cache.n += 1
        assert memory.kv_capacity(prompt, final) == cache.k[0].shape[2], (prompt, final)


def test_no_kv_reallocation_holds_more_than_the_cache_and_one_layer(monkeypatch):
    """While `KVCache` grows, moves rows out (`split`), grows them, merges them back (`absorb`) and
    repacks, the buffers alive at each allocation are at most the larger of the caches before and
    after the step, plus one layer's buffer: dies if a method builds all new layers before it frees
    the old ones (the cache held twice)."""
    caches: list[KVCache] = []
    made: list[weakref.ref] = []  # every buffer allocated, alive or not
    live: list[int] = []
    real_zeros, real_like = torch.Tensor.new_zeros, torch.zeros_like

    def held() -> int:  # bytes of every distinct storage the caches hold or that is still alive
        tensors = [t for c in caches for t in c.k + c.v] + [t for r in made if (t := r()) is not None]
        return sum({t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}.values())

    def spy(real):
        def alloc(*a, **kw):
            made.append(weakref.ref(out := real(*a, **kw)))
            live.append(held())
            return out

        return alloc

    monkeypatch.setattr(torch.Tensor, "new_zeros", spy(real_zeros))
    monkeypatch.setattr(torch, "zeros_like", spy(real_like))
    cache = KVCache(4)
    caches.append(cache)
    cache.reserve(torch.zeros(4, 1, 8, 2), 8)
    cache.n = 8
    mask = torch.zeros(4, 300, dtype=torch.long)
    mask[:, -10:] = 1

    def within_one_layer(step) -> None:  # the buffers alive at each allocation `step` makes
        made.clear()
        live.clear()
        before = held()
        step()
        after = held()
        layer = max(t.untyped_storage().nbytes() for t in cache.k)
        assert max(live, default=0) <= max(before, after) + layer

    within_one_layer(lambda: cache.reserve(torch.zeros(4, 1, 1, 2), 100))  # growth
    caches.append(sub := cache.split(torch.tensor([0, 2])))
    within_one_layer(lambda: sub.reserve(torch.zeros(2, 1, 1, 2), 300))  # the sub-cache grows
    sub.n = 300
    within_one_layer(lambda: cache.absorb(sub, torch.tensor([0, 2]), 4))
    within_one_layer(lambda: cache.repack(mask))
    assert cache.n == 10 and sub.k[0].numel() == 0  # absorb emptied the sub-cache


def test_predict_adds_the_parts_of_each_phase():
    params = load_params(PARAMS)
    p = memory.predict(params, SMALL, rows=8, prompt_tokens=100, sampled_fraction=0.5)
    parts, s = p.parts, 4  # params.yaml: float32
    length, mb = params.rollout.max_tokens_per_episode, params.rl.micro_batch_size
    assert parts["weights"] == parts["decoder_snapshot"] == SMALL.parameters() * s
    kv = 8 * memory.kv_capacity(100, length) * SMALL.kv_bytes_per_position(s)
    assert parts["kv_cache"] == kv * (SMALL.layers + 1) // SMALL.layers  # and one layer's reallocation
    t = min(params.rollout.max_new_tokens_per_turn, length)  # a chunk of t tokens for every row
    kv_layer = SMALL.kv_bytes_per_position(s) // SMALL.layers
    mask = 8 * t * length * (s + 2)  # on CPU: the additive mask and its two boolean intermediates
    assert parts["prefill"] == 8 * t * ((4 * 160 + 2 * 64) * s + kv_layer) + mask
    # float32: the lm_head output is its own .float() copy
    assert parts["train_logits"] == int(mb * length * 0.5) * 1000 * (s + 4 * (memory.LOGIT_COPIES_FP32 - 1))
    assert not params.model.gradient_checkpointing
    assert parts["activations"] == 3 * mb * length * SMALL.layer_activation_elements() * s
    assert p.rollout == sum(
        parts[k]
        for k in (
            "weights",
            "adapters_and_optimizer",
            "decoder_snapshot",
            "kv_cache",
            "sampler_logits",
            "prefill",
        )
    )
    assert p.update == sum(
        parts[k] for k in ("weights", "adapters_and_optimizer", "activations", "train_logits")
    )
    ckpt = params.model_copy(
        update={"model": params.model.model_copy(update={"gradient_checkpointing": True})}
    )
    assert memory.predict(ckpt, SMALL, rows=8).parts["activations"] < parts["activations"]


def test_cuda_attention_bytes_repeat_keys_and_values_for_a_gibibyte_of_rows():
    """The 7B's CUDA prefill: K and V repeated to 28 heads are 112 MiB a row at 8192 positions, so
    9 rows go at a time (`decoder._attention_cuda`), each with its aligned mask copy."""
    dims, t, length = memory.QWEN25_CODER_7B, 512, 8192
    per_row = 2 * 28 * 8192 * 128 * 2
    assert memory.ATTENTION_ROWS_BYTES // per_row == 9
    cpu = memory.attention_bytes(dims, 64, t, length, 2, cuda=False)
    assert cpu == 64 * t * length * 4
    assert memory.attention_bytes(dims, 64, t, length, 2, cuda=True) == cpu + 9 * (per_row + t * length * 2)
    assert memory.attention_bytes(dims, 3, t, length, 2, cuda=True) == 3 * t * length * 4 + 3 * (
        per_row + t * length * 2
    )  # fewer rows than a group: all of them


def _rl(params, **update):
    return params.model_copy(update={"rl": params.rl.model_copy(update=update)})


def test_the_hub_profile_fits_80_gib_and_a_refusal_names_the_knob_and_the_largest_value_that_fits():
    profile = apply_profile(PARAMS, PROFILE, REV)
    assert profile.rl.use_dynamic_bsz and profile.rl.ppo_max_token_len_per_gpu == 16384
    assert memory.check(profile, 141.0) is None and memory.check(profile, 80.0) is None
    # micro-batches of 4 full-length rows (32768 tokens): the update phase is over, its knob named
    rows = _rl(profile, use_dynamic_bsz=False, micro_batch_size=4)
    why = memory.check(rows, 80.0)
    assert why is not None and "exceeds 90% of the GPU's 80.0 GiB" in why
    assert "lower rl.micro_batch_size (now 4) to at most 3" in why and "rollout.batch_size" not in why
    assert "use_dynamic_bsz: true with ppo_max_token_len_per_gpu at most 31744" in why
    assert memory.check(_rl(rows, micro_batch_size=3), 80.0) is None  # the named value fits
    assert memory.check(_rl(profile, ppo_max_token_len_per_gpu=31744), 80.0) is None
    over = memory.check(_rl(profile, ppo_max_token_len_per_gpu=32768), 80.0)
    assert "lower rl.ppo_max_token_len_per_gpu (now 32768) to at most 31744" in over
    # twice the episodes decoded together: now the rollout is over, and its knobs are named
    rl = profile.rl.model_copy(update={"tasks_per_update": 2 * profile.rl.tasks_per_update})
    big = profile.model_copy(
        update={"rl": rl, "rollout": profile.rollout.model_copy(update={"batch_size": 128})}
    )
    why = memory.check(big, 80.0)
    assert "rollout.batch_size (now 128)" in why and "rollout.max_tokens_per_episode (now 8192)" in why
    assert "ppo_max_token_len_per_gpu" not in why
    shorter = big.model_copy(
        update={"rollout": big.rollout.model_copy(update={"max_tokens_per_episode": 2048})}
    )
    # the rollout fits now; shorter rows put more sampled tokens (logits) in a micro-batch's budget
    why = memory.check(shorter, 80.0)
    assert "rollout.batch_size" not in why and "ppo_max_token_len_per_gpu (now 16384) to at most 12288" in why
    assert memory.check(_rl(shorter, ppo_max_token_len_per_gpu=12288), 80.0) is None
    both = memory.check(_rl(big, use_dynamic_bsz=False), 80.0)
    assert "rollout.batch_size (now 128)" in both and "rl.micro_batch_size (now 4)" in both  # each phase's


def test_the_largest_micro_batch_is_the_last_token_count_whose_update_fits():
    profile = apply_profile(PARAMS, PROFILE, REV)
    dims = memory.QWEN25_CODER_7B
    for gib in (40.0, 80.0, 141.0):
        budget = 0.9 * gib * memory.GIB
        fit = memory.largest_micro_batch_tokens(profile, dims, budget)
        at = [memory.predict(_rl(profile, ppo_max_token_len_per_gpu=n), dims).update for n in (fit, fit + 1)]
        assert at[0] <= budget < at[1]
    # not even one token: the base weights alone exceed the budget
    assert memory.largest_micro_batch_tokens(profile, dims, 10 * memory.GIB) == 0
    small = _rl(profile, use_dynamic_bsz=False, micro_batch_size=3)
    assert memory.micro_batch_tokens(small) == 3 * 8192 and memory.micro_batch_tokens(profile) == 16384


def test_an_update_that_cannot_hold_one_episode_says_so():
    profile = apply_profile(PARAMS, PROFILE, REV)
    one = "one episode of rollout.max_tokens_per_episode (8192) does not fit a micro-batch: lower it"
    for rl in ({"use_dynamic_bsz": False, "micro_batch_size": 1}, {}):
        why = memory.check(_rl(profile, **rl), 32.0)
        assert one in why and "gradient_checkpointing" not in why  # on in the profile already
        # no micro-batch setting can help, so none is named
        assert "rl.micro_batch_size" not in why and "rl.ppo_max_token_len_per_gpu" not in why
    off = profile.model_copy(
        update={"model": profile.model.model_copy(update={"gradient_checkpointing": False})}
    )
    assert one + " or set model.gradient_checkpointing: true" in memory.check(off, 32.0)


def test_on_cpu_nothing_is_checked():
    params = load_params(PARAMS)
    assert params.model.device == "cpu" and memory.check(params) is None


def test_pappo_profile_refuses_a_profile_that_does_not_fit_and_writes_nothing(tmp_path):
    target = tmp_path / "params.yaml"
    shutil.copy(PARAMS, target)
    before = target.read_bytes()
    args = ["profile", str(PROFILE), "--params", str(target), "--revision", REV]
    bad = CliRunner().invoke(app, [*args, "--gpu-memory-gib", "40"])
    assert bad.exit_code == 1 and "rollout.batch_size" in bad.output and "nothing written" in bad.output
    assert target.read_bytes() == before
    ok = CliRunner().invoke(app, [*args, "--gpu-memory-gib", "141"])
    assert ok.exit_code == 0, ok.output


def test_the_train_stage_refuses_on_a_gpu_too_small(monkeypatch):
    from types import SimpleNamespace

    from pappo.experiment import run
    from pappo.io import PappoError

    profile = apply_profile(PARAMS, PROFILE, REV)
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda d: SimpleNamespace(total_memory=40 * 2**30)
    )
    cfg = SimpleNamespace(
        vocab_size=152064,
        hidden_size=3584,
        intermediate_size=18944,
        num_hidden_layers=28,
        num_attention_heads=28,
        num_key_value_heads=4,
        tie_word_embeddings=False,
    )
    model = SimpleNamespace(config=cfg, to=lambda d: pytest.fail("moved to the GPU before the check"))
    with pytest.raises(PappoError, match="params.yaml: predicted peak memory .* rollout.batch_size"):
        run.place(model, profile, SimpleNamespace(device=torch.device("cuda")))


def test_memory_check_engine_rollout_compacts_and_ends_every_episode_at_the_budget():
    """benchmarks/memory_check.py's whole-rollout configuration, at a tiny size: the stand-in
    episodes run to the token budget and the last turns stop apart, so a compaction happens (the
    run asserts it), and every episode ends within the budget."""
    from conftest import load_benchmark
    from test_rl_trainer import actor_critic

    mc = load_benchmark("memory_check")
    ac = actor_critic()
    trajs = mc.engine_rollout(ac, rows=6, tokens=400)
    assert len(trajs) == 6 and all(len(t.token_ids) <= 400 for t in trajs)
    assert len({len(t.token_ids) for t in trajs}) > 1  # the budgets stop them apart

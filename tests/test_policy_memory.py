"""pappo.policy.memory: the arithmetic by hand, the KV cache growth policy against KVCache itself,
the size of the real 7B, the profile's refusal naming the knob, and the train stage's hook."""

from __future__ import annotations

import shutil

import pytest
import torch
from typer.testing import CliRunner

from conftest import ROOT
from pappo.cli import app
from pappo.config import apply_profile, load_params
from pappo.policy import memory
from pappo.policy.decoder import KVCache
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


def test_kv_peak_positions_follows_kvcache_reserve():
    """Grow a real KVCache one position at a time and record the positions alive at each growth
    (old buffer + new one): the model's number is that maximum."""
    for prompt, final in ((10, 300), (100, 1000), (40, 64), (700, 2048)):
        cache, like = KVCache(1), torch.zeros(1, 1, 1, 1)
        cache.reserve(torch.zeros(1, 1, prompt, 1), prompt)
        cache.n, peak = prompt, cache.k[0].shape[2]
        while cache.n < final:
            before = cache.k[0].shape[2]
            cache.reserve(like, 1)
            after = cache.k[0].shape[2]
            peak = max(peak, before + after if after != before else before)
            cache.n += 1
        assert memory.kv_peak_positions(prompt, final) == peak, (prompt, final)


def test_predict_adds_the_parts_of_each_phase():
    params = load_params(PARAMS)
    p = memory.predict(params, SMALL, rows=8, prompt_tokens=100, sampled_fraction=0.5)
    parts, s = p.parts, 4  # params.yaml: float32
    length, mb = params.rollout.max_tokens_per_episode, params.rl.micro_batch_size
    assert parts["weights"] == parts["decoder_snapshot"] == SMALL.parameters() * s
    assert parts["kv_cache"] == 8 * memory.kv_peak_positions(100, length) * SMALL.kv_bytes_per_position(s)
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


def test_the_hub_profile_fits_an_h200_but_is_refused_on_80_gib_naming_the_knob():
    profile = apply_profile(PARAMS, PROFILE, REV)
    assert memory.check(profile, 141.0) is None
    why = memory.check(profile, 80.0)
    assert why is not None and "exceeds 90% of the GPU's 80.0 GiB" in why
    assert "rollout.batch_size (now 64)" in why and "rollout.max_tokens_per_episode (now 8192)" in why
    small = profile.model_copy(
        update={"rollout": profile.rollout.model_copy(update={"max_tokens_per_episode": 2048})}
    )
    assert memory.check(small, 80.0) is None  # lowering the named knob is the fix
    # the update phase dominates with long micro-batches: the message names rl.micro_batch_size
    big_mb = small.model_copy(update={"rl": small.rl.model_copy(update={"micro_batch_size": 64})})
    assert "lower rl.micro_batch_size (now 64)" in memory.check(big_mb, 80.0)


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

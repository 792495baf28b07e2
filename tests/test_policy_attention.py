"""policy/attention.py: SDPA's math kernel for bf16/fp16 on CPU (where torch's CPU flash kernel
refuses under the pinned ATen capability on AMX / AVX512-BF16 CPUs), SDPA's own choice otherwise,
for the rollout decoder and for the trainer's transformers model alike."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, Qwen2Config

from pappo.config.policy import LoraParams
from pappo.policy import attention, decoder
from pappo.policy.adapters import ActorCritic


def qkv(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    return tuple(torch.randn(2, 4, 96, 16).to(dtype) for _ in range(3))


def flash_allowed_at_call(monkeypatch, owner: object, name: str) -> list[bool]:
    """Record, at each call of `owner.<name>`, whether SDPA may pick its flash kernel."""
    seen: list[bool] = []
    real = getattr(owner, name)

    def spy(*args, **kwargs):
        seen.append(torch.backends.cuda.flash_sdp_enabled())  # SDPA's global flags, CPU included
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return seen


@pytest.mark.parametrize(
    ("dtype", "math_only"), [(torch.float32, False), (torch.bfloat16, True), (torch.float16, True)]
)
def test_half_precision_on_cpu_runs_the_math_kernel_and_float32_is_left_alone(dtype, math_only, monkeypatch):
    q, k, v = qkv(dtype)
    bias = torch.zeros(2, 1, 96, 96, dtype=dtype)
    seen = flash_allowed_at_call(monkeypatch, attention.F, "scaled_dot_product_attention")
    out = decoder._attention(q, k, v, bias)  # the rollout decoder's prefill
    assert attention.math_only(q) is math_only
    assert seen == [not math_only]  # flash barred exactly where math_only
    assert torch.backends.cuda.flash_sdp_enabled()  # and the flags restored afterwards
    if not math_only:  # float32: SDPA's own choice, the same bits as before
        assert torch.equal(out, F.scaled_dot_product_attention(q, k, v, attn_mask=bias))


def test_the_actor_critic_runs_this_attention_whatever_its_base_was_built_with(monkeypatch):
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1)
    base = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").to(torch.bfloat16)
    ac = ActorCritic(base, LoraParams(rank=4, alpha=8.0))
    assert ac.peft.config._attn_implementation == attention.ATTN_IMPLEMENTATION
    seen = flash_allowed_at_call(monkeypatch, attention, "sdpa_attention_forward")
    ids = torch.randint(0, 64, (2, 12))
    ac.policy_forward(ids).logits.float().sum().backward()
    assert seen == [False]  # one layer, bf16 on CPU: the math kernel


PROBE = textwrap.dedent(
    """
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config
    from pappo.config.policy import LoraParams
    from pappo.policy.adapters import ActorCritic
    from pappo.policy.decoder import _attention

    for dtype in (torch.bfloat16, torch.float16):
        torch.manual_seed(0)
        cfg = Qwen2Config(vocab_size=64, hidden_size=256, intermediate_size=64, num_hidden_layers=1,
                          num_attention_heads=4, num_key_value_heads=4)
        base = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").to(dtype)
        ac = ActorCritic(base, LoraParams(rank=4, alpha=8.0))
        ids = torch.randint(0, 64, (4, 256))
        ac.policy_forward(ids).logits.float().sum().backward()
        q = torch.randn(4, 4, 256, 64).to(dtype)
        _attention(q, q, q, torch.zeros(4, 1, 256, 256, dtype=dtype))  # the rollout decoder's prefill
    print(torch.backends.cpu.get_cpu_capability(), "ok")
    """
)


@pytest.mark.parametrize("capability", ["avx2", "default"])
def test_half_precision_trains_on_cpu_under_a_capped_aten_capability(capability):
    """The case that failed on a CPU with AMX / AVX512-BF16: ATen capped as the pinned numerics and
    CI's portability pass cap it, 256 keys (torch 2.13's flash kernel packed from 64 keys on, as
    measured). On other CPUs it runs either way; the tests above hold on every CPU."""
    env = {**os.environ, "ATEN_CPU_CAPABILITY": capability, "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    got, done = run.stdout.split()
    assert done == "ok" and got in {capability.upper(), "DEFAULT"}  # a CPU without AVX2 gets DEFAULT

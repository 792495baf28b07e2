"""Qwen2Decoder (the rollout forward) against the transformers forward, its KV cache, LoRA merging."""

from __future__ import annotations

import contextlib

import pytest
import torch
import transformers

from pappo.config.policy import LoraParams
from pappo.io import PappoError
from pappo.policy import memory
from pappo.policy.adapters import POLICY, ActorCritic
from pappo.policy.decoder import Qwen2Decoder
from pappo.policy.kv_cache import KVCache


def tiny(seed: int = 0, **kw) -> transformers.PreTrainedModel:
    cfg = transformers.Qwen2Config(
        vocab_size=97,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        **kw,
    )
    torch.manual_seed(seed)
    return transformers.AutoModelForCausalLM.from_config(cfg).eval()


def reference_logits(model, rows: list[list[int]]) -> list[torch.Tensor]:
    """Each row alone, unpadded, through the transformers forward: (T_row, V) each."""
    with torch.no_grad():
        return [model(input_ids=torch.tensor([r])).logits[0] for r in rows]


def feed(
    dec: Qwen2Decoder, cache: KVCache, mask: torch.Tensor, next_pos: torch.Tensor, chunks: list[list[int]]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Left-padded chunk per row, as decode_batch.DecodeBatch.feed does; returns logits (B, T, V)."""
    width = max(len(c) for c in chunks)
    ids = torch.zeros(len(chunks), width, dtype=torch.long)
    chunk_mask = torch.zeros(len(chunks), width, dtype=torch.long)
    for r, c in enumerate(chunks):
        if c:
            ids[r, width - len(c) :] = torch.tensor(c)
            chunk_mask[r, width - len(c) :] = 1
    pos = next_pos[:, None] + (chunk_mask.cumsum(-1) - 1).clamp(min=0)
    mask = torch.cat([mask, chunk_mask], dim=1)
    logits = dec(ids, mask, pos, cache, False)
    return logits, mask, next_pos + chunk_mask.sum(-1)


@pytest.mark.parametrize("tie", [True, False])
def test_padded_chunks_match_each_row_alone(tie: bool):
    model = tiny(tie_word_embeddings=tie)
    dec = Qwen2Decoder(model)
    g = torch.Generator().manual_seed(3)
    chunks1 = [torch.randint(0, 97, (n,), generator=g).tolist() for n in (9, 4, 1)]
    chunks2 = [torch.randint(0, 97, (n,), generator=g).tolist() for n in (2, 0, 6)]  # row 1 idles
    cache, mask, pos = dec.new_cache(), torch.zeros(3, 0, dtype=torch.long), torch.zeros(3, dtype=torch.long)
    out1, mask, pos = feed(dec, cache, mask, pos, chunks1)
    out2, mask, pos = feed(dec, cache, mask, pos, chunks2)
    refs = reference_logits(model, [a + b for a, b in zip(chunks1, chunks2)])
    for r in range(3):
        n1, n2 = len(chunks1[r]), len(chunks2[r])
        got = torch.cat([out1[r, out1.shape[1] - n1 :], out2[r, out2.shape[1] - n2 :] if n2 else out2[r, :0]])
        torch.testing.assert_close(got, refs[r], atol=1e-5, rtol=1e-5)
    assert torch.isfinite(out1).all() and torch.isfinite(out2).all()  # padding rows too: no NaN


def test_cache_grows_splits_absorbs_and_keeps():
    """Rows moved out (`split`) decode on their own past the first capacity, come back (`absorb`)
    with the kept row zero-padded, then a reorder (`keep`): every row's next logits are its
    sequence's alone. No row is held twice: the split leaves the parent only its other rows."""
    model = tiny()
    dec = Qwen2Decoder(model)
    rows = [[5, 6, 7], [8, 9], [10]]
    cache, mask, pos = dec.new_cache(), torch.zeros(3, 0, dtype=torch.long), torch.zeros(3, dtype=torch.long)
    _, mask, pos = feed(dec, cache, mask, pos, rows)
    keep = torch.tensor([0, 2])
    sub, sub_mask, sub_pos = cache.split(keep), mask[keep], pos[keep]
    assert cache.k[0].shape[0] == 1 and sub.k[0].shape[0] == 2
    extra = [[11 + i % 50] for i in range(70)]
    for tok in extra:  # 70 steps: past the first capacity of 64
        _, sub_mask, sub_pos = feed(dec, sub, sub_mask, sub_pos, [tok, tok])
    cache.absorb(sub, keep, 3)
    grown = torch.zeros(3, sub_mask.shape[1] - mask.shape[1], dtype=torch.long)
    grown[keep] = sub_mask[:, mask.shape[1] :]
    mask, pos[keep] = torch.cat([mask, grown], 1), sub_pos
    assert cache.n == 3 + 70 and cache.k[0].shape[0] == 3 and sub.k[0].numel() == 0
    assert cache.k[0][1, :, 3:73].abs().sum() == 0  # the kept row: zeros where only the sub-batch grew
    cache.keep(torch.tensor([2, 1]))  # reorder and drop row 0
    logits, _, _ = feed(dec, cache, mask[[2, 1]], pos[[2, 1]], [[12], [13]])
    refs = reference_logits(model, [[10] + [t[0] for t in extra] + [12], [8, 9, 13]])
    torch.testing.assert_close(logits[:, -1], torch.stack([refs[0][-1], refs[1][-1]]), atol=1e-5, rtol=1e-5)


def test_a_split_before_the_first_feed_is_absorbed_whole():
    """A cache split before any feed (no layers yet) takes the sub-batch's keys when it comes back:
    the other rows, fed next, see only their own tokens."""
    model = tiny()
    dec = Qwen2Decoder(model)
    cache, mask, pos = dec.new_cache(), torch.zeros(2, 0, dtype=torch.long), torch.zeros(2, dtype=torch.long)
    sub = cache.split(torch.tensor([1]))
    _, sub_mask, sub_pos = feed(dec, sub, mask[[1]], pos[[1]], [[5, 6, 7]])
    cache.absorb(sub, torch.tensor([1]), 2)
    mask = torch.cat([mask, torch.stack([torch.zeros(3, dtype=torch.long), sub_mask[0]])], 1)
    pos[1] = sub_pos[0]
    logits, _, _ = feed(dec, cache, mask, pos, [[8, 9], [10]])
    refs = reference_logits(model, [[8, 9], [5, 6, 7, 10]])
    torch.testing.assert_close(logits[:, -1], torch.stack([refs[0][-1], refs[1][-1]]), atol=1e-5, rtol=1e-5)


def test_lora_deltas_of_the_active_adapter_are_merged():
    ac = ActorCritic(tiny(), LoraParams(rank=4, alpha=8.0))
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in ac.peft.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)  # peft starts B at zero: make both adapters change the function
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with ac.adapter(POLICY):
        dec = Qwen2Decoder(ac.peft)
    with torch.no_grad():
        want = ac.policy_forward(ids, torch.ones_like(ids)).logits
        base = ac.peft.get_base_model()
        with ac.peft.disable_adapter():
            plain = base(input_ids=ids).logits
    got = dec(ids, torch.ones_like(ids), torch.arange(5)[None], dec.new_cache(), False)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert (got - plain).abs().max() > 1e-3  # the adapter really is in the snapshot


def test_other_architectures_are_refused_by_name():
    cfg = transformers.LlamaConfig(
        vocab_size=50,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
    )
    with pytest.raises(PappoError, match="model_type 'llama' is not 'qwen2'"):
        Qwen2Decoder(transformers.AutoModelForCausalLM.from_config(cfg))
    with pytest.raises(PappoError, match="sliding-window"):
        Qwen2Decoder(tiny(use_sliding_window=True, sliding_window=8))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_decode_attention_is_the_trainers_sdpa_outside_float32(dtype):
    """A decode step (one query) in bf16/fp16 is the trainer's attention bit for bit (SDPA's math
    kernel on CPU, policy/attention.py); in float32 it is the grouped matmul, equal to SDPA to rounding."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from pappo.policy.decoder import _attention

    gen = torch.Generator().manual_seed(0)
    q = torch.randn(3, 4, 1, 16, generator=gen).to(dtype)
    k, v = (torch.randn(3, 2, 9, 16, generator=gen).to(dtype) for _ in range(2))
    bias = torch.zeros(3, 1, 1, 9, dtype=dtype)
    bias[0, :, :, :3] = torch.finfo(dtype).min  # a left-padded row
    got = _attention(q, k, v, bias)
    with sdpa_kernel(SDPBackend.MATH) if dtype != torch.float32 else contextlib.nullcontext():
        want = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, enable_gqa=True)
    if dtype == torch.float32:
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)
    else:
        assert torch.equal(got, want)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("t", [1, 5])
def test_cuda_attention_is_transformers_sdpa_with_a_mask(dtype, t, monkeypatch):
    """The CUDA path (run here on CPU) is transformers' sdpa_attention_forward with a mask bit for
    bit (pack_gqa for one token, repeat_kv for a chunk), also when its rows go in chunks, and the
    CPU path's values to rounding: dies if it passes enable_gqa with the mask (the math kernel)."""
    from types import SimpleNamespace

    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from pappo.policy import decoder

    gen = torch.Generator().manual_seed(1)
    q = torch.randn(3, 4, t, 16, generator=gen).to(dtype)
    k, v = (torch.randn(3, 2, 9, 16, generator=gen).to(dtype) for _ in range(2))
    bias = torch.zeros(3, 1, t, 9, dtype=dtype)
    bias[0, :, :, :3] = torch.finfo(dtype).min  # a left-padded row
    causal = torch.ones(t, t - 1, dtype=torch.bool).triu()  # query i of the chunk sees no later one
    bias[:, :, :, 10 - t :] = bias[:, :, :, 10 - t :].masked_fill(causal, torch.finfo(dtype).min)
    calls: list[dict] = []
    real_sdpa = decoder.F.scaled_dot_product_attention

    def sdpa(*a, **kw):
        calls.append(kw)
        return real_sdpa(*a, **kw)

    module = SimpleNamespace(num_key_value_groups=2, is_causal=True)
    want = sdpa_attention_forward(module, q, k, v, bias, scaling=16**-0.5)[0].transpose(1, 2)
    monkeypatch.setattr(decoder.F, "scaled_dot_product_attention", sdpa)
    got = decoder._attention_cuda(q, k, v, bias)
    assert torch.equal(got, want) and not any(kw.get("enable_gqa") for kw in calls)
    monkeypatch.setattr(memory, "ATTENTION_ROWS_BYTES", 1)  # one row at a time
    calls.clear()
    assert torch.equal(decoder._attention_cuda(q, k, v, bias), want)
    assert len(calls) == (1 if t == 1 else 3)
    tol = 1e-6 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(got, decoder._attention(q, k, v, bias), atol=tol, rtol=tol)

"""A lean inference forward of a Qwen2 causal LM, for rollouts.

Shapes: B rows, T new tokens, L cached positions, H hidden size, D head dim, Hq query heads,
Hkv key/value heads, G = Hq / Hkv.

Per decoded token the transformers forward spent ~3.5 ms of Python and mask building on a
4-layer model, which dominated batched decoding on CPU. This one snapshots the weights (q/k/v and
gate/up fused, LoRA deltas merged), keeps its own preallocated KV cache and builds one additive
mask per call. The math is Qwen2's (modeling_qwen2: RMSNorm, rotary embedding from the model's
own `rotary_emb`, grouped-query attention, SwiGLU MLP); `tests/test_policy_decoder.py` checks it
against the transformers forward. The trainer keeps using the transformers / peft model: the gap
between the two log-probs is the sampler-vs-trainer diagnostic. A snapshot: rebuild it after the
weights change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from pappo.io import PappoError
from pappo.policy.attention import sdpa
from pappo.policy.decode_graphs import DecodeGraphs, decode_window
from pappo.policy.kv_cache import KVCache
from pappo.policy.memory import attention_row_group


@dataclass
class _Layer:
    ln1: torch.Tensor  # (H,)
    qkv_w: torch.Tensor  # ((Hq + 2 Hkv) D, H)
    qkv_b: torch.Tensor | None
    o_w: torch.Tensor  # (H, Hq D)
    ln2: torch.Tensor  # (H,)
    gate_up_w: torch.Tensor  # (2 I, H)
    down_w: torch.Tensor  # (H, I)


def _dense(module: nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Weight and bias of a Linear, with the active LoRA adapters' deltas merged (peft layers)."""
    base = getattr(module, "base_layer", module)
    weight = base.weight.detach()
    if hasattr(module, "get_delta_weight") and not getattr(module, "merged", False):
        for name in module.active_adapters:
            if name in module.lora_A:
                # peft keeps LoRA in float32 over a bf16 base: merge in the base's dtype
                weight = weight + module.get_delta_weight(name).detach().to(weight.dtype)
    bias = base.bias.detach() if base.bias is not None else None
    return weight.clone(), bias.clone() if bias is not None else None


def _qwen2_parts(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    """The decoder stack and lm_head of a Qwen2ForCausalLM, also under a peft wrapper."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model  # peft: the wrapped LM
    if not isinstance(getattr(inner, "lm_head", None), nn.Module) or not hasattr(inner.model, "layers"):
        raise PappoError(f"Qwen2Decoder: {type(model).__name__} is not a Qwen2 causal LM")
    return inner.model, inner.lm_head


class Qwen2Decoder:
    """forward(input_ids (B, T), attention_mask (B, L + T), position_ids (B, T), cache, last_only)
    -> logits (B, T, V), or (B, 1, V) when last_only. Same contract as `decode_batch.Forward`.
    `logits_fp32` (model.logits_fp32): the lm_head in float32, as `ActorCritic.token_logits`.
    `graphs` (rollout.enforce_eager false): one-token steps through `decode_graphs.DecodeGraphs`,
    captured in CUDA graphs on CUDA, run eagerly elsewhere (the same step, for the tests)."""

    def __init__(self, model: nn.Module, logits_fp32: bool = False, graphs: bool = False) -> None:
        cfg = model.config
        if getattr(cfg, "model_type", None) != "qwen2":
            raise PappoError(f"Qwen2Decoder: model_type {getattr(cfg, 'model_type', None)!r} is not 'qwen2'")
        if getattr(cfg, "use_sliding_window", False) or cfg.hidden_act != "silu":
            raise PappoError("Qwen2Decoder: sliding-window attention and non-SiLU MLPs are not supported")
        stack, lm_head = _qwen2_parts(model)
        self.n_heads, self.n_kv = cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.eps = cfg.rms_norm_eps
        self.rotary = stack.rotary_emb  # the model's own: any rope scaling it has applies
        self.embed = stack.embed_tokens.weight.detach().clone()
        self.device = self.embed.device  # the rollout's bookkeeping tensors stay on CPU; moved per call
        self.norm = stack.norm.weight.detach().clone()
        # Qwen2's lm_head has no bias (None: F.linear as before); a biased one keeps its bias
        lm_w, lm_b = _dense(lm_head)
        self.lm_head = lm_w.float() if logits_fp32 else lm_w
        self.lm_head_bias = lm_b.float() if (logits_fp32 and lm_b is not None) else lm_b
        self.layers = [self._layer(block) for block in stack.layers]
        self.graphs = DecodeGraphs(self.device) if graphs else None

    @staticmethod
    def _layer(block: nn.Module) -> _Layer:
        attn, mlp = block.self_attn, block.mlp
        (q, qb), (k, kb), (v, vb) = _dense(attn.q_proj), _dense(attn.k_proj), _dense(attn.v_proj)
        bias = torch.cat([qb, kb, vb]) if qb is not None and kb is not None and vb is not None else None
        return _Layer(
            ln1=block.input_layernorm.weight.detach().clone(),
            qkv_w=torch.cat([q, k, v]),
            qkv_b=bias,
            o_w=_dense(attn.o_proj)[0],
            ln2=block.post_attention_layernorm.weight.detach().clone(),
            gate_up_w=torch.cat([_dense(mlp.gate_proj)[0], _dense(mlp.up_proj)[0]]),
            down_w=_dense(mlp.down_proj)[0],
        )

    def new_cache(self, capacity: int | None = None) -> KVCache:
        return KVCache(len(self.layers), capacity)

    def _rms(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = x.float()  # as Qwen2RMSNorm: statistics in float32
        return w * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)

    def _bias(self, mask: torch.Tensor, t: int, window: int | None = None) -> torch.Tensor:
        """Additive attention mask (B, 1, T, L + T): real past positions, causal in the chunk;
        (B, 1, T, window) with `window`: the positions past L + T hidden too.

        A query also sees its own position, even if it is padding: a padding query with nothing
        visible would give NaN keys/values for later steps to multiply by zero."""
        total = mask.shape[1]
        past = total - t
        visible = mask[:, None, :].bool()  # (B, 1, L + T)
        span, new = torch.arange(total, device=self.device), past + torch.arange(t, device=self.device)
        causal = span[None, :] <= new[:, None]  # (T, L + T)
        own = span[None, :] == new[:, None]  # (T, L + T)
        allowed = (visible & causal[None]) | own[None]  # (B, T, L + T)
        zero = torch.zeros((), dtype=self.embed.dtype, device=self.device)
        lowest = torch.finfo(self.embed.dtype).min
        bias = torch.where(allowed, zero, lowest)[:, None]
        return bias if window is None else F.pad(bias, (0, window - total), value=lowest)

    @torch.inference_mode()
    def __call__(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        cache: KVCache,
        last_only: bool,
    ) -> torch.Tensor:
        b, t = input_ids.shape
        input_ids, attention_mask = input_ids.to(self.device), attention_mask.to(self.device)
        position_ids = position_ids.to(self.device)
        if t == 1 and self.graphs is not None:
            return self._graph_step(input_ids, attention_mask, position_ids, cache)

        def write(i: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            if i == 0:
                cache.reserve(k, t)
            return cache.write(i, k, v)  # (B, Hkv, L + T, D)

        x = self._stack(input_ids, position_ids, self._bias(attention_mask, t), write)
        cache.n += t
        return self._logits(x[:, -1:] if last_only else x)

    def _graph_step(
        self, input_ids: torch.Tensor, mask: torch.Tensor, position_ids: torch.Tensor, cache: KVCache
    ) -> torch.Tensor:
        """One new token per row (B, 1) -> logits (B, 1, V), by `window_step` through the graphs;
        the same logits as the eager step up to summation order (`decode_graphs`)."""
        assert self.graphs is not None
        n = cache.n
        cache.reserve(self.embed.new_empty(input_ids.shape[0], self.n_kv, 1, self.head_dim), 1)
        window = decode_window(n + 1, cache.k[0].shape[2])
        bias = self._bias(mask, 1, window)  # (B, 1, 1, window)

        def step(ids: torch.Tensor, pos: torch.Tensor, bias: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
            return self.window_step(ids, pos, bias, at, cache, window)

        logits = self.graphs.step(step, (window, *cache.k, *cache.v), [input_ids, position_ids, bias], n)
        cache.n += 1
        return logits

    def window_step(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        bias: torch.Tensor,
        at: torch.Tensor,
        cache: KVCache,
        window: int,
    ) -> torch.Tensor:
        """The one-token step with static shapes: ids and positions (B, 1), bias (B, 1, 1, window),
        the cache position `at` (1,) on the device -> logits (B, 1, V). Every shape is fixed by
        (B, window) and every write lands at `at`, so a CUDA graph can capture it."""

        def write(i: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return cache.write_at(i, k, v, at, window)  # (B, Hkv, window, D)

        return self._logits(self._stack(input_ids, position_ids, bias, write))

    def _stack(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        bias: torch.Tensor,
        write: Callable[[int, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    ) -> torch.Tensor:
        """The decoder layers over input_ids (B, T) -> hidden states (B, T, H); `write(layer, k, v)`
        stores the chunk's keys and values (B, Hkv, T, D) and returns those attended to."""
        b, t = input_ids.shape
        x = F.embedding(input_ids, self.embed)  # (B, T, H)
        cos, sin = self.rotary(x, position_ids)  # (B, T, D)
        cos, sin = cos[:, None], sin[:, None]  # (B, 1, T, D)
        hq, hkv, d = self.n_heads * self.head_dim, self.n_kv * self.head_dim, self.head_dim
        for i, layer in enumerate(self.layers):
            qkv = F.linear(self._rms(x, layer.ln1), layer.qkv_w, layer.qkv_b)  # (B, T, (Hq + 2 Hkv) D)
            q = qkv[..., :hq].view(b, t, self.n_heads, d).transpose(1, 2)  # (B, Hq, T, D)
            k = qkv[..., hq : hq + hkv].view(b, t, self.n_kv, d).transpose(1, 2)  # (B, Hkv, T, D)
            v = qkv[..., hq + hkv :].view(b, t, self.n_kv, d).transpose(1, 2)  # (B, Hkv, T, D)
            q, k = _rope(q, cos, sin), _rope(k, cos, sin)
            keys, values = write(i, k, v)  # (B, Hkv, L', D)
            out = _attention(q, keys, values, bias)  # (B, Hq, T, D)
            x = x + F.linear(out.transpose(1, 2).reshape(b, t, hq), layer.o_w)
            gate, up = F.linear(self._rms(x, layer.ln2), layer.gate_up_w).chunk(2, dim=-1)  # (B, T, I) each
            x = x + F.linear(F.silu(gate) * up, layer.down_w)
        return x

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        """Hidden states (B, T, H) -> logits (B, T, V), float32 with logits_fp32."""
        h = self._rms(x, self.norm)  # the model's dtype, as the trainer's final norm
        return F.linear(h.to(self.lm_head.dtype), self.lm_head, self.lm_head_bias)


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Grouped-query attention; q (B, Hq, T, D), k and v (B, Hkv, L, D), bias (B, 1, T, L).

    On CUDA, `_attention_cuda`. Elsewhere `attention.sdpa`, the trainer's attention,
    wherever the two sides' arithmetic could part: every prefill, and every step in bf16 or fp16,
    where a hand-written softmax(QK^T)V rounds differently (on CPU in bf16 it put the sampler 10x
    further from the trainer: mean |gap| 1.6e-4 vs 1.5e-5 nats). One new token in float32 (the
    CPU tier, where both paths agree to ~1e-7): query heads grouped onto their key/value head with
    a view, so K and V are read once (SDPA's enable_gqa path measured 1.6-2x slower at B 16-64,
    L 800-1600 on 2 CPU cores, 2026-12-05)."""
    b, hq, t, d = q.shape
    hkv = k.shape[1]
    if q.is_cuda:
        return _attention_cuda(q, k, v, bias)
    if t != 1 or q.dtype != torch.float32:
        return sdpa(q, k, v, attn_mask=bias, enable_gqa=True)
    qg = q.view(b, hkv, hq // hkv, d)  # (B, Hkv, G, D)
    scores = torch.matmul(qg, k.transpose(-1, -2)) * d**-0.5 + bias[:, :, 0, None, :]  # (B, Hkv, G, L)
    return torch.matmul(torch.softmax(scores, dim=-1), v).view(b, hq, 1, d)


def _attention_cuda(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """`_attention` as transformers' sdpa_attention_forward computes it with a mask (the trainer's
    attention; transformers/integrations/sdpa_attention.py): SDPA's fused CUDA kernels take a mask
    or unequal head counts, not both (`use_gqa_in_sdpa`), and enable_gqa with a mask falls back to
    the math kernel, which copies K and V to every query head (repeat_interleave, as SDPA's
    documented reference code does) and holds (B, Hq, T, L) scores: at every decode step, for
    every layer. One new token here: the G query heads of a
    key/value head become its G queries (`pack_gqa`). A chunk: keys and values repeated to every
    query head (`repeat_kv`), `memory.attention_row_group` rows at a time (rows are independent)."""
    b, hq, t, d = q.shape
    hkv = k.shape[1]
    if t == 1:
        out = F.scaled_dot_product_attention(q.reshape(b, hkv, hq // hkv, d), k, v, attn_mask=bias)
        return out.reshape(b, hq, 1, d)
    step = attention_row_group(hq, k.shape[2], d, k.element_size())
    parts = []
    for lo in range(0, b, step):
        keys, values = (_repeat_kv(x[lo : lo + step], hq // hkv) for x in (k, v))  # (b', Hq, L, D)
        parts.append(
            F.scaled_dot_product_attention(q[lo : lo + step], keys, values, attn_mask=bias[lo : lo + step])
        )
    return torch.cat(parts) if len(parts) > 1 else parts[0]


def _repeat_kv(x: torch.Tensor, groups: int) -> torch.Tensor:
    """(B, Hkv, L, D) -> (B, Hkv * groups, L, D), each key/value head repeated for its query heads
    (transformers' repeat_kv)."""
    b, h, n, d = x.shape
    return x[:, :, None].expand(b, h, groups, n, d).reshape(b, h * groups, n, d)


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding as modeling_qwen2.apply_rotary_pos_emb (rotate_half convention)."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin

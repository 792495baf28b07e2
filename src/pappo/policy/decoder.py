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

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from pappo.io import PappoError
from pappo.policy.memory import attention_row_group


class KVCache:
    """Keys and values of every layer, (B, Hkv, capacity, D), written in place; `n` used.

    capacity None: the capacity doubles as positions come (`reserve`); an int (rollout.kv_cache
    static): the first allocation is `capacity` positions, made once, and grows only past it (a
    lockstep batch's padding can take a row beyond its episode limit). Either way only the first
    `n` positions are ever read, so the outputs are the same.

    Only `reserve` changes the capacity. Every method that reallocates (`reserve`, `keep`,
    `split`, `absorb`, `repack`) replaces one layer's buffer at a time, so the old cache is freed
    layer by layer: the memory held at once is the cache at its capacity plus one layer
    (`policy/memory.py` counts it so)."""

    def __init__(self, n_layers: int, capacity: int | None = None) -> None:
        self.k: list[torch.Tensor] = []
        self.v: list[torch.Tensor] = []
        self.n_layers, self.n, self.capacity = n_layers, 0, capacity

    def _size(self, needed: int) -> int:
        """Positions to allocate for `needed`: the fixed capacity if it holds them, else doubling."""
        if self.capacity is not None and needed <= self.capacity:
            return self.capacity
        return max(2 * needed, 64)

    def reserve(self, like: torch.Tensor, extra: int) -> None:
        """Make room for `extra` more positions (`_size`); like: (B, Hkv, T, D)."""
        if self.k and self.n + extra <= self.k[0].shape[2]:
            return
        b, h, _, d = like.shape
        cap = self._size(self.n + extra)
        if not self.k:
            self.k = [like.new_zeros(b, h, cap, d) for _ in range(self.n_layers)]
            self.v = [like.new_zeros(b, h, cap, d) for _ in range(self.n_layers)]
            return
        for store in (self.k, self.v):
            for i, old in enumerate(store):
                new = old.new_zeros(b, h, cap, d)
                new[:, :, : self.n] = old[:, :, : self.n]
                store[i] = new

    def write(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store T new positions of one layer at [n, n+T); returns its keys and values so far."""
        end = self.n + k.shape[2]
        self.k[layer][:, :, self.n : end] = k
        self.v[layer][:, :, self.n : end] = v
        return self.k[layer][:, :, :end], self.v[layer][:, :, :end]

    def repack(self, mask: torch.Tensor, min_holes: float = 0.25) -> torch.Tensor:
        """Drop the masked-out positions (padding of idle rows) once they are `min_holes` of the
        cache; returns the new mask (B, n). Exact: positions are explicit (position_ids), and a
        masked position contributes nothing, so only attention's cost changes.

        Each row's real positions keep their order and move to the right end (left padding)."""
        real = mask.bool()  # (B, n)
        width = int(real.sum(1).max()) if real.numel() else 0
        if not self.k or width > (1.0 - min_holes) * self.n:
            return mask
        order = torch.sort(real.to(torch.int8), dim=1, stable=True).indices[:, self.n - width :]  # (B, width)
        b, h, _, d = self.k[0].shape
        index = order.to(self.k[0].device)[:, None, :, None].expand(b, h, width, d)
        for store in (self.k, self.v):
            for i, old in enumerate(store):
                packed = torch.zeros_like(old)  # the same capacity: only `reserve` changes it
                packed[:, :, :width] = old[:, :, : self.n].gather(2, index)
                store[i] = packed
        self.n = width
        return real.gather(1, order).to(mask.dtype)

    def keep(self, index: torch.Tensor) -> None:
        """Keep only the rows in `index` (in that order; a repeated row is copied)."""
        index = self._on_device(index)
        for store in (self.k, self.v):
            for i, old in enumerate(store):
                store[i] = old[index]

    def split(self, rows: torch.Tensor) -> KVCache:
        """Move the rows `rows` into a new cache, returned; this one keeps the others, in order.
        `absorb` puts them back. No row is held twice."""
        rows = self._on_device(rows)
        sub = KVCache(self.n_layers, self.capacity)
        sub.n = self.n
        if self.k:
            rest = _complement(rows, self.k[0].shape[0])
            for mine, theirs in ((self.k, sub.k), (self.v, sub.v)):
                for i, old in enumerate(mine):
                    theirs.append(old[rows])
                    mine[i] = old[rest]
        return sub

    def absorb(self, sub: KVCache, rows: torch.Tensor, total: int) -> None:
        """Put back the rows `split(rows)` moved into `sub`, after `sub` grew: row j of `sub`
        becomes row rows[j] of `total`; the rows this cache kept get zeros (masked out) at the
        positions only `sub` has. `sub` is emptied."""
        n0, n1 = self.n, sub.n
        rows = self._on_device(rows)
        rest = _complement(rows, total)
        for mine, theirs in ((self.k, sub.k), (self.v, sub.v)):
            for i, part in enumerate(theirs):
                _, h, cap, d = part.shape  # split copies, reserve grows: the sub-batch's is the larger
                merged = part.new_zeros(total, h, cap, d)
                merged[rows, :, :n1] = part[:, :, :n1]
                if i < len(mine):
                    merged[rest, :, :n0] = mine[i][:, :, :n0]
                    mine[i] = merged
                else:  # this cache held no layer yet: split before its first feed
                    mine.append(merged)
                theirs[i] = part.new_empty(0)
        self.n = n1

    def _on_device(self, index: torch.Tensor) -> torch.Tensor:
        return index.to(self.k[0].device) if self.k else index


def _complement(rows: torch.Tensor, total: int) -> torch.Tensor:
    """The indices of range(total) not in `rows`, in order, on rows' device."""
    keep = torch.ones(total, dtype=torch.bool, device=rows.device)
    keep[rows] = False
    return keep.nonzero().squeeze(-1)


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
    -> logits (B, T, V), or (B, 1, V) when last_only. Same contract as `rollout.Forward`.
    `logits_fp32` (model.logits_fp32): the lm_head in float32, as `ActorCritic.token_logits`."""

    def __init__(self, model: nn.Module, logits_fp32: bool = False) -> None:
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

    def _bias(self, mask: torch.Tensor, t: int) -> torch.Tensor:
        """Additive attention mask (B, 1, T, L + T): real past positions, causal in the chunk.

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
        return torch.where(allowed, zero, torch.finfo(self.embed.dtype).min)[:, None]

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
        x = F.embedding(input_ids, self.embed)  # (B, T, H)
        cos, sin = self.rotary(x, position_ids)  # (B, T, D)
        cos, sin = cos[:, None], sin[:, None]  # (B, 1, T, D)
        bias = self._bias(attention_mask, t)
        hq, hkv, d = self.n_heads * self.head_dim, self.n_kv * self.head_dim, self.head_dim
        for i, layer in enumerate(self.layers):
            qkv = F.linear(self._rms(x, layer.ln1), layer.qkv_w, layer.qkv_b)  # (B, T, (Hq + 2 Hkv) D)
            q = qkv[..., :hq].view(b, t, self.n_heads, d).transpose(1, 2)  # (B, Hq, T, D)
            k = qkv[..., hq : hq + hkv].view(b, t, self.n_kv, d).transpose(1, 2)  # (B, Hkv, T, D)
            v = qkv[..., hq + hkv :].view(b, t, self.n_kv, d).transpose(1, 2)  # (B, Hkv, T, D)
            q, k = _rope(q, cos, sin), _rope(k, cos, sin)
            if i == 0:
                cache.reserve(k, t)
            keys, values = cache.write(i, k, v)  # (B, Hkv, L + T, D)
            out = _attention(q, keys, values, bias)  # (B, Hq, T, D)
            x = x + F.linear(out.transpose(1, 2).reshape(b, t, hq), layer.o_w)
            gate, up = F.linear(self._rms(x, layer.ln2), layer.gate_up_w).chunk(2, dim=-1)  # (B, T, I) each
            x = x + F.linear(F.silu(gate) * up, layer.down_w)
        cache.n += t
        if last_only:
            x = x[:, -1:]
        h = self._rms(x, self.norm)  # the model's dtype, as the trainer's final norm
        # (B, T or 1, V), float32 with logits_fp32
        return F.linear(h.to(self.lm_head.dtype), self.lm_head, self.lm_head_bias)


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Grouped-query attention; q (B, Hq, T, D), k and v (B, Hkv, L, D), bias (B, 1, T, L).

    On CUDA, `_attention_cuda`. Elsewhere SDPA, the trainer's attention (transformers' sdpa),
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
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, enable_gqa=True)
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

"""The attention both the trainer (transformers) and the rollout decoder run: torch's SDPA, with its
math kernel for bf16 and fp16 on CPU.

Why not SDPA's own choice there: on a CPU with AMX or AVX512-BF16, torch 2.13's CPU flash kernel
packs bf16/fp16 operands with VNNI, and that packing refuses when ATen's dispatch is capped below
AVX512 (`RuntimeError: pack_vnni2 is only supported when avx512 is supported`), which is what the
pinned numerics do (`numerics.cpu_capability: avx2`, docs/numerics.md) and what CI's portability
pass does. The math kernel runs on every CPU at every capability (it computes half inputs in
float32). float32 and CUDA are left to SDPA's choice, so their numbers are what they were.

transformers picks a model's attention by name from its `AttentionInterface` (transformers docs,
"Attention interface"); the name below is that function plus transformers' own sdpa mask.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

# Both profiles: eager materialises every T x T score matrix, which made an SFT step on 2k-token
# episodes 4x slower on CPU than sdpa (9.5 s vs 2.4 s, batch 8, measured). sdpa is repeatable run
# to run on CPU; sampler and teacher-forced log-probs agree to 1e-4 (tests/test_policy_rollout.py).
ATTN_IMPLEMENTATION = "pappo_sdpa"
_HALF = (torch.bfloat16, torch.float16)


def math_only(q: torch.Tensor) -> bool:
    """Whether attention over `q` must use SDPA's math kernel: on CPU in bf16 or fp16 (above)."""
    return q.device.type == "cpu" and q.dtype in _HALF


def _kernels(q: torch.Tensor) -> AbstractContextManager:
    """SDPA's kernels for attention over `q`: the math kernel where `math_only`, else its own choice."""
    return sdpa_kernel(SDPBackend.MATH) if math_only(q) else nullcontext()


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **kwargs: Any) -> torch.Tensor:
    """`F.scaled_dot_product_attention(q, k, v, **kwargs)`, on the math kernel where `math_only`."""
    with _kernels(q):
        return F.scaled_dot_product_attention(q, k, v, **kwargs)


def _transformers_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' `sdpa_attention_forward`, on the math kernel where `math_only(query)`."""
    with _kernels(query):
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)


AttentionInterface.register(ATTN_IMPLEMENTATION, _transformers_attention)
AttentionMaskInterface.register(ATTN_IMPLEMENTATION, sdpa_mask)

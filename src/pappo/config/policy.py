"""params.yaml's model sections: the model and its device, LoRA, the rollout decoder and the base
checkpoint's warm-up."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from pappo.config.section import Section


class TinyModelParams(Section):
    """The default CPU profile's own tokenizer and Qwen2-architecture model (built, not downloaded)."""

    vocab_size: int = Field(4096, ge=512, description="Byte-level BPE vocabulary, special tokens included.")
    hidden_size: int = Field(128, ge=16, description="Width of the residual stream.")
    intermediate_size: int = Field(384, ge=16, description="Width of each MLP.")
    num_hidden_layers: int = Field(4, ge=1, description="Transformer blocks.")
    num_attention_heads: int = Field(4, ge=1, description="Query heads.")
    num_key_value_heads: int = Field(2, ge=1, description="Key/value heads (grouped-query attention).")
    max_position_embeddings: int = Field(4096, ge=256, description="Longest sequence (prompt + episode).")
    seed: int = Field(0, description="Seed of the weight initialisation.")

    @model_validator(mode="after")
    def _heads_divide(self) -> TinyModelParams:
        if self.hidden_size % self.num_attention_heads or self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"model.tiny: hidden_size ({self.hidden_size}) must be a multiple of num_attention_heads "
                f"({self.num_attention_heads}), which must be a multiple of num_key_value_heads "
                f"({self.num_key_value_heads}); change one of them"
            )
        return self


class ModelParams(Section):
    """Which policy checkpoint: the built tiny model, or a pinned Hugging Face hub checkpoint."""

    profile: Literal["tiny", "hub"] = Field(
        "tiny", description="tiny: built on CPU; hub: `id` at `revision`."
    )
    id: str = Field("Qwen/Qwen2.5-Coder-7B-Instruct", description="Hub repository id (hub profile).")
    revision: str = Field("", description="Hub commit, 40 hex characters (hub profile).")
    allow_unpinned: bool = Field(False, description="Accept a branch or tag as revision (never for results).")
    local_files_only: bool = Field(True, description="Never download; the checkpoint must be in cache_dir.")
    cache_dir: Path | None = Field(None, description="Hub cache (hub layout); None: the default HF cache.")
    dtype: Literal["float32", "bfloat16", "float16"] = Field(
        "float32",
        description="Weights and compute dtype. float16 (Qi et al. 2025, arXiv 2510.26788: far less "
        "sampler/trainer mismatch than bfloat16) trains with dynamic loss scaling (torch.amp.GradScaler); the "
        "LoRA adapters and the value head keep float32 master weights either way.",
    )
    logits_fp32: bool = Field(
        False,
        description="lm_head and log-softmax in float32 on both sides (rollout decoder and trainer "
        "forward), whatever `dtype`: removes the largest share of the bf16/fp16 log-prob gap (docs/rl.md).",
    )
    device: Literal["cpu", "cuda"] = Field(
        "cpu", description="Where the model runs; cuda: one GPU per process."
    )
    gradient_checkpointing: bool = Field(
        False, description="Recompute activations in the backward (large models)."
    )
    tiny: TinyModelParams = TinyModelParams()

    @model_validator(mode="after")
    def _pinned(self) -> ModelParams:
        if (
            self.profile == "hub"
            and not self.allow_unpinned
            and not re.fullmatch(r"[0-9a-f]{40}", self.revision)
        ):
            raise ValueError(
                f"model.revision {self.revision!r} is not a 40-hex commit: pin the checkpoint to the "
                "commit you ran (see its hub page, 'Files and versions'), or set model.allow_unpinned "
                "for an exploratory run that cannot be published"
            )
        return self


class LoraParams(Section):
    """LoRA adapters of the policy and of the critic (peft)."""

    rank: int = Field(16, ge=1, description="Rank r of each adapter.")
    alpha: float = Field(32.0, gt=0, description="Scale numerator: updates are scaled by alpha / rank.")
    dropout: float = Field(0.0, ge=0, lt=1, description="Dropout on the adapter input.")
    target_modules: list[str] = Field(
        ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        min_length=1,
        description="Linear layers that get an adapter (Qwen2 names).",
    )


class RolloutParams(Section):
    """Batched multi-turn sampling."""

    batch_size: int = Field(32, ge=1, description="Episodes advanced together (B).")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature; log-probs are taken at it.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass (1.0: off).")
    max_new_tokens_per_turn: int = Field(192, ge=8, description="Longest assistant turn.")
    max_tokens_per_episode: int = Field(3072, ge=64, description="Prompt + all turns + observations.")
    kv_cache: Literal["grow", "static"] = Field(
        "grow",
        description="grow: the KV cache's capacity doubles as it fills (old and new buffers alive "
        "while it grows); static: allocated once at max_tokens_per_episode positions per row (no growth copies, "
        "a smaller peak: pappo.policy.memory). The same tokens and log-probs either way.",
    )
    enforce_eager: bool = Field(
        True,
        description="verl's (vLLM's) name. false: every one-token decode step runs as a CUDA graph, one "
        "launch instead of ~35 kernels a layer (pappo.policy.decode_graphs); the same tokens, log-probs equal "
        "up to summation order. Elsewhere than CUDA the same step runs uncaptured (no gain: what the CPU tests check).",
    )
    calls: Literal["sampled", "constrained"] = Field(
        "sampled",
        description="sampled: every token of a turn is drawn from the policy; constrained (candidates mode, "
        "rl.loss_tokens decisions): the call's format is forced and the policy draws only its choices (the tool, the "
        "candidate id) among the valid ones (policy/constrained.py).",
    )


class BaseModelParams(Section):
    """`pappo base-model` (tiny profile): pre-training, SFT on warm-up demonstrations, evaluation."""

    seed: int = Field(0, description="Seed of data order, demonstrations and evaluation sampling.")
    corpus_mb: float = Field(
        4.0, gt=0, description="Standard-library source used (tokenizer and pre-training)."
    )
    pretrain_steps: int = Field(60, ge=0, description="Causal-LM steps on the source corpus.")
    pretrain_seq_len: int = Field(256, ge=16, description="Tokens per pre-training window.")
    sft_steps: int = Field(300, ge=0, description="Supervised steps on demonstration episodes.")
    batch_size: int = Field(4, ge=1, description="Sequences per optimizer step (both phases).")
    lr: float = Field(3e-3, gt=0, description="Peak AdamW learning rate (warm-up, cosine decay).")
    max_len: int = Field(2048, ge=64, description="Longest training sequence; longer ones are cut.")
    demos_per_task: int = Field(6, ge=1, description="Noisy demonstration episodes per warm-up task.")
    demo_agent: Literal["oracle", "grounded"] = Field(
        "oracle",
        description="Demonstrator: the noisy oracle (knows where the bug is; p_* set its "
        "mistakes) or the transcript-only procedure of env/grounded.py (search, view, flip, test, undo).",
    )
    p_wrong_edit: float = Field(0.15, ge=0, le=1, description="Noisy demonstrator: wrong-edit rate.")
    p_failed_edit: float = Field(0.15, ge=0, le=1, description="Noisy demonstrator: failed-edit rate.")
    p_repeated_test: float = Field(0.15, ge=0, le=1, description="Noisy demonstrator: repeated-test rate.")
    p_parse_error: float = Field(0.05, ge=0, le=1, description="Noisy demonstrator: unparsable-turn rate.")
    eval_split_seed: int = Field(0, description="Split whose eval tasks measure the base policy.")

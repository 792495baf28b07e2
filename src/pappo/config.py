"""Typed mirror of params.yaml: one pydantic model per section, every field documented once."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pappo.io import PappoError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskSetParams(_Section):
    """One task set: where its manifest, lock and family repositories live."""

    manifest: Path = Field(description="JSONL manifest, one task per line (committed).")
    lock: Path = Field(description="Lock file written by `pappo validate` (DVC output).")
    repos: Path = Field(description="Folder holding one sub-folder per family.")


class TasksParams(_Section):
    """The benchmark (`repofix`) and warm-up task sets and how the benchmark is split."""

    repofix: TaskSetParams = Field(description="Benchmark task set (RepoFix-100).")
    warmup: TaskSetParams = Field(description="Warm-up task set, never part of the benchmark.")
    n_train_families: int = Field(14, ge=1, description="Families in the train split, per seed.")
    n_eval_families: int = Field(6, ge=1, description="Families held out for evaluation, per seed.")
    tasks_per_family: int = Field(5, ge=1, description="Tasks synthesised and expected per family.")


class SynthesisParams(_Section):
    """`pappo synthesize`: how bugs are searched for (its outputs are committed)."""

    seed: int = Field(0, description="Seed of the candidate order and of task selection.")
    max_candidates: int = Field(40, ge=5, description="Mutants evaluated per family before selection.")
    min_operator_kinds: int = Field(3, ge=1, description="Distinct operators required per family.")
    max_fail_fraction: float = Field(
        0.6, gt=0, le=1, description="Reject mutants failing more than this share of tests."
    )


class SandboxParams(_Section):
    """Limits of one test run in the sandbox."""

    timeout_s: float = Field(30.0, gt=0, description="Wall-clock limit of one pytest run.")
    test_timeout_s: float = Field(5.0, gt=0, description="Wall-clock limit of a single test.")
    cpu_s: int = Field(60, ge=1, description="CPU-seconds limit (RLIMIT_CPU) of one run.")
    memory_mb: int = Field(2048, ge=256, description="Address-space limit (RLIMIT_AS).")
    max_procs: int = Field(256, ge=8, description="Process limit (RLIMIT_NPROC) where enforced.")
    max_file_mb: int = Field(16, ge=1, description="Largest file a run may write (RLIMIT_FSIZE).")
    workers: int = Field(2, ge=1, description="Warm fork-server workers serving runs in parallel.")
    isolation: Literal["auto", "namespaces", "rlimits"] = Field(
        "auto",
        description="auto and namespaces: Linux namespaces + an unprivileged id, as root or, without "
        "root, from an unprivileged user namespace; where neither works the run stops with an error "
        "(fail closed). rlimits: limits and process groups only (no network or filesystem "
        "containment), only when asked for.",
    )

    @model_validator(mode="after")
    def _test_within_run(self) -> SandboxParams:
        if self.test_timeout_s > self.timeout_s:
            raise ValueError(
                f"sandbox.test_timeout_s ({self.test_timeout_s}) exceeds sandbox.timeout_s "
                f"({self.timeout_s}); lower test_timeout_s or raise timeout_s"
            )
        return self


class ToolCostParams(_Section):
    """Weight of each tool call in the `tool_cost` metric (an unparsable turn costs `parse_error`)."""

    view: float = Field(1.0, ge=0, description="Cost of one view call.")
    search: float = Field(1.0, ge=0, description="Cost of one search call.")
    str_replace: float = Field(1.0, ge=0, description="Cost of one str_replace call.")
    run_tests: float = Field(2.0, ge=0, description="Cost of one run_tests call.")
    submit: float = Field(0.5, ge=0, description="Cost of the submit call.")
    apply: float = Field(1.0, ge=0, description="Cost of one apply call (candidates mode).")
    revert: float = Field(1.0, ge=0, description="Cost of one revert call (candidates mode).")
    parse_error: float = Field(1.0, ge=0, description="Cost of a turn with no valid tool call.")


class RewardParams(_Section):
    """Terminal and per-turn (process) rewards; process weights are per event."""

    success: float = Field(1.0, description="Terminal reward when the graded patch passes.")
    edit_progress: float = Field(
        0.2, description="Times the drop in failing tests after an edit, over the initial count."
    )
    failed_edit: float = Field(-0.05, le=0, description="str_replace that did not apply.")
    repeated_test: float = Field(-0.05, le=0, description="run_tests with no edit since the last.")
    parse_error: float = Field(-0.1, le=0, description="Turn without one valid tool call.")


class CandidatesParams(_Section):
    """`env.actions: candidates`: the agent picks among locked candidate edits (docs/tasks.md)."""

    k: int = Field(
        8,
        ge=2,
        le=12,
        description="Candidate edits shown per episode: the fix and k-1 validated-wrong "
        "ones (12 are stored per task: tasks/candidates.py MAX_WRONG; fewer where a task has fewer).",
    )


class EnvParams(_Section):
    """The tool-using repair environment (docs/design.md, "Environment")."""

    actions: Literal["free", "candidates"] = Field(
        "free",
        description="free: view/search/str_replace/run_tests/submit on the files; candidates: "
        "apply/revert/view/run_tests/submit over k numbered candidate edits (env/candidate_board.py).",
    )
    candidates: CandidatesParams = CandidatesParams()

    max_turns: int = Field(12, ge=2, description="Assistant turns before the episode is cut.")
    view_max_lines: int = Field(60, ge=5, description="Most lines one view call returns.")
    max_observation_chars: int = Field(
        3000, ge=200, description="Tool results longer than this are truncated."
    )
    search_max_hits: int = Field(20, ge=1, description="Most matching lines one search returns.")
    tool_cost: ToolCostParams = ToolCostParams()
    rewards: RewardParams = RewardParams()


class TinyModelParams(_Section):
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


class ModelParams(_Section):
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


class LoraParams(_Section):
    """LoRA adapters of the policy and of the critic (peft)."""

    rank: int = Field(16, ge=1, description="Rank r of each adapter.")
    alpha: float = Field(32.0, gt=0, description="Scale numerator: updates are scaled by alpha / rank.")
    dropout: float = Field(0.0, ge=0, lt=1, description="Dropout on the adapter input.")
    target_modules: list[str] = Field(
        ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        min_length=1,
        description="Linear layers that get an adapter (Qwen2 names).",
    )


class RolloutParams(_Section):
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


class BaseModelParams(_Section):
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


class GppoParams(_Section):
    """GPPO trust region (arXiv 2610.13015; docs/design.md, "GPPO"), used when `rl.trust_region` is gppo."""

    geometry: Literal["tv", "chi2", "hellinger", "kl", "two_sided_log"] = Field(
        "tv", description="f-divergence of the region."
    )
    topology: Literal["mc", "atomic", "binary"] = Field(
        "binary", description="Estimator of the divergence per token."
    )
    delta: float = Field(0.1, gt=0, description="Radius of the region.")


class RLParams(_Section):
    """Online RL shared by rft, grpo, ppo and pappo: one loop, the method picks the advantage."""

    updates: int = Field(2, ge=1, description="Online updates (rollout batch + optimisation) per run.")
    tasks_per_update: int = Field(8, ge=1, description="Train tasks sampled per update.")
    group_size: int = Field(4, ge=1, description="Episodes per task per update (K).")
    ppo_epochs: int = Field(2, ge=1, description="Passes over each frozen batch.")
    minibatches: int = Field(2, ge=1, description="Optimizer steps per pass.")
    actor_lr: float = Field(2e-3, gt=0, description="AdamW learning rate of the policy LoRA.")
    critic_lr: float = Field(5e-3, gt=0, description="AdamW learning rate of the critic LoRA and value head.")
    critic_sees_rewards: bool = Field(
        False,
        description="ppo/pappo: the critic also reads the process rewards received before each turn "
        "(one learned weight; the policy does not read them), not only the token context.",
    )
    critic_trunk: Literal["adapter", "policy"] = Field(
        "adapter",
        description="ppo/pappo: what the value head reads. adapter: the critic's own LoRA adapter over "
        "the base (a second trunk pass per forward and backward, as verl's separate critic model); "
        "policy: the policy adapter's last hidden states, detached (one trunk pass serves actor and "
        "critic, the actor's loss is unchanged, the critic learns the head and reward weight alone).",
    )
    lr_scheduler_type: Literal["constant", "cosine"] = Field(
        "constant",
        description="Actor learning rate per update u of U: constant, or cosine annealed "
        "actor_lr x (m + (1 - m) (1 + cos(pi u / U)) / 2), m = min_lr_ratio (verl's knob names).",
    )
    min_lr_ratio: float = Field(
        0.0, ge=0, le=1, description="cosine: the floor of the annealed rate, a fraction of actor_lr."
    )
    grad_clip: float = Field(1.0, gt=0, description="Max global grad norm, per model.")
    clip_ratio_low: float = Field(0.2, ge=0, description="PPO clip: ratio floor 1 - clip_ratio_low.")
    clip_ratio_high: float = Field(
        0.28, ge=0, description="PPO clip: ratio ceiling 1 + clip_ratio_high (DAPO's clip-higher)."
    )
    clip_ratio_c: float | None = Field(
        3.0, gt=1, description="Dual-clip bound for negative advantages (> 1; Ye et al. 2020), or null."
    )
    cliprange_value: float | None = Field(
        0.2, gt=0, description="Value clipping around the old values (> 0), or null."
    )
    loss_agg_mode: Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"] = Field(
        "token-mean", description="How per-token losses become one number."
    )
    loss_tokens: Literal["response", "decisions"] = Field(
        "response",
        description="Tokens the actor loss (and rft's NLL) is taken over: every sampled token, or only "
        "those that spell the tool call's name and argument values (the agent's choices; format tokens get no policy "
        "gradient, only the KL anchor's when kl_coef > 0).",
    )
    kl_coef: float = Field(0.0, ge=0, description="Weight of KL(policy || base) in the actor loss.")
    kl_estimator: Literal["k1", "k2", "k3"] = Field("k3", description="Per-token KL estimator.")
    entropy_coeff: float = Field(0.0, ge=0, description="Entropy bonus weight.")
    target_kl: float | None = Field(0.05, description="Stop an update's epochs once actor/ppo_kl exceeds it.")
    trust_region: Literal["clip", "gppo"] = Field("clip", description="PPO clip or a GPPO trust region.")
    gppo: GppoParams = GppoParams()
    gamma: float = Field(1.0, ge=0, le=1, description="Discount per step (token for ppo, turn for pappo).")
    lam: float = Field(0.95, ge=0, le=1, description="GAE lambda per step.")
    whiten_advantages: bool = Field(
        True, description="ppo/pappo: whiten advantages over the batch's policy tokens."
    )
    grpo_norm_by_std: bool = Field(True, description="grpo: divide by the group std (false: Dr. GRPO).")
    local_prior: float = Field(0.5, ge=0, description="pappo: weight of the patch-aware process rewards.")
    critic_warmup_steps: int = Field(
        2, ge=0, description="Critic-only steps on the base policy's first batch."
    )
    rft_epochs: int = Field(2, ge=1, description="rft: passes over the successful episodes of an update.")
    micro_batch_size: int = Field(8, ge=1, description="Sequences per forward pass (gradient accumulation).")
    use_dynamic_bsz: bool = Field(
        False,
        description="Micro-batches by a token budget instead of micro_batch_size rows (verl's name): a "
        "minibatch's rows sorted longest first and packed while rows x the longest row stay within "
        "ppo_max_token_len_per_gpu, so short episodes share a forward and little of it is padding "
        "(rl/batch.py:token_budget_micro_batches). The loss is the same sum over the minibatch.",
    )
    ppo_max_token_len_per_gpu: int = Field(
        16384,
        ge=64,
        description="With use_dynamic_bsz: padded tokens (rows x the longest row) of a micro-batch on "
        "each process (verl's name); a refusal of `pappo profile` names the largest that fits the GPU "
        "(policy/memory.py). At least rollout.max_tokens_per_episode.",
    )
    rollout_is_level: Literal["none", "token", "sequence"] = Field(
        "none",
        description="Correct the PPO loss for the sampler/trainer log-prob mismatch (verl's name; "
        "rl/mismatch.py, docs/rl.md): none; token, one ratio exp(old_log_prob - sampler_log_prob) per token; "
        "sequence, the product over the sequence's tokens.",
    )
    rollout_is_mode: Literal["truncate", "mask"] = Field(
        "truncate",
        description="truncate: weight min(ratio, C) (TIS, Yao et al. 2025); mask: weight ratio, or 0 "
        "where it is outside [1/C, C] (MIS). C = rollout_is_threshold.",
    )
    rollout_is_threshold: float = Field(
        2.0, gt=1, description="C, the cap of the importance ratio (verl's name)."
    )

    @model_validator(mode="after")
    def _check(self) -> RLParams:
        if self.tasks_per_update * self.group_size < self.minibatches:
            raise ValueError(
                f"rl.minibatches={self.minibatches} exceeds the {self.tasks_per_update * self.group_size} "
                "episodes of an update (tasks_per_update x group_size); lower minibatches"
            )
        if self.rollout_is_level != "none" and self.trust_region != "clip":
            # the weights multiply the clipped surrogate's per-token loss; gppo aggregates its own
            raise ValueError(
                f"rl.rollout_is_level {self.rollout_is_level} weights the PPO clip loss; with "
                "rl.trust_region gppo set rollout_is_level: none, or trust_region: clip"
            )
        return self


class TuneParams(_Section):
    rl: dict[str, Any] = Field(
        default_factory=dict,
        description="A one-seed try: `rl` fields merged over `rl` (field by field) by the single-seed "
        "experiment alone, so the published runs keep `rl` (`dvc exp run -S seed=4 -S "
        "+tune.rl.actor_lr=0.002 experiment`; docs/tuning.md). Empty: the experiment runs `rl`.",
    )


class EvalParams(_Section):
    """Held-out evaluation of every run: greedy on `boards` boards and `samples` times sampled per eval task."""

    boards: int = Field(
        1,
        ge=1,
        le=1000,
        description="Greedy episodes per eval task, each on its own board (the candidate order drawn "
        "from its board seed); a task's success is the share of its boards solved, so a run's "
        "evaluation noise shrinks (summary.md splits the variance and says which part limits).",
    )
    samples: int = Field(2, ge=0, description="Episodes per task at the training temperature (K of pass@K).")
    n_boot: int = Field(2000, ge=100, description="Bootstrap resamples of the 95% intervals over tasks.")
    intermediate: Literal["full", "greedy"] = Field(
        "full",
        description="Evaluations before the last update: full (boards and samples, as the last) or "
        "greedy (one board, no samples: the curve's points for a fraction of the cost). The last "
        "evaluation, the one every comparison reads, is always full.",
    )
    every: int = Field(
        1, ge=0, description="Evaluate after every `every`-th update and after the last (0: the last only)."
    )


class ClaimParams(_Section):
    """A claim written down before the run and checked by `pappo audit` (part of what receipts hash)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Short unique name.")
    metric: Literal["success", "pass_at_k", "failed_edit_rate", "tool_cost", "repeated_test_rate"] = Field(
        description="Held-out metric of the final evaluation."
    )
    method: Literal["base", "rft", "grpo", "ppo", "pappo"] = Field(
        description="The method the claim is about."
    )
    baseline: Literal["best_non_ppo", "base", "rft", "grpo", "ppo", "pappo"] = Field(
        "best_non_ppo", description="What it is compared with; best_non_ppo = the best of base, rft, grpo."
    )
    direction: Literal["higher", "lower"] = Field("higher", description="Which way is better for the metric.")
    min_delta: float = Field(0.0, ge=0, description="Smallest mean improvement over seeds that counts.")
    min_seed_wins: int = Field(
        1, ge=0, description="Seeds on which the method must beat the baseline by min_delta."
    )
    ci_rule: Literal["lower_bound_above_zero", "none"] = Field(
        "lower_bound_above_zero", description="The paired 95% interval of the improvement must exclude 0."
    )
    needs_gpu: bool = Field(True, description="Only CUDA receipts can support it (CPU runs cannot).")


class NumericsParams(_Section):
    """CPU numerics pinned before torch loads (src/pappo/numerics.py, docs/numerics.md)."""

    pin: bool = Field(
        True,
        description="Pin the settings below in every command that trains or evaluates; "
        "false: the machine chooses (recorded, and runs are then bitwise comparable only with "
        "runs of the same fingerprint).",
    )
    threads: int = Field(
        2,
        ge=1,
        le=256,
        description="Intra-op threads of torch, OpenMP and MKL (reductions "
        "are split by it, so it is part of the result; not the machine's core count).",
    )
    cpu_capability: Literal["avx2", "default"] = Field(
        "avx2",
        description="ATEN_CPU_CAPABILITY: ATen's vector "
        "kernels (avx2: any x86-64 with AVX2; default: scalar-width, slower).",
    )
    mkl_cbwr: Literal["COMPATIBLE,STRICT", "COMPATIBLE", "AVX2,STRICT", "AVX2", "AUTO"] = Field(
        "COMPATIBLE,STRICT",
        description="MKL_CBWR: MKL's code branch. COMPATIBLE is the one MKL documents as the same on "
        "Intel and non-Intel CPUs; AVX2 holds across Intel CPUs only (MKL runs AUTO on others).",
    )


class ValidateParams(_Section):
    """`pappo validate`: how strictly each task is checked."""

    repeats: int = Field(2, ge=2, description="Runs per check; outcomes must agree (flakiness).")


class Params(_Section):
    """Root of params.yaml."""

    seed: int = Field(
        0,
        description="Seed of the single-seed experiment (`dvc exp run -S seed=N`): one of "
        "dev_seeds (the experiment refuses a published seed).",
    )
    seeds: list[int] = Field(
        description="Published (confirmatory) seeds: the full matrix, run once per "
        "configuration chosen on dev_seeds; each gets its own split."
    )
    dev_seeds: list[int] = Field(
        default_factory=list,
        description="Tuning seeds of the single-seed experiment, disjoint from seeds; each gets its own "
        "split (docs/tuning.md).",
    )
    tasks: TasksParams
    synthesis: SynthesisParams = SynthesisParams()
    sandbox: SandboxParams = SandboxParams()
    env: EnvParams = EnvParams()
    model: ModelParams = ModelParams()
    lora: LoraParams = LoraParams()
    rollout: RolloutParams = RolloutParams()
    base_model: BaseModelParams = BaseModelParams()
    rl: RLParams = RLParams()
    tune: TuneParams = TuneParams()
    eval: EvalParams = EvalParams()
    claims: list[ClaimParams] = Field(
        default_factory=list, description="Pre-registered claims (pappo audit)."
    )
    numerics: NumericsParams = NumericsParams()
    validate_: ValidateParams = Field(ValidateParams(), alias="validate")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _seeds_unique(self) -> Params:
        if len(set(self.seeds)) != len(self.seeds) or not self.seeds:
            raise ValueError(f"seeds {self.seeds} must be a non-empty list of distinct integers")
        if len(set(self.dev_seeds)) != len(self.dev_seeds):
            raise ValueError(f"dev_seeds {self.dev_seeds} must be distinct integers; drop the repeated one")
        if both := sorted(set(self.seeds) & set(self.dev_seeds)):
            # a seed used for a choice cannot also confirm it (Eimer, Lindauer & Raileanu 2023)
            raise ValueError(
                f"seeds {self.seeds} and dev_seeds {self.dev_seeds} share {both}: a seed is published "
                f"(confirmatory) or for tuning, never both; remove {both} from one of the two lists "
                "(a seed already tuned on belongs in dev_seeds)"
            )
        tuned = tuned_rl(self.rl, self.tune)
        ids = [c.id for c in self.claims]
        if len(set(ids)) != len(ids):
            raise ValueError(f"claims: ids {ids} must be unique; rename the duplicate")
        for c in self.claims:
            if c.min_seed_wins > len(self.seeds):
                raise ValueError(
                    f"claims {c.id}: min_seed_wins {c.min_seed_wins} exceeds the {len(self.seeds)} seeds"
                )
            if c.baseline == c.method:
                raise ValueError(
                    f"claims {c.id}: method and baseline are both {c.method}; compare two methods"
                )
        if self.rollout.calls == "constrained" and (self.env.actions, self.rl.loss_tokens) != (
            "candidates",
            "decisions",
        ):
            # a forced token has probability 1 under the constraint: training on it would teach nothing real
            raise ValueError(
                f"rollout.calls constrained needs env.actions candidates and rl.loss_tokens decisions "
                f"(got {self.env.actions}, {self.rl.loss_tokens}); set them or rollout.calls: sampled"
            )
        _episode_fits_micro_batch("rl", self.rl, self.rollout)
        _episode_fits_micro_batch("tune.rl merged over rl", tuned, self.rollout)
        if self.model.gradient_checkpointing and self.lora.dropout > 0:
            # checkpointing needs train mode, in which LoRA dropout would also perturb the frozen
            # old log-probs, so the first PPO ratios would not be 1
            raise ValueError(
                f"model.gradient_checkpointing needs lora.dropout 0 (it is {self.lora.dropout}); "
                "set lora.dropout: 0.0 or turn checkpointing off"
            )
        return self


def _episode_fits_micro_batch(where: str, rl: RLParams, rollout: RolloutParams) -> None:
    """With rl.use_dynamic_bsz, the token budget holds the longest episode (the memory model's bound)."""
    if rl.use_dynamic_bsz and rl.ppo_max_token_len_per_gpu < rollout.max_tokens_per_episode:
        raise ValueError(
            f"{where}: ppo_max_token_len_per_gpu {rl.ppo_max_token_len_per_gpu} is below "
            f"rollout.max_tokens_per_episode {rollout.max_tokens_per_episode}, so one episode could "
            "exceed a micro-batch; raise it to at least that, or set use_dynamic_bsz: false"
        )


def tuned_rl(rl: RLParams, tune: TuneParams) -> RLParams:
    """`rl` with the try `tune.rl` merged in: the single-seed experiment's RL configuration."""
    if not tune.rl:
        return rl
    try:
        return RLParams.model_validate(_deep_merge(rl.model_dump(mode="json"), tune.rl))
    except ValidationError as e:
        raise ValueError(f"tune.rl merged over rl is invalid:\n{_format_errors(e, 'tune.rl.')}") from None


def experiment_params(params: Params) -> Params:
    """The single-seed experiment's params: `rl` with `tune.rl` merged in."""
    return params.model_copy(update={"rl": tuned_rl(params.rl, params.tune)})


def apply_profile(params_path: Path, profile_path: Path, revision: str | None = None) -> Params:
    """params.yaml with a profile overlay merged in (section by section, field by field), and
    `model.revision` set if given; validated, so an unpinned hub revision is refused here."""
    merged = profile_mapping(params_path, profile_path)
    if revision is not None:
        merged.setdefault("model", {})["revision"] = revision
    try:
        return Params.model_validate(merged)
    except ValidationError as e:
        raise PappoError(f"{params_path} + {profile_path}: invalid params:\n{_format_errors(e)}") from e


def profile_mapping(params_path: Path, profile_path: Path) -> dict[str, Any]:
    """params.yaml with a profile overlay merged in, not yet validated: a caller that needs some
    sections of a profile (a benchmark with random weights, no revision to pin) validates those."""
    return _deep_merge(_yaml_mapping(params_path), _yaml_mapping(profile_path))


def _yaml_mapping(path: Path, missing: str = "") -> dict[str, Any]:
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise PappoError(f"{path}: not found{missing}") from None
    except yaml.YAMLError as e:
        raise PappoError(f"{path}: not valid YAML: {e}") from e
    if not isinstance(raw, dict):
        raise PappoError(f"{path}: expected a mapping of params sections, got {type(raw).__name__}")
    return raw


def _deep_merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def load_params(path: Path = Path("params.yaml")) -> Params:
    """Read and check params.yaml; errors name the file and the field."""
    raw = _yaml_mapping(path, missing="; run from the repository root or pass --params")
    try:
        return Params.model_validate(raw)
    except ValidationError as e:
        raise PappoError(f"{path}: invalid params:\n{_format_errors(e)}") from e


def _format_errors(e: ValidationError, prefix: str = "") -> str:
    lines = []
    for err in e.errors():
        where = ".".join(str(p) for p in err["loc"]) or "<root>"
        lines.append(f"  - {prefix}{where}: {err['msg']}")
    return "\n".join(lines)

"""params.yaml's training sections: online RL (`rl`, with GPPO's trust region), the single-seed
experiment's tries (`tune`) and held-out evaluation (`eval`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from pappo.config.section import Section, deep_merge, format_errors


class GppoParams(Section):
    """GPPO trust region (arXiv 2610.13015; docs/design.md, "GPPO"), used when `rl.trust_region` is gppo."""

    geometry: Literal["tv", "chi2", "hellinger", "kl", "two_sided_log"] = Field(
        "tv", description="f-divergence of the region."
    )
    topology: Literal["mc", "atomic", "binary"] = Field(
        "binary", description="Estimator of the divergence per token."
    )
    delta: float = Field(0.1, gt=0, description="Radius of the region.")


class RLParams(Section):
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


class TuneParams(Section):
    rl: dict[str, Any] = Field(
        default_factory=dict,
        description="A one-seed try: `rl` fields merged over `rl` (field by field) by the single-seed "
        "experiment alone, so the published runs keep `rl` (`dvc exp run -S seed=4 -S "
        "+tune.rl.actor_lr=0.002 experiment`; docs/tuning.md). Empty: the experiment runs `rl`.",
    )


class EvalParams(Section):
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


def tuned_rl(rl: RLParams, tune: TuneParams) -> RLParams:
    """`rl` with the try `tune.rl` merged in: the single-seed experiment's RL configuration."""
    if not tune.rl:
        return rl
    try:
        return RLParams.model_validate(deep_merge(rl.model_dump(mode="json"), tune.rl))
    except ValidationError as e:
        raise ValueError(f"tune.rl merged over rl is invalid:\n{format_errors(e, 'tune.rl.')}") from None

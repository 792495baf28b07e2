"""What every phase of an update reads and steps: the `Learner`.

It holds the actor-critic, its two AdamW optimizers (with float16 dynamic loss scaling), the
method and the run's settings, and derives what the collection, the freeze and the optimizer steps
share: the choice table and call trie (constrained decisions), the token masks each term reads,
the trainer's log-probs, micro-batches, and backward / clip / step with gradients summed over
ranks. `collect.py`, `freeze.py`, `update.py` and `checkpointing.py` are functions of it.
Shapes: B episodes, T tokens.
"""

from __future__ import annotations

from typing import Any, Literal

import torch

from pappo.config import Params
from pappo.io import PappoError
from pappo.policy.adapters import ActorCritic
from pappo.policy.constrained import call_trie
from pappo.policy.decisions import choice_table, choice_tokens
from pappo.rl.batch import RolloutBatch, policy_outputs, token_budget_micro_batches
from pappo.rl.distributed import Dist

Method = Literal["rft", "grpo", "ppo", "pappo"]
METHODS: tuple[str, ...] = ("rft", "grpo", "ppo", "pappo")
CRITIC_METHODS = ("ppo", "pappo")


class Learner:
    """`ac` (policy + critic adapters over the frozen base) learning with `method` on one process
    of `dist` (one process when None); `seed` is the run's (episode seeds, minibatch orders)."""

    def __init__(
        self, method: Method, params: Params, ac: ActorCritic, codec: Any, seed: int, dist: Dist | None = None
    ) -> None:
        if method not in METHODS:
            raise PappoError(f"unknown method {method!r}; use one of {list(METHODS)}")
        self.dist = dist or Dist(device=next(ac.parameters()).device)
        if self.dist.world_size > params.rl.tasks_per_update:
            raise PappoError(
                f"rl.tasks_per_update ({params.rl.tasks_per_update}) is smaller than the number of "
                f"processes ({self.dist.world_size}): every rank needs a task; raise it or launch fewer"
            )
        self.method, self.params, self.rl, self.ac, self.codec = method, params, params.rl, ac, codec
        self.seed = seed
        if ac.logits_fp32 != params.model.logits_fp32:
            raise PappoError(
                f"model.logits_fp32 is {params.model.logits_fp32} but the ActorCritic was built with "
                f"{ac.logits_fp32}: build it as ActorCritic(model, params.lora, params.model.logits_fp32)"
            )
        # float16 overflows where bfloat16 does not: dynamic loss scaling (skips a step on inf/nan grads)
        self.scaler = torch.amp.GradScaler(self.dist.device.type) if params.model.dtype == "float16" else None
        self.build_optimizers()
        self.choices = self._choice_table()
        self.trie = call_trie(codec, params)  # rollout.calls constrained: the valid calls, else None

    @property
    def critic(self) -> bool:
        """Whether the method learns a critic (ppo, pappo)."""
        return self.method in CRITIC_METHODS

    def _choice_table(self) -> torch.Tensor | None:
        """The options each choice is made among (decisions mode with finite options), or None."""
        if self.rl.loss_tokens != "decisions":
            return None
        env = self.params.env
        choices = choice_tokens(self.codec, env.actions, env.candidates.k)
        return choice_table(choices, self.ac.lm_head.out_features) if choices else None

    def build_optimizers(self) -> None:
        """Fresh AdamW optimizers over the adapters' current tensors (again after a resume loads them)."""
        self.actor_opt = torch.optim.AdamW(self.ac.policy_parameters(), lr=self.rl.actor_lr, weight_decay=0.0)
        self.critic_opt = torch.optim.AdamW(
            self.ac.critic_parameters(), lr=self.rl.critic_lr, weight_decay=0.0
        )

    # ------------------------------------------------------------------ what the terms read
    def log_probs(
        self, mb: RolloutBatch, temperature: float, entropy: bool = False, hidden: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`policy_outputs` under the run's choice table (the one place the trainer applies it)."""
        return policy_outputs(self.ac, mb, temperature, entropy=entropy, choices=self.choices, hidden=hidden)

    def shared_trunk(self, mb: RolloutBatch) -> torch.Tensor | None:
        """The policy adapter's last hidden states of `mb` (B, T, H) when one trunk pass serves the actor
        and the critic (a critic method with rl.critic_trunk policy), else None: each makes its own."""
        if not self.critic or self.rl.critic_trunk != "policy":
            return None
        return self.ac.policy_hidden(mb.input_ids, mb.attention_mask)

    def loss_mask(self, b: RolloutBatch) -> torch.Tensor:
        """The tokens the actor learns on (B, T): every sampled token, or the decisions alone."""
        return b.decision_mask if self.rl.loss_tokens == "decisions" else b.response_mask

    def kl_mask(self, b: RolloutBatch) -> torch.Tensor:
        """The tokens the KL anchor reads (B, T): the actor's, except with sampled calls in decisions
        mode, where it holds the format tokens the policy gradient leaves out (constrained calls
        force the format, so there it reads the choices)."""
        if self.rl.loss_tokens == "decisions" and self.trie is None:
            return b.response_mask - b.decision_mask
        return self.loss_mask(b)

    def gap_mask(self, b: RolloutBatch) -> torch.Tensor:
        """The tokens whose sampler log-prob the trainer recomputes under the same distribution (B, T):
        with constrained calls the choices (both restricted to the valid options; a forced token's
        recorded 0 is the constraint's), else every sampled token but a restricted choice."""
        return b.decision_mask if self.trie is not None else b.response_mask * (b.choice_row == 0)

    def micro(self, batch: RolloutBatch, idx: torch.Tensor) -> list[torch.Tensor]:
        """Rows `idx` of `batch` in micro-batches (gradients accumulate over them): `rl.micro_batch_size`
        rows in idx's order, or with rl.use_dynamic_bsz at most rl.ppo_max_token_len_per_gpu padded
        tokens each (`token_budget_micro_batches`)."""
        if not len(idx):
            return []
        if not self.rl.use_dynamic_bsz:
            return list(idx.split(self.rl.micro_batch_size))
        lengths = batch.attention_mask[idx].sum(-1).cpu()  # (B,) tokens per row
        return [idx[part] for part in token_budget_micro_batches(lengths, self.rl.ppo_max_token_len_per_gpu)]

    # ------------------------------------------------------------------ stepping
    def backward(self, loss: torch.Tensor) -> None:
        """loss.backward(), the loss scaled first under float16 (`self.scaler`)."""
        (loss if self.scaler is None else self.scaler.scale(loss)).backward()

    def clip_and_step(self, params: list[torch.nn.Parameter], opt: torch.optim.Optimizer) -> float:
        """Sum gradients over ranks (DDP's all-reduce), clip their global norm, step. Under float16
        the gradients are unscaled first and the step is skipped if one is inf/nan (the norm says so)."""
        self.dist.sync_grads(params)
        if self.scaler is not None:
            self.scaler.unscale_(opt)
        norm = float(torch.nn.utils.clip_grad_norm_(params, self.rl.grad_clip))
        if self.scaler is None:
            opt.step()
        else:
            self.scaler.step(opt)
        return norm

    def scale_update(self) -> None:
        """After every optimizer of a step has stepped: adapt the float16 loss scale (GradScaler)."""
        if self.scaler is not None:
            self.scaler.update()

"""One frozen base model, two LoRA adapters: the policy ("policy") and the critic ("critic" + value head).

Both adapters live on the *same* base weights (peft injects LoRA layers into the base in place and
keeps one `base_layer` per Linear), so a 7B checkpoint is held in memory once. Switching adapters
is peft's `set_adapter`; each forward selects its own adapter, so no call depends on the last one.

Shapes: B batch, T tokens, V vocabulary, H hidden size.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from peft.tuners.tuners_utils import BaseTunerLayer
from safetensors.torch import load_file
from safetensors.torch import save as safetensors_bytes
from torch import nn
from transformers import PreTrainedModel
from transformers.cache_utils import Cache
from transformers.modeling_outputs import CausalLMOutputWithPast

from pappo.config.policy import LoraParams
from pappo.io import PappoError, atomic_write_bytes, atomic_write_json
from pappo.policy.attention import ATTN_IMPLEMENTATION
from pappo.policy.prefix import MIN_SHARED_PREFIX, common_prefix_len
from pappo.policy.sft import dense_or_mask

POLICY = "policy"
CRITIC = "critic"
ADAPTERS = (POLICY, CRITIC)
VALUE_HEAD_FILE = "value_head.safetensors"
META_FILE = "actor_critic.json"
FORMAT = 2  # 2: the value head file also holds the critic's reward weight
REWARD_KEY = "reward.weight"


def lora_config(lora: LoraParams) -> LoraConfig:
    """A fresh peft config per adapter (peft keeps and may mutate the object it is given)."""
    return LoraConfig(
        r=lora.rank,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=list(lora.target_modules),
        bias="none",  # biases stay frozen: the base is shared by both adapters
        task_type="CAUSAL_LM",
    )


def _check_base(base: nn.Module, lora: LoraParams) -> None:
    """Every `lora.target_modules` name must be the last name of some Linear in `base`.

    Stricter than peft (which accepts a partial match): a typo would silently leave layers
    without an adapter, and the run would still look healthy.
    """
    if any(isinstance(m, BaseTunerLayer) for m in base.modules()):
        raise PappoError(
            "ActorCritic: the base model already carries peft adapters; pass a freshly loaded base "
            "(one ActorCritic per base model)"
        )
    linear = sorted({name.rsplit(".", 1)[-1] for name, m in base.named_modules() if isinstance(m, nn.Linear)})
    missing = [t for t in lora.target_modules if t not in linear]
    if missing:
        raise PappoError(
            f"lora.target_modules: {missing} name no Linear layer of this model; "
            f"its Linear layers are {linear}. Fix lora.target_modules in params.yaml"
        )


class ActorCritic(nn.Module):
    """Policy and critic as two LoRA adapters over one frozen base, plus a float32 value head."""

    def __init__(self, base: PreTrainedModel, lora: LoraParams, logits_fp32: bool = False) -> None:
        super().__init__()
        _check_base(base, lora)
        # The attention the rollout decoder mirrors, whatever the base was built with (attention.py)
        base.set_attn_implementation(ATTN_IMPLEMENTATION)
        self.lora = lora
        self.logits_fp32 = (
            logits_fp32  # model.logits_fp32: `token_logits` in float32 (as the rollout decoder's)
        )
        # get_peft_model wraps `base` in place: its Linear layers become LoRA layers whose
        # `base_layer` is the original Linear (same tensors). peft docs: "Load adapters" /
        # PeftModel.add_adapter, which adds a second adapter next to the first.
        with warnings.catch_warnings():  # peft reads transformers' deprecated alias: noise in every log
            warnings.filterwarnings("ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning)
            self.peft: PeftModel = get_peft_model(base, lora_config(lora), adapter_name=POLICY)
        self.peft.add_adapter(CRITIC, lora_config(lora))
        self.peft.set_adapter(POLICY)
        for name, param in self.peft.named_parameters():
            param.requires_grad_(_adapter_of(name) is not None)
        hidden = int(base.config.hidden_size)
        device = next(base.parameters()).device
        self.value_head = nn.Linear(hidden, 1, device=device, dtype=torch.float32)
        # Small normal init, zero bias (OpenRLHF's critic: std 1/(H+1)). Initial values are then
        # ~0, the right prior for returns in [-1, 1], yet dV/dh = w != 0 so the critic LoRA gets a
        # gradient from the first step (a zero head would block it until the head moves). verl's
        # token-classification head (std 0.02) would give values of order 1 at H=3584.
        nn.init.normal_(self.value_head.weight, mean=0.0, std=1.0 / (hidden + 1))
        nn.init.zeros_(self.value_head.bias)
        # The critic's second input: the process rewards received before the turn (rewards are an
        # agent's observations in the MDP; an asymmetric critic, Pinto et al. 2018, as the policy
        # does not read them). Zero, hence unused, unless the trainer passes them (rl.critic_sees_rewards).
        self.reward_head = nn.Linear(1, 1, bias=False, device=device, dtype=torch.float32)
        nn.init.zeros_(self.reward_head.weight)

    # ------------------------------------------------------------------ adapter switching
    def _use(self, adapter: str) -> None:
        """Make `adapter` the one in the forward pass, leaving every requires_grad as it was.

        peft's set_adapter also sets requires_grad=False on the inactive adapter. That would
        silently drop gradients of a graph already built with it (autograd's AccumulateGrad skips
        a leaf whose requires_grad was turned off before backward), e.g. for a PPO step that runs
        policy_forward, then values, then one backward. So the flags are restored.
        """
        if self.peft.active_adapter == adapter:
            return
        params = [p for n, p in self.peft.named_parameters() if _adapter_of(n) is not None]
        flags = [p.requires_grad for p in params]
        self.peft.set_adapter(adapter)
        for param, flag in zip(params, flags):
            param.requires_grad_(flag)

    @contextmanager
    def adapter(self, name: str) -> Iterator[PeftModel]:
        """Run peft calls (e.g. `generate`) with `name` active; the previous adapter comes back after."""
        if name not in ADAPTERS:
            raise PappoError(f"ActorCritic.adapter: unknown adapter {name!r}; use one of {list(ADAPTERS)}")
        previous = self.peft.active_adapter
        self._use(name)
        try:
            yield self.peft
        finally:
            self._use(previous)

    # ------------------------------------------------------------------ forwards
    def policy_forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        past_key_values: Cache | None = None,
        use_cache: bool = False,
    ) -> CausalLMOutputWithPast:
        """Causal-LM output with the policy adapter: `.logits` (B, T, V), `.cache` when use_cache.

        input_ids (B, T); attention_mask (B, T_past + T); past_key_values: a transformers Cache.
        Without position_ids they are taken from the mask, so left-padded rows start at position 0
        (as HF generate does).
        """
        self._use(POLICY)
        position_ids = _positions(attention_mask, input_ids, position_ids)  # (B, T)
        return self.peft(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            cache=past_key_values,  # transformers 5.24 renamed past_key_values -> cache
            use_cache=use_cache,
        )

    def policy_hidden(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Last hidden states (B, T, H) with the policy adapter, without the lm_head: callers apply
        `lm_head` only where they need logits (the sampled tokens), not at every prompt position."""
        self._use(POLICY)
        return self._hidden(input_ids, attention_mask)

    def _hidden(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """Last hidden states (B, T, H) of the active adapter over full sequences from position 0.

        Right-padded rows that all begin with the same tokens (the system prompt and tool schemas
        every episode starts with; a task's statement too within a group) run that prefix once:
        its keys and values are repeated to every row and the rest of each row attends to them,
        so its cost is paid once per call, forward and backward (the gradient of the repeat sums
        the rows' shares). Exact up to float reassociation (`tests/test_policy_adapters.py`)."""
        attention_mask = dense_or_mask(attention_mask)
        decoder = self.peft.get_base_model().base_model  # e.g. Qwen2Model, LoRA layers inside
        shared = common_prefix_len(input_ids.tolist()) if attention_mask is None else 0
        if shared < MIN_SHARED_PREFIX:
            position_ids = _positions(attention_mask, input_ids, None)  # (B, T)
            return decoder(
                input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False
            ).last_hidden_state
        b, t = input_ids.shape
        positions = torch.arange(t, device=input_ids.device)[None]  # (1, T): right padding, as the mask gives
        head = decoder(input_ids=input_ids[:1, :shared], position_ids=positions[:, :shared], use_cache=True)
        cache = head.cache
        cache.batch_repeat_interleave(b)  # (B, Hkv, P, D) per layer; backward sums over the rows
        tail = decoder(
            input_ids=input_ids[:, shared:],
            position_ids=positions[:, shared:].expand(b, -1),
            cache=cache,
            use_cache=True,
        ).last_hidden_state  # (B, T - P, H)
        return torch.cat([head.last_hidden_state.expand(b, -1, -1), tail], dim=1)

    @property
    def lm_head(self) -> nn.Module:
        return self.peft.get_base_model().lm_head

    def token_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Float32 logits (..., V) of last hidden states (..., H). With `logits_fp32` the lm_head runs
        in float32 (hidden and weight cast up), else in the model's dtype and the result is cast: the
        rollout decoder does the same (`Qwen2Decoder(logits_fp32=...)`), so both sides agree."""
        head = self.lm_head
        if not self.logits_fp32:
            return head(hidden).float()
        bias = head.bias.float() if head.bias is not None else None
        return nn.functional.linear(hidden.float(), head.weight.float(), bias)

    def values(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Value of every token position with the critic adapter: (B, T), float32.

        Runs the decoder only (no lm_head: the (B, T, V) logits would be the largest tensor of the
        step at V=152k). Values at padded positions are computed but meaningless; mask them.
        """
        self._use(CRITIC)
        if position_ids is None:
            hidden = self._hidden(input_ids, attention_mask)  # (B, T, H), after the final norm
        else:
            decoder = self.peft.get_base_model().base_model  # e.g. Qwen2Model, LoRA layers inside
            hidden = decoder(
                input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False
            ).last_hidden_state
        return self.head_values(hidden)

    def head_values(self, hidden: torch.Tensor) -> torch.Tensor:
        """The value head over last hidden states: (B, T, H) -> (B, T), float32 (verl's critic keeps
        values in float32 whatever the compute dtype, bf16 at 7B)."""
        return self.value_head(hidden.float()).squeeze(-1)

    def reward_values(self, rewards_so_far: torch.Tensor) -> torch.Tensor:
        """The critic's term for the process rewards received so far: (B, T) -> (B, T), float32."""
        return self.reward_head(rewards_so_far.float()[..., None]).squeeze(-1)

    # ------------------------------------------------------------------ parameters
    def adapter_parameters(self, adapter: str) -> list[nn.Parameter]:
        """LoRA tensors of one adapter (peft names them `...lora_A.<adapter>.weight`)."""
        return [p for n, p in self.peft.named_parameters() if _adapter_of(n) == adapter]

    def policy_parameters(self) -> list[nn.Parameter]:
        """What the policy optimizer steps: the policy LoRA only."""
        return self.adapter_parameters(POLICY)

    def critic_parameters(self) -> list[nn.Parameter]:
        """What the critic optimizer steps: the critic LoRA, the value head and its reward weight."""
        return (
            self.adapter_parameters(CRITIC) + list(self.value_head.parameters()) + [self.reward_head.weight]
        )

    # ------------------------------------------------------------------ save / load
    def save(self, out_dir: Path) -> None:
        """Write `<out_dir>/policy/`, `<out_dir>/critic/` (peft), the value head and a JSON of the params."""
        out_dir = Path(out_dir)
        # peft puts every adapter not named "default" in a sub-folder named after it.
        self.peft.save_pretrained(str(out_dir), selected_adapters=list(ADAPTERS))
        for name in ADAPTERS:  # peft writes target_modules from a set: order varies with PYTHONHASHSEED
            config_path = out_dir / name / "adapter_config.json"
            config = json.loads(config_path.read_text())
            if isinstance(config.get("target_modules"), list):
                config["target_modules"] = sorted(config["target_modules"])
            atomic_write_bytes(config_path, (json.dumps(config, indent=2, sort_keys=True) + "\n").encode())
        head = {k: v.detach().cpu().contiguous() for k, v in self.value_head.state_dict().items()}
        head[REWARD_KEY] = self.reward_head.weight.detach().cpu().contiguous()
        atomic_write_bytes(out_dir / VALUE_HEAD_FILE, safetensors_bytes(head))
        meta = {"format": FORMAT, "hidden_size": self.value_head.in_features, "lora": self.lora.model_dump()}
        atomic_write_json(out_dir / META_FILE, meta)

    @classmethod
    def load(cls, base: PreTrainedModel, out_dir: Path) -> ActorCritic:
        """Rebuild what `save` wrote on a fresh `base` (the same checkpoint the adapters were trained on)."""
        out_dir = Path(out_dir)
        lora = _read_meta(out_dir, int(base.config.hidden_size))
        model = cls(base, lora)
        model.load_weights(out_dir)
        return model

    def load_weights(self, out_dir: Path) -> None:
        """Overwrite both adapters and the value head with what `save` wrote (a resume).
        peft may replace the LoRA tensors: build optimizers after this call."""
        out_dir = Path(out_dir)
        _read_meta(out_dir, self.value_head.in_features)
        for name in ADAPTERS:
            self._load_adapter(out_dir / name, name)
        head_path = _required(out_dir / VALUE_HEAD_FILE)
        head = load_file(str(head_path), device=str(self.value_head.weight.device))
        if REWARD_KEY not in head:
            raise PappoError(f"{head_path}: no {REWARD_KEY!r}; re-save the adapters (format {FORMAT})")
        with torch.no_grad():
            self.reward_head.weight.copy_(head.pop(REWARD_KEY))
        self.value_head.load_state_dict(head, strict=True)
        self._use(POLICY)

    def _load_adapter(self, path: Path, name: str) -> None:
        """Overwrite adapter `name` with the weights in `path`; every LoRA tensor must be there."""
        _required(path / "adapter_model.safetensors")
        flags = [p.requires_grad for p in self.parameters()]
        result = self.peft.load_adapter(str(path), adapter_name=name, is_trainable=True)
        for param, flag in zip(self.parameters(), flags):
            param.requires_grad_(flag)
        if result.missing_keys or result.unexpected_keys:
            raise PappoError(
                f"{path}: adapter {name!r} does not fit this model (missing {result.missing_keys[:3]}, "
                f"unexpected {result.unexpected_keys[:3]}); load it on the base it was trained on"
            )


def _adapter_of(param_name: str) -> str | None:
    """Which of our adapters a peft parameter belongs to (its name has the adapter as one part)."""
    parts = param_name.split(".")
    return next((a for a in ADAPTERS if a in parts), None)


def _positions(
    attention_mask: torch.Tensor | None, input_ids: torch.Tensor, position_ids: torch.Tensor | None
) -> torch.Tensor | None:
    """Position ids from a (B, T_past + T) mask for the last T tokens: left padding starts at 0."""
    if position_ids is not None or attention_mask is None:
        return position_ids
    positions = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)  # (B, T_past + T)
    return positions[:, -input_ids.shape[1] :]  # (B, T)


def _required(path: Path) -> Path:
    if not path.exists():
        raise PappoError(f"{path}: missing; ActorCritic.save writes it, re-run the stage that saves it")
    return path


def _read_meta(out_dir: Path, hidden_size: int) -> LoraParams:
    meta = json.loads(_required(out_dir / META_FILE).read_text())
    if meta.get("format") != FORMAT:
        raise PappoError(
            f"{out_dir / META_FILE}: format {meta.get('format')!r}, expected {FORMAT}; re-save the adapters"
        )
    if meta.get("hidden_size") != hidden_size:
        raise PappoError(
            f"{out_dir / META_FILE}: hidden_size {meta.get('hidden_size')} but the base model has "
            f"{hidden_size}; load these adapters on the checkpoint they were trained on (params model.*)"
        )
    return LoraParams.model_validate(meta["lora"])

"""What one gpu_step run runs: the config's defaults (7b: the hub profile at Qwen's vocabulary;
tiny: params.yaml's CPU model), and its params, params.yaml with the profile's lora, rollout and rl
and the benchmark's flags merged in, validated as a pipeline run's are."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import torch

from pappo.config import Params, load_params, profile_mapping
from pappo.config.policy import ModelParams
from pappo.config.rl import RLParams

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/gpu_step_record.py
from gpu_step_record import ROOT

HUB_PROFILE = ROOT / "profiles" / "qwen2.5-coder-7b.yaml"
QWEN25_VOCAB = 152064
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
_KEYS = ("episodes", "max_turns", "max_new_tokens_per_turn", "gradient_checkpointing", "profile", "vocab")
DEFAULTS = {
    "7b": dict(zip(_KEYS, (None, None, None, True, HUB_PROFILE, QWEN25_VOCAB))),
    "tiny": dict(zip(_KEYS, ("2x2", 3, 32, False, None, None))),
}
# flag -> (params section, field) for the precision sweep; an older checkout's params models may lack it
KNOBS = {"logits_fp32": ("model", "logits_fp32"), "rollout_is": ("rl", "rollout_is_level")}


def _episodes(args: argparse.Namespace, rl: dict[str, Any]) -> tuple[int, int]:
    if args.episodes is None:
        return int(rl["tasks_per_update"]), int(rl["group_size"])
    tasks, _, group = str(args.episodes).partition("x")
    if not (tasks.isdigit() and group.isdigit() and int(tasks) > 0 and int(group) > 0):
        raise SystemExit(f"gpu_step: --episodes {args.episodes!r}: expected TASKSxGROUP, e.g. 16x4")
    return int(tasks), int(group)


def _knobs(args: argparse.Namespace, data: dict[str, Any]) -> None:
    """The precision sweep's flags, into params sections; refused by name where the params models lack the knob."""
    wanted = {"logits_fp32": True if args.logits_fp32 else None, "rollout_is": args.rollout_is}
    for flag, value in wanted.items():
        if value is None:
            continue
        section, field = KNOBS[flag]
        model = {"model": ModelParams, "rl": RLParams}[section]
        if field not in model.model_fields:
            raise SystemExit(
                f"gpu_step: --{flag.replace('_', '-')} sets {section}.{field}, which this "
                "checkout's params models (src/pappo/config) do not have; run without the flag or on a "
                "checkout with it"
            )
        data[section][field] = value


def bench_params(args: argparse.Namespace, dtype: torch.dtype) -> Params:
    """params.yaml with the profile's lora, rollout and rl, the benchmark's overrides, validated."""
    data = load_params(args.params).model_dump(mode="json", by_alias=True)
    hub = profile_mapping(args.params, args.profile or HUB_PROFILE)
    if args.profile is not None:
        for section in ("lora", "rollout", "rl"):
            data[section] = hub[section]
    else:  # the hub profile's decode path and loss tokens, whatever params.yaml's CPU tier uses
        data["rollout"]["calls"] = hub["rollout"]["calls"]
        data["rl"]["loss_tokens"] = hub["rl"]["loss_tokens"]
    rl, rollout, env = data["rl"], data["rollout"], data["env"]
    args.tasks, args.group = _episodes(args, rl)
    # critic_warmup_steps 0: time a steady-state update, not the first update's extra critic steps
    rl |= {
        "tasks_per_update": args.tasks,
        "group_size": args.group,
        "target_kl": None,
        "updates": 1,
        "critic_warmup_steps": 0,
    }
    for key in ("micro_batch_size", "ppo_epochs", "minibatches", "ppo_max_token_len_per_gpu"):
        rl |= {key: getattr(args, key)} if getattr(args, key) else {}
    if args.use_dynamic_bsz is not None:
        rl["use_dynamic_bsz"] = args.use_dynamic_bsz
    rollout["batch_size"] = args.tasks * args.group  # one lockstep batch
    for key in ("max_new_tokens_per_turn", "max_tokens_per_episode", "kv_cache"):
        rollout |= {key: getattr(args, key)} if getattr(args, key) else {}
    if args.enforce_eager is not None:
        rollout["enforce_eager"] = args.enforce_eager
    if args.max_turns is None:  # 7b: every episode can reach the token limit
        args.max_turns = math.ceil(rollout["max_tokens_per_episode"] / rollout["max_new_tokens_per_turn"]) + 1
    env["max_turns"] = args.max_turns
    data["model"] |= {
        "dtype": str(dtype).removeprefix("torch."),
        "gradient_checkpointing": args.gradient_checkpointing,
    }
    _knobs(args, data)
    try:
        return Params.model_validate(data)
    except ValueError as e:
        raise SystemExit(f"gpu_step: the benchmark's params are invalid (check the flags): {e}") from None

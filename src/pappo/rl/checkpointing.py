"""Save and resume a training run: `out_dir/checkpoint`, replaced atomically after every update.

It holds `adapters/` (policy and critic LoRA + heads), `optim.pt` (both AdamW states and the
torch RNG state), `scaler.pt` under float16 (the loss scale reached, so a resume scales as the run
would) and `state.json` (method, seed, updates done, their records, and the run's fingerprint:
what the run depends on, so a checkpoint of another configuration or code version is not resumed).
Rank 0 writes; every rank holds the same weights and optimizer state and reads it back.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from pappo.io import PappoError, atomic_write_json
from pappo.rl.learner import Learner

CHECKPOINT = "checkpoint"


def save_checkpoint(
    out_dir: Path, learner: Learner, update_index: int, history: list[dict[str, Any]], fingerprint: str
) -> None:
    """adapters/, optim.pt, (scaler.pt,) state.json under `out_dir/checkpoint`, written to a
    temporary folder then swapped in with two renames (`resume_checkpoint` repairs a kill between
    them)."""
    dist = learner.dist
    if not dist.is_main:
        dist.barrier()
        return
    final, tmp = out_dir / CHECKPOINT, out_dir / f".{CHECKPOINT}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    learner.ac.save(tmp / "adapters")
    optim = {
        "actor": learner.actor_opt.state_dict(),
        "critic": learner.critic_opt.state_dict(),
        "torch_rng": torch.get_rng_state(),
    }
    torch.save(optim, tmp / "optim.pt")
    if learner.scaler is not None:
        torch.save(learner.scaler.state_dict(), tmp / "scaler.pt")
    state = {
        "method": learner.method,
        "seed": learner.seed,
        "update_index": update_index,
        "history": history,
        "fingerprint": fingerprint,
    }
    atomic_write_json(tmp / "state.json", state)
    old = out_dir / f".{CHECKPOINT}.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    dist.barrier()


def resume_checkpoint(
    out_dir: Path, learner: Learner, fingerprint: str, log: Callable[[str], None]
) -> tuple[int, list[dict[str, Any]]]:
    """Load `out_dir/checkpoint` into the learner if there is one of this method, seed and
    fingerprint (another method or seed is refused; another fingerprint is deleted and the run
    starts afresh); returns (updates done, their records), (0, []) when starting afresh."""
    dist = learner.dist
    folder, old = out_dir / CHECKPOINT, out_dir / f".{CHECKPOINT}.old"
    if dist.is_main and not (folder / "state.json").is_file() and (old / "state.json").is_file():
        old.rename(folder)  # killed between the two renames
    dist.barrier()
    if not (folder / "state.json").is_file():
        return 0, []
    state = json.loads((folder / "state.json").read_text())
    if (state["method"], state["seed"]) != (learner.method, learner.seed):
        raise PappoError(
            f"{folder}: checkpoint of {state['method']} seed {state['seed']}, not "
            f"{learner.method} seed {learner.seed}; use another --out or delete it"
        )
    if state.get("fingerprint", "") != fingerprint:
        log(f"{folder}: written by another configuration or code version; starting afresh")
        dist.barrier()  # every rank has read state.json
        if dist.is_main:
            shutil.rmtree(folder)
        dist.barrier()
        return 0, []
    log(f"resuming from {folder} after update {state['update_index']}")
    learner.ac.load_weights(folder / "adapters")
    learner.build_optimizers()  # over the loaded tensors
    opt = torch.load(folder / "optim.pt", weights_only=False, map_location=dist.device)
    learner.actor_opt.load_state_dict(opt["actor"])
    learner.critic_opt.load_state_dict(opt["critic"])
    torch.set_rng_state(opt["torch_rng"].cpu())
    if learner.scaler is not None and (folder / "scaler.pt").is_file():
        learner.scaler.load_state_dict(torch.load(folder / "scaler.pt", weights_only=False))
    return int(state["update_index"]), list(state["history"])

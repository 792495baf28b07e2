"""Shared by the benchmark scripts (run as `python benchmarks/<name>.py`; not a package)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from pappo.config import Params, load_params
from pappo.env.episode import RepairEnv
from pappo.env.protocol import tools_for
from pappo.numerics import pin
from pappo.policy.adapters import ActorCritic
from pappo.policy.chat import ChatCodec
from pappo.policy.loading import load_checkpoint, load_tokenizer
from pappo.policy.tokenizer import build_tokenizer
from pappo.sandbox.grading import Grade
from pappo.tasks.store import TaskStore


def padded_tokens(batch: Any, rows: Any) -> int:
    """Tokens the forward of micro-batch `rows` of a RolloutBatch holds: its rows x its longest
    row (`RolloutBatch.select` cuts a micro-batch to its longest row)."""
    return len(rows) * int(batch.attention_mask[rows].sum(-1).max())


def copy_bandwidth(device: torch.device, repeats: int = 5) -> float:
    """Bytes per second a device-to-device copy moves, counting its reads and its writes (STREAM's
    "copy" convention), best of `repeats`: the memory bandwidth a decode step's reads of weights and
    KV cache can at best get. 1 GiB on CUDA (past every cache), 64 MiB elsewhere."""
    n = 2**30 if device.type == "cuda" else 2**26
    src = torch.ones(n, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    seconds = []
    for _ in range(repeats + 1):
        sync()
        start = time.perf_counter()
        dst.copy_(src)
        sync()
        seconds.append(time.perf_counter() - start)
    del src, dst
    if device.type == "cuda":
        torch.cuda.empty_cache()  # run before the model is built: no trace in later peaks
    return 2 * n / min(seconds[1:])  # the first copy warms up (allocation, page faults): not counted


def sampled_context(trajectories: list[Any]) -> int:
    """The positions before each sampled token of its episode, summed over every sampled token: the
    keys and values a decoder must read, at the least, to sample them."""
    return sum(j for t in trajectories for j, m in enumerate(t.response_mask) if m)


def stand_in_grades(items):
    """Every tree fails one test: episodes run until submit or max_turns, as with a weak policy.
    No sandbox, so only generation and training are timed."""
    out = []
    for task, _, _ in items:
        tests = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
        outcomes = {t: "failed" if i == 0 else "passed" for i, t in enumerate(tests)}
        out.append(Grade(task.instance_id, False, outcomes, 1, False, [], None, [], None, 0.0, "stand-in"))
    return out


def fresh_tokenizer(params: Params) -> Any:
    """The tiny profile's tokenizer built afresh from the warm-up repos (nothing downloaded)."""
    with tempfile.TemporaryDirectory(prefix="pappo-bench-tok-") as tmp:
        build_tokenizer(params.model.tiny, params.tasks.warmup.repos, Path(tmp))
        return load_tokenizer(Path(tmp))


def graph_counts(stats: dict[str, Any]) -> str:
    """`decode_graphs.STATS` of a run (or its JSON) in words: graphs captured, replays, a failure."""
    failed = f"; capture failed: {stats['error']}" if stats.get("error") else ""
    return (
        f"{stats['graphs']} graphs ({stats['capture_s']:.1f} s capturing), {stats['replays']} replays{failed}"
    )


def warmup_envs(params: Params, episodes: int) -> list[RepairEnv]:
    """`episodes` fresh environments of the warm-up tasks (cycled, in the store's order), graded by
    `stand_in_grades`; in candidates mode each shows its task's candidate edits (episode seed i)."""
    store = TaskStore.from_params(params, "warmup")
    pool = list(store.tasks.values())
    cands = params.env.actions == "candidates"
    return [
        RepairEnv(
            t,
            store.clean(t),
            store.buggy(t),
            params.env,
            stand_in_grades,
            candidates=store.candidates[t.instance_id] if cands else None,
            seed=i,
        )
        for i, t in enumerate(pool[i % len(pool)] for i in range(episodes))
    ]


def candidates_params(params_path: Path) -> Params:
    """The published runs' params, pinned; the probes measure the candidates tier."""
    params = load_params(params_path)
    if params.env.actions != "candidates":
        raise SystemExit(
            f"{params_path}: env.actions is {params.env.actions!r}; this probes the candidates tier"
        )
    pin(params.numerics)
    return params


def candidates_policy(
    params: Params, base: Path, adapters: Path | None
) -> tuple[ActorCritic, Any, ChatCodec, TaskStore]:
    """The base checkpoint with a run's adapters (None: the base alone), its tokenizer and codec, and the task store."""
    model, tok, _ = load_checkpoint(params.model, base)
    ac = ActorCritic(model, params.lora)
    if adapters is not None:
        ac.load_weights(adapters)
    return ac, tok, ChatCodec(tok, tools_for("candidates")), TaskStore.from_params(params, "repofix")

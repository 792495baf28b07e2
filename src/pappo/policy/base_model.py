"""The `base_model` stage: resolve (hub) or build and warm-start (tiny) the policy checkpoint.

Tiny profile: tokenizer on standard-library source + warm-up families + the tool protocol; a
tiny Qwen2 pre-trained briefly on that source; SFT on noisy scripted demonstrations of the
WARM-UP families only; then measured on the eval tasks of one benchmark split (greedy and
sampled), through the same rollout engine and sandbox the trainers use. Hub profile: the pinned
checkpoint is resolved and hashed. Either way the output folder holds `checkpoint.json`.
"""

from __future__ import annotations

import functools
import shutil
import time
from pathlib import Path
from typing import Any

import torch

from pappo import numerics
from pappo.config import Params
from pappo.env.agents import Agent, NoisyAgent, play_all
from pappo.env.candidate_agents import NoisyCandidateAgent, Thoughtless, board_of
from pappo.env.episode import RepairEnv
from pappo.env.grounded import GroundedAgent
from pappo.env.protocol import tools_for
from pappo.env.vec import VecEnv, board_seed, task_env
from pappo.io import atomic_write_json
from pappo.policy import sft
from pappo.policy.base_metrics import headline, metrics_path
from pappo.policy.chat import ChatCodec
from pappo.policy.checkpoint import build_tiny_model, resolve_hub, save_checkpoint
from pappo.policy.constrained import call_trie
from pappo.policy.decoder import Qwen2Decoder
from pappo.policy.loading import load_tokenizer
from pappo.policy.rollout import RolloutEngine
from pappo.policy.tokenizer import build_tokenizer, corpus_files
from pappo.sandbox.grading import grade_many
from pappo.sandbox.pool import SandboxPool
from pappo.tasks.splits import read_split
from pappo.tasks.store import TaskStore

TINY_ID = "pappo/tiny-qwen2"


def run_stage(params: Params, out_dir: Path, report_path: Path, log: Any = print) -> dict[str, Any]:
    """Write the checkpoint to `out_dir` and the stage report to `report_path` (both replaced)."""
    t0 = time.perf_counter()
    if params.model.profile == "hub":
        path, record = resolve_hub(params.model)
        report = {"profile": "hub", "checkpoint": record.model_dump(mode="json"), "snapshot": str(path)}
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        atomic_write_json(Path(out_dir) / "checkpoint.json", record.model_dump(mode="json"))
    else:
        report = _tiny(params, Path(out_dir), log)
    report["numerics"] = numerics.collect(params.numerics).model_dump(mode="json")
    # what a reproduction plans its time by (`pappo reproduce`'s ETA); never compared
    report["timing"] = {"wall_s": round(time.perf_counter() - t0, 3)}
    atomic_write_json(report_path, report)
    atomic_write_json(metrics_path(report_path), headline(report))
    return report


def _tiny(params: Params, out_dir: Path, log: Any) -> dict[str, Any]:
    bm = params.base_model
    torch.manual_seed(bm.seed)
    torch.use_deterministic_algorithms(True)
    staging = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    tok_dir = staging / "tokenizer"
    max_bytes = int(bm.corpus_mb * 1024 * 1024)
    corpus = build_tokenizer(params.model.tiny, params.tasks.warmup.repos, tok_dir, max_bytes=max_bytes)
    tokenizer = load_tokenizer(tok_dir)  # the encoding RL and evaluation will load with the checkpoint
    codec = ChatCodec(tokenizer, tools_for(params.env.actions))
    model = build_tiny_model(params.model.tiny, tokenizer)
    log(
        f"tokenizer: {corpus['vocab_size']} tokens from {corpus['n_files']} files; model: "
        f"{model.num_parameters() / 1e6:.2f}M parameters"
    )
    stream = _corpus_stream(codec, params.tasks.warmup.repos, max_bytes)
    windows = sft.lm_windows(stream, bm.pretrain_seq_len)
    pre = sft.train(
        model, windows, _schedule(bm, bm.pretrain_steps, bm.pretrain_seq_len), codec.pad_id, bm.seed
    )
    log(f"pre-training: {len(windows)} windows, loss {_ends(pre)}")
    with SandboxPool(params.sandbox) as pool:
        demos = demonstrations(params, pool)
        examples = [sft.encode_episode(codec, d["transcript"]) for d in demos]
        tuned = sft.train(model, examples, _schedule(bm, bm.sft_steps, bm.max_len), codec.pad_id, bm.seed + 1)
        log(f"SFT: {len(examples)} demonstrations (success {_rate(demos)}), loss {_ends(tuned)}")
        shutil.rmtree(tok_dir)
        record = save_checkpoint(model, tokenizer, staging, "tiny", TINY_ID)
        evaluation = evaluate(params, model, codec, pool)
    shutil.rmtree(out_dir, ignore_errors=True)
    staging.rename(out_dir)  # complete or absent: never half-written
    log(
        f"base policy on {evaluation['n_tasks']} eval tasks of split {bm.eval_split_seed}: success "
        f"greedy {evaluation['greedy']['success_rate']:.2f}, sampled {evaluation['sampled']['success_rate']:.2f}"
    )
    return {
        "profile": "tiny",
        "checkpoint": record.model_dump(mode="json"),
        "corpus": corpus,
        "pretrain": {"windows": len(windows), "loss_first": pre[:1], "loss_last": pre[-1:]},
        "sft": {
            "demonstrations": len(demos),
            "demo_success_rate": _rate(demos),
            "loss_first": tuned[:1],
            "loss_last": tuned[-1:],
        },
        "eval": evaluation,
    }


def _schedule(bm: Any, steps: int, max_len: int) -> sft.Schedule:
    return sft.Schedule(steps=steps, batch_size=bm.batch_size, lr=bm.lr, max_len=max_len)


def _corpus_stream(codec: ChatCodec, warmup_repos: Path, max_bytes: int) -> list[int]:
    """The tokenizer's corpus (never a benchmark family) as one id stream, files separated."""
    ids: list[int] = []
    for _, data in corpus_files(warmup_repos, max_bytes):
        ids += codec.encode(data.decode("utf-8", errors="replace")) + [codec.endoftext_id]
    return ids


def demonstrations(params: Params, pool: SandboxPool) -> list[dict[str, Any]]:
    """Noisy-oracle episodes on every warm-up task, graded for real (parallel per step); in
    candidates mode each episode shows its own candidate order (seeded per demonstration)."""
    bm = params.base_model
    store = TaskStore.from_params(params, "warmup")
    envs = [
        task_env(store, tid, params.env, seed=bm.seed * 1000 + k)
        for tid in sorted(store.tasks)
        for k in range(bm.demos_per_task)
    ]
    vec = VecEnv(envs, functools.partial(grade_many, pool, hidden=store.hidden))
    vec.reset()  # first: a candidates-mode demonstrator is made from its episode's board
    play_all(vec, [_demonstrator(params, env) for env in envs], reset=False)
    return [
        {"instance_id": e.task.instance_id, "transcript": e.transcript, "success": e.metrics.success}
        for e in envs
    ]


def _demonstrator(params: Params, env: RepairEnv) -> Agent:
    bm = params.base_model
    if params.env.actions == "candidates":
        k, correct = board_of(env)
        noisy = NoisyCandidateAgent(
            correct,
            k,
            seed=env.seed,
            p_wrong_edit=bm.p_wrong_edit,
            p_failed_edit=bm.p_failed_edit,
            p_repeated_test=bm.p_repeated_test,
            p_parse_error=bm.p_parse_error,
        )
        return Thoughtless(noisy) if params.rollout.calls == "constrained" else noisy
    if bm.demo_agent == "grounded":
        return GroundedAgent(seed=env.seed, order="shuffle")
    return NoisyAgent(
        env.task,
        env.buggy_tree,
        seed=env.seed,
        p_wrong_edit=bm.p_wrong_edit,
        p_failed_edit=bm.p_failed_edit,
        p_repeated_test=bm.p_repeated_test,
        p_parse_error=bm.p_parse_error,
        view_max_lines=params.env.view_max_lines,
    )


def eval_tasks(params: Params) -> tuple[TaskStore, list[str]]:
    """The eval tasks of split `base_model.eval_split_seed`, from the validated lock."""
    return TaskStore.from_params(params, "repofix"), read_split(params, params.base_model.eval_split_seed)[2]


def evaluate(params: Params, model: torch.nn.Module, codec: ChatCodec, pool: SandboxPool) -> dict[str, Any]:
    """Success of the policy on the eval tasks, greedy and sampled, with per-task outcomes."""
    store, ids = eval_tasks(params)
    engine = RolloutEngine(Qwen2Decoder(model), codec, params.rollout, call_trie(codec, params))
    out: dict[str, Any] = {"n_tasks": len(ids), "split_seed": params.base_model.eval_split_seed}
    for mode, greedy in (("greedy", True), ("sampled", False)):
        results = []
        for start in range(0, len(ids), params.rollout.batch_size):
            envs = [
                task_env(store, i, params.env, board_seed(params.base_model.eval_split_seed, start + n))
                for n, i in enumerate(ids[start : start + params.rollout.batch_size])
            ]
            trajs = engine.run(
                VecEnv(envs, functools.partial(grade_many, pool, hidden=store.hidden)),
                seed=params.base_model.seed + start,
                greedy=greedy,
            )
            results += [t.metrics for t in trajs]
        out[mode] = {"success_rate": sum(m["success"] for m in results) / len(results), "episodes": results}
    return out


def _rate(demos: list[dict[str, Any]]) -> float:
    return sum(d["success"] for d in demos) / max(1, len(demos))


def _ends(losses: list[float]) -> str:
    return f"{losses[0]:.3f} -> {losses[-1]:.3f}" if losses else "(no steps)"

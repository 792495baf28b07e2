"""One run: a method on a seed's split, trained from the base checkpoint and evaluated held-out.

Writes into `out_dir`: `report.json` (RunReport), `metrics.json` (flat, for DVC), `adapters/`
(final policy + critic), `dvclive/` (per-update curves) and `receipt.json` (what ran where).
The trainer's resumable checkpoint lives in `.pappo/checkpoints/seed_<s>/<method>/` (outside
DVC's outputs, which DVC deletes before a stage runs), keyed by a fingerprint of params, code
and checkpoint, and is removed once the run is complete.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from pappo import numerics
from pappo.config import Params
from pappo.env.protocol import tools_for
from pappo.env.vec import GradeCache, table_grader
from pappo.experiment import machine, receipt_build, usage
from pappo.experiment import receipt as rc
from pappo.experiment.report import (
    Budget,
    RunReport,
    Timing,
    UpdateEval,
    budget_limits,
    budget_used,
    flat_metrics,
    params_subset,
    run_stage,
)
from pappo.io import PappoError, atomic_write_json, canonical_json, sha256_bytes
from pappo.policy.adapters import POLICY, ActorCritic
from pappo.policy.chat import ChatCodec
from pappo.policy.checkpoint import CheckpointRecord, hash_files, read_record
from pappo.policy.decoder import Qwen2Decoder
from pappo.policy.loading import load_checkpoint
from pappo.policy.memory import Dims, refusal
from pappo.rl.collect import task_draw
from pappo.rl.distributed import Dist
from pappo.rl.evaluate import evaluate
from pappo.rl.results import EvalResult, at_point
from pappo.rl.trainer import Trainer
from pappo.sandbox.pool import default_pool
from pappo.stage_code import code_sha256, stage_code
from pappo.tasks.splits import read_split
from pappo.tasks.store import TaskStore

CHECKPOINTS = Path(".pappo/checkpoints")


def source_sha256() -> str:
    """Hash of the installed package's files the train stage's command can run (what ran;
    stage_code.py): `pappo train-seed`, whose code holds `pappo train`'s."""
    return code_sha256("train-seed")


def receipt_code(root: Path) -> list[str]:
    """What a train receipt binds: the train stage's code dependencies in dvc.yaml and the
    environment files, so a change to other stages' code leaves the run's evidence valid. Outside
    a pipeline checkout (no dvc.yaml) the whole package."""
    try:
        return stage_code(root, "train")
    except (OSError, ValueError):
        return list(rc.SOURCE_PATHS)


def run_method(
    params: Params,
    seed: int,
    method: str,
    out_dir: Path,
    base_dir: Path,
    log: Callable[[str], None] = print,
    stage: str | None = None,
) -> RunReport | None:
    """Train (unless `base`), evaluate, write the run's files and its receipt; returns the report
    (None on ranks other than 0). `stage`: what the receipt names as having run it (default: the
    seed's pipeline stage, run_stage).

    A run that fails writes `failure.json` (or failure-2.json, ...: never replaced) and re-raises;
    bad input found before any work (no split for the seed, no base checkpoint) writes nothing.
    Under a multi-process launcher (accelerate launch, torchrun) the ranks share the work and
    rank 0 alone writes; the receipt records the world size and every rank's device."""
    clock, out_dir = machine.Clock.start(), Path(out_dir)
    dist = Dist.from_env(params.model.device)
    receipt_args = dict(
        run_id=f"seed_{seed}/{method}",
        stage=stage or run_stage(seed, method),
        seed=seed,
        method=method,
        profile=params.model.profile,
        clock=clock,
        repo_root=Path.cwd(),
        source_paths=receipt_code(Path.cwd()),
        world_size=dist.world_size,
        numerics=numerics.collect(params.numerics),
    )
    devices = [str(d) for d in dist.gather(dist.device)]
    split = _preflight(params, seed, base_dir)  # outside the try: bad input is no failed run
    try:
        report = _run(params, seed, method, out_dir, base_dir, log, dist, split)
        dist.barrier()  # rank 0 has written
    except BaseException as e:
        if dist.is_main:
            _write_failure(out_dir, e, receipt_args, devices, log)
        raise
    if report is None:  # not rank 0
        return None
    inputs = rc.InputsInfo(
        manifest_lock_sha256=report.manifest_lock_sha256,
        params_sha256=report.params_sha256,
        claims_sha256=rc.claims_sha256(params),
    )
    checkpoint = rc.CheckpointInfo.from_record(report.checkpoint, report.adapters_sha256)
    receipt = receipt_build.new_receipt(
        **receipt_args, run_dir=out_dir, checkpoint=checkpoint, inputs=inputs, ranks_devices=devices
    )
    rc.write_receipt(out_dir, receipt)
    return report


def _preflight(params: Params, seed: int, base_dir: Path) -> tuple[str, list[str], list[str]]:
    """The seed's split (lock sha256, train ids, eval ids), after checking the inputs a run reads
    first, so that their errors come before any work and leave no run folder behind."""
    split = read_split(params, seed)
    read_record(Path(base_dir))
    return split


def _write_failure(
    out_dir: Path, error: BaseException, receipt_args: dict[str, Any], devices: list[str], log: Callable
) -> None:
    """Write the failure receipt of `error`; a receipt that cannot be written (an unwritable
    --out) is logged, so that the caller re-raises the run's own error, not this one."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        failure = receipt_build.new_receipt(
            **receipt_args, run_dir=out_dir, checkpoint=None, inputs=None, error=error, ranks_devices=devices
        )
        log(f"run failed; receipt in {rc.write_failure(out_dir, failure)}")
    except Exception as e:  # the run's own error matters more than its receipt's
        log(f"run failed; its failure receipt could not be written in {out_dir}: {e}")


@dataclass(frozen=True)
class _Run:
    """What one run was given and loaded, which its training and its report read; `started`, `t0`
    and `cpu0`: when it began by the wall clock, the monotonic clock and its process tree's CPU."""

    params: Params
    seed: int
    method: str
    dist: Dist
    subset: dict[str, Any]
    lock_sha: str
    train_ids: list[str]
    eval_ids: list[str]
    record: CheckpointRecord
    started: datetime
    t0: float
    cpu0: float


def _run(
    params: Params,
    seed: int,
    method: str,
    out_dir: Path,
    base_dir: Path,
    log: Callable[[str], None],
    dist: Dist,
    split: tuple[str, list[str], list[str]],
) -> RunReport | None:
    usage.reset_peak_rss()
    started, t0, cpu0 = datetime.now(UTC), time.perf_counter(), usage.tree_cpu_s()
    torch.manual_seed(seed)
    lock_sha, train_ids, eval_ids = split
    model, tokenizer, record = load_checkpoint(params.model, base_dir)
    model = place(model, params, dist)
    codec, store = (
        ChatCodec(tokenizer, tools_for(params.env.actions)),
        TaskStore.from_params(params, "repofix"),
    )
    grade_fn = run_grader(params, store)
    ac = ActorCritic(model, params.lora, params.model.logits_fp32)
    subset = params_subset(params, method)
    fingerprint = sha256_bytes(
        canonical_json([subset, source_sha256(), record.revision, method, seed]).encode()
    )

    def evaluate_now(tag: int, final: bool = True) -> EvalResult:
        with ac.adapter(POLICY):
            decoder = Qwen2Decoder(ac.peft, params.model.logits_fp32, not params.rollout.enforce_eager)
        return evaluate(decoder, codec, at_point(params, final), store, eval_ids, grade_fn, seed, tag, dist)

    run = _Run(params, seed, method, dist, subset, lock_sha, train_ids, eval_ids, record, started, t0, cpu0)
    history: list[dict[str, Any]] = []
    if method == "base":
        evals = [UpdateEval(update=0, result=evaluate_now(0))]
    else:
        history, evals = _train(run, ac, codec, store, grade_fn, fingerprint, log, evaluate_now)
    return _finish(run, out_dir, ac, history, evals)


def _train(
    run: _Run,
    ac: ActorCritic,
    codec: ChatCodec,
    store: TaskStore,
    grade_fn: GradeCache,
    fingerprint: str,
    log: Callable[[str], None],
    evaluate_now: Callable[..., EvalResult],
) -> tuple[list[dict[str, Any]], list[UpdateEval]]:
    """Train a method, evaluating after the configured updates: (per-update history, evaluations)."""
    params, seed, method = run.params, run.seed, run.method
    work = CHECKPOINTS / f"seed_{seed}" / method
    trainer = Trainer(method, params, ac, codec, store, run.train_ids, grade_fn, work, seed, run.dist)
    trainer.fingerprint, trainer.log = fingerprint, log

    def after_update(done: int, rec: dict[str, Any]) -> None:
        if done == params.rl.updates or (params.eval.every and done % params.eval.every == 0):
            start = time.perf_counter()
            result = evaluate_now(done, final=done == params.rl.updates)
            rec["eval"] = UpdateEval(update=done, result=result).model_dump(mode="json")
            rec["wall_s"]["eval"] = time.perf_counter() - start
        log(_progress(method, seed, done, params.rl.updates, rec))

    with _progress_bar(f"{method} seed {seed}", params.rl.updates) as advance:

        def after_update_bar(done: int, rec: dict[str, Any]) -> None:
            after_update(done, rec)
            advance(done, int(rec["rollout"]["episodes"]))

        trainer.on_update = after_update_bar
        history = trainer.run()
    evals = [UpdateEval.model_validate(h.pop("eval")) for h in history if "eval" in h]
    return history, evals


def _finish(
    run: _Run, out_dir: Path, ac: ActorCritic, history: list[dict[str, Any]], evals: list[UpdateEval]
) -> RunReport | None:
    """Check the budget, then on rank 0 write the adapters, report and metrics (None elsewhere)."""
    params, seed, method, subset = run.params, run.seed, run.method, run.subset
    budget = _budget(params, method, seed, history, evals)
    out_dir = Path(out_dir)
    if not run.dist.is_main:
        return None  # rank 0 writes
    _replace_dir(out_dir / "adapters", ac.save)  # base: the untrained adapters (the identity)
    adapters = hash_files(out_dir / "adapters")
    ended = datetime.now(UTC)
    report = RunReport(
        method=method,
        seed=seed,
        profile=params.model.profile,
        device=run.dist.device.type,
        params=subset,
        params_sha256=sha256_bytes(canonical_json(subset).encode()),
        source_sha256=source_sha256(),
        manifest_lock_sha256=run.lock_sha,
        train_tasks=len(run.train_ids),
        eval_instance_ids=sorted(run.eval_ids),
        checkpoint=run.record,
        budget=budget,
        updates=history,
        evals=evals,
        final_eval=evals[-1].result,
        adapters_sha256=adapters,
        timing=Timing(
            started=run.started.isoformat(),
            ended=ended.isoformat(),
            wall_s=time.perf_counter() - run.t0,
            cpu_s=usage.tree_cpu_s() - run.cpu0,
            peak_rss_mib=usage.peak_rss_mib(),
        ),
    )
    _write(out_dir, report)
    if method != "base":
        shutil.rmtree(CHECKPOINTS / f"seed_{seed}" / method, ignore_errors=True)
    return report


def run_grader(params: Params, store: TaskStore) -> GradeCache:
    """The sandbox grader of one run, training and evaluation alike: each distinct tree of a task
    is graded once per run (`env/vec.py`), and not at all when validate's grade table has it."""
    return table_grader(params, default_pool(params.sandbox), store.hidden)


def place(model: torch.nn.Module, params: Params, dist: Dist) -> torch.nn.Module:
    """The loaded model on this rank's device, with gradient checkpointing if configured (which
    acts in train mode only; params forbid LoRA dropout with it, so train mode changes nothing else).
    On a GPU, a configuration predicted not to fit its memory is refused before anything is moved."""
    if dist.device.type == "cuda":
        total = torch.cuda.get_device_properties(dist.device).total_memory
        too_big = refusal(params, Dims.from_config(model.config), total)
        if too_big:
            raise PappoError(f"params.yaml: {too_big}")
    model = model.to(dist.device)
    if params.model.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
    return model


def _budget(
    params: Params, method: str, seed: int, history: list[dict[str, Any]], evals: list[UpdateEval]
) -> Budget:
    """The seed's common budget and this run's use; a run over it fails here, before writing."""
    episodes, tokens = budget_limits(params, method)
    draws = [task_draw(params, seed, u) for u in range(params.rl.updates)] if episodes else []
    try:
        return Budget(
            episodes_limit=episodes,
            generated_tokens_limit=tokens,
            task_draws_sha256=sha256_bytes(canonical_json(draws).encode()),
            **budget_used(history, evals),
        )
    except ValueError as e:
        raise PappoError(f"{method} seed {seed}: {e}; nothing written") from None


def _write(out_dir: Path, report: RunReport) -> None:
    data = report.model_dump(mode="json")
    atomic_write_json(out_dir / "report.json", data)
    atomic_write_json(out_dir / "metrics.json", flat_metrics(report))
    write_curves(out_dir / "dvclive", report)


def write_curves(folder: Path, report: RunReport) -> None:
    """Per-update held-out curves and training means through dvclive (no dvc.yaml edits)."""
    from dvclive import Live

    shutil.rmtree(folder, ignore_errors=True)
    with Live(dir=str(folder), dvcyaml=False, save_dvc_exp=False, report=None) as live:
        evals = {e.update: e.result for e in report.evals}
        trained = {int(h["update"]) + 1: h for h in report.updates}
        for step in sorted(set(evals) | set(trained)):
            live.step = step
            if step in trained:
                h = trained[step]
                live.log_metric("train/success", float(h["rollout"]["success"]))
                for key in ("actor/pg_clipfrac", "actor/ppo_kl", "critic/vf_explained_var"):
                    values = [s[key] for s in h.get("steps", []) if key in s]
                    if values:
                        live.log_metric(key, sum(values) / len(values))
            if step in evals:
                live.log_metric("eval/success", evals[step].success.mean)
                live.log_metric("eval/pass_at_k", evals[step].pass_at_k.mean)


@contextmanager
def _progress_bar(label: str, total: int) -> Iterator[Callable[[int, int], None]]:
    """A rich bar (update, episodes, ETA) on a terminal; nothing when stderr is not one (DVC logs)."""
    if not sys.stderr.isatty():
        yield lambda done, episodes: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("updates, {task.fields[episodes]} episodes"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task(label, total=total, episodes=0)
        seen = 0

        def advance(done: int, episodes: int) -> None:
            nonlocal seen
            seen += episodes
            bar.update(task, completed=done, episodes=seen)

        yield advance


def _replace_dir(folder: Path, save: Callable[[Path], None]) -> None:
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    save(tmp)
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)


def _progress(method: str, seed: int, done: int, total: int, rec: dict[str, Any]) -> str:
    r = rec["rollout"]
    held = rec.get("eval", {}).get("result", {}).get("success", {}).get("mean")
    tail = f", held-out success {held:.2f}" if held is not None else ""
    return (
        f"{method} seed {seed}: update {done}/{total}: {r['episodes']} episodes, train success "
        f"{r['success']:.2f}, {r['tokens']} tokens{tail}"
    )

"""params.yaml's data sections: the task sets and their split, bug synthesis, the sandbox's limits
and `pappo validate`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from pappo.config.section import Section


class TaskSetParams(Section):
    """One task set: where its manifest, lock and family repositories live."""

    manifest: Path = Field(description="JSONL manifest, one task per line (committed).")
    lock: Path = Field(description="Lock file written by `pappo validate` (DVC output).")
    repos: Path = Field(description="Folder holding one sub-folder per family.")


class TasksParams(Section):
    """The benchmark (`repofix`) and warm-up task sets and how the benchmark is split."""

    repofix: TaskSetParams = Field(description="Benchmark task set (RepoFix-100).")
    warmup: TaskSetParams = Field(description="Warm-up task set, never part of the benchmark.")
    n_train_families: int = Field(14, ge=1, description="Families in the train split, per seed.")
    n_eval_families: int = Field(6, ge=1, description="Families held out for evaluation, per seed.")
    tasks_per_family: int = Field(5, ge=1, description="Tasks synthesised and expected per family.")


class SynthesisParams(Section):
    """`pappo synthesize`: how bugs are searched for (its outputs are committed)."""

    seed: int = Field(0, description="Seed of the candidate order and of task selection.")
    max_candidates: int = Field(40, ge=5, description="Mutants evaluated per family before selection.")
    min_operator_kinds: int = Field(3, ge=1, description="Distinct operators required per family.")
    max_fail_fraction: float = Field(
        0.6, gt=0, le=1, description="Reject mutants failing more than this share of tests."
    )


class SandboxParams(Section):
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


class ValidateParams(Section):
    """`pappo validate`: how strictly each task is checked."""

    repeats: int = Field(2, ge=2, description="Runs per check; outcomes must agree (flakiness).")

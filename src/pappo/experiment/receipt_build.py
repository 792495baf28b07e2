"""Builds a run's receipt at its end: the source, outputs, machine and timing collected, and the
error of a failure sanitised.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pappo.experiment.machine import (
    Clock,
    collect_determinism,
    collect_hardware,
    collect_resources,
    collect_software,
)
from pappo.experiment.privacy import sanitise
from pappo.experiment.receipt import (
    CheckpointInfo,
    InputsInfo,
    OutputsInfo,
    Receipt,
    collect_source,
    hash_outputs,
)
from pappo.numerics import NumericsInfo


def new_receipt(
    *,
    run_id: str,
    stage: str,
    seed: int,
    method: str,
    profile: Literal["tiny", "hub"],
    run_dir: Path,
    clock: Clock,
    repo_root: Path,
    source_paths: Sequence[str],
    checkpoint: CheckpointInfo | None,
    inputs: InputsInfo | None,
    numerics: NumericsInfo,
    error: BaseException | str | None = None,
    world_size: int = 1,
    ranks_devices: Sequence[str] | None = None,
    device_s: float | None = None,
) -> Receipt:
    """Collect everything and build a receipt: a failure when `error` is given (sanitised here)."""
    hardware = collect_hardware()
    if isinstance(error, BaseException):
        error = f"{type(error).__name__}: {error}"
    devices = (
        list(ranks_devices)
        if ranks_devices is not None
        else ["cuda:0" if hardware.accelerator == "cuda" else "cpu"] * world_size
    )
    return Receipt(
        run_id=run_id,
        stage=stage,
        seed=seed,
        method=method,
        profile=profile,
        status="failure" if error else "success",
        error=sanitise(error, repo_root)[:4000] if error else None,
        source=collect_source(repo_root, source_paths),
        checkpoint=checkpoint,
        inputs=inputs,
        outputs=OutputsInfo(files=hash_outputs(run_dir)),
        hardware=hardware,
        software=collect_software(),
        timing=clock.stop(device_s),
        resources=collect_resources(),
        determinism=collect_determinism(seed, numerics),
        world_size=world_size,
        ranks_devices=devices,
    )

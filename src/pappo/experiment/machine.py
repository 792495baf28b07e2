"""What the machine and software of a run are: hardware, library versions, determinism settings,
peak memory and the run's clock, each as the receipt records it.

torch is imported inside the collectors so importing this module stays cheap.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import resource
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pappo.experiment.receipt import (
    DeterminismInfo,
    HardwareInfo,
    ResourceInfo,
    SoftwareInfo,
    TimingInfo,
)
from pappo.numerics import NumericsInfo


def _driver_version() -> str | None:
    try:
        from torch.utils import collect_env

        return collect_env.get_nvidia_driver_version(collect_env.run)
    except Exception:  # a missing nvidia-smi only leaves the field empty
        return None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    return platform.processor() or None


def collect_hardware() -> HardwareInfo:
    import psutil
    import torch

    cuda = torch.cuda.is_available()
    props = torch.cuda.get_device_properties(0) if cuda else None
    return HardwareInfo(
        accelerator="cuda" if cuda else "cpu",
        accelerator_model_name=props.name if props else None,
        accelerators_per_node=torch.cuda.device_count() if cuda else 0,
        accelerator_memory_capacity_gb=round(props.total_memory / 2**30, 2) if props else None,
        nvidia_driver_version=_driver_version() if cuda else None,
        cuda_runtime_version=torch.version.cuda if cuda else None,
        cudnn_version=str(torch.backends.cudnn.version())
        if cuda and torch.backends.cudnn.is_available()
        else None,
        host_processor_model_name=_cpu_model(),
        host_processor_core_count=os.cpu_count() or 1,
        host_memory_capacity_gb=round(psutil.virtual_memory().total / 2**30, 2),
    )


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def collect_software() -> SoftwareInfo:
    return SoftwareInfo(
        python=platform.python_version(),
        torch=_version("torch"),
        transformers=_version("transformers"),
        peft=_version("peft"),
        dvc=_version("dvc"),
        os=f"{platform.system()} {platform.release()}",
    )


def collect_determinism(seed: int, numerics: NumericsInfo) -> DeterminismInfo:
    import torch

    return DeterminismInfo(
        torch_deterministic_algorithms=torch.are_deterministic_algorithms_enabled(),
        cudnn_deterministic=bool(torch.backends.cudnn.deterministic),
        cudnn_benchmark=bool(torch.backends.cudnn.benchmark),
        num_threads=torch.get_num_threads(),
        seed=seed,
        numerics=numerics,
    )


def collect_resources() -> ResourceInfo:
    import torch

    unit = 2**20 if sys.platform == "darwin" else 2**10  # ru_maxrss: bytes on macOS, KiB on Linux
    peak = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    )
    device = torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else None
    return ResourceInfo(peak_rss_mb=round(peak / unit, 1), peak_device_memory_mb=device)


@dataclass(frozen=True)
class Clock:
    """`Clock.start()` at the beginning of a run, `.stop()` at the end: a TimingInfo."""

    started: datetime
    t0: float

    @classmethod
    def start(cls) -> Clock:
        return cls(datetime.now(UTC), time.perf_counter())

    def stop(self, device_s: float | None = None) -> TimingInfo:
        wall = time.perf_counter() - self.t0
        return TimingInfo(
            started=self.started.isoformat(),
            ended=datetime.now(UTC).isoformat(),
            wall_s=wall,
            device_s=device_s,
        )

"""Shared fixtures: the small fixture task sets under tests/fixtures and fast sandbox limits."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import settings

# libgomp (torch's OpenMP) spins idle threads; two xdist workers and their stage subprocesses on
# two cores spin against each other. Sleeping waits change no result (docs/numerics.md).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before anything loads torch; subprocesses inherit it

from pappo.config import Params
from pappo.sandbox.isolation import unavailable

# No test is timed (speed is measured in benchmarks/): hypothesis's per-example deadline would fail a
# property on a loaded machine, so it is off for the whole suite.
settings.register_profile("pappo", deadline=None)
settings.load_profile("pappo")

NS_MISSING = unavailable()  # None where Linux namespaces work (root with CAP_SYS_ADMIN)
needs_namespaces = pytest.mark.skipif(
    NS_MISSING is not None, reason=f"no namespace isolation here: {NS_MISSING}"
)

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
UNPRIVILEGED_UID = 1001  # an ordinary account, as a researcher's; it needs no passwd entry
# Handed out first to pytest.ini's two workers: the dvc smoke test is most of the suite's time.
# test_reviewer_path.py is not among them: it waits for the fixture pipeline that the smoke test
# builds (test_dvc_smoke.built_pipeline), so it comes in collection order, after the build.
LONGEST_FIRST = ("test_dvc_smoke.py", "test_rl_learns.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest files first (a stable sort: the order within a file is kept)."""
    first = {name: rank for rank, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: first.get(item.path.name, len(first)))


def as_user(
    home: Path,
    args: list[str],
    *,
    no_userns: bool = False,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """Run `python ARGS` as UNPRIVILEGED_UID with HOME=home (pappo.sandbox.as_user; needs root)."""
    cmd = [
        sys.executable,
        "-m",
        "pappo.sandbox.as_user",
        "--uid",
        str(UNPRIVILEGED_UID),
        "--home",
        str(home),
        "--keep",
        str(ROOT),
        *(["--no-userns"] if no_userns else []),
        "--",
        sys.executable,
        *args,
    ]
    full_env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    return subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout, check=False)


@pytest.fixture
def unprivileged_home() -> Iterator[Path]:
    """A HOME owned by UNPRIVILEGED_UID outside /tmp (as a real home is), removed afterwards."""
    if os.geteuid() != 0:
        pytest.skip(f"switching to uid {UNPRIVILEGED_UID} needs root; this suite runs as uid {os.geteuid()}")
    home = Path(tempfile.mkdtemp(prefix="zzhome-", dir="/home" if os.path.isdir("/home") else None))
    os.chown(home, UNPRIVILEGED_UID, UNPRIVILEGED_UID)
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(autouse=True, scope="session")
def _grading_without_namespaces() -> Iterator[None]:
    """Where namespaces are impossible, `isolation: auto` fails closed. Tests that grade only the
    suite's own trusted fixtures then run with isolation=rlimits; tests of containment are marked
    `needs_namespaces` and skip, saying why."""
    if NS_MISSING is None:
        yield
        return
    from pappo.sandbox import pool, worker

    original = worker.Worker.__init__

    def explicit_rlimits(self: worker.Worker, limits: Params) -> None:
        original(
            self, limits.model_copy(update={"isolation": "rlimits"}) if limits.isolation == "auto" else limits
        )

    worker.Worker.__init__ = explicit_rlimits
    saved, pool.containment_problem = pool.containment_problem, lambda limits: None
    try:
        yield
    finally:
        worker.Worker.__init__, pool.containment_problem = original, saved


def cpu_hardware(memory_gb: float) -> Any:
    """A receipt's hardware block for a 2-core CPU run with `memory_gb` of RAM, no accelerator."""
    from pappo.experiment.receipt import HardwareInfo

    return HardwareInfo(
        accelerator="cpu",
        accelerator_model_name=None,
        accelerators_per_node=0,
        accelerator_memory_capacity_gb=None,
        nvidia_driver_version=None,
        cuda_runtime_version=None,
        cudnn_version=None,
        host_processor_model_name=None,
        host_processor_core_count=2,
        host_memory_capacity_gb=memory_gb,
    )


def fixture_params_raw() -> dict:
    """tests/fixtures/params.yaml as data; where namespaces are impossible its sandbox asks for
    rlimits explicitly, so commands run in subprocesses do not stop at the fail-closed error."""
    raw = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    if NS_MISSING is not None:
        raw.setdefault("sandbox", {})["isolation"] = "rlimits"
    return raw


def marked_processes(marker: str) -> list[int]:
    """Live processes whose command line or name (/proc/PID/comm, which a forked daemon can set
    without starting a program) contains `marker` (zombies have no command line)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if cmdline and (
                marker.encode() in cmdline or marker[:15] in Path(f"/proc/{pid}/comm").read_text()
            ):
                found.append(int(pid))
        except OSError:
            pass
    return found


def fixture_params(tmp_path: Path, copy_data: bool = False) -> Params:
    """Fixture params with absolute paths and lock files under tmp_path.

    With copy_data, manifests and repos are copied into tmp_path so a test may corrupt them.
    """
    raw = fixture_params_raw()
    for name in ("repofix", "warmup"):
        section = raw["tasks"][name]
        base = FIXTURES / name
        if copy_data:
            shutil.copytree(base, tmp_path / name, ignore=shutil.ignore_patterns("*.lock.json"))
            base = tmp_path / name
        section["manifest"] = str(base / "manifest.jsonl")
        section["repos"] = str(base / "repos")
        section["lock"] = str(tmp_path / f"{name}.lock.json")
    return Params.model_validate(raw)


def write_params(params: Params, path: Path) -> Path:
    path.write_text(yaml.safe_dump(params.model_dump(mode="json", by_alias=True), sort_keys=False))
    return path


@pytest.fixture
def fx_params(tmp_path: Path) -> Params:
    return fixture_params(tmp_path)


def load_benchmark(name: str):
    """benchmarks/<name>.py as a module (the benchmarks are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

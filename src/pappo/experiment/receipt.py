"""Run receipts: what ran, from which source and inputs, on which machine, and what it produced.

A success writes `receipt.json` into the run folder; a failure writes `failure.json` (never
overwritten: later ones are `failure-2.json`, `failure-3.json`, ...). Typical use: `clock =
machine.Clock.start()` before the run; after it (or in an `except`) `receipt_build.new_receipt(...,
clock=clock, error=exc_or_None)` then `write_receipt` / `write_failure`; the audit runs
`verify_receipt` and `privacy.leaks`.

A receipt names no host, user, home folder or absolute path (`privacy.leaks` checks;
`privacy.sanitise` scrubs error text); the machine's collectors live in `machine`.
Capacities in `*_gb` / `*_mb` fields are binary units (GiB = 2**30 bytes, MiB = 2**20 bytes).
"""

from __future__ import annotations

import contextlib
import fnmatch
import itertools
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, model_validator

from pappo.experiment.privacy import sanitise
from pappo.io import atomic_write_json, canonical_json, git, sha256_bytes, sha256_file
from pappo.numerics import NumericsInfo

if TYPE_CHECKING:
    from pappo.config import Params

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
SOURCE_PATHS = (
    "src/pappo",
    "dvc.yaml",
    "pyproject.toml",
    "requirements.lock",
)  # the pipeline code a receipt binds
OUTPUT_EXCLUDE = (
    "receipt.json",
    "failure.json",
    "failure-*.json",
    ".*.tmp",
    ".gitignore",
    "*/.gitignore",
)  # DVC writes .gitignore files after the run (fnmatch: * spans /)


def _relative(path: str) -> str:
    parts = path.split("/")
    if not path or path.startswith("/") or "\\" in path or ".." in parts or "" in parts:
        raise ValueError(f"{path!r} is not a relative posix path inside the folder")
    return path


RelPath = Annotated[str, AfterValidator(_relative)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())


class SourceInfo(_Model):
    git_commit: str | None = Field(
        pattern=r"^[0-9a-f]{40}$",
        description="HEAD commit; None outside a git work tree or before the first commit.",
    )
    git_dirty: bool = Field(
        description="Tracked files differ from HEAD (`git status --porcelain --untracked-files=no`); True whenever git_commit is None (clean cannot be shown)."
    )
    tree_sha256: Sha256 = Field(
        description="sha256 of the canonical JSON {path: sha256(bytes on disk)} of the tracked files under source_paths (`git ls-files`); outside git, every file under them except __pycache__."
    )
    source_paths: list[RelPath] = Field(description="The repo-relative paths hashed (files or folders).")


class CheckpointInfo(_Model):
    model_id: str = Field(description="Hub repository id, or the tiny model's id.")
    revision: str = Field(description="Hub commit, or the content revision of a saved folder.")
    files: dict[RelPath, Sha256] = Field(
        description="sha256 of every weight, config and tokenizer file of the base checkpoint."
    )
    adapters: dict[RelPath, Sha256] = Field(
        description="sha256 of every adapter file the run produced, relative to run_dir/adapters."
    )

    @classmethod
    def from_record(cls, record: Any, adapters: dict[str, str]) -> CheckpointInfo:
        """From a `pappo.policy.checkpoint.CheckpointRecord` and `hash_files(run_dir / 'adapters')`."""
        return cls(
            model_id=record.model_id, revision=record.revision, files=dict(record.files), adapters=adapters
        )


class InputsInfo(_Model):
    manifest_lock_sha256: Sha256 = Field(description="sha256 of the task manifest lock file.")
    params_sha256: Sha256 = Field(
        description="sha256 of the canonical JSON of the params subset the run depends on."
    )
    claims_sha256: Sha256 | None = Field(
        description="sha256 of the canonical JSON of the claims block; None if there is none."
    )


class OutputsInfo(_Model):
    files: dict[RelPath, Sha256] = Field(
        description="sha256 of every file in the run folder (report.json, metrics.json, adapters/, dvclive/, ...) except receipt.json and failure*.json."
    )


class HardwareInfo(_Model):
    accelerator: Literal["cpu", "cuda"] = Field(description="Device kind the run used.")
    accelerator_model_name: str | None = Field(
        description="e.g. 'NVIDIA H200' (torch.cuda.get_device_name(0)); None on CPU."
    )
    accelerators_per_node: int = Field(ge=0, description="Visible CUDA devices (0 on CPU).")
    accelerator_memory_capacity_gb: float | None = Field(
        description="Device 0 total memory in GiB; None on CPU."
    )
    nvidia_driver_version: str | None = Field(
        description="From nvidia-smi or /proc/driver/nvidia/version; None on CPU."
    )
    cuda_runtime_version: str | None = Field(
        description="torch.version.cuda (the runtime torch was built with); None on CPU."
    )
    cudnn_version: str | None = Field(description="torch.backends.cudnn.version(); None on CPU.")
    host_processor_model_name: str | None = Field(
        description="/proc/cpuinfo 'model name', else platform.processor()."
    )
    host_processor_core_count: int = Field(ge=1, description="os.cpu_count(): logical CPUs.")
    host_memory_capacity_gb: float = Field(gt=0, description="psutil.virtual_memory().total in GiB.")


class SoftwareInfo(_Model):
    python: str = Field(description="platform.python_version().")
    torch: str | None = Field(
        description="Installed distribution version (importlib.metadata); None if absent."
    )
    transformers: str | None = Field(description="Installed version; None if absent.")
    peft: str | None = Field(description="Installed version; None if absent.")
    dvc: str | None = Field(description="Installed version; None if absent.")
    os: str = Field(description="platform.system() and platform.release() only (no host name).")


class TimingInfo(_Model):
    started: str = Field(description="UTC, ISO 8601.")
    ended: str = Field(description="UTC, ISO 8601.")
    wall_s: float = Field(ge=0, description="Monotonic wall-clock seconds from start to end.")
    device_s: float | None = Field(description="CUDA time in seconds if measured, else None.")

    @model_validator(mode="after")
    def _utc(self) -> TimingInfo:
        for name in ("started", "ended"):
            if datetime.fromisoformat(getattr(self, name)).utcoffset() != UTC.utcoffset(None):
                raise ValueError(
                    f"timing.{name} must be an ISO 8601 time in UTC, got {getattr(self, name)!r}"
                )
        return self


class ResourceInfo(_Model):
    peak_rss_mb: float = Field(
        ge=0,
        description="MiB: the larger of getrusage(RUSAGE_SELF).ru_maxrss and getrusage(RUSAGE_CHILDREN).ru_maxrss (the largest waited-for child), not their sum.",
    )
    peak_device_memory_mb: float | None = Field(
        description="MiB: torch.cuda.max_memory_allocated() of the current device; None on CPU."
    )


class DeterminismInfo(_Model):
    torch_deterministic_algorithms: bool = Field(description="torch.are_deterministic_algorithms_enabled().")
    cudnn_deterministic: bool = Field(description="torch.backends.cudnn.deterministic.")
    cudnn_benchmark: bool = Field(description="torch.backends.cudnn.benchmark.")
    num_threads: int = Field(ge=1, description="torch.get_num_threads().")
    seed: int = Field(description="The seed the run set.")
    numerics: NumericsInfo = Field(
        description="CPU numerics pinned and in force, with their fingerprint (src/pappo/numerics.py)."
    )


class Receipt(_Model):
    """One run's receipt; a success needs checkpoint and inputs, a failure needs an error."""

    schema_version: Literal[1] = Field(1, description="Receipt format version.")
    run_id: str = Field(description="e.g. 'seed_0/pappo'.")
    stage: str = Field(description="The DVC stage (or command) that ran.")
    seed: int = Field(description="Run seed.")
    method: str = Field(description="base, rft, grpo, ppo or pappo.")
    profile: Literal["tiny", "hub"] = Field(description="Model profile.")
    status: Literal["success", "failure"] = Field(description="Whether the run completed.")
    error: str | None = Field(None, description="Sanitised error message of a failure; None on success.")
    source: SourceInfo = Field(description="The code that ran.")
    checkpoint: CheckpointInfo | None = Field(
        description="Base weights and produced adapters; None only for a failure before they existed."
    )
    inputs: InputsInfo | None = Field(
        description="Input hashes; None only for a failure before they were read."
    )
    outputs: OutputsInfo = Field(description="Files the run wrote.")
    hardware: HardwareInfo = Field(description="The machine.")
    software: SoftwareInfo = Field(description="Library versions.")
    timing: TimingInfo = Field(description="When and how long.")
    resources: ResourceInfo = Field(description="Peak memory.")
    determinism: DeterminismInfo = Field(description="Determinism settings in force.")
    world_size: int = Field(1, ge=1, description="Processes in the run.")
    ranks_devices: list[str] = Field(
        description="Device of each rank, e.g. ['cpu'] or ['cuda:0']; one per rank."
    )

    @model_validator(mode="after")
    def _consistent(self) -> Receipt:
        if len(self.ranks_devices) != self.world_size:
            raise ValueError(
                f"ranks_devices has {len(self.ranks_devices)} entries, world_size is {self.world_size}"
            )
        if self.status == "failure" and not self.error:
            raise ValueError("a failure receipt needs an error message")
        if self.status == "success" and (
            self.error is not None or self.checkpoint is None or self.inputs is None
        ):
            raise ValueError("a success receipt has no error and needs checkpoint and inputs")
        return self


# --------------------------------------------------------------------------------- collectors
def collect_source(repo_root: Path, paths: Sequence[str]) -> SourceInfo:
    """Commit, dirtiness and on-disk hash of the tracked files under `paths` (relative to repo_root).

    Outside a git work tree (or without git) the commit is None, dirty is True (cleanliness cannot
    be shown) and every file under `paths` (bar __pycache__) is hashed.
    """
    repo_root, paths = Path(repo_root), [_relative(Path(p).as_posix()) for p in paths]
    if not paths:
        raise ValueError("collect_source needs at least one source path")
    try:
        inside = git(repo_root, "rev-parse", "--is-inside-work-tree").stdout.strip() == b"true"
    except FileNotFoundError:
        inside = False
    if inside:
        head = git(repo_root, "rev-parse", "--verify", "-q", "HEAD^{commit}")
        commit = head.stdout.decode().strip() if head.returncode == 0 else None
        # Only the source paths: a pipeline run rewrites its own committed outputs meanwhile. A new
        # untracked file there is dirt too (it could be imported yet is not in the tree hash).
        status = git(repo_root, "status", "--porcelain", "--untracked-files=normal", "--", *paths)
        dirty = commit is None or status.returncode != 0 or bool(status.stdout.strip())
        listed = git(repo_root, "ls-files", "-z", "--", *paths)
        if listed.returncode != 0:
            raise RuntimeError(f"git ls-files failed: {sanitise(listed.stderr.decode(), repo_root)}")
        files = [f for f in listed.stdout.decode().split("\0") if f]
    else:
        commit, dirty = None, True
        files = [
            p.relative_to(repo_root).as_posix()
            for base in paths
            for p in (repo_root / base).rglob("*")
            if "__pycache__" not in p.parts
        ] + [p for p in paths if (repo_root / p).is_file()]
    listing = {f: sha256_file(repo_root / f) for f in sorted(set(files)) if (repo_root / f).is_file()}
    if not listing:
        raise ValueError(f"no {'tracked ' if inside else ''}files under {paths} in the repository")
    return SourceInfo(
        git_commit=commit, git_dirty=dirty, tree_sha256=listing_sha256(listing), source_paths=paths
    )


def listing_sha256(listing: dict[str, str]) -> str:
    """`tree_sha256` of a {relative path: sha256 of the file's bytes} listing (order-independent)."""
    return sha256_json(listing)


def sha256_json(obj: Any) -> str:
    """sha256 of the canonical JSON of `obj` (params subset, claims block)."""
    return sha256_bytes(canonical_json(obj).encode())


def claims_sha256(params: Params) -> str:
    """Hash of the pre-registered claims: receipts record it, so a claim edited later shows."""
    return sha256_bytes(canonical_json([c.model_dump(mode="json") for c in params.claims]).encode())


def hash_outputs(run_dir: Path, exclude: Sequence[str] = OUTPUT_EXCLUDE) -> dict[str, str]:
    """sha256 of every file under run_dir by relative posix path, bar those matching an `exclude` glob."""
    run_dir, out = Path(run_dir), {}
    for path in sorted(run_dir.rglob("*")):
        rel = path.relative_to(run_dir).as_posix()
        if path.is_file() and not _excluded(rel, exclude):
            out[rel] = sha256_file(path)
    return out


def _excluded(rel: str, exclude: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(rel, glob) for glob in exclude)


# -------------------------------------------------------------------------------- write/check
def _validated(receipt: Receipt, status: str) -> dict[str, Any]:
    data = Receipt.model_validate(receipt.model_dump()).model_dump(mode="json")
    if data["status"] != status:
        raise ValueError(f"receipt status is {data['status']!r}; this writer takes {status!r} receipts")
    return data


def write_receipt(run_dir: Path, receipt: Receipt) -> Path:
    """Validate, then write run_dir/receipt.json atomically; failure files are left alone."""
    path = Path(run_dir) / "receipt.json"
    atomic_write_json(path, _validated(receipt, "success"))
    return path


def write_failure(run_dir: Path, receipt: Receipt) -> Path:
    """Write failure.json, or failure-2.json, -3.json, ... : an existing file is never replaced.

    The content is written to a temp file, then hard-linked to the first free name: atomic, and
    unlike a rename the link fails when the name is taken.
    """
    folder, data = Path(run_dir), _validated(receipt, "failure")
    tmp = folder / f".failure.{os.getpid()}.tmp"
    atomic_write_json(tmp, data)
    try:
        for n in itertools.count(1):
            path = folder / ("failure.json" if n == 1 else f"failure-{n}.json")
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
                return path
    finally:
        tmp.unlink(missing_ok=True)
    raise AssertionError("unreachable")


def verify_receipt(run_dir: Path, receipt: Receipt) -> list[str]:
    """Re-hash the run folder's files against its receipt (`check_receipt`)."""
    return check_receipt(receipt, hash_outputs(run_dir, exclude=()))


def check_receipt(receipt: Receipt, found: dict[str, str]) -> list[str]:
    """The receipt against `found`, the sha256 of every file in its run folder by relative posix
    path (from disk, or from a bundle's entries: evidence/bundle_check.py); one message per
    missing, changed or unlisted file."""
    problems = []
    adapters = receipt.checkpoint.adapters if receipt.checkpoint else {}
    for field, prefix, files in (
        ("outputs.files", "", receipt.outputs.files),
        ("checkpoint.adapters", "adapters/", adapters),
    ):
        for rel, expected in sorted(files.items()):
            shown = prefix + rel
            if (sha := found.get(shown)) is None:
                problems.append(f"{field}[{rel!r}]: {shown} is missing (expected sha256 {expected})")
            elif sha != expected:
                problems.append(f"{field}[{rel!r}]: {shown} has sha256 {sha}, expected {expected}")
    outputs = {rel for rel in found if not _excluded(rel, OUTPUT_EXCLUDE)}
    for rel in sorted(outputs - set(receipt.outputs.files)):
        problems.append(f"outputs.files: {rel} is in the run folder but not in the receipt")
    return problems

"""Run receipts: source/hardware/software collectors, privacy (sanitise, leaks), never-overwritten
failure files, and re-verification of the hashes a receipt lists."""

from __future__ import annotations

import getpass
import json
import re
import socket
import subprocess
from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from pappo.config.evidence import NumericsParams
from pappo.experiment import receipt as rc
from pappo.experiment.machine import (
    Clock,
    collect_determinism,
    collect_hardware,
    collect_resources,
    collect_software,
)
from pappo.experiment.privacy import leaks, sanitise
from pappo.experiment.receipt import (
    CheckpointInfo,
    InputsInfo,
    Receipt,
    collect_source,
    hash_outputs,
    verify_receipt,
    write_failure,
    write_receipt,
)
from pappo.experiment.receipt_build import new_receipt
from pappo.io import sha256_bytes, sha256_file
from pappo.numerics import NumericsInfo, requested_env
from pappo.policy.checkpoint import hash_files

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
H = "ab" * 32


@pytest.fixture(autouse=True)
def _no_outer_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git must not find a repository above tmp_path."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def git(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "a.py").write_text("A = 1\n")
    (root / "src" / "pkg" / "b.py").write_text("B = 2\n")
    (root / "README.md").write_text("readme\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    return root


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    out = tmp_path / "runs" / "seed_0" / "pappo"
    files = {
        "report.json": b'{"seed": 0}\n',
        "metrics.json": b'{"success": 0.5}\n',
        "adapters/policy/adapter_model.safetensors": b"\x00weights\x01",
        "adapters/critic/value_head.pt": b"vh",
        "dvclive/metrics.json": b"{}",
    }
    for rel, data in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    return out


NUMERICS = NumericsInfo(
    pinned=True,
    requested=requested_env(NumericsParams()),
    cpu_capability="AVX2",
    mkl_branch="COMPATIBLE,STRICT",
    threads=2,
    deterministic_algorithms=True,
    fingerprint="0" * 16,
)


def make(run_dir: Path, repo: Path, error: BaseException | str | None = None) -> Receipt:
    checkpoint = CheckpointInfo(
        model_id="pappo/tiny-qwen2",
        revision="r" * 40,
        files={"model.safetensors": H},
        adapters=hash_files(run_dir / "adapters"),
    )
    inputs = InputsInfo(
        manifest_lock_sha256=H, params_sha256=rc.sha256_json({"rl": {"updates": 2}}), claims_sha256=None
    )
    return new_receipt(
        run_id="seed_0/pappo",
        stage="train@0-pappo",
        seed=0,
        method="pappo",
        profile="tiny",
        run_dir=run_dir,
        clock=Clock.start(),
        repo_root=repo,
        source_paths=["src/pkg"],
        checkpoint=checkpoint,
        inputs=inputs,
        numerics=NUMERICS,
        error=error,
    )


# ------------------------------------------------------------------------------------ source
def test_source_records_the_commit_and_a_clean_tree(repo: Path):
    info = collect_source(repo, ["src/pkg"])
    assert info.git_commit == git(repo, "rev-parse", "HEAD").strip()
    assert re.fullmatch(r"[0-9a-f]{40}", info.git_commit)
    assert info.git_dirty is False
    assert info.source_paths == ["src/pkg"]
    assert collect_source(repo, ["src/pkg/"]).tree_sha256 == info.tree_sha256  # stable, slash-insensitive
    committed = {
        name: sha256_bytes(
            subprocess.run(["git", "show", f"HEAD:{name}"], cwd=repo, check=True, capture_output=True).stdout
        )
        for name in git(repo, "ls-tree", "-r", "--name-only", "HEAD", "--", "src/pkg").split()
    }
    assert set(committed) == {"src/pkg/a.py", "src/pkg/b.py"}
    assert rc.listing_sha256(committed) == info.tree_sha256  # what an audit recomputes from the commit


def test_editing_a_tracked_file_marks_dirty_and_changes_the_tree_hash(repo: Path):
    before = collect_source(repo, ["src/pkg"])
    (repo / "src" / "pkg" / "a.py").write_text("A = 2\n")
    after = collect_source(repo, ["src/pkg"])
    assert after.git_dirty is True and after.git_commit == before.git_commit
    assert after.tree_sha256 != before.tree_sha256


def test_untracked_files_and_files_outside_the_paths_do_not_change_the_hash(repo: Path):
    before = collect_source(repo, ["src/pkg"])
    (repo / "README.md").write_text("changed\n")  # tracked, but outside src/pkg (e.g. a run's own outputs)
    outside = collect_source(repo, ["src/pkg"])
    assert outside.tree_sha256 == before.tree_sha256 and outside.git_dirty is False
    (repo / "src" / "pkg" / "scratch.py").write_text("junk\n")  # could be imported, yet is not hashed
    untracked = collect_source(repo, ["src/pkg"])
    assert untracked.tree_sha256 == before.tree_sha256 and untracked.git_dirty is True


def test_outside_git_the_commit_is_none_and_the_tree_counts_as_dirty(tmp_path: Path):
    plain = tmp_path / "plain"
    (plain / "src").mkdir(parents=True)
    (plain / "src" / "a.py").write_text("A = 1\n")
    info = collect_source(plain, ["src"])
    assert info.git_commit is None and info.git_dirty is True
    (plain / "src" / "a.py").write_text("A = 2\n")
    assert collect_source(plain, ["src"]).tree_sha256 != info.tree_sha256


def test_source_paths_must_be_relative_and_match_files(repo: Path):
    for bad in (["/etc"], ["../x"], []):
        with pytest.raises(ValueError):
            collect_source(repo, bad)
    with pytest.raises(ValueError, match="no tracked files"):
        collect_source(repo, ["nothing_here"])


# ----------------------------------------------------------------------- machine collectors
def test_hardware_software_determinism_and_resources_on_this_machine():
    hw = collect_hardware()
    cuda = torch.cuda.is_available()
    assert hw.accelerator == ("cuda" if cuda else "cpu")
    assert hw.host_processor_core_count >= 1 and hw.host_memory_capacity_gb > 0
    if not cuda:
        assert hw.accelerators_per_node == 0
        assert (
            hw.accelerator_model_name,
            hw.cuda_runtime_version,
            hw.cudnn_version,
            hw.nvidia_driver_version,
            hw.accelerator_memory_capacity_gb,
        ) == (None, None, None, None, None)
    sw = collect_software()
    assert sw.torch == torch.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", sw.python)
    assert socket.gethostname() not in sw.os.split()
    res = collect_resources()
    assert res.peak_rss_mb > 10 and (res.peak_device_memory_mb is None) == (not cuda)
    det = collect_determinism(7, NUMERICS)
    assert (det.seed, det.num_threads) == (7, torch.get_num_threads())


def test_determinism_follows_torch_settings():
    assert (
        collect_determinism(0, NUMERICS).torch_deterministic_algorithms
        is torch.are_deterministic_algorithms_enabled()
    )
    previous = torch.are_deterministic_algorithms_enabled()
    try:
        torch.use_deterministic_algorithms(not previous)
        assert collect_determinism(0, NUMERICS).torch_deterministic_algorithms is (not previous)
    finally:
        torch.use_deterministic_algorithms(previous)


def test_timing_must_be_utc():
    timing = Clock.start().stop()
    assert timing.wall_s >= 0 and timing.started.endswith("+00:00")
    with pytest.raises(ValidationError, match="UTC"):
        rc.TimingInfo(started="2026-01-01T10:00:00+02:00", ended=timing.ended, wall_s=1.0, device_s=None)


# ---------------------------------------------------------------------------------- privacy
def test_a_full_receipt_names_no_host_user_home_or_absolute_path(run_dir: Path, repo: Path):
    receipt = make(run_dir, repo)
    assert receipt.status == "success" and receipt.ranks_devices == [receipt.hardware.accelerator]
    assert leaks(receipt, repo_root=repo) == []
    text = receipt.model_dump_json()
    assert str(Path.home()) not in text and str(repo) not in text and str(run_dir) not in text


def test_leaks_catches_each_kind_of_injection(run_dir: Path, repo: Path, monkeypatch: pytest.MonkeyPatch):
    receipt = make(run_dir, repo, error="boom")
    host, user, home = socket.gethostname(), getpass.getuser(), str(Path.home())

    def found(**update: object) -> list[str]:
        return leaks(receipt.model_copy(update=update), repo_root=repo)

    assert any("error: hostname found" in m for m in found(error=f"lost connection to {host}"))
    if len(user) > 1:
        assert any("error: username found" in m for m in found(error=f"permission denied for {user}"))
    assert any("stage: home directory found" in m for m in found(stage=f"{home}/x"))
    assert any("run_id: absolute path found" in m for m in found(run_id="/srv/data/run"))
    assert any("repo root found" in m for m in found(stage=f"{repo}/dvc.yaml"))
    monkeypatch.setenv("PAPPO_TEST_SECRET", "s3cr3t-token-xyz")
    messages = found(method="pappo s3cr3t-token-xyz")
    assert "method: value of environment variable PAPPO_TEST_SECRET found" in messages
    assert not any("s3cr3t" in m for m in messages)  # the value itself is never echoed
    assert found(error="short env values and urls are fine: https://example.com/a/b, 1/2") == []
    # `dvc exp run` exports the commit it derives from, which the receipt records on purpose
    monkeypatch.setenv("DVC_EXP_BASELINE_REV", receipt.source.git_commit or "")
    assert receipt.source.git_commit and leaks(receipt, repo_root=repo) == []


def test_sanitise_replaces_repo_home_host_user_and_paths(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HOME", "/home/alice")
    monkeypatch.setenv("LOGNAME", "alice")
    monkeypatch.setattr(socket, "gethostname", lambda: "build-host-7")
    text = (
        'File "/work/repo/src/a.py", line 3: cannot open /home/alice/.cache/x.bin on build-host-7 '
        "as alice (malice kept); also /etc/ssl/cert.pem; see https://example.com/a/b and src/a.py"
    )
    out = sanitise(text, repo_root="/work/repo")
    assert out == (
        'File "<repo>/src/a.py", line 3: cannot open <home>/.cache/x.bin on <host> '
        "as <user> (malice kept); also <path>; see https://example.com/a/b and src/a.py"
    )


def test_a_failure_receipt_carries_the_sanitised_error(run_dir: Path, repo: Path):
    error = FileNotFoundError(
        f"{repo}/data/lock.json is missing on {socket.gethostname()}, see {Path.home()}/x"
    )
    receipt = make(run_dir, repo, error=error)
    assert receipt.status == "failure"
    assert receipt.error == "FileNotFoundError: <repo>/data/lock.json is missing on <host>, see <home>/x"
    assert leaks(receipt, repo_root=repo) == []


# ---------------------------------------------------------------------------------- writing
def test_failures_are_never_overwritten_and_a_success_leaves_them(run_dir: Path, repo: Path):
    first, second = make(run_dir, repo, error="first crash"), make(run_dir, repo, error="second crash")
    assert write_failure(run_dir, first).name == "failure.json"
    assert write_failure(run_dir, second).name == "failure-2.json"
    saved = {p.name: p.read_bytes() for p in run_dir.glob("failure*.json")}
    assert json.loads(saved["failure.json"])["error"] == "first crash"
    assert json.loads(saved["failure-2.json"])["error"] == "second crash"
    success = make(run_dir, repo)
    assert "failure.json" not in success.outputs.files and "failure-2.json" not in success.outputs.files
    write_receipt(run_dir, success)
    assert {p.name: p.read_bytes() for p in run_dir.glob("failure*.json")} == saved
    assert Receipt.model_validate_json((run_dir / "receipt.json").read_text()) == success
    assert not list(run_dir.glob(".*tmp"))
    with pytest.raises(ValueError, match="'failure'"):
        write_receipt(run_dir, first)
    with pytest.raises(ValueError, match="'success'"):
        write_failure(run_dir, success)


def test_hash_outputs_skips_the_receipt_failures_and_temp_files(run_dir: Path):
    for name in ("receipt.json", "failure.json", "failure-3.json", ".report.json.x1.tmp"):
        (run_dir / name).write_text("{}")
    files = hash_outputs(run_dir)
    assert set(files) == {
        "report.json",
        "metrics.json",
        "dvclive/metrics.json",
        "adapters/policy/adapter_model.safetensors",
        "adapters/critic/value_head.pt",
    }
    assert files["report.json"] == sha256_file(run_dir / "report.json")


# -------------------------------------------------------------------------------- verifying
def test_verify_reports_changed_missing_and_unlisted_files(run_dir: Path, repo: Path):
    receipt = make(run_dir, repo)
    write_receipt(run_dir, receipt)
    assert verify_receipt(run_dir, receipt) == []
    report = run_dir / "report.json"
    data = bytearray(report.read_bytes())
    data[0] ^= 1
    report.write_bytes(bytes(data))
    expected, found = receipt.outputs.files["report.json"], sha256_file(report)
    problems = verify_receipt(run_dir, receipt)
    assert problems == [f"outputs.files['report.json']: report.json has sha256 {found}, expected {expected}"]
    (run_dir / "adapters" / "critic" / "value_head.pt").unlink()
    (run_dir / "extra.txt").write_text("?")
    problems = verify_receipt(run_dir, receipt)
    assert any(
        m.startswith("checkpoint.adapters['critic/value_head.pt']: adapters/critic/value_head.pt is missing")
        for m in problems
    )
    assert any(
        m.startswith("outputs.files['adapters/critic/value_head.pt']") and "missing" in m for m in problems
    )
    assert "outputs.files: extra.txt is in the run folder but not in the receipt" in problems
    assert len(problems) == 4


# ----------------------------------------------------------------------------------- models
def test_the_model_rejects_unknown_fields_wrong_versions_and_inconsistent_status(run_dir: Path, repo: Path):
    data = make(run_dir, repo).model_dump(mode="json")
    with pytest.raises(ValidationError, match=r"surprise\s+Extra inputs are not permitted"):
        Receipt.model_validate({**data, "surprise": 1})
    with pytest.raises(ValidationError, match=r"hardware\.hostname\s+Extra inputs are not permitted"):
        Receipt.model_validate({**data, "hardware": {**data["hardware"], "hostname": "x"}})
    with pytest.raises(ValidationError, match=r"schema_version\s+Input should be 1"):
        Receipt.model_validate({**data, "schema_version": 2})
    with pytest.raises(ValidationError, match="success receipt has no error"):
        Receipt.model_validate({**data, "error": "x"})
    with pytest.raises(ValidationError, match="failure receipt needs an error"):
        Receipt.model_validate({**data, "status": "failure"})
    with pytest.raises(ValidationError, match="ranks_devices has 1 entries, world_size is 2"):
        Receipt.model_validate({**data, "world_size": 2})
    with pytest.raises(ValidationError, match="not a relative posix path"):
        Receipt.model_validate({**data, "outputs": {"files": {"/etc/passwd": H}}})
    assert Receipt.model_validate(data).model_dump(mode="json") == data


def test_the_json_schema_builds_and_every_field_is_described():
    for mode in ("validation", "serialization"):
        schema = Receipt.model_json_schema(mode=mode)
        models = [schema, *schema["$defs"].values()]
        assert {"SourceInfo", "CheckpointInfo", "HardwareInfo", "TimingInfo"} <= set(schema["$defs"])
        undescribed = [
            (m["title"], name)
            for m in models
            for name, prop in m["properties"].items()
            if not prop.get("description")
        ]
        assert undescribed == []
        assert schema["properties"]["schema_version"]["const"] == 1

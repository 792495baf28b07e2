"""Uncommitted evidence is not evidence (evidence/committed.py), in a scratch git repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from pappo.evidence.committed import check_committed, describe, lock_stages, uncommitted
from pappo.evidence.defined_stages import stale_stages

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]


def repo(tmp_path: Path) -> Path:
    for rel, text in {
        "dvc.lock": "stages: {}\n",
        "reports/base_model.json": "{}\n",
        "reports/summary.json": "{}\n",
        "reports/summary.md": "# s\n",
        "reports/summary/a.png": "png",
        "README.md": "r\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "evidence"]):
        subprocess.run([*GIT, *cmd], cwd=tmp_path, check=True, capture_output=True)
    return tmp_path


def failures(root: Path, stage: bool = False) -> tuple[list[tuple[str, str, str]], str]:
    found: list[tuple[str, str, str]] = []
    scope = check_committed(
        lambda file, field, exp, got, msg: found.append((str(file), str(got), msg)), root, stage
    )
    return found, scope


def test_committed_evidence_passes_and_other_files_do_not_count(tmp_path: Path):
    root = repo(tmp_path)
    (root / "README.md").write_text("edited\n")
    assert failures(root) == ([], "commit") and uncommitted(root) == []


def test_each_kind_of_uncommitted_evidence_fails_with_the_fix(tmp_path: Path):
    root = repo(tmp_path)
    (root / "dvc.lock").write_text("stages: {x: 1}\n")
    (root / "reports/summary.md").unlink()
    (root / "reports/summary/extra.svg").write_text("svg")
    found, scope = failures(root)
    assert scope == "commit"
    assert sorted((f, state) for f, state, _ in found) == [
        ("dvc.lock", "modified"),
        ("reports/summary.md", "deleted"),
        ("reports/summary/extra.svg", "untracked"),
    ]
    assert all("commit it" in msg and "git checkout" in msg for _, _, msg in found)


def test_the_audit_stage_audits_its_workspace_and_says_so(tmp_path: Path):
    root = repo(tmp_path)
    (root / "reports/base_model.json").write_text('{"x": 1}\n')
    assert failures(root, stage=True) == ([], "workspace")
    assert "workspace" in describe("workspace") and "committed at HEAD" in describe("commit")


def test_outside_git_nothing_counts_as_committed(tmp_path: Path):
    found, _ = failures(tmp_path)
    assert found and found[0][1] == "not a git work tree"


def test_lock_stages_reads_what_the_pure_python_parser_reads():
    """libyaml (when present) parses the published dvc.lock to the same objects; empty and
    malformed locks behave as before."""
    text = (ROOT / "dvc.lock").read_text()
    stages = lock_stages(text)
    seed = yaml.safe_load((ROOT / "params.yaml").read_text())["seeds"][0]  # a published run's stage
    assert stages == yaml.safe_load(text)["stages"] and f"train@{seed}" in stages
    assert (
        lock_stages(text.encode()) == stages
        and lock_stages("") == {}
        and lock_stages("schema: '2.0'\n") == {}
    )
    with pytest.raises(yaml.YAMLError):
        lock_stages("stages: {a: [1, 2\n")


def test_the_committed_lock_holds_no_stale_stages():
    """DVC leaves the entries of stages dvc.yaml no longer defines (seeds since dropped) in dvc.lock
    and rewrites the whole lock after every stage, so they slow every stage of every `dvc repro`:
    prune them when the seeds change (`pappo.evidence.defined_stages.prune_lock(Path("."))`)."""
    assert stale_stages(ROOT) == [], "prune dvc.lock: pappo.evidence.defined_stages.prune_lock"

"""`pappo release`'s orchestration (evidence/publish.py): given a verdict of HEAD, no audit runs and the
bundle is built from that verdict; given none, HEAD is audited first and the verdict written next to
the bundle. What was built is recorded where asked. The bundle itself: tests/test_release.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import test_release as tr
from pappo.evidence import audit as audit_mod
from pappo.evidence import publish

repo = tr.repo  # the committed repository a release packages


def _release(repo: Path, out: Path, audit_path: Path | None, record: Path | None, lines: list[str]):
    runs, base = repo / "reports" / "runs", repo / "models" / "base"
    return publish.release(repo, out, audit_path, repo / "params.yaml", runs, base, record, log=lines.append)


def test_a_given_verdict_is_used_as_is_and_the_build_recorded(repo: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(
        audit_mod, "audit", lambda *a, **k: pytest.fail("audited although a verdict was given")
    )
    lines: list[str] = []
    record = tmp_path / "release.json"
    info = _release(repo, tmp_path / "dist", repo / "receipts" / "audit.json", record, lines)
    assert lines == [] and not (tmp_path / "dist" / "audit.json").exists()
    kept = json.loads(record.read_text())
    assert kept["path"] == info.path.as_posix() and info.path.is_file()
    assert (kept["sha256"], kept["commit"]) == (info.sha256, tr.git(repo, "rev-parse", "HEAD"))


def test_without_a_verdict_head_is_audited_first(repo: Path, tmp_path: Path, monkeypatch):
    verdict = tr.verdict(tr.git(repo, "rev-parse", "HEAD"))
    asked: list[tuple] = []
    monkeypatch.setattr(audit_mod, "audit", lambda *a: asked.append(a) or verdict)
    lines: list[str] = []
    out = tmp_path / "dist"
    info = _release(repo, out, None, None, lines)
    assert [a[1] for a in asked] == [repo] and lines == [verdict.verdict]
    assert json.loads((out / "audit.json").read_text()) == verdict.model_dump(mode="json")
    assert info.path.parent == out and info.commit == tr.git(repo, "rev-parse", "HEAD")

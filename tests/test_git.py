"""The one git runner (pappo.io.git) and the batch object reader every git reader uses."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pappo.evidence.git_trees import GitTrees, cat_file, git_output
from pappo.experiment.receipt import collect_source
from pappo.io import PappoError, git


def _repo(path: Path, text: str) -> str:
    """A repository at `path` with one commit of `a.txt`; its commit id."""
    path.mkdir()
    run = dict(cwd=path, check=True, capture_output=True)
    subprocess.run(["git", "init", "-q"], **run)
    (path / "a.txt").write_text(text)
    subprocess.run(["git", "add", "a.txt"], **run)
    ident = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", *ident, "commit", "-q", "-m", "one"], **run)
    return subprocess.run(["git", "rev-parse", "HEAD"], **run, text=True).stdout.strip()


def test_git_asks_the_repository_at_root_whatever_repository_the_environment_names(tmp_path, monkeypatch):
    # a hook or a caller's git sets GIT_DIR and GIT_INDEX_FILE: our readers must still read `root`
    ours, other = _repo(tmp_path / "ours", "ours\n"), _repo(tmp_path / "other", "other\n")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "other" / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "other" / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path / "other"))
    assert ours != other
    assert git(tmp_path / "ours", "rev-parse", "HEAD").stdout.decode().strip() == ours
    assert git_output(tmp_path / "ours", "rev-parse", "HEAD") == ours
    source = collect_source(tmp_path / "ours", ["a.txt"])
    assert source.git_commit == ours and not source.git_dirty
    # without the scrub, git itself follows the environment: the test would see the other repository
    plain = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tmp_path / "ours", capture_output=True, text=True
    )
    assert plain.stdout.strip() == other


def test_git_keeps_the_callers_ceiling(tmp_path, monkeypatch):
    # GIT_CEILING_DIRECTORIES is how a caller says "not inside the repository above": it is kept
    _repo(tmp_path / "ours", "ours\n")
    inner = tmp_path / "ours" / "sub"
    inner.mkdir()
    assert git(inner, "rev-parse", "--is-inside-work-tree").stdout.strip() == b"true"
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path / "ours"))
    assert git(inner, "rev-parse", "--is-inside-work-tree").returncode != 0


def test_cat_file_reads_objects_in_order_and_marks_the_missing(tmp_path):
    commit = _repo(tmp_path / "r", "line one\nline two\n")
    got = cat_file(tmp_path / "r", [f"{commit}:a.txt", f"{commit}:absent.txt", "HEAD:a.txt"])
    assert got == [b"line one\nline two\n", None, b"line one\nline two\n"]
    assert cat_file(tmp_path / "r", []) == []


def test_a_tree_whose_blob_is_gone_is_an_error_not_a_hash(tmp_path):
    commit = _repo(tmp_path / "r", "content\n")
    trees = GitTrees(tmp_path / "r", ("a.txt",))
    assert trees.at(commit) is not None
    with pytest.raises(subprocess.CalledProcessError):
        GitTrees(tmp_path / "r", ("a.txt",))._read_blobs(["0" * 40])


def test_reproduce_takes_the_evidence_commit_of_root_whatever_the_environment_names(tmp_path, monkeypatch):
    from pappo.evidence import reproduce

    ours, _ = _repo(tmp_path / "ours", "ours\n"), _repo(tmp_path / "other", "other\n")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "other" / ".git"))
    assert reproduce._evidence_commit(tmp_path / "ours") == ours
    assert reproduce._sh(["git", "rev-parse", "HEAD"], tmp_path / "ours").strip() == ours
    monkeypatch.delenv("GIT_DIR")
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    with pytest.raises(PappoError, match="is not a git work tree with a commit"):
        reproduce._evidence_commit(plain)

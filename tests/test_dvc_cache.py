"""evidence/dvc_cache.py against DVC itself: the md5 dvc.lock records and the cache objects DVC reads."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml

from pappo.evidence import dvc_cache as dc
from test_dvc_smoke import sh

FILES = {"b.txt": b"bee\n", "a/z.bin": bytes(range(256)), "a/b/c.json": b'{"x": 1}\n'}


def test_the_dir_manifest_is_dvc_s_by_hand() -> None:
    """Hand-worked: the JSON list sorted by relpath, json.dumps's default separators, md5 of it."""
    files = {"y": b"2", "x": b"1"}
    text = (
        '[{"md5": "c4ca4238a0b923820dcc509a6f75849b", "relpath": "x"}, '
        '{"md5": "c81e728d9d4c2f636f067f89cc14862c", "relpath": "y"}]'
    )
    assert dc.dir_manifest(files) == text.encode()
    assert dc.out_md5(files, is_dir=True) == hashlib.md5(text.encode()).hexdigest() + ".dir"
    assert dc.out_md5({"": b"1"}, is_dir=False) == "c4ca4238a0b923820dcc509a6f75849b"
    assert dc.object_path(Path("/c"), "abcdef.dir") == Path("/c/files/md5/ab/cdef.dir")


def test_dvc_records_what_we_compute_and_checks_out_what_we_store(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for rel, data in FILES.items():
        (repo / "out" / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / "out" / rel).write_bytes(data)
    (repo / "one.txt").write_bytes(b"one\n")
    (repo / "dvc.yaml").write_text(
        yaml.safe_dump({"stages": {"make": {"cmd": "true", "outs": ["out", "one.txt"]}}})
    )
    for cmd in (("git", "init", "-q"), ("dvc", "init", "-q"), ("dvc", "commit", "-f", "make")):
        done = sh(*cmd, cwd=repo)
        assert done.returncode == 0, done.stdout + done.stderr
    outs = {o.path: o for o in dc.locked_outs((repo / "dvc.lock").read_text())}
    assert (
        outs["out"].md5 == dc.out_md5(FILES, is_dir=True)
        and outs["out"].is_dir
        and outs["out"].stage == "make"
    )
    assert outs["one.txt"].md5 == dc.out_md5({"": b"one\n"}, is_dir=False) and not outs["one.txt"].is_dir
    # DVC's own cache holds the objects where we would write them
    cache = repo / ".dvc" / "cache"
    assert json.loads(dc.object_path(cache, outs["out"].md5).read_bytes()) == json.loads(
        dc.dir_manifest(FILES)
    )
    # an empty cache and workspace, filled by store(): DVC checks out and finds nothing to do
    for path in (cache, repo / "out", repo / "one.txt"):
        sh("rm", "-rf", str(path), cwd=repo)
    assert dc.store(cache, FILES, is_dir=True) == outs["out"].md5
    assert dc.store(cache, {"": b"one\n"}, is_dir=False) == outs["one.txt"].md5
    done = sh("dvc", "checkout", cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (repo / "out" / "a" / "z.bin").read_bytes() == FILES["a/z.bin"]
    status = sh("dvc", "status", cwd=repo)
    assert "Data and pipelines are up to date" in status.stdout, status.stdout + status.stderr

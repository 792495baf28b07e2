"""evidence/dvc_cache.py against DVC itself: the md5 dvc.lock records and the cache objects DVC reads."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest
import yaml

from pappo.evidence import dvc_cache as dc
from pappo.io import PappoError
from test_dvc_smoke import sh

FILES = {"b.txt": b"bee\n", "a/z.bin": bytes(range(256)), "a/b/c.json": b'{"x": 1}\n'}
MD5S = {rel: dc.md5_hex(data) for rel, data in FILES.items()}


def test_the_dir_manifest_is_dvc_s_by_hand() -> None:
    """Hand-worked: the JSON list sorted by relpath, json.dumps's default separators, md5 of it."""
    files = {"y": dc.md5_hex(b"2"), "x": dc.md5_hex(b"1")}
    text = (
        '[{"md5": "c4ca4238a0b923820dcc509a6f75849b", "relpath": "x"}, '
        '{"md5": "c81e728d9d4c2f636f067f89cc14862c", "relpath": "y"}]'
    )
    assert dc.dir_manifest(files) == text.encode()
    assert dc.out_md5(files, is_dir=True) == hashlib.md5(text.encode()).hexdigest() + ".dir"
    assert dc.out_md5({"": dc.md5_hex(b"1")}, is_dir=False) == "c4ca4238a0b923820dcc509a6f75849b"
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
        outs["out"].md5 == dc.out_md5(MD5S, is_dir=True)
        and outs["out"].is_dir
        and outs["out"].stage == "make"
    )
    assert (
        outs["one.txt"].md5 == dc.out_md5({"": dc.md5_hex(b"one\n")}, is_dir=False)
        and not outs["one.txt"].is_dir
    )
    # DVC's own cache holds the objects where we would write them
    cache = repo / ".dvc" / "cache"
    assert json.loads(dc.object_path(cache, outs["out"].md5).read_bytes()) == json.loads(
        dc.dir_manifest(MD5S)
    )
    # an empty cache and workspace, filled by store(): DVC checks out and finds nothing to do
    for path in (cache, repo / "out", repo / "one.txt"):
        sh("rm", "-rf", str(path), cwd=repo)
    assert dc.store(cache, MD5S, True, lambda rel: io.BytesIO(FILES[rel])) == outs["out"].md5
    one = {"": dc.md5_hex(b"one\n")}
    assert dc.store(cache, one, False, lambda rel: io.BytesIO(b"one\n")) == outs["one.txt"].md5
    done = sh("dvc", "checkout", cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (repo / "out" / "a" / "z.bin").read_bytes() == FILES["a/z.bin"]
    status = sh("dvc", "status", cwd=repo)
    assert "Data and pipelines are up to date" in status.stdout, status.stdout + status.stderr


def test_read_out_is_the_md5_of_what_is_on_disk(tmp_path: Path) -> None:
    for rel, data in FILES.items():
        (tmp_path / "out" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "out" / rel).write_bytes(data)
    assert dc.read_out(tmp_path / "out") == MD5S
    assert dc.read_out(tmp_path / "out" / "b.txt") == {"": dc.md5_hex(b"bee\n")}
    assert dc.read_out(tmp_path / "absent") is None


def test_store_keeps_no_object_whose_bytes_are_not_its_md5(tmp_path: Path) -> None:
    """A stream that changed since it was hashed (a bundle edited mid-import) leaves nothing."""
    cache, md5s = tmp_path / "cache", {"x": dc.md5_hex(b"the bytes hashed")}
    with pytest.raises(PappoError, match="changed"):
        dc.store(cache, md5s, True, lambda rel: io.BytesIO(b"other bytes"))
    assert [p for p in cache.rglob("*") if p.is_file()] == []
    dc.store(cache, md5s, True, lambda rel: io.BytesIO(b"the bytes hashed"))
    assert dc.object_path(cache, md5s["x"]).read_bytes() == b"the bytes hashed"

"""DVC's content addresses, so that evidence from an archive lands in a clone as `dvc repro` left it.

DVC 3 (the `hash: md5` outs of dvc.lock) stores a file output's bytes in its cache at
`files/md5/<md5[:2]>/<md5[2:]>`, and a directory output as its files (each at its own md5) plus a
manifest `<md5[:2]>/<md5[2:]>.dir` whose md5 is what dvc.lock records: the JSON list of
`{"md5": ..., "relpath": ...}` sorted by relpath, as `json.dumps(..., sort_keys=True)` writes it
(dvc_data.hashfile.tree.Tree.as_bytes; DVC docs, "Internal Files": the cache directory). Nothing
here runs DVC: `pappo evidence import` writes objects named by the md5 of their own bytes, and `dvc
status` / `dvc checkout` verify them independently.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pappo.evidence.committed import lock_stages
from pappo.io import atomic_write_bytes


@dataclass(frozen=True)
class LockedOut:
    """One output of one stage in dvc.lock."""

    stage: str
    path: str
    md5: str  # `<hex>` for a file, `<hex>.dir` for a directory

    @property
    def is_dir(self) -> bool:
        return self.md5.endswith(".dir")


def locked_outs(lock_text: str | bytes) -> list[LockedOut]:
    """Every output of every stage of a dvc.lock, by path (a path bound by two stages: both)."""
    outs = []
    for stage, body in sorted(lock_stages(lock_text).items()):
        for out in body.get("outs", []) if isinstance(body, dict) else []:
            if isinstance(out, dict) and out.get("path") and out.get("md5"):
                outs.append(LockedOut(stage=stage, path=str(out["path"]), md5=str(out["md5"])))
    return outs


def md5_hex(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def dir_manifest(files: dict[str, bytes]) -> bytes:
    """The `.dir` manifest of a directory output: {relpath (posix, inside it): bytes} -> its JSON bytes."""
    rows = [{"md5": md5_hex(data), "relpath": rel} for rel, data in files.items()]
    return json.dumps(sorted(rows, key=lambda r: r["relpath"]), sort_keys=True).encode("utf-8")


def out_md5(files: dict[str, bytes], is_dir: bool) -> str:
    """What dvc.lock records for an output: a file's md5 ({"": bytes}) or the manifest's md5 + `.dir`."""
    if not is_dir:
        return md5_hex(files[""])
    return md5_hex(dir_manifest(files)) + ".dir"


def read_out(path: Path) -> dict[str, bytes] | None:
    """An output as it is on disk, in `out_md5`'s form: a file as {"": bytes}, a folder as its files
    by relative path; None when absent."""
    if path.is_file():
        return {"": path.read_bytes()}
    if path.is_dir():
        return {
            p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
        }
    return None


def object_path(cache: Path, md5: str) -> Path:
    """Where DVC 3 keeps the object `md5` (a `.dir` manifest keeps its suffix)."""
    return Path(cache) / "files" / "md5" / md5[:2] / md5[2:]


def store(cache: Path, files: dict[str, bytes], is_dir: bool) -> str:
    """Write an output's objects into the cache (content-addressed: an existing object is left as
    it is); return the md5 dvc.lock must record for it."""
    for data in files.values():
        _put(cache, md5_hex(data), data)
    if not is_dir:
        return md5_hex(files[""])
    manifest = dir_manifest(files)
    md5 = md5_hex(manifest) + ".dir"
    _put(cache, md5, manifest)
    return md5


def _put(cache: Path, md5: str, data: bytes) -> None:
    path = object_path(cache, md5)
    if not path.is_file():
        atomic_write_bytes(path, data)
        path.chmod(0o444)  # DVC keeps cache objects read-only

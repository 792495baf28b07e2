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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pappo.evidence.committed import lock_stages
from pappo.io import PappoError, atomic_write_chunks, file_digest


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


def dir_manifest(md5s: dict[str, str]) -> bytes:
    """The `.dir` manifest of a directory output: {relpath (posix, inside it): md5} -> its JSON bytes."""
    rows = [{"md5": md5, "relpath": rel} for rel, md5 in md5s.items()]
    return json.dumps(sorted(rows, key=lambda r: r["relpath"]), sort_keys=True).encode("utf-8")


def out_md5(md5s: dict[str, str], is_dir: bool) -> str:
    """What dvc.lock records for an output of these file md5s: a file's ({"": md5}), or the
    manifest's md5 + `.dir`."""
    if not is_dir:
        return md5s[""]
    return md5_hex(dir_manifest(md5s)) + ".dir"


def read_out(path: Path) -> dict[str, str] | None:
    """An output as it is on disk, in `out_md5`'s form: a file as {"": md5}, a folder as its files'
    md5s by relative path (read in chunks); None when absent."""
    if path.is_file():
        return {"": file_digest(path, "md5")}
    if path.is_dir():
        return {
            p.relative_to(path).as_posix(): file_digest(p, "md5")
            for p in sorted(path.rglob("*"))
            if p.is_file()
        }
    return None


def object_path(cache: Path, md5: str) -> Path:
    """Where DVC 3 keeps the object `md5` (a `.dir` manifest keeps its suffix)."""
    return Path(cache) / "files" / "md5" / md5[:2] / md5[2:]


def store(cache: Path, md5s: dict[str, str], is_dir: bool, open_file: Callable[[str], BinaryIO]) -> str:
    """Write an output's objects into the cache, each streamed from `open_file(relpath)` and checked
    against its md5 before it is kept (content-addressed: an existing object is left as it is);
    return the md5 dvc.lock must record for it."""
    for rel, md5 in md5s.items():
        _put(object_path(cache, md5), _checked(open_file, rel, md5))
    if not is_dir:
        return md5s[""]
    manifest = dir_manifest(md5s)
    md5 = md5_hex(manifest) + ".dir"
    _put(object_path(cache, md5), (manifest,))
    return md5


def _put(path: Path, chunks: Iterable[bytes]) -> None:
    """An object, unless the cache has it (then `chunks` is never read)."""
    if not path.is_file():
        atomic_write_chunks(path, chunks)
        path.chmod(0o444)  # DVC keeps cache objects read-only


def _checked(open_file: Callable[[str], BinaryIO], rel: str, md5: str) -> Iterator[bytes]:
    """The file `rel` in 1 MiB chunks, opened on the first; raises at its end, before the object is
    kept, if its bytes are not `md5`."""
    h = hashlib.md5()
    with open_file(rel) as src:
        for chunk in iter(lambda: src.read(1 << 20), b""):
            h.update(chunk)
            yield chunk
    if h.hexdigest() != md5:
        raise PappoError(
            f"{rel or 'the file'}: md5 {h.hexdigest()} while copying, expected {md5}: it changed"
        )

"""Reading a bundle (the zip, or the folder it was unpacked to) without holding it in memory.

`scan` reads every entry once, in 1 MiB chunks, into the digests the checks need (sha256 for
SHA256SUMS and the run receipts, md5 for dvc.lock, git's blob id for the SWHIDs), so a bundle of
the hub profile's adapters (~300 MiB each, ~17 GiB for 7 seeds) verifies in constant memory. The
few entries the checks parse (BUNDLE.json, dvc.lock, receipts) are read again whole with `read`,
which checks them against the digest taken first. Unsafe names, modes and links are refused before
a byte is read, and so are a zip's declared sizes past its limit (zipfile stops at the declared
size); evidence/bundle_check.py holds the layout and the checks.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pappo.io import CHUNK, git_blob_hasher, sha256_bytes

SOURCE = "source/"
REGULAR, EXECUTABLE, SYMLINK = stat.S_IFREG | 0o644, stat.S_IFREG | 0o755, stat.S_IFLNK | 0o777
MODES = (REGULAR, EXECUTABLE, SYMLINK)
LINK_MAX = 4096  # a symlink's target: PATH_MAX on Linux
MAX_READ = 64 << 20  # an entry the checks parse whole: KBs in a real bundle
# A zip bomb (GiBs of zeros in a few MB) is refused from its declared sizes: a zip may unpack to
# FLOOR bytes whatever its size, beyond that to RATIO times its own bytes. Deflate's best is about
# 1,000:1; the tiny profile's bundle unpacks 2:1, float adapters about 1.1:1.
FLOOR = 2 << 30
RATIO = 50


@dataclass(frozen=True)
class Entry:
    """One entry's mode, size and digests (hex; `blob` is git's raw blob id)."""

    mode: int
    size: int
    sha256: str
    md5: str
    blob: bytes
    link: bytes | None = None  # a symlink's target


def _digested(src: BinaryIO, mode: int, size: int) -> Entry:
    """Read `src` to its end in chunks; the entry it holds. `size` is what was declared (git's blob
    header needs it first); bytes that differ from it raise OSError."""
    sha, md5 = hashlib.sha256(), hashlib.md5()
    blob = git_blob_hasher(size)
    read, target = 0, []
    for chunk in iter(lambda: src.read(CHUNK), b""):
        for h in (sha, md5, blob):
            h.update(chunk)
        read += len(chunk)
        if stat.S_ISLNK(mode):  # at most LINK_MAX bytes (_refused)
            target.append(chunk)
    if read != size:
        raise OSError(f"{read} bytes read, {size} declared: it changed while being read")
    link = b"".join(target) if stat.S_ISLNK(mode) else None
    return Entry(mode, size, sha.hexdigest(), md5.hexdigest(), blob.digest(), link)


def _link_stays_inside(name: str, target: bytes) -> bool:
    """A symlink entry's target is relative and, resolved from its folder, stays inside source/."""
    text = target.decode("utf-8", "replace")
    if not text or text.startswith("/") or "\\" in text or "\0" in text or "\ufffd" in text:
        return False
    depth = name.count("/") - 1  # folders below source/ that hold the link
    for part in text.split("/"):
        depth += -1 if part == ".." else 0 if part in ("", ".") else 1
        if depth < 0:
            return False
    return True


def _open_file(path: Path) -> BinaryIO:
    """A file of an unpacked bundle; O_NOFOLLOW: one swapped for a symlink is not read through."""
    return os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb")


def _refused(name: str, mode: int, size: int) -> str | None:
    """Why an entry may not be read (None: it may): its name, its mode, a symlink's place or size."""
    parts = name.split("/")
    if name.startswith("/") or "\\" in name or {"..", ".", ""} & set(parts):
        return f"{name}: unsafe path in the archive; left out"
    if mode not in MODES:
        return f"{name}: mode {oct(mode)} is not one a bundle uses (0644, 0755, symlink); left out"
    if stat.S_ISLNK(mode) and not name.startswith(SOURCE):
        return f"{name}: a symlink outside source/; left out"
    if stat.S_ISLNK(mode) and size > LINK_MAX:
        return f"{name}: a symlink of {size} bytes (at most {LINK_MAX}); left out"
    return None


class Bundle:
    """A bundle's entries by name, as `scan` found them, and the problems met reading it. Close it
    when done (`contextlib.closing`): a zip stays open so that `open` and `read` can reach it."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.entries: dict[str, Entry] = {}
        self.problems: list[str] = []
        self._zip: zipfile.ZipFile | None = None
        self._where: dict[str, zipfile.ZipInfo | Path] = {}

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()

    def open(self, name: str) -> BinaryIO:
        """An entry's bytes as a stream (a symlink: its target)."""
        entry, where = self.entries[name], self._where[name]
        if entry.link is not None:
            return io.BytesIO(entry.link)
        if isinstance(where, Path):
            return _open_file(where)
        assert self._zip is not None
        return self._zip.open(where)

    def read(self, name: str) -> bytes | None:
        """A small entry's bytes, the same as when scanned (None: no such entry). Too large to be
        what the checks parse, unreadable, or changed since: a problem, and b""."""
        entry = self.entries.get(name)
        if entry is None:
            return None
        if entry.size > MAX_READ:
            self.problems.append(f"{name}: {entry.size} bytes, more than {MAX_READ} to parse; not read")
            return b""
        try:
            with self.open(name) as f:
                data = f.read(entry.size + 1)  # not MAX_READ: a buffered read allocates what it is asked
        except (OSError, zipfile.BadZipFile, zlib.error, EOFError) as e:
            self.problems.append(f"{name}: unreadable ({e})")
            return b""
        if sha256_bytes(data) != entry.sha256:
            self.problems.append(f"{name}: changed since the bundle was first read")
            return b""
        return data

    def _admit(self, name: str, entry: Entry, where: zipfile.ZipInfo | Path) -> None:
        """Keep an entry, or say why not (a second copy, a link leaving source/)."""
        if name in self.entries:
            self.problems.append(f"{name}: appears twice in the archive")
        elif entry.link is not None and not _link_stays_inside(name, entry.link):
            self.problems.append(f"{name}: symlink to {entry.link[:80]!r} leaves source/; left out")
        else:
            self.entries[name], self._where[name] = entry, where

    def _nested(self, names: set[str]) -> None:
        """An entry inside another of the archive's `names` (a file or a symlink used as a folder,
        kept or refused) would be written through it when unpacked: left out."""
        for name in sorted(self.entries):
            parts = name.split("/")
            under = next(
                ("/".join(parts[:i]) for i in range(1, len(parts)) if "/".join(parts[:i]) in names), None
            )
            if under is not None:
                self.problems.append(
                    f"{name}: inside {under}, which is a file or symlink in the archive; left out"
                )
                del self.entries[name], self._where[name]

    def _scan_zip(self, zf: zipfile.ZipFile) -> set[str]:
        """Admit a zip's entries; their names (refused ones too)."""
        limit = max(FLOOR, RATIO * self.path.stat().st_size)
        names, total = set(), 0
        for info in zf.infolist():
            if info.is_dir():
                continue
            name, mode = info.filename, info.external_attr >> 16 or REGULAR
            names.add(name)
            why = _refused(name, mode, info.file_size)
            if why is None and total + info.file_size > limit:
                why = (
                    f"{name}: unpacks to {info.file_size} bytes, past the bundle's limit ({limit} bytes "
                    f"in all: {FLOOR}, or {RATIO} times the zip's size); left out"
                )
            if why is not None:
                self.problems.append(why)
                continue
            total += info.file_size
            try:
                with zf.open(info) as f:
                    entry = _digested(f, mode, info.file_size)
            except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as e:
                self.problems.append(f"{name}: unreadable in the archive ({e})")
                continue
            self._admit(name, entry, info)
        return names

    def _scan_folder(self) -> set[str]:
        """Admit an unpacked bundle's files with the zip's rules (a symlink holds its target)."""
        for path in sorted(self.path.rglob("*")):
            rel = path.relative_to(self.path).as_posix()
            if path.is_symlink():
                mode, target = SYMLINK, os.readlink(path).encode()
                size = len(target)
            elif path.is_file() and "__pycache__" not in rel.split("/"):
                mode = EXECUTABLE if path.stat().st_mode & 0o111 else REGULAR
                size, target = path.stat().st_size, None
            else:
                continue
            if why := _refused(rel, mode, size):
                self.problems.append(why)
                continue
            try:
                with io.BytesIO(target) if target is not None else _open_file(path) as f:
                    entry = _digested(f, mode, size)
            except OSError as e:
                self.problems.append(f"{rel}: unreadable ({e})")
                continue
            self._admit(rel, entry, path)
        return set(self.entries)


def scan(path: Path) -> Bundle:
    """Every entry of the bundle at `path` (a zip or a folder), read once; unsafe, oversized,
    repeated or unreadable entries are problems and left out. Raises OSError / BadZipFile when the
    zip itself cannot be read."""
    b = Bundle(path)
    if b.path.is_dir():
        b._nested(b._scan_folder())
        return b
    b._zip = zipfile.ZipFile(b.path)
    try:
        b._nested(b._scan_zip(b._zip))
    except BaseException:
        b.close()
        raise
    return b

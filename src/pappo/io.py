"""Small I/O helpers shared by every stage: hashing, canonical JSON, atomic writes, trees.

Standard library only: the sandbox worker imports this too.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


class PappoError(Exception):
    """An error meant for a person: the message names the file, field and fix."""


# The variables that tie git to one repository (`git rev-parse --local-env-vars`, which git itself
# clears on entering a submodule): set by a hook or a caller's git, they would point our git
# calls at another repository than the one asked about. Others (GIT_CEILING_DIRECTORIES) stay.
GIT_LOCAL_ENV = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
)


def git(
    root: Path, *args: str, stdin: bytes | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[bytes]:
    """`git ARGS` in the repository at `root`, whatever repository the caller's environment names,
    with untranslated messages; output as bytes, the exit status for the caller to judge. Raises
    OSError where git is not installed."""
    env = {k: v for k, v in os.environ.items() if k not in GIT_LOCAL_ENV} | {"LC_ALL": "C"}
    return subprocess.run(
        ["git", *args], cwd=root, env=env, input=stdin, capture_output=True, timeout=timeout
    )


CHUNK = 1 << 20  # bytes a file is read by when hashed: constant memory whatever its size


def git_blob_hasher(size: int) -> Any:
    """A sha1 primed with git's blob header for `size` bytes; fed the bytes, it gives the blob id
    git (and a SWHID, and the hub for non-LFS files) names them by (Pro Git, "Git Objects")."""
    return hashlib.sha1(b"blob %d\0" % size)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    return file_digest(path, "sha256")


def file_digest(path: Path, algorithm: str) -> str:
    """Hex digest of a file read in 1 MiB chunks (sha256 for our hashes, md5 where a service asks)."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def canonical_json(obj: Any) -> str:
    """Key-sorted, compact JSON: the byte string every content hash is taken over."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tree_sha256(files: dict[str, bytes]) -> str:
    """Hash of a file tree given as {relative posix path: content}; order-independent."""
    listing = {path: sha256_bytes(data) for path, data in files.items()}
    return sha256_bytes(canonical_json(listing).encode())


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temp file in the same folder, fsync, then rename: never half-written. The file
    keeps its permissions, or gets 0644 when new (not mkstemp's 0600: other users read data files)."""
    atomic_write_chunks(path, (data,))


def atomic_write_chunks(path: Path, chunks: Iterable[bytes]) -> None:
    """`atomic_write_bytes` for data too large to hold: nothing is renamed into place when the
    iterable raises (e.g. a stream that fails its hash check at its end)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.is_file() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def json_bytes(obj: Any) -> bytes:
    """The bytes atomic_write_json writes (indented, key-sorted)."""
    return (json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, json_bytes(obj))


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    """Write an in-memory tree {relative posix path: bytes} under `root`; no path may leave it."""
    base = Path(root).resolve()
    for rel, data in files.items():
        target = (base / rel).resolve()
        if not target.is_relative_to(base) or target == base:
            raise ValueError(f"file path {rel!r} escapes the tree root")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def read_model_lines(path: Path, model: type[M], what: str, command: str) -> list[tuple[int, M]]:
    """(line number, item) of every non-blank line of a JSON-lines file of `model` items; a missing
    file or a bad line is an error naming the file, the line and the command that rebuilds it."""
    path = Path(path)
    if not path.is_file():
        raise PappoError(f"{path}: {what} not found; run `{command}`")
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                out.append((n, model.model_validate_json(line)))
            except ValueError as e:
                raise PappoError(f"{path}:{n}: invalid {what} ({e}); re-run `{command}`") from e
    return out

"""The source-tree hashes a receipt records, read from git at any commit, for the audit.

In a module of its own because it batches git: each commit is listed once and each blob read
once, so checking every receipt's commit costs a few git processes, not one per file.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from pappo.experiment import receipt as rc
from pappo.io import git, sha256_bytes


class GitTrees:
    """Receipts' source-tree hashes of `paths` at commits, for one audit. Each commit is listed once
    (`git ls-tree`) and blobs are read in one `git cat-file --batch`, each blob once: one git call
    per file made the audit spawn ~1000 processes."""

    def __init__(self, root: Path, paths: tuple[str, ...]) -> None:
        self.root, self.paths = root, paths
        self._trees: dict[str, str | None] = {}
        self._kinds: dict[str, str | None] = {}
        self._blobs: dict[str, str] = {}  # blob id -> sha256 of its bytes

    def is_commit(self, rev: str) -> bool:
        if rev not in self._kinds:
            self._kinds[rev] = git_output(self.root, "cat-file", "-t", rev)
        return self._kinds[rev] == "commit"

    def at(self, commit: str) -> str | None:
        """The tree hash at `commit` (None: not a commit), as a receipt records it."""
        if commit not in self._trees:
            blobs = self._list(commit)
            if blobs is not None:
                self._read_blobs(sorted(set(blobs.values()) - self._blobs.keys()))
            self._trees[commit] = (
                None
                if blobs is None
                else rc.listing_sha256({name: self._blobs[blob] for name, blob in blobs.items()})
            )
        return self._trees[commit]

    def _list(self, commit: str) -> dict[str, str] | None:
        """{path: blob id} of the files under `paths` at `commit`; None when git cannot list it."""
        out = git(self.root, "ls-tree", "-r", "-z", commit, "--", *self.paths)
        if out.returncode != 0:
            return None
        listing = {}
        for entry in out.stdout.decode().split("\0"):
            if entry:
                meta, name = entry.split("\t", 1)  # "<mode> <type> <id>\t<path>"
                listing[name] = meta.split()[2]
        return listing

    def _read_blobs(self, blobs: list[str]) -> None:
        """sha256 of each blob's bytes, from one `git cat-file --batch`."""
        for blob, content in zip(blobs, cat_file(self.root, blobs), strict=True):
            if content is None:  # as `git show` of it failed
                raise subprocess.CalledProcessError(
                    128, ["git", "cat-file", "--batch"], output=f"{blob} missing"
                )
            self._blobs[blob] = sha256_bytes(content)


def cat_file(root: Path, revs: list[str]) -> list[bytes | None]:
    """The contents of objects (`REV:path` or blob ids) from one `git cat-file --batch` (None: missing)."""
    if not revs:
        return []
    out = git(root, "cat-file", "--batch", stdin="".join(f"{r}\n" for r in revs).encode())
    if out.returncode != 0:
        raise subprocess.CalledProcessError(
            out.returncode, ["git", "cat-file", "--batch"], out.stdout, out.stderr
        )
    found: list[bytes | None] = []
    at = 0
    for _ in revs:
        end = out.stdout.index(b"\n", at)
        header = out.stdout[at:end].split()  # "<id> <type> <size>" or "<rev> missing"
        if len(header) != 3:
            found.append(None)
            at = end + 1
            continue
        start = end + 1
        found.append(out.stdout[start : start + int(header[2])])
        at = start + int(header[2]) + 1  # the content is followed by a newline
    return found


def git_output(root: Path, *args: str) -> str | None:
    out = git(root, *args)
    return out.stdout.decode().strip() if out.returncode == 0 else None

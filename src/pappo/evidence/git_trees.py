"""The source-tree hashes a receipt records, read from git at any commit, for the audit.

In a module of its own because it batches git: each commit is listed once and each blob read
once, so checking every receipt's commit costs a few git processes, not one per file.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from pappo.experiment import receipt as rc
from pappo.io import sha256_bytes


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
        out = subprocess.run(
            ["git", "ls-tree", "-r", "-z", commit, "--", *self.paths], cwd=self.root, capture_output=True
        )
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
        if not blobs:
            return
        cmd = ["git", "cat-file", "--batch"]
        out = subprocess.run(
            cmd,
            cwd=self.root,
            input="".join(f"{b}\n" for b in blobs).encode(),
            capture_output=True,
            check=True,
        ).stdout
        at = 0
        for blob in blobs:
            end = out.index(b"\n", at)
            header = out[at:end].split()  # "<id> <type> <size>" or "<id> missing"
            if len(header) != 3:
                raise subprocess.CalledProcessError(
                    128, cmd, output=out[at:end]
                )  # as `git show` of it failed
            start = end + 1
            self._blobs[blob] = sha256_bytes(out[start : start + int(header[2])])
            at = start + int(header[2]) + 1  # the content is followed by a newline


def git_output(root: Path, *args: str) -> str | None:
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None

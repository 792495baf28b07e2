"""The audit's source checks where there is no git repository: an unpacked evidence bundle.

A bundle's `source/` holds the released commit's files (`git archive`; `pappo verify-bundle`
checks that they hash to the git tree id BUNDLE.json names, `swhid_dir`). What a clone's audit
asks git, a bundle's audit asks that tree: the code each receipt binds must be the train stage's
code in `source/`, and the committed evidence at the bundle's top (dvc.lock, the summary, the base
model report) must be the files `source/` holds. What needs the repository's history cannot be
checked here and is listed, never guessed (MLPerf's submission checker likewise runs on the
package alone and says what it checked).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pappo.evidence.committed import EVIDENCE_PATHS
from pappo.experiment import receipt as rc
from pappo.io import sha256_file
from pappo.stage_code import stage_code

Fail = Callable[[Path | str, str, Any, Any, str], None]
NOT_CHECKED = (
    "each receipt's source.git_commit: that it is a commit of the repository, and that its code is the code "
    "that ran (needs the git history; a clone of the commit after `pappo evidence import` checks it)",
    "that source/ is the tree of commit {commit} (a commit id also covers history, author and date; the tree "
    "id, swhid_dir, is checked by verify-bundle)",
    "uncommitted changes (a bundle has no working tree: the evidence is compared with source/ instead)",
)


@dataclass(frozen=True)
class Archive:
    """An unpacked bundle's source tree and the commit it names (BUNDLE.json)."""

    source: Path
    commit: str


def files_under(source: Path, paths: list[str]) -> dict[str, str]:
    """{path: sha256} of the files of `source` under `paths` (as `git ls-files -- paths` lists them)."""
    listing = {}
    for base in paths:
        top = Path(source) / base
        found = sorted(p for p in top.rglob("*") if p.is_file()) if top.is_dir() else [top] * top.is_file()
        for path in found:
            rel = path.relative_to(source).as_posix()
            if "__pycache__" not in rel.split("/"):
                listing[rel] = sha256_file(path)
    return listing


def check_source_tree(
    fail: Fail, runs: Path, receipts: Mapping[tuple[int, str], rc.Receipt], source: Path
) -> None:
    """Each receipt binds the train stage's code as `source/` holds it (the tree_sha256 it records)."""
    try:
        paths = stage_code(source, "train")
    except (OSError, ValueError) as e:
        fail(source / "dvc.yaml", "stages.train.deps", "the train stage's code", "none", str(e))
        return
    tree = rc.listing_sha256(files_under(source, paths))
    for (seed, method), r in sorted(receipts.items()):
        path = runs / f"seed_{seed}" / method / "receipt.json"
        if r.source.git_dirty:
            fail(path, "source.git_dirty", False, True, "the run was made from uncommitted code")
        if sorted(r.source.source_paths) != sorted(paths):
            fail(
                path,
                "source.source_paths",
                sorted(set(paths) - set(r.source.source_paths)),
                sorted(set(r.source.source_paths) - set(paths)),
                "the receipt binds other code than the train stage's dvc.yaml dependencies in source/ "
                "(expected: the dependencies it does not bind; found: what it binds that is not one)",
            )
        elif r.source.tree_sha256 != tree:
            fail(
                path,
                "source.tree_sha256",
                tree,
                r.source.tree_sha256,
                "the code that ran is not the bundle's source/ (the released commit's train stage code)",
            )


def check_packaged(fail: Fail, root: Path, source: Path) -> None:
    """The committed evidence at the bundle's top is the commit's (source/), file for file."""
    for rel in EVIDENCE_PATHS:
        top, committed = Path(root) / rel, Path(source) / rel
        mine, theirs = _listing(top), _listing(committed)
        if mine != theirs:
            differ = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            fail(
                rel,
                "bundle",
                f"the same as source/{rel} (the commit's)",
                f"differs ({differ[0] or rel})",
                "evidence that is not the released commit's: rebuild the bundle with `pappo release` "
                "(or download it again)",
            )


def _listing(path: Path) -> dict[str, str]:
    if path.is_file():
        return {"": sha256_file(path)}
    return {p.relative_to(path).as_posix(): sha256_file(p) for p in sorted(path.rglob("*")) if p.is_file()}


def describe(archive: Archive) -> str:
    """The verdict's last lines for a bundle: its scope and what could not be checked here."""
    lines = [
        f"scope: the evidence bundle of commit {archive.commit} (its source/ in place of a git checkout)",
        "not checked here (no git repository):",
    ]
    return "\n".join(lines + [f"  - {item.format(commit=archive.commit[:12])}" for item in NOT_CHECKED])

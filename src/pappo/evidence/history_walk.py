"""Every commit reachable from HEAD, a local branch or a DVC experiment, with its dvc.lock and
params.yaml, for history.py.

`git log -- dvc.lock params.yaml` simplifies history and orders it by commit date: a side branch
merged with `-s ours` is never walked (a configuration tried there vanishes), and a branch whose
commits carry an old date reads as made before the evidence. Here every commit reachable from HEAD
is read, both sides of every merge, parents before children (`git rev-list --topo-order`), and
"before" means "an ancestor of", which no date can forge. Each distinct blob is read once.

Local branches and `refs/exps/` (where `dvc exp run` keeps each experiment's commit, dvc.lock
included) are walked too: a configuration tried on the published seeds there and never merged was
still evaluated on them. Such a commit adds configurations only: claims, their edits and the seeds
list are read on the audited version's `lineage`, so a try elsewhere never changes what was "in
force" at HEAD.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pappo.evidence.git_trees import cat_file, git_output
from pappo.io import git

FILES = ("dvc.lock", "params.yaml")
WORKSPACE = ""  # the "commit" of the params and dvc.lock audited, not committed
T = TypeVar("T")


@dataclass(frozen=True)
class Commit:
    """One commit as git stores it: its parents and the blob ids of its dvc.lock and params.yaml."""

    id: str
    parents: tuple[str, ...]
    lock: str | None
    params: str | None


@dataclass(frozen=True)
class Version:
    """One commit as history.py reads it ('' the workspace audited, its parent HEAD)."""

    commit: str
    parents: tuple[str, ...]
    lock: str | None  # the key of its dvc.lock's stages (None: no dvc.lock)
    params: dict[str, Any] | None  # {"seeds", "claims"} (history._params); None: none readable yet


# What is walked: HEAD's history, every local branch's, every DVC experiment's (nested refs)
REFS = ("HEAD", "--branches", "--glob=refs/exps")


@dataclass(frozen=True)
class Walked:
    """The commits walked, parents first, the contents of their blobs of FILES, and HEAD."""

    commits: list[Commit]
    blobs: dict[str, bytes | None]
    head: str


def walk(root: Path) -> Walked | None:
    """The commits reachable from REFS, parents first, and the contents of their blobs of FILES
    (None: git could not list them)."""
    listing = git_output(root, "rev-list", "--topo-order", "--reverse", "--parents", *REFS)
    head = git_output(root, "rev-parse", "--verify", "HEAD")
    if listing is None or head is None:
        return None
    graph = [line.split() for line in listing.splitlines() if line.strip()]
    ids = _blob_ids(root, [f"{c[0]}:{f}" for c in graph for f in FILES])
    if ids is None:
        return None
    commits = [Commit(c[0], tuple(c[1:]), ids[2 * i], ids[2 * i + 1]) for i, c in enumerate(graph)]
    blobs = list(dict.fromkeys(b for c in commits for b in (c.lock, c.params) if b))
    return Walked(commits, dict(zip(blobs, cat_file(root, blobs), strict=True)), head.strip())


def _blob_ids(root: Path, revs: list[str]) -> list[str | None] | None:
    """The blob id of each `REV:path` (None: no such file), from one `git cat-file --batch-check`."""
    query = "".join(f"{r}\n" for r in revs).encode()
    out = git(root, "cat-file", "--batch-check=%(objectname) %(objecttype)", stdin=query)
    rows = out.stdout.decode().splitlines()
    if out.returncode != 0 or len(rows) != len(revs):
        return None
    return [r.split()[0] if r.endswith(" blob") else None for r in rows]


def read_versions(
    root: Path,
    walked: Walked,
    audited: dict[str, Any],
    read_lock: Callable[[bytes], dict[str, Any]],
    read_params: Callable[[bytes | None], dict[str, Any] | None],
) -> tuple[list[Version], dict[str, dict[str, Any]]]:
    """Each commit's version, then the workspace's (its dvc.lock, the params `audited`), and the
    stages of each distinct dvc.lock by blob id (the workspace's is HEAD's when its bytes are)."""
    commits, blobs = walked.commits, walked.blobs
    locks = {c.lock for c in commits if c.lock}
    stages = {b: read_lock(text) for b in locks if (text := blobs.get(b)) is not None}
    parsed = {b: read_params(blobs.get(b)) for b in {c.params for c in commits if c.params}}
    versions: list[Version] = []
    params_at: dict[str, dict[str, Any] | None] = {}
    for c in commits:
        params = parsed.get(c.params) if c.params else None
        if params is None and c.parents:  # absent or unreadable: the version before stays in force
            params = params_at.get(c.parents[0])
        params_at[c.id] = params
        versions.append(Version(c.id, c.parents, c.lock if c.lock in stages else None, params))
    file, key = root / "dvc.lock", None
    if file.is_file():
        text = file.read_bytes()
        key = next((b for b in stages if blobs[b] == text), WORKSPACE)
        if key not in stages:  # read once: the audit's lock is most often HEAD's
            stages[key] = read_lock(text)
    versions.append(Version(WORKSPACE, (walked.head,), key, audited))
    return versions, stages


def lineage(versions: Sequence[Version]) -> list[Version]:
    """The versions the audited one descends from, itself included (the last version, WORKSPACE), in
    the same order: what was in force or seen before it. Commits only other refs reach are left out."""
    keep = {WORKSPACE}
    for v in reversed(versions):  # children before parents
        if v.commit in keep:
            keep.update(v.parents)
    return [v for v in versions if v.commit in keep]


def reach(versions: Sequence[Version], own: Callable[[Version], frozenset[T]]) -> dict[str, frozenset[T]]:
    """Per version, the union of `own` over it and all its ancestors (parents come first)."""
    out: dict[str, frozenset[T]] = {}
    for v in versions:
        found = own(v)
        for p in v.parents:
            found = found | out.get(p, frozenset())
        out[v.commit] = found
    return out


def first(versions: Iterable[Version], holds: Callable[[Version], bool]) -> Version | None:
    """The first version (in topological order) for which `holds`."""
    return next((v for v in versions if holds(v)), None)

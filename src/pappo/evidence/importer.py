"""`pappo evidence import ZIP`: a release bundle as the source of a clone's published runs.

A fresh clone has no run folders (DVC outputs) and, without a DVC remote, nowhere to pull them
from; `dvc repro` would replace the published runs with the reader's own. The bundle holds every
output dvc.lock binds (run folders, the single-seed experiment, the base checkpoint, the lock
files, the audit stage's verdict). Importing checks the bundle (`verify_bundle`), that it is of
the clone's HEAD (else says which commit to check out), that its dvc.lock is the clone's and that
every output hashes to what dvc.lock records; only then it writes the objects into the DVC cache
(evidence/dvc_cache.py) and lets `dvc checkout` place them, so `dvc status` is up to date and
`pappo audit` / `pappo reproduce` work as on the machine that made the evidence.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pappo.config import load_params
from pappo.evidence import history
from pappo.evidence.bundle import checked, refuse
from pappo.evidence.bundle_check import (
    SOURCE,
    bundled_name,
    bundled_out,
    read_entries,
)
from pappo.evidence.defined_stages import current_outs, stale, stale_note
from pappo.evidence.dvc_cache import LockedOut, out_md5, read_out, store
from pappo.evidence.release import git_bytes
from pappo.io import PappoError, atomic_write_bytes, git


@dataclass(frozen=True)
class Imported:
    commit: str
    outs: int = 0  # DVC-cached outputs written to the cache and checked out
    files: int = 0
    tracked: int = 0  # outputs git tracks (cache: false), checked equal to the clone's


def _head_is_bundle(root: Path, meta: dict[str, object], lock: bytes) -> str:
    """The clone's HEAD, when it is the bundle's commit with the bundle's tree and dvc.lock."""
    top = git(root, "rev-parse", "--show-toplevel")
    at_top = top.returncode == 0 and Path(top.stdout.decode().strip()).resolve() == root
    if not at_top or not (root / "dvc.yaml").is_file():
        raise PappoError(
            f"{root} is not the top of a clone of the repository: run `pappo evidence import` "
            "there (git clone, then git checkout BUNDLE.json's commit); without a clone, "
            "`pappo audit --bundle ZIP` audits the bundle alone"
        )
    head = git_bytes(root, "rev-parse", "--verify", "HEAD^{commit}").decode().strip()
    commit = str(meta.get("commit"))
    if head != commit:
        raise PappoError(
            f"the bundle is the evidence of commit {commit}, but {root} is at {head}: run "
            f"`git checkout {commit}` (after `git fetch` if the clone lacks it), then import "
            "again"
        )
    tree = git_bytes(root, "rev-parse", "HEAD^{tree}").decode().strip()
    if meta.get("swhid_dir") != f"swh:1:dir:{tree}":
        raise PappoError(
            f"the bundle's source is tree {meta.get('swhid_dir')}, HEAD's is swh:1:dir:{tree}: "
            "the bundle does not belong to this repository's commit"
        )
    if (root / "dvc.lock").read_bytes() != lock:
        raise PappoError(
            f"{root / 'dvc.lock'} differs from the bundle's: restore the commit's "
            "(`git checkout -- dvc.lock`), then import again"
        )
    return head


def _tracked(root: Path, outs: list[LockedOut]) -> set[str]:
    listed = git_bytes(root, "ls-files", "-z", "--", *[o.path for o in outs]).decode().split("\0")
    return {o.path for o in outs for f in listed if f and (f == o.path or f.startswith(o.path + "/"))}


def _cache_dir(root: Path) -> Path:
    out = subprocess.run(["dvc", "cache", "dir"], cwd=root, capture_output=True, text=True)
    if out.returncode != 0:
        raise PappoError(
            f"`dvc cache dir` failed in {root}: {(out.stderr or out.stdout).strip()[-500:]}; "
            "install the pinned dvc (requirements.lock) and run this in the clone"
        )
    return (root / out.stdout.strip()).resolve()


Todo = list[tuple[LockedOut, dict[str, bytes]]]


def _history_agrees(root: Path, entries: dict[str, tuple[int, bytes]]) -> None:
    """The bundle's recorded tuning history must be this clone's own (read from its git)."""
    params = load_params(root / "params.yaml")
    entry = entries.get(history.HISTORY)
    record = history.from_record(entry[1] if entry else None, "the bundle")
    if not record.readable:
        return  # nothing recorded to compare (an older bundle, or made without git history): the audit says so
    why = history.disagreement(record, history.read_history(root, params.seeds, params.claims))
    if why is not None:
        raise PappoError(
            f"the bundle's history.json is not this clone's git history ({why}); nothing was "
            "written: the bundle or the history was altered, or this clone is shallow "
            "(`git fetch --unshallow`)"
        )


def lock_texts(entries: dict[str, tuple[int, bytes]]) -> tuple[bytes, bytes, bytes]:
    """The bundle's dvc.lock, dvc.yaml (the commit's, in source/) and params.yaml."""
    return tuple(entries.get(n, (0, b""))[1] for n in ("dvc.lock", f"{SOURCE}dvc.yaml", "params.yaml"))


def plan(root: Path, zip_path: Path, force: bool) -> tuple[str, Todo, int]:
    """Every check, nothing written: (HEAD, the cached outputs with their files, tracked outputs).
    Only the stages the commit's dvc.yaml defines count: stale lock entries are ignored."""
    problems = checked(zip_path)
    if problems:
        refuse(zip_path, problems)
    entries = read_entries(zip_path)
    head = _head_is_bundle(root, json.loads(entries["BUNDLE.json"][1]), entries["dvc.lock"][1])
    _history_agrees(root, entries)
    outs = current_outs(*lock_texts(entries))
    tracked = _tracked(root, outs)
    todo, missing, bad, conflicts = [], [], [], []
    for out in outs:
        files = bundled_out(entries, out)
        if files is None:
            missing.append(f"{bundled_name(out.path)} (stage {out.stage})")
            continue
        if (found := out_md5(files, out.is_dir)) != out.md5:
            bad.append(f"{bundled_name(out.path)}: md5 {found}, dvc.lock stage {out.stage} says {out.md5}")
        here = read_out(root / out.path)
        if out.path in tracked:
            if here != files:
                bad.append(
                    f"{out.path}: git tracks it and the clone's differs from the bundle's "
                    f"(`git checkout -- {out.path}`)"
                )
        elif here is not None and here != files and not force:
            conflicts.append(out.path)
        else:
            todo.append((out, files))
    why = "not in the bundle (made before `pappo evidence import`? rebuild it with `pappo release`)"
    if missing or bad:
        listed = "\n  - ".join([f"{m}: {why}" for m in missing] + bad)
        raise PappoError(f"the bundle cannot fill this clone; nothing was written:\n  - {listed}")
    if conflicts:
        raise PappoError(
            f"{len(conflicts)} outputs here differ from the published ones (first: "
            f"{conflicts[0]}), e.g. your own `dvc repro`; nothing was written: move them "
            "away, or pass --force to replace them with the bundle's"
        )
    return head, todo, len(tracked)


def import_bundle(
    root: Path, zip_path: Path, force: bool = False, log: Callable[[str], None] = print
) -> Imported:
    """Check, then fill the DVC cache and the workspace of the clone at `root` from the bundle."""
    root = Path(root).resolve()
    head, todo, tracked = plan(root, Path(zip_path), force)
    cache = _cache_dir(root)
    for out, files in todo:
        store(cache, files, out.is_dir)
    entries = read_entries(Path(zip_path))
    if old := stale(*lock_texts(entries)):
        log(stale_note(old))
    entry = entries.get(history.HISTORY)
    if entry is not None:  # the clone's audit checks it against the clone's history
        atomic_write_bytes(root / history.IMPORTED_HISTORY, entry[1])
    log(f"wrote {len(todo)} outputs ({sum(len(f) for _, f in todo)} files) into the DVC cache {cache}")
    if (
        todo
    ):  # every output of the pipeline, all now in the cache: one pass (40 targets by name took 8x longer)
        cmd = ["dvc", "checkout", "--force" if force else "--quiet"]
        done = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
        if done.returncode != 0:
            why = (done.stderr or done.stdout).strip()[-1500:]
            raise PappoError(f"`dvc checkout` failed in {root}: {why}")
    return Imported(commit=head, outs=len(todo), files=sum(len(f) for _, f in todo), tracked=tracked)

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
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pappo.config import load_params
from pappo.evidence import history
from pappo.evidence.bundle import verified
from pappo.evidence.bundle_check import bundled_md5s, bundled_name, bundled_out, lock_texts
from pappo.evidence.bundle_read import Bundle
from pappo.evidence.defined_stages import current_outs, stale, stale_note
from pappo.evidence.dvc_cache import LockedOut, read_out, store
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


Todo = list[tuple[LockedOut, dict[str, str]]]  # an output, its files' entry names by path inside it


def _history_agrees(root: Path, b: Bundle) -> None:
    """The bundle's recorded tuning history must be this clone's own (read from its git)."""
    params = load_params(root / "params.yaml")
    record = history.from_record(b.read(history.HISTORY), "the bundle")
    if not record.readable:
        return  # nothing recorded to compare (an older bundle, or made without git history): the audit says so
    why = history.disagreement(record, history.read_history(root, params.seeds, params.claims), clone=True)
    if why is not None:
        raise PappoError(
            f"the bundle's history.json is not this clone's git history ({why}); nothing was "
            "written: the bundle or the history was altered, or this clone is shallow "
            "(`git fetch --unshallow`)"
        )


def _unchanged(b: Bundle) -> None:
    """What was read again since the bundle verified is what verified (`Bundle.read` checks)."""
    if b.problems:
        raise PappoError(f"{b.path}: {b.problems[0]}; nothing more was written: download the bundle again")


def plan(root: Path, b: Bundle, force: bool) -> tuple[str, Todo, int]:
    """Every check of a verified bundle against the clone, nothing written: (HEAD, the cached
    outputs with their files' entry names, tracked outputs). Only the stages the commit's dvc.yaml defines
    count: stale lock entries are ignored."""
    meta, lock, texts = b.read("BUNDLE.json"), b.read("dvc.lock"), lock_texts(b)
    _unchanged(b)
    head = _head_is_bundle(root, json.loads(meta or b"{}"), lock or b"")
    _history_agrees(root, b)
    outs = current_outs(*texts)
    tracked = _tracked(root, outs)
    todo, missing, bad, conflicts = [], [], [], []
    for out in outs:
        names = bundled_out(b.entries, out)
        if names is None:
            missing.append(f"{bundled_name(out.path)} (stage {out.stage})")
            continue
        # what dvc.lock records: verify_bundle checked every output the bundle holds against it
        here, md5s = read_out(root / out.path), bundled_md5s(b, names)
        if out.path in tracked:
            if here != md5s:
                bad.append(
                    f"{out.path}: git tracks it and the clone's differs from the bundle's "
                    f"(`git checkout -- {out.path}`)"
                )
        elif here is not None and here != md5s and not force:
            conflicts.append(out.path)
        else:
            todo.append((out, names))
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


def _fill(b: Bundle, cache: Path, todo: Todo) -> None:
    """Each output's objects, streamed from the bundle into the DVC cache."""
    for out, names in todo:
        try:
            store(cache, bundled_md5s(b, names), out.is_dir, lambda rel, names=names: b.open(names[rel]))
        except (OSError, zipfile.BadZipFile, zlib.error, EOFError) as e:
            raise PappoError(f"{bundled_name(out.path)}: cannot be copied from the bundle ({e})") from None


def import_bundle(
    root: Path, zip_path: Path, force: bool = False, log: Callable[[str], None] = print
) -> Imported:
    """Check, then fill the DVC cache and the workspace of the clone at `root` from the bundle."""
    root = Path(root).resolve()
    with verified(Path(zip_path)) as b:
        head, todo, tracked = plan(root, b, force)
        cache = _cache_dir(root)
        _fill(b, cache, todo)
        if old := stale(*lock_texts(b)):
            log(stale_note(old))
        recorded = b.read(history.HISTORY)
        _unchanged(b)
    if recorded is not None:  # the clone's audit checks it against the clone's history
        atomic_write_bytes(root / history.IMPORTED_HISTORY, recorded)
    n_files = sum(len(m) for _, m in todo)
    log(f"wrote {len(todo)} outputs ({n_files} files) into the DVC cache {cache}")
    if (
        todo
    ):  # every output of the pipeline, all now in the cache: one pass (40 targets by name took 8x longer)
        cmd = ["dvc", "checkout", "--force" if force else "--quiet"]
        done = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
        if done.returncode != 0:
            why = (done.stderr or done.stdout).strip()[-1500:]
            raise PappoError(f"`dvc checkout` failed in {root}: {why}")
    return Imported(commit=head, outs=len(todo), files=n_files, tracked=tracked)

"""Validate the benchmark and the warm-up set together (`pappo validate`): every problem of either set
and of their overlap is reported at once, and any old lock file (and grade table) is removed first,
so a failed validation never leaves a lock that vouches for data it did not check."""

from __future__ import annotations

from pathlib import Path

from pappo.config import Params
from pappo.io import PappoError
from pappo.tasks.grade_table import grades_path
from pappo.tasks.models import FamilyLock
from pappo.tasks.validate import Validated, ValidationFailed, validate_set

SETS = ("repofix", "warmup")


def validate_sets(params: Params) -> dict[str, Validated]:
    """Both sets validated, by name; a PappoError listing every problem if any set (or their overlap)
    has one. The sets' lock files are removed first and left to the caller to write."""
    locks: dict[str, Validated] = {}
    problems: list[str] = []
    for name in SETS:
        Path(getattr(params.tasks, name).lock).unlink(missing_ok=True)  # never leave a stale lock
        grades_path(getattr(params.tasks, name).lock).unlink(missing_ok=True)
    for name in SETS:
        try:
            locks[name] = validate_set(name, params)
        except ValidationFailed as e:
            problems += [f"[{name}] {m}" for m in e.errors]
        except PappoError as e:  # the other set is still checked: one report names everything
            problems.append(f"[{name}] {e}")
    if len(locks) == 2:
        problems += overlap(locks["repofix"].lock.families, locks["warmup"].lock.families)
    if problems:
        raise PappoError(
            "validation failed; no lock file written:\n" + "\n".join(f"  - {p}" for p in problems)
        )
    return locks


def overlap(bench: dict[str, FamilyLock], warm: dict[str, FamilyLock]) -> list[str]:
    """Problems where a warm-up family is also a benchmark family, by name or by the same tree
    (`tree_sha256`): the two sets must not share a family."""
    same_name = sorted(set(bench) & set(warm))
    bench_hashes = {v.tree_sha256: k for k, v in bench.items()}
    same_tree = sorted(
        f"{k} = {bench_hashes[v.tree_sha256]}" for k, v in warm.items() if v.tree_sha256 in bench_hashes
    )
    out = [f"warm-up family {f} is also a benchmark family; rename or remove it" for f in same_name]
    return out + [f"warm-up family has the same tree as a benchmark family: {s}" for s in same_tree]

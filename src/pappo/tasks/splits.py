"""Per-seed splits BY FAMILY: held-out families never contribute a task to training."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pappo.config import Params
from pappo.io import PappoError, sha256_file
from pappo.tasks.models import ManifestLock, Split, Task


def family_order(families: list[str], seed: int) -> list[str]:
    """A seeded permutation that does not depend on Python's hash seed or version."""
    return sorted(families, key=lambda f: hashlib.sha256(f"split:{seed}:{f}".encode()).hexdigest())


def make_split(tasks: list[Task], seed: int, n_train: int, n_eval: int) -> Split:
    families = sorted({t.family for t in tasks})
    if n_train + n_eval != len(families):
        raise PappoError(
            f"params.yaml tasks.n_train_families ({n_train}) + tasks.n_eval_families ({n_eval}) "
            f"must equal the {len(families)} families of the manifest; change one of them"
        )
    order = family_order(families, seed)
    eval_f = sorted(order[:n_eval])
    train_f = sorted(order[n_eval:])
    return Split(
        train_families=train_f,
        eval_families=eval_f,
        train_instance_ids=sorted(t.instance_id for t in tasks if t.family in train_f),
        eval_instance_ids=sorted(t.instance_id for t in tasks if t.family in eval_f),
    )


def read_split(params: Params, seed: int) -> tuple[str, list[str], list[str]]:
    """(lock sha256, train ids, eval ids) of `seed` from the validated lock."""
    path = Path(params.tasks.repofix.lock)
    if not path.is_file():
        raise PappoError(f"{path} is missing: run `pappo validate` (dvc repro validate) first")
    lock = ManifestLock.model_validate(json.loads(path.read_text()))
    if seed not in lock.splits:
        raise PappoError(
            f"{path}: no split for seed {seed} (have {sorted(lock.splits)}); add the seed to "
            "params.yaml `seeds` and rerun validate, or pick one of those"
        )
    split = lock.splits[seed]
    return sha256_file(path), list(split.train_instance_ids), list(split.eval_instance_ids)

"""What a bundle's parts must agree on, checked alike by `verify_bundle` (on its entries) and by the
bundle's audit (on the unpacked files): the top-level copies are `source/`'s (the commit's), the
params each dvc.lock stage recorded are params.yaml's, and history.json is a readable tuning history
that agrees with the dvc.lock-bound verdict of the audit stage. SHA256SUMS and swhid_dir are
recomputed as easily as any file is edited, so only such agreement tells an edit."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import yaml

from pappo.evidence.bundle_read import SOURCE
from pappo.evidence.committed import lock_stages
from pappo.evidence.defined_stages import stale
from pappo.evidence.history import HISTORY, History, disagreement, from_record
from pappo.evidence.printable import one_line

# a bundle entry's bytes by name (None: not in the bundle)
Read = Callable[[str], bytes | None]
# (file, message) of one disagreement
Problem = tuple[str, str]

# the top-level files that are also the commit's (source/ holds them): the same bytes
TOP_FILES = ("params.yaml", "dvc.lock", "CITATION.cff", ".zenodo.json")
# The audit stage's own output (receipts/audit.json, bound by dvc.lock) travels under this name: in
# the bundle, receipts/audit.json is the release's verdict of the commit (scope "commit").
STAGE_VERDICT = "receipts/audit.stage.json"


def copy_problems(read: Read) -> list[Problem]:
    """Each of TOP_FILES at the bundle's top is byte for byte its copy in source/."""
    problems = []
    for name in TOP_FILES:
        top, committed = read(name), read(SOURCE + name)
        if top is not None and top != committed:
            state = "is missing" if committed is None else "differs"
            problems.append(
                (
                    name,
                    f"source/{name} (the released commit's copy) {state}: the bundle's {name} is not "
                    "the commit's; download the bundle again or rebuild it with `pappo release`",
                )
            )
    return problems


def _lookup(values: Any, key: str) -> Any:
    """params.yaml's value at a dotted key as DVC records it (`rl`, `base_model.seed`); a sentinel
    when absent."""
    for part in key.split("."):
        if not isinstance(values, dict) or part not in values:
            return "(absent)"
        values = values[part]
    return values


def lock_param_problems(lock: bytes, dvc_yaml: bytes, params: bytes) -> list[Problem]:
    """Every stage dvc.yaml defines ran with the params.yaml values dvc.lock records for it: they
    are params.yaml's, else params were edited after the runs (claims' bars, seeds)."""
    try:
        stages, values = lock_stages(lock), yaml.safe_load(params)
    except (yaml.YAMLError, AttributeError):
        return []  # an unreadable file is named by the checks that read it
    old = set(stale(lock, dvc_yaml, params))
    problems = []
    for name, body in sorted(stages.items()):
        recorded = (body.get("params") or {}).get("params.yaml") if isinstance(body, dict) else None
        if name in old or not isinstance(recorded, dict):
            continue
        keys = [k for k, v in recorded.items() if _lookup(values, str(k)) != v]
        if keys:
            problems.append(
                (
                    "params.yaml",
                    f"{', '.join(map(str, keys))} differ from what dvc.lock records that stage {name} "
                    "ran with: params edited after the runs are not the released commit's",
                )
            )
    return problems


def history_problems(read: Read) -> list[Problem]:
    """history.json is present and a readable tuning history (claims are labelled from it: without
    one, tuned claims would pass as confirmatory), and it agrees with the audit stage's verdict."""
    data = read(HISTORY)
    if data is None:
        return [(HISTORY, "missing: the bundle carries no tuning history; rebuild it with `pappo release`")]
    record = from_record(data, "the bundle")
    if not record.readable:
        why = f"not a readable tuning history ({one_line(record.reason)})"
        return [(HISTORY, f"{why}: claims cannot be told from tuned ones; release from a full clone")]
    try:
        stated = json.loads(read(STAGE_VERDICT) or b"null")
        raw = stated.get("history") if isinstance(stated, dict) else None
        stage = None if raw is None else History.model_validate(raw)
    except ValueError:
        return [(STAGE_VERDICT, "not a verdict with a tuning history")]
    # the stage ran before its commit: a first repro has no committed dvc.lock to read yet
    why = None if stage is None or not stage.readable else disagreement(record, stage)
    return [] if why is None else [(HISTORY, f"disagrees with {STAGE_VERDICT}'s history ({one_line(why)})")]


def agreement_problems(read: Read) -> list[Problem]:
    """Every disagreement of this module's checks; staleness is judged by the commit's copies."""
    texts = (read("dvc.lock"), read(f"{SOURCE}dvc.yaml"), read(f"{SOURCE}params.yaml"))
    lock, dvc_yaml, params = (t or b"" for t in texts)
    return [*copy_problems(read), *lock_param_problems(lock, dvc_yaml, params), *history_problems(read)]

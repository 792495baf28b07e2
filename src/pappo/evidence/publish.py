"""`pappo release`: audit HEAD (unless a verdict of it is given), build the evidence bundle
(evidence/release.py), record what was built, and deposit it on Zenodo (evidence/zenodo.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from pappo.config import load_params
from pappo.evidence import zenodo
from pappo.evidence.release import BundleInfo, build_bundle
from pappo.io import atomic_write_json


def release(
    root: Path,
    out: Path,
    audit_path: Path | None,
    params_path: Path,
    runs: Path,
    base: Path,
    record: Path | None = None,
    log: Callable[[str], None] = print,
) -> BundleInfo:
    """The bundle of HEAD built into `out`, from the verdict `audit_path` or, when None, from an audit
    of HEAD run now and written to `out`/audit.json; `record` (if given) gets what was built."""
    if audit_path is None:
        from pappo.evidence.audit import audit

        verdict = audit(load_params(params_path), root, runs, base, root / "schemas")
        audit_path = out / "audit.json"
        atomic_write_json(audit_path, verdict.model_dump(mode="json"))
        log(verdict.verdict)
    info = build_bundle(root, out, audit_path)
    if record is not None:
        atomic_write_json(record, {**dataclasses.asdict(info), "path": info.path.as_posix()})
    return info


def deposit(root: Path, bundle: Path, sandbox: bool, token: str, publish: bool, timeout: float) -> str:
    """Upload `bundle` with the repository's Zenodo metadata; the line saying what was deposited."""
    meta = zenodo.load_metadata(root)
    answer = zenodo.upload(bundle, meta, zenodo.base_url(sandbox), token, publish, timeout)
    link = (answer.get("links") or {}).get("html", "")
    done = f"published, doi {answer.get('doi')}" if publish else "draft ready for review"
    return f"zenodo deposition {answer.get('id')}: {done} {link}"

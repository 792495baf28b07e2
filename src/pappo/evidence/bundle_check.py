"""A bundle's layout (entry names, git tree ids) and `verify_bundle`, what a reader runs on it.

The builder (evidence/release.py) writes this layout and checks its zip here before keeping it; a
reviewer's `pappo verify-bundle`, `pappo audit --bundle` and `pappo evidence import` check the same
way, offline: SHA256SUMS, the SWHIDs against `source/`, every run's receipt, dvc.lock's md5s and the
audit verdict, all from the digests evidence/bundle_read.py takes in one streaming pass. Layout and
checks in detail: docs/release.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import stat
import zipfile
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import yaml

from pappo.evidence.bundle_agree import STAGE_VERDICT, TOP_FILES, agreement_problems
from pappo.evidence.bundle_inputs import BundleMeta, shape_problem
from pappo.evidence.bundle_read import SOURCE, Bundle, Entry, scan
from pappo.evidence.defined_stages import current_outs, stale
from pappo.evidence.dvc_cache import LockedOut, out_md5
from pappo.evidence.history import HISTORY
from pappo.evidence.printable import printable
from pappo.evidence.release_notes import release_notes
from pappo.experiment.receipt import Receipt, check_receipt
from pappo.io import git_blob_hasher

SUMS = "SHA256SUMS"
REQUIRED = (
    *TOP_FILES,
    "BUNDLE.json",
    "RELEASE_NOTES.md",
    "receipts/audit.json",
    SUMS,
)  # history.json: bundle_agree
_HEX40 = re.compile(r"[0-9a-f]{40}")
UNBOUND = (
    "bound by nothing (not source/'s copy of a committed file, not in an output dvc.lock records): "
    "`pappo release` packs no such file; remove it or rebuild the bundle"
)


# ------------------------------------------------------------------------------ SWH / git trees
def git_tree_id(files: dict[str, tuple[int, bytes]]) -> str:
    """git's tree id (= SWH directory id) of {posix path: (zip mode, bytes)}; symlinks hold their target."""
    return tree_id({path: (mode, blob_id(data)) for path, (mode, data) in files.items()})


def blob_id(data: bytes) -> bytes:
    """git's blob id of a file's bytes (raw sha1)."""
    blob = git_blob_hasher(len(data))
    blob.update(data)
    return blob.digest()


def tree_id(blobs: dict[str, tuple[int, bytes]]) -> str:
    """git's tree id of {posix path: (zip mode, blob id)}."""
    root: dict[str, Any] = {}
    for path, (mode, blob) in blobs.items():
        *dirs, name = path.split("/")
        node = root
        for d in dirs:
            node = node.setdefault(d, {})
            if not isinstance(node, dict):
                raise ValueError(f"{path}: a parent folder is also a file")
        if name in node:
            raise ValueError(f"{path}: both a file and a folder")
        node[name] = (mode, blob)
    return _tree(root).hex()


def _tree(node: dict[str, Any]) -> bytes:
    rows = []
    for name, child in node.items():
        if isinstance(child, dict):
            rows.append((name.encode() + b"/", b"40000 " + name.encode() + b"\0" + _tree(child)))
        else:
            mode, blob = child
            git_mode = b"120000" if stat.S_ISLNK(mode) else b"100755" if mode & 0o111 else b"100644"
            rows.append((name.encode(), git_mode + b" " + name.encode() + b"\0" + blob))
    body = b"".join(entry for _, entry in sorted(rows))
    return hashlib.sha1(b"tree %d\0" % len(body) + body).digest()


# ---------------------------------------------------------------------------------- entries
def bundled_name(path: str) -> str:
    """The bundle entry holding the repository file `path` (the audit stage's verdict is renamed)."""
    return STAGE_VERDICT if path == "receipts/audit.json" else path


def bundled_out(entries: dict[str, Entry], out: LockedOut) -> dict[str, str] | None:
    """The entry names holding a dvc.lock output, by path inside it ({"": name} for a file); None
    when the bundle does not hold it."""
    if not out.is_dir:
        name = bundled_name(out.path)
        return {"": name} if name in entries else None
    prefix = out.path.rstrip("/") + "/"
    files = {name[len(prefix) :]: name for name in entries if name.startswith(prefix)}
    return files or None


def lock_texts(b: Bundle) -> tuple[bytes, bytes, bytes]:
    """The bundle's dvc.lock, and the commit's dvc.yaml and params.yaml (source/'s: the top copy is
    checked against it, never trusted to say which stages are stale); b"" when absent."""
    return tuple(b.read(n) or b"" for n in ("dvc.lock", f"{SOURCE}dvc.yaml", f"{SOURCE}params.yaml"))


def bundled_md5s(b: Bundle, names: dict[str, str]) -> dict[str, str]:
    """The md5 of each file of an output (`bundled_out`'s entry names), by path inside it."""
    return {rel: b.entries[name].md5 for rel, name in names.items()}


# ----------------------------------------------------------------------------------- verifying
def _check_sums(b: Bundle) -> None:
    listed: dict[str, str] = {}
    for n, line in enumerate((b.read(SUMS) or b"").decode(errors="replace").splitlines(), 1):
        m = re.fullmatch(r"([0-9a-f]{64})  (.+)", line)
        if m is None:
            b.problems.append(f"{SUMS} line {n} is not `<sha256>  <path>`: {line[:80]!r}")
        else:
            listed[m[2]] = m[1]
    for name, expected in sorted(listed.items()):
        if name not in b.entries:
            b.problems.append(f"{name}: listed in {SUMS} but missing from the bundle")
        elif (found := b.entries[name].sha256) != expected:
            b.problems.append(f"{name}: sha256 {found}, {SUMS} says {expected} (changed)")
    b.problems += [
        f"{name}: in the bundle but not listed in {SUMS}"
        for name in sorted(set(b.entries) - set(listed) - {SUMS})
    ]


def _check_ids(b: Bundle) -> dict[str, Any]:
    try:
        bundle = json.loads(b.read("BUNDLE.json") or b"")
    except ValueError as e:
        b.problems.append(f"BUNDLE.json: not JSON ({e})")
        return {}
    if why := shape_problem("BUNDLE.json", b.read("BUNDLE.json") or b"", BundleMeta):
        b.problems.append(f"BUNDLE.json: {why}")
        return {}
    commit = str(bundle.get("commit"))
    if not _HEX40.fullmatch(commit) or bundle.get("swhid_rev") != f"swh:1:rev:{commit}":
        b.problems.append(
            f"BUNDLE.json: swhid_rev {bundle.get('swhid_rev')!r} is not swh:1:rev: + the 40-hex commit {commit!r}"
        )
    source = {k[len(SOURCE) :]: (e.mode, e.blob) for k, e in b.entries.items() if k.startswith(SOURCE)}
    try:
        found = f"swh:1:dir:{tree_id(source)}" if source else "no source/ files"
    except ValueError as e:
        found = f"no git tree ({e})"
    if found != bundle.get("swhid_dir"):
        b.problems.append(
            f"source/: the files hash to {found}, BUNDLE.json says swhid_dir {bundle.get('swhid_dir')}"
        )
    return bundle


def _is_receipt(parts: list[str]) -> bool:
    """`reports/runs/seed_*/<method>/receipt.json`, or the single-seed experiment's
    `reports/experiment/<method>/receipt.json`: each binds its run's files."""
    if parts[:2] == ["reports", "runs"]:
        return len(parts) == 5 and fnmatchcase(parts[2], "seed_*") and parts[4] == "receipt.json"
    return parts[:2] == ["reports", "experiment"] and len(parts) == 4 and parts[3] == "receipt.json"


def _run_receipts(b: Bundle) -> list[str]:
    """The run receipts among the bundle's entries (`_is_receipt`)."""
    return [name for name in sorted(b.entries) if _is_receipt(name.split("/"))]


def _check_runs(b: Bundle) -> None:
    """Each run's receipt against the digests of its folder's entries; dvc.lock's md5 of every
    output the bundle holds (the report files, the base checkpoint too)."""
    receipts = _run_receipts(b)
    if not any(name.startswith("reports/runs/") for name in receipts):
        b.problems.append("reports/runs: no run receipt in the bundle")
    for name in receipts:
        run = name.rsplit("/", 1)[0]
        try:
            receipt = Receipt.model_validate_json(b.read(name) or b"")
        except ValueError as e:
            b.problems.append(f"{run}/receipt.json: not a valid receipt ({str(e).splitlines()[0]})")
            continue
        found = {n[len(run) + 1 :]: e.sha256 for n, e in b.entries.items() if n.startswith(run + "/")}
        b.problems += [f"{run}: {p}" for p in check_receipt(receipt, found)]
    try:
        outs = current_outs(*lock_texts(b))
    except (yaml.YAMLError, AttributeError) as e:
        b.problems.append(f"dvc.lock: not a DVC lock file ({str(e).splitlines()[0]})")
        return
    for out in outs:
        names = bundled_out(b.entries, out)
        if names is not None and (found := out_md5(bundled_md5s(b, names), out.is_dir)) != out.md5:
            b.problems.append(
                f"{bundled_name(out.path)}: md5 {found}, dvc.lock stage {out.stage} says {out.md5}"
            )


def _check_bound(b: Bundle) -> None:
    """Every entry is bound by something verify checks: the release's own files, source/, a file
    equal to its source/ copy (committed evidence), or a file of an output dvc.lock records. Any
    other file (a note "every claim holds" beside the runs) is a statement no check covers."""
    bound = {*REQUIRED, HISTORY}
    try:
        outs = current_outs(*lock_texts(b))
    except (yaml.YAMLError, AttributeError):
        outs = []  # _check_runs names an unreadable dvc.lock
    for out in outs:
        bound.update((bundled_out(b.entries, out) or {}).values())
    for name, entry in sorted(b.entries.items()):
        copy = b.entries.get(SOURCE + name)
        if name in bound or name.startswith(SOURCE) or (copy is not None and copy.blob == entry.blob):
            continue
        b.problems.append(f"{name}: {UNBOUND}")


def _check_agree(b: Bundle, bundle: dict[str, Any], verdict: Any) -> None:
    """history.json, the packaged verdict's history and claims, and BUNDLE.json's claims are one
    release's: SHA256SUMS is recomputed as easily as any of them is edited, so they must agree."""
    from pappo.evidence.history import disagreement, from_record

    if verdict.history is not None:
        why = disagreement(from_record(b.read(HISTORY), "the bundle"), verdict.history)
        if why is not None:
            b.problems.append(f"{HISTORY} disagrees with receipts/audit.json's history ({why})")
    labels = {c.id: c.label for c in verdict.claims}
    stated = (bundle.get("audit") or {}).get("verdicts") if bundle else None
    if stated is not None and stated != labels:
        b.problems.append(f"BUNDLE.json's claim verdicts {stated} differ from receipts/audit.json's {labels}")


def _check_audit(b: Bundle, bundle: dict[str, Any]) -> None:
    from pappo.evidence.audit import AuditVerdict  # numpy, jsonschema: only when needed

    try:
        verdict = AuditVerdict.model_validate_json(b.read("receipts/audit.json") or b"")
    except ValueError as e:
        b.problems.append(f"receipts/audit.json: not a valid audit verdict ({str(e).splitlines()[0]})")
        return
    _check_agree(b, bundle, verdict)
    if bundle:
        _check_notes(b, bundle, verdict)
    if not verdict.integrity_ok:
        b.problems.append("receipts/audit.json: integrity_ok is false")
    if bundle and verdict.head != bundle.get("commit"):
        b.problems.append(
            f"receipts/audit.json: audited {verdict.head}, the bundle's commit is {bundle.get('commit')}"
        )


def _check_notes(b: Bundle, bundle: dict[str, Any], verdict: Any) -> None:
    """RELEASE_NOTES.md is what BUNDLE.json, reports/summary.json and receipts/audit.json render
    (release_notes.py): notes edited to say more than the evidence (a claim marked HOLDS) fail."""
    from pappo.evidence.summary_models import Summary  # numpy: only when needed

    try:
        summary = Summary.model_validate_json(b.read("reports/summary.json") or b"")
    except ValueError as e:
        b.problems.append(f"reports/summary.json: not a valid summary ({str(e).splitlines()[0]})")
        return
    want = release_notes(bundle, summary, verdict, stale(*lock_texts(b)))
    if b.read("RELEASE_NOTES.md") != want.encode():
        b.problems.append(
            "RELEASE_NOTES.md: not the notes BUNDLE.json, reports/summary.json and receipts/audit.json "
            "render (release_notes.py): it was edited; download the bundle again or rebuild it with "
            "`pappo release`"
        )


def verify(b: Bundle) -> list[str]:
    """Hashes, SWHIDs, run receipts and the audit of a scanned bundle; every problem, the reading's
    included ([] when all hold)."""
    missing = [name for name in REQUIRED if name not in b.entries]
    b.problems += [f"{name}: missing from the bundle" for name in missing]
    if SUMS not in missing:
        _check_sums(b)
    bundle = _check_ids(b) if "BUNDLE.json" not in missing else {}
    _check_runs(b)
    _check_bound(b)
    if "receipts/audit.json" not in missing:
        _check_audit(b, bundle)
    b.problems += [f"{name}: {why}" for name, why in agreement_problems(b.read)]
    return b.problems


def verify_bundle(zip_path: Path) -> list[str]:
    """`verify` of the bundle at `zip_path` (the zip, or the folder it was unpacked to), offline."""
    try:
        b = scan(Path(zip_path))
    except (OSError, zipfile.BadZipFile) as e:
        return [f"{zip_path}: cannot read the zip ({e})"]
    with contextlib.closing(b):
        return [printable(p) for p in verify(b)]  # a bundle's text, shown on a terminal

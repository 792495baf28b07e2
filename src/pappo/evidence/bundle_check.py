"""A bundle's layout (entry names, modes, git tree ids) and `verify_bundle`, what a reader runs on it.

The builder (evidence/release.py) writes this layout and checks its zip here before keeping it; a
reviewer's `pappo verify-bundle`, `pappo audit --bundle` and `pappo evidence import` check the same
way, offline: SHA256SUMS, the SWHIDs against `source/`, every run's receipt, dvc.lock's md5s and the
audit verdict. Layout and checks in detail: docs/release.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

import yaml

from pappo.evidence.dvc_cache import LockedOut, locked_outs, out_md5
from pappo.experiment.receipt import Receipt, verify_receipt
from pappo.io import sha256_bytes

SOURCE = "source/"
SUMS = "SHA256SUMS"
REGULAR, EXECUTABLE, SYMLINK = stat.S_IFREG | 0o644, stat.S_IFREG | 0o755, stat.S_IFLNK | 0o777
TOP_FILES = ("params.yaml", "dvc.lock", "CITATION.cff", ".zenodo.json")
REQUIRED = (*TOP_FILES, "BUNDLE.json", "RELEASE_NOTES.md", "receipts/audit.json", SUMS)
# The audit stage's own output (receipts/audit.json, bound by dvc.lock) travels under this name: in
# the bundle, receipts/audit.json is the release's verdict of the commit (scope "commit").
STAGE_VERDICT = "receipts/audit.stage.json"
_HEX40 = re.compile(r"[0-9a-f]{40}")


# ------------------------------------------------------------------------------ SWH / git trees
def git_tree_id(files: dict[str, tuple[int, bytes]]) -> str:
    """git's tree id (= SWH directory id) of {posix path: (zip mode, bytes)}; symlinks hold their target."""
    root: dict[str, Any] = {}
    for path, (mode, data) in files.items():
        *dirs, name = path.split("/")
        node = root
        for d in dirs:
            node = node.setdefault(d, {})
            if not isinstance(node, dict):
                raise ValueError(f"{path}: a parent folder is also a file")
        if name in node:
            raise ValueError(f"{path}: both a file and a folder")
        node[name] = (mode, data)
    return _tree(root).hex()


def _tree(node: dict[str, Any]) -> bytes:
    rows = []
    for name, child in node.items():
        if isinstance(child, dict):
            rows.append((name.encode() + b"/", b"40000 " + name.encode() + b"\0" + _tree(child)))
        else:
            mode, data = child
            git_mode = b"120000" if stat.S_ISLNK(mode) else b"100755" if mode & 0o111 else b"100644"
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data).digest()
            rows.append((name.encode(), git_mode + b" " + name.encode() + b"\0" + blob))
    body = b"".join(entry for _, entry in sorted(rows))
    return hashlib.sha1(b"tree %d\0" % len(body) + body).digest()


# ---------------------------------------------------------------------------------- entries
def bundled_name(path: str) -> str:
    """The bundle entry holding the repository file `path` (the audit stage's verdict is renamed)."""
    return STAGE_VERDICT if path == "receipts/audit.json" else path


def bundled_out(entries: dict[str, tuple[int, bytes]], out: LockedOut) -> dict[str, bytes] | None:
    """The files of a dvc.lock output in the bundle ({"": bytes} for a file, {relpath: bytes} for a
    directory); None when the bundle does not hold it."""
    if not out.is_dir:
        entry = entries.get(bundled_name(out.path))
        return None if entry is None else {"": entry[1]}
    prefix = out.path.rstrip("/") + "/"
    files = {name[len(prefix) :]: data for name, (_, data) in entries.items() if name.startswith(prefix)}
    return files or None


# ----------------------------------------------------------------------------------- verifying
def _read_bundle(zip_path: Path, problems: list[str]) -> dict[str, tuple[int, bytes]]:
    """Every entry {name: (mode, bytes)}; unsafe or repeated names are problems and left out."""
    entries: dict[str, tuple[int, bytes]] = {}
    if Path(zip_path).is_dir():  # an unpacked bundle: its files (a symlink holds its target, as in the zip)
        for path in sorted(Path(zip_path).rglob("*")):
            rel = path.relative_to(zip_path).as_posix()
            if path.is_symlink():
                entries[rel] = (SYMLINK, os.readlink(path).encode())
            elif path.is_file() and "__pycache__" not in rel.split("/"):
                entries[rel] = (EXECUTABLE if path.stat().st_mode & 0o111 else REGULAR, path.read_bytes())
        return entries
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            name, parts = info.filename, info.filename.split("/")
            if info.is_dir():
                continue
            if name.startswith("/") or "\\" in name or ".." in parts or "" in parts:
                problems.append(f"{name}: unsafe path in the archive; left out")
            elif name in entries:
                problems.append(f"{name}: appears twice in the archive")
            else:
                try:
                    entries[name] = (info.external_attr >> 16 or REGULAR, zf.read(info))
                except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as e:
                    problems.append(f"{name}: unreadable in the archive ({e})")
    return entries


def read_entries(path: Path) -> dict[str, tuple[int, bytes]]:
    """A bundle's entries {name: (mode, bytes)} (zip or unpacked folder); run verify_bundle first."""
    return _read_bundle(Path(path), [])


def _check_sums(entries: dict[str, tuple[int, bytes]], problems: list[str]) -> None:
    listed: dict[str, str] = {}
    for n, line in enumerate(entries.get(SUMS, (0, b""))[1].decode(errors="replace").splitlines(), 1):
        m = re.fullmatch(r"([0-9a-f]{64})  (.+)", line)
        if m is None:
            problems.append(f"{SUMS} line {n} is not `<sha256>  <path>`: {line[:80]!r}")
        else:
            listed[m[2]] = m[1]
    for name, expected in sorted(listed.items()):
        if name not in entries:
            problems.append(f"{name}: listed in {SUMS} but missing from the bundle")
        elif (found := sha256_bytes(entries[name][1])) != expected:
            problems.append(f"{name}: sha256 {found}, {SUMS} says {expected} (changed)")
    problems += [
        f"{name}: in the bundle but not listed in {SUMS}"
        for name in sorted(set(entries) - set(listed) - {SUMS})
    ]


def _check_ids(entries: dict[str, tuple[int, bytes]], problems: list[str]) -> dict[str, Any]:
    try:
        bundle = json.loads(entries["BUNDLE.json"][1])
    except ValueError as e:
        problems.append(f"BUNDLE.json: not JSON ({e})")
        return {}
    commit = str(bundle.get("commit"))
    if not _HEX40.fullmatch(commit) or bundle.get("swhid_rev") != f"swh:1:rev:{commit}":
        problems.append(
            f"BUNDLE.json: swhid_rev {bundle.get('swhid_rev')!r} is not swh:1:rev: + the 40-hex commit {commit!r}"
        )
    source = {k[len(SOURCE) :]: v for k, v in entries.items() if k.startswith(SOURCE)}
    try:
        found = f"swh:1:dir:{git_tree_id(source)}" if source else "no source/ files"
    except ValueError as e:
        found = f"no git tree ({e})"
    if found != bundle.get("swhid_dir"):
        problems.append(
            f"source/: the files hash to {found}, BUNDLE.json says swhid_dir {bundle.get('swhid_dir')}"
        )
    return bundle


def _check_runs(entries: dict[str, tuple[int, bytes]], problems: list[str]) -> None:
    """Each run's receipt against its unpacked files; dvc.lock's md5 of the report files."""
    with tempfile.TemporaryDirectory(prefix="pappo-verify-") as tmp:
        for name, (_, data) in entries.items():
            if name.startswith("reports/"):
                try:
                    (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
                    (Path(tmp) / name).write_bytes(data)
                except OSError as e:
                    problems.append(f"{name}: cannot be unpacked ({e.strerror})")
        receipts = sorted(Path(tmp).glob("reports/runs/seed_*/*/receipt.json"))
        if not receipts:
            problems.append("reports/runs: no run receipt in the bundle")
        for path in receipts:
            run = path.parent.relative_to(tmp).as_posix()
            try:
                receipt = Receipt.model_validate_json(path.read_bytes())
            except ValueError as e:
                problems.append(f"{run}/receipt.json: not a valid receipt ({str(e).splitlines()[0]})")
                continue
            problems += [f"{run}: {p}" for p in verify_receipt(path.parent, receipt)]
    try:
        outs = locked_outs(entries.get("dvc.lock", (0, b""))[1])
    except (yaml.YAMLError, AttributeError) as e:
        problems.append(f"dvc.lock: not a DVC lock file ({str(e).splitlines()[0]})")
        return
    for out in outs:  # every output the bundle holds, files and directories (the base checkpoint too)
        files = bundled_out(entries, out)
        if files is not None and (found := out_md5(files, out.is_dir)) != out.md5:
            name = bundled_name(out.path)
            problems.append(f"{name}: md5 {found}, dvc.lock stage {out.stage} says {out.md5}")


def _check_audit(entries: dict[str, tuple[int, bytes]], bundle: dict[str, Any], problems: list[str]) -> None:
    from pappo.evidence.audit import AuditVerdict  # numpy, jsonschema: only when needed

    try:
        verdict = AuditVerdict.model_validate_json(entries["receipts/audit.json"][1])
    except ValueError as e:
        problems.append(f"receipts/audit.json: not a valid audit verdict ({str(e).splitlines()[0]})")
        return
    if not verdict.integrity_ok:
        problems.append("receipts/audit.json: integrity_ok is false")
    if bundle and verdict.head != bundle.get("commit"):
        problems.append(
            f"receipts/audit.json: audited {verdict.head}, the bundle's commit is {bundle.get('commit')}"
        )


def verify_bundle(zip_path: Path) -> list[str]:
    """Hashes, SWHIDs, run receipts and the audit of a bundle (the zip, or the folder it was unpacked
    to), offline; [] when all hold."""
    problems: list[str] = []
    try:
        entries = _read_bundle(Path(zip_path), problems)
    except (OSError, zipfile.BadZipFile) as e:
        return [f"{zip_path}: cannot read the zip ({e})"]
    missing = [name for name in REQUIRED if name not in entries]
    problems += [f"{name}: missing from the bundle" for name in missing]
    if SUMS not in missing:
        _check_sums(entries, problems)
    bundle = _check_ids(entries, problems) if "BUNDLE.json" not in missing else {}
    _check_runs(entries, problems)
    if "receipts/audit.json" not in missing:
        _check_audit(entries, bundle, problems)
    return problems

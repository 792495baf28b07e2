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

from pappo.evidence.defined_stages import current_outs
from pappo.evidence.dvc_cache import LockedOut, out_md5
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
MODES = (REGULAR, EXECUTABLE, SYMLINK)
# What a bundle may unpack to: its largest entry today is the tiny base checkpoint (~5 MB) and the
# whole bundle ~70 MB; a zip bomb (GiBs of zeros in a few MB) is refused before it is read.
MAX_ENTRY = 256 << 20
MAX_TOTAL = 2 << 30


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
def _link_stays_inside(name: str, target: bytes) -> bool:
    """A symlink entry's target is relative and, resolved from its folder, stays inside source/."""
    text = target.decode("utf-8", "replace")
    if not text or text.startswith("/") or "\\" in text or "\0" in text or "\ufffd" in text:
        return False
    depth = name.count("/") - 1  # folders below source/ that hold the link
    for part in text.split("/"):
        depth += -1 if part == ".." else 0 if part in ("", ".") else 1
        if depth < 0:
            return False
    return True


def _refused(name: str, mode: int, size: int, total: int) -> str | None:
    """Why an entry may not be read (None: it may): its name, mode or unpacked size."""
    parts = name.split("/")
    if name.startswith("/") or "\\" in name or {"..", ".", ""} & set(parts):
        return f"{name}: unsafe path in the archive; left out"
    if mode not in MODES:
        return f"{name}: mode {oct(mode)} is not one a bundle uses (0644, 0755, symlink); left out"
    if stat.S_ISLNK(mode) and not name.startswith(SOURCE):
        return f"{name}: a symlink outside source/; left out"
    if size > MAX_ENTRY or total + size > MAX_TOTAL:
        return (
            f"{name}: unpacks to {size} bytes, over the bundle's limits ({MAX_ENTRY} per entry, "
            f"{MAX_TOTAL} in all); left out"
        )
    return None


def _admit(entries: dict[str, tuple[int, bytes]], name: str, mode: int, data: bytes) -> str | None:
    """Keep an entry read in full, or say why not (a second copy, a link leaving source/)."""
    if name in entries:
        return f"{name}: appears twice in the archive"
    if stat.S_ISLNK(mode) and not _link_stays_inside(name, data):
        return f"{name}: symlink to {data[:80]!r} leaves source/; left out"
    entries[name] = (mode, data)
    return None


def _nested(entries: dict[str, tuple[int, bytes]], names: set[str], problems: list[str]) -> None:
    """An entry inside another of the archive's `names` (a file or a symlink used as a folder, kept
    or refused) would be written through it when unpacked: left out."""
    for name in sorted(entries):
        parts = name.split("/")
        under = next(
            ("/".join(parts[:i]) for i in range(1, len(parts)) if "/".join(parts[:i]) in names), None
        )
        if under is not None:
            problems.append(f"{name}: inside {under}, which is a file or symlink in the archive; left out")
            del entries[name]


def _read_folder(folder: Path, problems: list[str]) -> dict[str, tuple[int, bytes]]:
    """An unpacked bundle's files (a symlink holds its target, as in the zip), with the zip's rules."""
    entries: dict[str, tuple[int, bytes]] = {}
    total = 0
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            mode, size = SYMLINK, len(os.readlink(path))
        elif path.is_file() and "__pycache__" not in rel.split("/"):
            mode, size = EXECUTABLE if path.stat().st_mode & 0o111 else REGULAR, path.stat().st_size
        else:
            continue
        why = _refused(rel, mode, size, total)
        data = b"" if why else os.readlink(path).encode() if mode == SYMLINK else path.read_bytes()
        total += 0 if why else size
        if why or (why := _admit(entries, rel, mode, data)):
            problems.append(why)
    return entries


def _read_bundle(zip_path: Path, problems: list[str]) -> dict[str, tuple[int, bytes]]:
    """Every entry {name: (mode, bytes)}; unsafe, oversized or repeated entries are problems and
    left out. Sizes are checked before reading: zipfile stops at the declared size."""
    if Path(zip_path).is_dir():
        entries = _read_folder(Path(zip_path), problems)
        _nested(entries, set(entries), problems)
        return entries
    entries = {}
    total = 0
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            name, mode = info.filename, info.external_attr >> 16 or REGULAR
            if why := _refused(name, mode, info.file_size, total):
                problems.append(why)
                continue
            total += info.file_size
            try:
                data = zf.read(info)
            except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as e:
                problems.append(f"{name}: unreadable in the archive ({e})")
                continue
            if why := _admit(entries, name, mode, data):
                problems.append(why)
    _nested(entries, {i.filename for i in zf.infolist() if not i.is_dir()}, problems)
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
        outs = current_outs(
            entries.get("dvc.lock", (0, b""))[1],
            entries.get(f"{SOURCE}dvc.yaml", (0, b""))[1],
            entries.get("params.yaml", (0, b""))[1],
        )
    except (yaml.YAMLError, AttributeError) as e:
        problems.append(f"dvc.lock: not a DVC lock file ({str(e).splitlines()[0]})")
        return
    for out in outs:  # every output the bundle holds, files and directories (the base checkpoint too)
        files = bundled_out(entries, out)
        if files is not None and (found := out_md5(files, out.is_dir)) != out.md5:
            name = bundled_name(out.path)
            problems.append(f"{name}: md5 {found}, dvc.lock stage {out.stage} says {out.md5}")


def _check_agree(
    entries: dict[str, tuple[int, bytes]], bundle: dict[str, Any], verdict: Any, problems: list[str]
) -> None:
    """history.json, the packaged verdict's history and claims, and BUNDLE.json's claims are one
    release's: SHA256SUMS is recomputed as easily as any of them is edited, so they must agree."""
    from pappo.evidence.history import HISTORY, disagreement, from_record

    if verdict.history is not None:
        entry = entries.get(HISTORY)
        why = disagreement(from_record(entry[1] if entry else None, "the bundle"), verdict.history)
        if why is not None:
            problems.append(f"{HISTORY} disagrees with receipts/audit.json's history ({why})")
    labels = {c.id: c.label for c in verdict.claims}
    stated = (bundle.get("audit") or {}).get("verdicts") if bundle else None
    if stated is not None and stated != labels:
        problems.append(f"BUNDLE.json's claim verdicts {stated} differ from receipts/audit.json's {labels}")


def _check_audit(entries: dict[str, tuple[int, bytes]], bundle: dict[str, Any], problems: list[str]) -> None:
    from pappo.evidence.audit import AuditVerdict  # numpy, jsonschema: only when needed

    try:
        verdict = AuditVerdict.model_validate_json(entries["receipts/audit.json"][1])
    except ValueError as e:
        problems.append(f"receipts/audit.json: not a valid audit verdict ({str(e).splitlines()[0]})")
        return
    _check_agree(entries, bundle, verdict, problems)
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

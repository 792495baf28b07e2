"""`pappo release`: the Zenodo evidence bundle (evidence/bundle_check.py: its layout, `verify_bundle`).

`build_bundle` refuses unless the audit verdict (an `AuditVerdict`) exists, says integrity holds,
audited the commit at HEAD, and the tracked files are clean. It writes a byte-for-byte
reproducible `pappo-evidence-<version>.zip`: `source/` (the commit, `git archive HEAD`), params,
dvc.lock, the manifest and its lock, every file under reports/ on disk (adapters included: the
receipts hash them), the verdict as receipts/audit.json, CITATION.cff, .zenodo.json,
RELEASE_NOTES.md (every claim marked HOLDS / DOES NOT HOLD / INCONCLUSIVE / EXPLORATORY with its
numbers: claims that do not hold are packaged and stated, never hidden), BUNDLE.json and SHA256SUMS. SWHIDs: `swh:1:rev:` is
the commit id, `swh:1:dir:` the git tree id, computed here from the archived files and checked
against `git rev-parse HEAD^{tree}`. Layout and checks in detail: docs/release.md.
"""

from __future__ import annotations

import fnmatch
import io
import json
import os
import re
import shutil
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from pappo.evidence import history
from pappo.evidence.bundle_check import SUMS, TOP_FILES, bundled_name, git_tree_id, verify_bundle
from pappo.evidence.bundle_read import EXECUTABLE, REGULAR, SOURCE, SYMLINK
from pappo.evidence.defined_stages import current_outs, lock_files, stale_stages
from pappo.evidence.release_notes import release_notes
from pappo.io import PappoError, git, sha256_bytes, sha256_file

ZIP_DATE = (1980, 1, 1, 0, 0, 0)
COMPRESSLEVEL = 9
DATA_FILES = ("data/repofix/manifest.jsonl", "data/repofix/manifest.lock.json")
SKIP = ("__pycache__", ".*.tmp")
# The tuning history (every configuration each published seed carried, read from git's dvc.lock
# versions when the release is made): a bundle's audit has no git history to read it from.
HISTORY = history.HISTORY


@dataclass(frozen=True)
class BundleInfo:
    path: Path
    version: str
    commit: str
    swhid_rev: str
    swhid_dir: str
    sha256: str
    n_entries: int
    claims: dict[str, str]  # claim id -> verdict: holds, does not hold, inconclusive or exploratory


# ------------------------------------------------------------------------------- git and gates
def git_bytes(root: Path, *args: str) -> bytes:
    out = git(root, *args)
    if out.returncode != 0:
        why = out.stderr.decode(errors="replace").strip().splitlines()
        raise PappoError(
            f"`git {' '.join(args)}` failed in {root}: {why[0] if why else 'no message'}; "
            "a release is made from a git work tree with at least one commit"
        )
    return out.stdout


def check_ready(repo_root: Path, audit_path: Path) -> tuple[str, Any]:
    """HEAD and the verdict, or a PappoError saying which gate is shut and what to do."""
    from pappo.evidence.audit import AuditVerdict  # numpy, jsonschema: only when needed

    head = git_bytes(repo_root, "rev-parse", "--verify", "HEAD^{commit}").decode().strip()
    dirty = git_bytes(repo_root, "status", "--porcelain", "--untracked-files=no").decode().splitlines()
    if dirty:
        raise PappoError(
            f"the working tree is dirty: {len(dirty)} tracked files differ from HEAD (first: "
            f"{dirty[0].strip()}); commit or stash them: the bundle's source is HEAD and its "
            "evidence must be HEAD's"
        )
    if not Path(audit_path).is_file():
        raise PappoError(
            f"{audit_path} is missing: run `pappo audit --out {audit_path}` at HEAD first; a release "
            "needs the audit's verdict"
        )
    try:
        verdict = AuditVerdict.model_validate_json(Path(audit_path).read_bytes())
    except ValueError as e:
        raise PappoError(
            f"{audit_path} is not a valid audit verdict ({str(e).splitlines()[0]}); rerun `pappo audit --out {audit_path}`"
        ) from None
    if not verdict.integrity_ok:
        first = verdict.failures[0].message if verdict.failures else "no failure listed"
        raise PappoError(
            f"{audit_path} says integrity_ok is false ({len(verdict.failures)} failures; first: {first}): "
            "a release needs intact evidence; fix it, rerun dvc repro and the audit"
        )
    if verdict.scope != "commit":
        raise PappoError(
            f"{audit_path} is the audit stage's check of its own workspace (scope {verdict.scope}); a "
            "release needs a reviewer's audit of the committed evidence: `pappo audit --out "
            "dist/audit.json` at HEAD"
        )
    if verdict.head != head:
        raise PappoError(
            f"{audit_path} audited commit {verdict.head}, but HEAD is {head}: the audit must be of the "
            "released commit; rerun `pappo audit --out dist/audit.json` at HEAD (a path git does not "
            "track: committing a verdict moves HEAD)"
        )
    return head, verdict


def read_metadata(repo_root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """.zenodo.json and CITATION.cff; they must agree on title, version and license."""
    try:
        zenodo = json.loads((repo_root / ".zenodo.json").read_text())
        cff = yaml.safe_load((repo_root / "CITATION.cff").read_text())
    except (OSError, ValueError) as e:
        raise PappoError(
            f"cannot read .zenodo.json / CITATION.cff ({e}); both are needed for a release"
        ) from None
    for key in ("title", "version", "license"):
        if str(zenodo.get(key)) != str(cff.get(key)):
            raise PappoError(
                f".zenodo.json {key} {zenodo.get(key)!r} differs from CITATION.cff's {cff.get(key)!r}; "
                "make them the same"
            )
    if not re.fullmatch(r"[0-9A-Za-z][0-9A-Za-z.+_-]*", str(zenodo["version"])):
        raise PappoError(f".zenodo.json version {zenodo['version']!r} cannot be part of a file name")
    return zenodo, cff


# ------------------------------------------------------------------------------ SWH / git trees
def source_files(repo_root: Path, head: str) -> dict[str, tuple[int, bytes]]:
    """The commit as `git archive` gives it: {path: (mode, bytes)}, checked against git's tree id."""
    raw = git_bytes(repo_root, "archive", "--format=tar", head)
    files: dict[str, tuple[int, bytes]] = {}
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        if tar.pax_headers.get("comment") not in (None, head):
            raise PappoError(f"git archive of {head} names commit {tar.pax_headers['comment']}")
        for m in tar.getmembers():
            if m.isdir():
                continue
            if m.issym():
                files[m.name] = (SYMLINK, m.linkname.encode())
            elif m.isfile():
                files[m.name] = (EXECUTABLE if m.mode & 0o111 else REGULAR, tar.extractfile(m).read())
            else:
                raise PappoError(
                    f"git archive holds {m.name}, neither a file nor a symlink; cannot package it"
                )
    ours, gits = git_tree_id(files), git_bytes(repo_root, "rev-parse", f"{head}^{{tree}}").decode().strip()
    if ours != gits:
        raise PappoError(
            f"the archived source hashes to tree {ours}, git says {gits}: export-ignore/export-subst or "
            "eol attributes, LFS or submodules change the archive; remove them for a release"
        )
    return files


def _load_summary(repo_root: Path) -> Any:
    from pappo.evidence.summary_models import Summary  # numpy: only when needed

    path = repo_root / "reports" / "summary.json"
    try:
        return Summary.model_validate_json(path.read_bytes())
    except (OSError, ValueError) as e:
        raise PappoError(
            f"{path} is missing or not a valid summary ({str(e).splitlines()[0]}); "
            "run `dvc repro report`, commit, then release"
        ) from None


# ------------------------------------------------------------------------------------ building
def _skipped(rel: str) -> bool:
    return any(fnmatch.fnmatchcase(part, glob) for part in rel.split("/") for glob in SKIP)


def _disk_entries(repo_root: Path, audit_path: Path) -> dict[str, tuple[int, bytes | Path]]:
    """Evidence files from disk: top files, manifest, everything under reports/, the verdict."""
    out: dict[str, tuple[int, bytes | Path]] = {}
    for rel in (*TOP_FILES, *DATA_FILES):
        if not (repo_root / rel).is_file():
            raise PappoError(f"{repo_root / rel} is missing; a release packages it (run dvc repro, commit)")
        out[rel] = (REGULAR, repo_root / rel)
    reports = repo_root / "reports"
    for path in sorted(reports.rglob("*")) if reports.is_dir() else ():
        rel = path.relative_to(repo_root).as_posix()
        if path.is_file() and not _skipped(rel):
            out[rel] = (REGULAR, path)
    if not any(k.startswith("reports/runs/") for k in out):
        raise PappoError(f"{reports / 'runs'} holds no run: run dvc repro before a release")
    for locked in current_outs(
        *lock_files(repo_root)
    ):  # the base checkpoint, the other lock files, the audit
        disk = repo_root / locked.path  # stage's verdict: a clone's import needs them
        found = [disk] * disk.is_file() + sorted(p for p in disk.rglob("*") if p.is_file())
        for path in found:
            rel = path.relative_to(repo_root).as_posix()
            if not _skipped(rel):
                out.setdefault(bundled_name(rel), (REGULAR, path))
    out["receipts/audit.json"] = (REGULAR, Path(audit_path).read_bytes())
    return out


def _sha256(data: bytes | Path) -> str:
    return sha256_bytes(data) if isinstance(data, bytes) else sha256_file(data)


def _write_zip(path: Path, entries: dict[str, tuple[int, bytes | Path]]) -> None:
    """Sorted entries, fixed times and modes, deflate at COMPRESSLEVEL; temp file then rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w") as zf:
            for name in sorted(entries):
                mode, data = entries[name]
                info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
                info.create_system, info.external_attr = 3, mode << 16
                if isinstance(data, bytes):
                    zf.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=COMPRESSLEVEL)
                    continue
                # a file streams in (an adapter of the hub profile is ~300 MiB): the declared size
                # chooses zip64 as writestr would, so the bytes are the same
                info.compress_type, info.file_size = zipfile.ZIP_DEFLATED, data.stat().st_size
                info._compresslevel = COMPRESSLEVEL  # what writestr sets (zipfile.ZipFile.writestr)
                with open(data, "rb") as src, zf.open(info, "w") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def build_bundle(repo_root: Path, out_dir: Path, audit_path: Path) -> BundleInfo:
    """Check the gates, package the commit and its evidence with its tuning history (history.json,
    read from git now: see HISTORY), verify the zip, return what was made."""
    repo_root = Path(repo_root).resolve()
    head, verdict = check_ready(repo_root, Path(audit_path))
    history_bytes = history.recorded(repo_root)
    zenodo, _ = read_metadata(repo_root)
    version = str(zenodo["version"])
    entries: dict[str, tuple[int, bytes | Path]] = {
        SOURCE + k: v for k, v in source_files(repo_root, head).items()
    }
    entries.update(_disk_entries(repo_root, Path(audit_path)))
    entries[HISTORY] = (REGULAR, history_bytes)
    created = datetime.fromtimestamp(int(git_bytes(repo_root, "show", "-s", "--format=%ct", head)), UTC)
    tree = git_bytes(repo_root, "rev-parse", f"{head}^{{tree}}").decode().strip()
    bundle = {
        "schema_version": 1,
        "name": "pappo-evidence",
        "version": version,
        "commit": head,
        "swhid_rev": f"swh:1:rev:{head}",
        "swhid_dir": f"swh:1:dir:{tree}",
        "created": created.isoformat(),
        "source_prefix": SOURCE,
        "audit": {
            "integrity_ok": verdict.integrity_ok,
            "exit_code": verdict.exit_code,
            "claims": {c.id: c.holds for c in verdict.claims},
            "verdicts": {c.id: c.label for c in verdict.claims},
        },
    }
    entries["BUNDLE.json"] = (REGULAR, (json.dumps(bundle, indent=2, sort_keys=True) + "\n").encode())
    notes = release_notes(bundle, _load_summary(repo_root), verdict, stale_stages(repo_root))
    entries["RELEASE_NOTES.md"] = (REGULAR, notes.encode())
    sums = "".join(f"{_sha256(d)}  {name}\n" for name, (_, d) in sorted(entries.items()))
    entries[SUMS] = (REGULAR, sums.encode())
    path = Path(out_dir) / f"pappo-evidence-{version}.zip"
    _write_zip(path, entries)
    problems = verify_bundle(path)
    if problems:
        path.unlink()
        raise PappoError(
            "the bundle fails its own verification, so none was kept:\n  - " + "\n  - ".join(problems)
        )
    return BundleInfo(
        path=path,
        version=version,
        commit=head,
        swhid_rev=bundle["swhid_rev"],
        swhid_dir=bundle["swhid_dir"],
        sha256=sha256_file(path),
        n_entries=len(entries),
        claims={c.id: c.label for c in verdict.claims},
    )

"""An evidence bundle as a reviewer holds it: the Zenodo zip or the folder it was unpacked to.

`open_bundle` verifies it (`verified`: hashes, SWHIDs, receipts, dvc.lock md5s) and gives the
folder; `audit_bundle` runs the audit there with the same checks as in a clone, with the bundle's
`source/` in place of git (evidence/archived.py) and the bundle's params, schemas and base
checkpoint record. Bad or partial input is a PappoError naming the file and what to do.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from pappo.evidence.archived import Archive, describe
from pappo.evidence.bundle_agree import agreement_problems
from pappo.evidence.bundle_check import verify
from pappo.evidence.bundle_inputs import input_problems
from pappo.evidence.bundle_read import LINK_MAX, SOURCE, Bundle, scan
from pappo.evidence.json_diff import MISSING, differences
from pappo.evidence.printable import printable
from pappo.io import PappoError

RELEASED_VERDICT = "receipts/audit.json"  # the release's verdict of the commit (what its notes print)

# what the audit reads besides the runs: without one of them it could not say anything true
AUDIT_INPUTS = (
    "BUNDLE.json",
    "params.yaml",
    "dvc.lock",
    "data/repofix/manifest.jsonl",
    "data/repofix/manifest.lock.json",
    "models/base/checkpoint.json",
    "reports/summary.json",
    "reports/base_model.json",
    f"{SOURCE}dvc.yaml",
    f"{SOURCE}schemas/run_report.schema.json",
    f"{SOURCE}schemas/receipt.schema.json",
)


def is_bundle(folder: Path) -> bool:
    """An unpacked bundle: BUNDLE.json and source/ side by side, no git repository of its own."""
    folder = Path(folder)
    has_git = (folder / ".git").exists()
    return (folder / "BUNDLE.json").is_file() and (folder / SOURCE).is_dir() and not has_git


@contextlib.contextmanager
def verified(path: Path) -> Iterator[Bundle]:
    """The bundle at `path`, scanned once and open for reading, when every check holds (else a
    PappoError listing what failed, or saying that `path` is neither a zip nor a folder)."""
    path = Path(path)
    if not path.exists():
        raise PappoError(
            f"{path}: no such file or folder; pass the pappo-evidence-<version>.zip or the "
            "folder it was unpacked to"
        )
    try:
        b = scan(path)
    except (OSError, zipfile.BadZipFile) as e:
        refuse(path, [f"{path}: cannot read the zip ({e})"])
    with contextlib.closing(b):
        if problems := verify(b):
            refuse(path, problems)
        yield b


def refuse(path: Path, problems: list[str]) -> NoReturn:
    """A PappoError listing a bundle's problems (the first twelve) and what to do."""
    more = f"\n  ... and {len(problems) - 12} more" if len(problems) > 12 else ""
    shown = "\n  - ".join(printable(p) for p in problems[:12]) + more
    raise PappoError(
        f"{path} fails verification ({len(problems)} problems):\n  - {shown}\n"
        "download the bundle again (or rebuild it with `pappo release`); a changed bundle is "
        "not evidence"
    )


def _folder(base: str, into: Path, name: str) -> Path:
    """The real folder an entry goes into, made here: a symlink, a file or anything that resolves
    outside `into` on the way is refused, so nothing is written through a link."""
    folder = into
    for part in name.split("/")[:-1]:
        folder = folder / part
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise PappoError(f"{name}: {folder} is a symlink or a file; the bundle is unsafe, not unpacked")
        folder.mkdir(exist_ok=True)
    if os.path.realpath(folder) != os.path.join(base, *name.split("/")[:-1]):
        raise PappoError(f"{name}: its folder resolves outside {into}; the bundle is unsafe, not unpacked")
    return folder


def unpack(zip_path: Path, into: Path) -> Path:
    """Extract a verified bundle into `into` (verify_bundle checked names, modes and links); modes
    and symlinks kept. Never writes through a link or over an existing file."""
    into = Path(into)
    into.mkdir(parents=True, exist_ok=True)
    base = os.path.realpath(into)
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            target = _folder(base, into, info.filename) / info.filename.split("/")[-1]
            if os.path.lexists(target):
                raise PappoError(f"{info.filename}: written twice; the bundle is unsafe, not unpacked")
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                with zf.open(info) as src:
                    os.symlink(src.read(LINK_MAX).decode(), target)
                continue
            # O_EXCL | O_NOFOLLOW: a link or file that appeared meanwhile is not written through
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as f, zf.open(info) as src:
                shutil.copyfileobj(src, f, 1 << 20)
            target.chmod(0o755 if mode & 0o111 else 0o644)
    return into


def open_bundle(path: Path, scratch: Path) -> Path:
    """The verified bundle's folder: `path` itself, or the zip unpacked into `scratch`."""
    path = Path(path)
    with verified(path):
        return path.resolve() if path.is_dir() else unpack(path, Path(scratch) / "bundle").resolve()


def meta(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((Path(folder) / "BUNDLE.json").read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError) as e:
        where = Path(folder) / "BUNDLE.json"
        raise PappoError(f"{where}: unreadable ({e}); download the bundle again") from None


def missing_inputs(folder: Path) -> list[str]:
    return [rel for rel in AUDIT_INPUTS if not (Path(folder) / rel).is_file()]


def audit_bundle(folder: Path) -> Any:
    """The audit of an unpacked bundle (an AuditVerdict), run inside it: params name paths relative
    to the project root, which the bundle's top is."""
    from pappo.config import load_params
    from pappo.evidence.audit import audit

    folder = Path(folder).resolve()
    missing = missing_inputs(folder)
    if missing:
        raise PappoError(
            f"{folder}: {', '.join(missing)} missing: not a complete evidence bundle (one "
            "made before `pappo evidence import` existed lacks models/base); unpack the whole "
            "zip, or rebuild it with `pappo release` from the commit"
        )
    archive = Archive(source=folder / SOURCE, commit=str(meta(folder).get("commit")))
    if problems := _inconsistent(folder):
        return _refused(archive, problems)
    with contextlib.chdir(folder):
        params = load_params(folder / "params.yaml")
        verdict = audit(
            params,
            folder,
            folder / "reports" / "runs",
            folder / "models" / "base",
            folder / SOURCE / "schemas",
            archive=archive,
        )
    released = _as_released(verdict, meta(folder), folder / RELEASED_VERDICT)
    return released.model_copy(update={"verdict": printable(released.verdict)})


def _inconsistent(folder: Path) -> list[tuple[str, str]]:
    """(file, why) of the inputs not of the shape the checks read, or parts that disagree
    (bundle_inputs.py, bundle_agree.py): the audit judges nothing of such a bundle."""

    def read(name: str) -> bytes | None:
        path = folder / name
        return path.read_bytes() if path.is_file() else None

    return input_problems(folder) or agreement_problems(read)


def _refused(archive: Archive, problems: list[tuple[str, str]]) -> Any:
    """The verdict of a bundle whose inputs are malformed or disagree: integrity fails, nothing judged."""
    from pappo.evidence.audit import AuditVerdict, render
    from pappo.evidence.audit_context import AuditFailure

    failures = [
        AuditFailure(file=f, field="bundle", expected="as `pappo release` packs it", found="not", message=why)
        for f, why in problems
    ]
    text = render(False, failures, [], None) + "\n" + describe(archive)
    return AuditVerdict(
        exit_code=1,
        integrity_ok=False,
        head=archive.commit,
        runs_checked=0,
        failures=failures,
        claims=[],
        numerics=None,
        history=None,
        verdict=printable(text),
    )


def _as_released(verdict: Any, bundle: dict[str, Any], released: Path) -> Any:
    """The verdict, its integrity failed when its claims differ from those the release stated: their
    labels in BUNDLE.json, their numbers in `released` (receipts/audit.json, what the release notes
    print). The same evidence and history must give the same claims."""
    from pappo.evidence.audit import render

    stated = (bundle.get("audit") or {}).get("verdicts")
    found = {c.id: c.label for c in verdict.claims}
    if not verdict.integrity_ok:
        return verdict
    failures = [] if stated is None or stated == found else [_label_failure(stated, found)]
    failures += _number_failures(verdict.claims, released)
    if not failures:
        return verdict
    failures = [*verdict.failures, *failures]
    where = verdict.verdict.rsplit("\n", 1)[-1]  # the scope line audit() ends its text with
    text = render(False, failures, verdict.claims, verdict.numerics, verdict.history) + "\n" + where
    return verdict.model_copy(
        update={"integrity_ok": False, "exit_code": 1, "failures": failures, "verdict": text}
    )


def _label_failure(stated: Any, found: dict[str, str]) -> Any:
    from pappo.evidence.audit_context import AuditFailure

    return AuditFailure(
        file="BUNDLE.json",
        field="audit.verdicts",
        expected=str(stated),
        found=str(found),
        message="the claims re-derived here differ from the release's: the bundle (history.json?) was altered",
    )


def _number_failures(claims: list[Any], released: Path) -> list[Any]:
    """A failure per field of a claim (its numbers, label, reasons, history note, power) that the
    release's verdict states otherwise than the evidence gives here, and per claim only one side has."""
    from pappo.evidence.audit import AuditVerdict
    from pappo.evidence.audit_context import AuditFailure

    try:
        stated = {
            c.id: c.model_dump() for c in AuditVerdict.model_validate_json(released.read_bytes()).claims
        }
    except (OSError, ValueError):
        return []  # verify_bundle names an unreadable receipts/audit.json
    here = {c.id: c.model_dump() for c in claims}
    return [
        AuditFailure(
            file=RELEASED_VERDICT,
            field=field,
            expected="(absent)" if a is MISSING else str(a),
            found="(absent)" if b is MISSING else str(b),
            message="the release's verdict states other claims than its evidence gives here",
        )
        for cid in sorted(set(here) | set(stated))
        for field, a, b in differences(
            here.get(cid, MISSING), stated.get(cid, MISSING), f"claims[{cid}]", 1e-9
        )
    ]


def audit_here(
    root: Path, bundle: Path | None, params_path: Path, runs: Path, base: Path, stage: bool = False
) -> Any:
    """`pappo audit` (an AuditVerdict): of `bundle` (zip or folder) when given, of `root` when it is
    an unpacked bundle, else of the checkout `root` with its params, runs and base checkpoint."""
    from pappo.config import load_params
    from pappo.evidence.audit import audit

    target = bundle if bundle is not None else root if is_bundle(root) else None
    if target is None:
        return audit(load_params(params_path), root, runs, base, root / "schemas", stage)
    with tempfile.TemporaryDirectory(prefix="pappo-audit-") as tmp:
        return audit_bundle(open_bundle(target, Path(tmp)))

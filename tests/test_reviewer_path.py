"""The reviewer's path from the archive (docs/reviewing.md), end to end on the fixture pipeline.

A scratch repository runs the real `dvc repro` (the fixture pipeline that test_dvc_smoke.py
builds), commits the evidence and builds its release bundle. Then, as a reviewer: a fresh `git clone` has no runs; `pappo
evidence import` fills it from the bundle, `dvc status` is up to date, `pappo audit` re-derives
every number and `pappo reproduce` reruns a run bit for bit. The unpacked bundle alone is audited
and reproduced from (no repository), a tampered bundle whose hashes were all made consistent is
caught, and the DVC remote story (`dvc remote add`, push, pull) works for real.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import zipfile
from pathlib import Path

import pytest
import yaml

from pappo.evidence.bundle import unpack
from pappo.evidence.bundle_check import git_tree_id, verify_bundle
from test_dvc_smoke import built_pipeline, sh

COMMIT = ("git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "commit", "-qm")
RUN = "reports/runs/seed_0/pappo"
pytestmark = pytest.mark.slow  # the fixture pipeline's real dvc repro (shared with test_dvc_smoke.py)


def published(root: Path, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """A repository whose committed evidence is a real `dvc repro` of the fixture pipeline."""
    repo = root / "published"
    built_pipeline(tmp_path_factory, worker_id, repo)
    for cmd in (("git", "add", "-A"), (*COMMIT, "evidence")):
        done = sh(*cmd, cwd=repo)
        assert done.returncode == 0, (cmd, done.stdout[-3000:], done.stderr[-3000:])
    return repo


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reviewer")
    repo = published(root, tmp_path_factory, worker_id)
    release = sh("pappo", "release", "--out", str(root / "dist"), cwd=repo)
    assert release.returncode == 0, release.stdout[-3000:] + release.stderr[-3000:]
    [bundle] = (root / "dist").glob("pappo-evidence-*.zip")
    return {"root": root, "repo": repo, "bundle": bundle}


def clone(world: dict[str, Path], name: str) -> Path:
    target = world["root"] / name
    assert sh("git", "clone", "-q", str(world["repo"]), str(target), cwd=world["root"]).returncode == 0
    return target


def test_a_fresh_clone_gets_the_published_runs_from_the_bundle(world: dict[str, Path]) -> None:
    repo, bundle = world["repo"], world["bundle"]
    fresh = clone(world, "clone")
    assert not (fresh / RUN).exists()  # DVC outputs: a clone has none
    before = sh("pappo", "reproduce", "--runs", "0/base", cwd=fresh)
    assert before.returncode == 1 and "no valid published run" in before.stderr
    done = sh("pappo", "evidence", "import", str(bundle), cwd=fresh)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "imported the evidence of" in done.stdout
    for rel in (
        f"{RUN}/report.json",
        f"{RUN}/adapters",
        "reports/experiment/pappo/report.json",
        "models/base",
        "receipts/audit.json",
        "data/warmup/manifest.lock.json",
    ):
        assert sh("diff", "-r", str(repo / rel), str(fresh / rel), cwd=fresh).returncode == 0, rel
    status = sh("dvc", "status", "dvc.yaml", cwd=fresh)
    assert status.returncode == 0 and "Data and pipelines are up to date" in status.stdout, (
        status.stdout + status.stderr
    )
    assert sh("git", "status", "--porcelain", cwd=fresh).stdout == ""
    audit = sh("pappo", "audit", cwd=fresh)
    assert audit.returncode == 2 and "integrity: OK" in audit.stdout, (
        audit.stdout + audit.stderr
    )  # the claim: no GPU
    # one seed: no interval, so never `holds`; the clone's own git history labels the claim
    assert re.search(r"claim pappo-beats-best-baseline: (INCONCLUSIVE|DOES NOT HOLD): ", audit.stdout), (
        audit.stdout
    )
    assert "history: " in audit.stdout and "recorded by the release" not in audit.stdout
    rep = sh("pappo", "reproduce", "--sample", "1", "--out", str(fresh.parent / "clone-rep.json"), cwd=fresh)
    assert rep.returncode == 0, rep.stdout[-3000:] + rep.stderr[-3000:]
    found = json.loads((fresh.parent / "clone-rep.json").read_text())
    assert found["reproduced"] and found["code_from"] == "git clone" and found["runs"][0]["identical"]
    again = sh("pappo", "evidence", "import", str(bundle), cwd=fresh)  # idempotent
    assert again.returncode == 0, again.stderr
    mine = fresh / RUN / "metrics.json"  # as if the reviewer's own dvc repro had rewritten a run
    mine.chmod(0o644)
    mine.write_text("{}\n")
    kept = sh("pappo", "evidence", "import", str(bundle), cwd=fresh)
    assert (
        kept.returncode == 1 and f"(first: {RUN}/metrics.json)" in kept.stderr and mine.read_text() == "{}\n"
    )
    forced = sh("pappo", "evidence", "import", "--force", str(bundle), cwd=fresh)
    assert forced.returncode == 0 and mine.read_bytes() == (repo / RUN / "metrics.json").read_bytes(), (
        forced.stderr
    )


def test_import_refuses_another_commit_and_a_changed_bundle(world: dict[str, Path], tmp_path: Path) -> None:
    fresh = clone(world, "other")
    (fresh / "NOTE.md").write_text("later\n")
    assert (
        sh("git", "add", "NOTE.md", cwd=fresh).returncode == 0
        and sh(*COMMIT, "later", cwd=fresh).returncode == 0
    )
    commit = json.loads(zipfile.ZipFile(world["bundle"]).read("BUNDLE.json"))["commit"]
    moved = sh("pappo", "evidence", "import", str(world["bundle"]), cwd=fresh)
    assert moved.returncode == 1 and f"run `git checkout {commit}`" in moved.stderr, moved.stderr
    assert sh("git", "checkout", "-q", commit, cwd=fresh).returncode == 0
    changed = tmp_path / "changed.zip"
    with zipfile.ZipFile(world["bundle"]) as zin, zipfile.ZipFile(changed, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info, zin.read(info) + (b" " if info.filename == f"{RUN}/report.json" else b""))
    refused = sh("pappo", "evidence", "import", str(changed), cwd=fresh)
    assert refused.returncode == 1 and f"{RUN}/report.json: sha256" in refused.stderr, refused.stderr
    assert (
        not (fresh / "reports" / "runs").exists() and not (fresh / ".dvc" / "cache").exists()
    )  # nothing written


def unpacked(world: dict[str, Path], name: str) -> Path:
    return unpack(
        world["bundle"], world["root"] / name
    )  # as `unzip` does: modes kept (the tree id covers them)


def test_the_unpacked_bundle_alone_is_audited_and_reproduced(world: dict[str, Path]) -> None:
    folder = unpacked(world, "unzipped")
    audit = sh("pappo", "audit", cwd=folder)
    assert audit.returncode == 2, audit.stdout + audit.stderr
    text = audit.stdout
    assert "integrity: OK" in text, text
    assert re.search(r"claim pappo-beats-best-baseline: (INCONCLUSIVE|DOES NOT HOLD): ", text), text
    assert "recorded by the release from git" in text, text  # the bundle's history.json, labelled
    assert "scope: the evidence bundle of commit" in text and "not checked here (no git repository)" in text
    assert "source.git_commit" in text
    in_clone = sh("pappo", "audit", cwd=world["repo"]).stdout
    claims = [line for line in text.splitlines() if line.startswith("claim ")]
    assert claims and claims == [line for line in in_clone.splitlines() if line.startswith("claim ")]
    zipped = sh("pappo", "audit", "--bundle", str(world["bundle"]), cwd=world["root"])
    assert zipped.returncode == 2 and "integrity: OK" in zipped.stdout, zipped.stdout + zipped.stderr
    out = world["root"] / "bundle-rep.json"
    rep = sh(
        "pappo",
        "reproduce",
        "--bundle",
        str(folder),
        "--runs",
        "0/base",
        "--out",
        str(out),
        cwd=world["root"],
    )
    assert rep.returncode == 0, rep.stdout[-3000:] + rep.stderr[-3000:]
    found = json.loads(out.read_text())
    assert found["code_from"] == "bundle source" and found["runs"][0]["identical"] and found["reproduced"]
    assert "scratch git repository" in rep.stdout
    partial = world["root"] / "partial"
    shutil.copytree(folder, partial)
    shutil.rmtree(partial / "models")
    broken = sh("pappo", "audit", cwd=partial)
    assert broken.returncode == 1 and "Traceback" not in broken.stderr, broken.stderr
    assert "models/base" in broken.stderr, broken.stderr


def _resum(folder: Path) -> None:
    """SHA256SUMS, BUNDLE.json's swhid_dir and the release notes made to match the folder's files
    again, as a thorough forger would (verify-bundle renders the notes again from the bundle)."""
    from pappo.evidence.audit import AuditVerdict
    from pappo.evidence.defined_stages import stale
    from pappo.evidence.release_notes import release_notes
    from pappo.evidence.summary_models import Summary

    meta = json.loads((folder / "BUNDLE.json").read_text())
    source = {
        p.relative_to(folder / "source").as_posix(): (0o100644 | (p.stat().st_mode & 0o111), p.read_bytes())
        for p in (folder / "source").rglob("*")
        if p.is_file()
    }
    meta["swhid_dir"] = f"swh:1:dir:{git_tree_id(source)}"
    (folder / "BUNDLE.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    summary = Summary.model_validate_json((folder / "reports/summary.json").read_bytes())
    verdict = AuditVerdict.model_validate_json((folder / "receipts/audit.json").read_bytes())
    lock = [(folder / f).read_bytes() for f in ("dvc.lock", "source/dvc.yaml", "source/params.yaml")]
    (folder / "RELEASE_NOTES.md").write_text(release_notes(meta, summary, verdict, stale(*lock)))
    names = sorted(
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != "SHA256SUMS"
    )
    sums = "".join(f"{hashlib.sha256((folder / n).read_bytes()).hexdigest()}  {n}\n" for n in names)
    (folder / "SHA256SUMS").write_text(sums)


def test_a_tampered_bundle_with_consistent_hashes_is_caught(world: dict[str, Path]) -> None:
    folder = unpacked(world, "tampered")
    report = json.loads((folder / RUN / "report.json").read_text())
    published_mean = report["evals"][0]["result"]["success"]["mean"]
    assert published_mean < 1.0
    for ev in report["evals"]:  # every held-out task now solved; the means left as they were
        for task in ev["result"]["tasks"]:
            task["success"] = 1.0  # the share of its boards solved
    report["final_eval"] = report["evals"][-1]["result"]
    (folder / RUN / "report.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    receipt = json.loads((folder / RUN / "receipt.json").read_text())  # the receipt's hash,
    receipt["outputs"]["files"]["report.json"] = hashlib.sha256(
        (folder / RUN / "report.json").read_bytes()
    ).hexdigest()
    (folder / RUN / "receipt.json").write_text(json.dumps(receipt, indent=2, sort_keys=True) + "\n")
    lock = yaml.safe_load((folder / "dvc.lock").read_text())  # dvc.lock's md5s, in both copies,
    for out in lock["stages"]["train@0"]["outs"]:
        if out["path"] in (f"{RUN}/report.json", f"{RUN}/receipt.json"):
            out["md5"] = hashlib.md5((folder / out["path"]).read_bytes()).hexdigest()
    for where in ("dvc.lock", "source/dvc.lock"):
        (folder / where).write_text(yaml.safe_dump(lock, sort_keys=False))
    _resum(folder)  # and the bundle's own sums and source tree id
    assert verify_bundle(folder) == []  # every hash agrees: only re-deriving the numbers can tell
    audit = sh("pappo", "audit", cwd=folder)
    assert audit.returncode == 1 and "integrity: FAILED" in audit.stdout, audit.stdout + audit.stderr
    assert f"{RUN}/report.json [evals[0].result.success.mean]" in audit.stdout, audit.stdout
    assert f"(expected 1.0, found {published_mean})" in audit.stdout


def test_a_dvc_remote_hands_the_imported_evidence_to_another_clone(world: dict[str, Path]) -> None:
    first, store = world["root"] / "clone", world["root"] / "dvc-store"
    if not (first / RUN).exists():  # run alone: import first
        first = clone(world, "clone-for-remote")
        assert sh("pappo", "evidence", "import", str(world["bundle"]), cwd=first).returncode == 0
    assert sh("dvc", "remote", "add", "--local", "-d", "store", str(store), cwd=first).returncode == 0
    push = sh("dvc", "push", cwd=first)
    assert push.returncode == 0, push.stdout + push.stderr
    second = clone(world, "second")
    assert sh("dvc", "remote", "add", "--local", "-d", "store", str(store), cwd=second).returncode == 0
    pull = sh("dvc", "pull", "dvc.yaml", cwd=second)
    assert pull.returncode == 0, pull.stdout + pull.stderr
    status = sh("dvc", "status", "dvc.yaml", cwd=second)
    assert "Data and pipelines are up to date" in status.stdout, status.stdout + status.stderr
    assert (second / RUN / "report.json").read_bytes() == (world["repo"] / RUN / "report.json").read_bytes()

"""Release: metadata files, the reproducible bundle and its verification, the Zenodo deposit flow.

The bundle tests build a tiny git repository in tmp_path (params, lock, manifest, one run with
a valid receipt, a valid summary and an audit verdict with a claim that does not hold); the
Zenodo tests run against a local fake server on 127.0.0.1. No network.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import threading
import time
import traceback
import tracemalloc
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jsonschema
import pytest
import yaml

from conftest import ROOT, cpu_hardware
from pappo.evidence.audit import AuditVerdict, ClaimVerdict
from pappo.evidence.bundle_check import git_tree_id, verify_bundle
from pappo.evidence.release import build_bundle, read_metadata
from pappo.evidence.summary_models import Comparison, MethodSummary, Summary
from pappo.evidence.zenodo import BASE_URLS, token_from_env, upload
from pappo.experiment import receipt as rc
from pappo.io import PappoError, file_digest
from pappo.rl.results import Interval
from test_evidence_receipt import NUMERICS

RUN = "reports/runs/seed_0/pappo"
DATE = "2026-01-02T03:04:05+00:00"
TOKEN = "s3cr3t-ZEN-token-4242"


# --------------------------------------------------------------------------- metadata files
def test_citation_cff_is_valid_cff_1_2_0() -> None:
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    cff = {
        k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in cff.items()
    }  # YAML dates -> strings
    schema = json.loads((ROOT / "schemas" / "citation_cff_1.2.0.schema.json").read_text())
    jsonschema.Draft7Validator(schema).validate(cff)
    assert cff["authors"] == [{"name": "PAPPO contributors"}]
    try:
        from cffconvert import Citation  # optional: not in requirements.lock
    except ImportError:
        return
    Citation((ROOT / "CITATION.cff").read_text()).validate()


def test_zenodo_json_is_valid_and_agrees_with_citation_cff() -> None:
    zenodo = json.loads((ROOT / ".zenodo.json").read_text())
    jsonschema.validate(zenodo, json.loads((ROOT / "schemas" / "zenodo_deposit.schema.json").read_text()))
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert (zenodo["version"], zenodo["license"], zenodo["title"]) == (
        cff["version"],
        cff["license"],
        cff["title"],
    )
    assert zenodo["upload_type"] == "software" and zenodo["creators"] == [{"name": "PAPPO contributors"}]


def test_zenodo_schema_refuses_unknown_fields_and_relations() -> None:
    schema = json.loads((ROOT / "schemas" / "zenodo_deposit.schema.json").read_text())
    zenodo = json.loads((ROOT / ".zenodo.json").read_text())
    for bad in (
        {**zenodo, "titel": "x"},
        {**zenodo, "upload_type": "code"},
        {**zenodo, "related_identifiers": [{"identifier": "x", "relation": "isInspiredBy"}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


# ---------------------------------------------------------------------------- tiny git repo
def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": DATE, "GIT_COMMITTER_DATE": DATE}
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, check=True).stdout.strip()


def iv(mean: float) -> Interval:
    return Interval(mean=mean, lo=round(mean - 0.1, 3), hi=round(mean + 0.1, 3))


def summary() -> Summary:
    rows = [
        MethodSummary(
            method=m,
            n_seeds=1,
            success=iv(s),
            pass_at_k=iv(s),
            failed_edit_rate=iv(0.2),
            tool_cost=iv(6.0),
            repeated_test_rate=iv(0.1),
            per_seed=[],
        )
        for m, s in (("grpo", 0.45), ("pappo", 0.5))
    ]
    comp = Comparison(
        method="pappo",
        baseline="grpo",
        difference=Interval(mean=0.05, lo=-0.1, hi=0.2),
        per_seed_difference=[0.05],
        seed_wins=1,
        n_seeds=1,
    )
    return Summary(
        profile="tiny",
        device="cpu",
        seeds=[0],
        methods=["grpo", "pappo"],
        n_eval_tasks={0: 4},
        eval_samples=2,
        n_boot=100,
        summaries=rows,
        best_baseline="grpo",
        comparisons=[comp],
        budget=[],
        sources={},
    )


def receipt(run: Path) -> rc.Receipt:
    return rc.Receipt(
        run_id="seed_0/pappo",
        stage="train@0-pappo",
        seed=0,
        method="pappo",
        profile="tiny",
        status="success",
        source=rc.SourceInfo(
            git_commit="a" * 40, git_dirty=False, tree_sha256="0" * 64, source_paths=["src"]
        ),
        checkpoint=rc.CheckpointInfo(
            model_id="tiny",
            revision="r1",
            files={"model.bin": "1" * 64},
            adapters=rc.hash_outputs(run / "adapters"),
        ),
        inputs=rc.InputsInfo(manifest_lock_sha256="2" * 64, params_sha256="3" * 64, claims_sha256=None),
        outputs=rc.OutputsInfo(files=rc.hash_outputs(run)),
        hardware=cpu_hardware(4.0),
        software=rc.SoftwareInfo(
            python="3.11.7", torch=None, transformers=None, peft=None, dvc=None, os="Linux"
        ),
        timing=rc.TimingInfo(
            started="2026-01-01T00:00:00+00:00", ended="2026-01-01T00:01:00+00:00", wall_s=60.0, device_s=None
        ),
        resources=rc.ResourceInfo(peak_rss_mb=100.0, peak_device_memory_mb=None),
        determinism=rc.DeterminismInfo(
            torch_deterministic_algorithms=True,
            cudnn_deterministic=False,
            cudnn_benchmark=False,
            num_threads=1,
            seed=0,
            numerics=NUMERICS,
        ),
        ranks_devices=["cpu"],
    )


def verdict(head: str | None, integrity_ok: bool = True) -> AuditVerdict:
    fails = ClaimVerdict(
        id="pappo-beats-best-baseline",
        holds=False,
        verdict="inconclusive",
        metric="success",
        method="pappo",
        baseline="grpo",
        delta=0.0417,
        lo=-0.125,
        hi=0.2083,
        seed_wins=1,
        n_seeds=3,
        reasons=["95% interval [-0.125, +0.208] does not exclude 0"],
    )
    holds = ClaimVerdict(
        id="pappo-fewer-failed-edits-than-ppo",
        holds=True,
        metric="failed_edit_rate",
        method="pappo",
        baseline="ppo",
        delta=0.031,
        lo=0.01,
        hi=0.05,
        seed_wins=3,
        n_seeds=3,
        reasons=[],
    )
    return AuditVerdict(
        exit_code=2 if integrity_ok else 1,
        integrity_ok=integrity_ok,
        head=head,
        runs_checked=1,
        failures=[],
        claims=[fails, holds],
        numerics=None,
        verdict="integrity: OK",
    )


def write(root: Path, rel: str, data: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


def make_repo(tmp_path: Path, adapter_mib: int = 0) -> Path:
    """A committed repository with every file a release packages; receipts/audit.json untracked, of
    HEAD. The run's adapter is 2 KiB, plus `adapter_mib` MiB of random bytes (benchmarks/bundle_memory.py)."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    for rel, text in {
        "README.md": "# tiny\n",
        "src/pkg/__init__.py": "",
        "src/pkg/lib.py": "X = 1\n",
        "src/pkg/lib/core.py": "Y = 2\n",
        "src/pkg/lib-a.txt": "dash\n",
        "params.yaml": (ROOT / "params.yaml").read_text(),
        "data/repofix/manifest.jsonl": '{"instance_id": "t-001"}\n',
        "data/repofix/manifest.lock.json": '{"n_tasks": 1}\n',
        "reports/summary.md": "# summary\n",
        "reports/summary/success.svg": "<svg/>\n",
        "reports/base_model.json": "{}\n",
        f"{RUN}/report.json": '{"method": "pappo"}\n',
        f"{RUN}/metrics.json": '{"success": 0.5}\n',
        f"{RUN}/dvclive/metrics.json": "{}\n",
        f"{RUN}/.gitignore": "/adapters\n",
    }.items():
        write(root, rel, text)
    write(root, "run.sh", "#!/bin/sh\necho hi\n").chmod(0o755)
    os.symlink("README.md", root / "link")
    adapter = write(root, f"{RUN}/adapters/adapter_model.safetensors", bytes(range(256)) * 8)  # DVC-cached
    with open(adapter, "ab") as f:
        for _ in range(adapter_mib):
            f.write(os.urandom(1 << 20))
    rc.write_receipt(root / RUN, receipt(root / RUN))
    write(root, "reports/summary.json", summary().model_dump_json(indent=2))
    md5 = hashlib.md5((root / RUN / "report.json").read_bytes()).hexdigest()
    weights = file_digest(adapter, "md5")
    manifest = json.dumps(
        [{"md5": weights, "relpath": "adapter_model.safetensors"}], sort_keys=True
    )  # DVC's .dir
    outs = [
        {"path": f"{RUN}/report.json", "md5": md5},
        {"path": f"{RUN}/adapters", "md5": hashlib.md5(manifest.encode()).hexdigest() + ".dir"},
    ]
    write(
        root,
        "dvc.lock",
        yaml.safe_dump({"schema": "2.0", "stages": {"train@0-pappo": {"cmd": "x", "outs": outs}}}),
    )
    shutil.copy(ROOT / "CITATION.cff", root / "CITATION.cff")
    shutil.copy(ROOT / ".zenodo.json", root / ".zenodo.json")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    write(root, "receipts/audit.json", verdict(git(root, "rev-parse", "HEAD")).model_dump_json(indent=2))
    return root


def entries(zip_path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(zip_path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def rewrite(
    src: Path,
    dst: Path,
    change: str | None = None,
    drop: str | None = None,
    add: dict[str, bytes] | None = None,
) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename != drop:
                zout.writestr(info, data + b"#" if info.filename == change else data)
        for name, data in (add or {}).items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.create_system, info.external_attr = 3, 0o100644 << 16  # a mode bundles use
            zout.writestr(info, data)
    return dst


@pytest.fixture
def bundle(repo: Path, tmp_path: Path) -> Path:
    return build_bundle(repo, tmp_path / "dist", repo / "receipts" / "audit.json").path


# ------------------------------------------------------------------------------------ bundle
def test_bundle_is_reproducible_complete_and_verifies(repo: Path, tmp_path: Path) -> None:
    first = build_bundle(repo, tmp_path / "a", repo / "receipts/audit.json")
    second = build_bundle(repo, tmp_path / "b", repo / "receipts/audit.json")
    assert first.path.name == "pappo-evidence-0.1.0.zip"
    assert first.path.read_bytes() == second.path.read_bytes() and first.sha256 == second.sha256
    assert verify_bundle(first.path) == []
    # the four-way verdict of each claim, not a boolean (the second has none: an older audit's)
    labels = {"pappo-beats-best-baseline": "inconclusive", "pappo-fewer-failed-edits-than-ppo": "holds"}
    assert first.claims == labels
    files = entries(first.path)
    assert json.loads(files["BUNDLE.json"])["audit"]["verdicts"] == labels
    assert list(files) == sorted(files)
    for name in (
        "params.yaml",
        "dvc.lock",
        "data/repofix/manifest.jsonl",
        "data/repofix/manifest.lock.json",
        "CITATION.cff",
        ".zenodo.json",
        "receipts/audit.json",
        "reports/summary.json",
        "reports/summary/success.svg",
        f"{RUN}/receipt.json",
        f"{RUN}/adapters/adapter_model.safetensors",
        "source/src/pkg/lib/core.py",
        "RELEASE_NOTES.md",
        "BUNDLE.json",
        "SHA256SUMS",
    ):
        assert name in files, name
    with zipfile.ZipFile(first.path) as zf:
        infos = {i.filename: i for i in zf.infolist()}
    assert {i.date_time for i in infos.values()} == {(1980, 1, 1, 0, 0, 0)}
    assert (
        infos["source/run.sh"].external_attr >> 16 == 0o100755
        and infos["params.yaml"].external_attr >> 16 == 0o100644
    )
    assert infos["source/link"].external_attr >> 16 == 0o120777 and files["source/link"] == b"README.md"
    sums = files["SHA256SUMS"].decode().splitlines()
    assert sums == sorted(sums, key=lambda s: s[66:]) and len(sums) == len(files) - 1
    assert all(hashlib.sha256(files[line[66:]]).hexdigest() == line[:64] for line in sums)


def test_the_bundle_records_the_tuning_history_read_from_git(repo: Path, tmp_path: Path) -> None:
    from pappo.evidence.history import History, read_history

    info = build_bundle(repo, tmp_path / "h", repo / "receipts/audit.json")
    record = History.model_validate_json(entries(info.path)["history.json"])
    seeds = yaml.safe_load((repo / "params.yaml").read_text())["seeds"]
    assert record == read_history(repo, seeds, []) and verify_bundle(info.path) == []
    assert any(
        "history.json" in p
        for p in verify_bundle(rewrite(info.path, tmp_path / "t.zip", change="history.json"))
    )


def test_swh_ids_match_git(repo: Path, bundle: Path) -> None:
    assert git_tree_id({}) == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree
    meta = json.loads(entries(bundle)["BUNDLE.json"])
    head, tree = git(repo, "rev-parse", "HEAD"), git(repo, "rev-parse", "HEAD^{tree}")
    assert meta["swhid_rev"] == f"swh:1:rev:{head}" and meta["commit"] == head
    assert meta["swhid_dir"] == f"swh:1:dir:{tree}"
    assert meta["created"] == "2026-01-02T03:04:05+00:00"
    with zipfile.ZipFile(bundle) as zf:  # independently of build_bundle: from the zip's source/ entries
        source = {
            i.filename[7:]: (i.external_attr >> 16, zf.read(i))
            for i in zf.infolist()
            if i.filename.startswith("source/")
        }
    assert git_tree_id(source) == tree


def test_every_changed_entry_is_named(bundle: Path, tmp_path: Path) -> None:
    names = list(entries(bundle))
    for name in names:
        if name == "SHA256SUMS":
            continue
        problems = verify_bundle(rewrite(bundle, tmp_path / "t.zip", change=name))
        assert any(name in p for p in problems), (name, problems)
    assert any(
        "source/" in p and "swh:1:dir" in p
        for p in verify_bundle(rewrite(bundle, tmp_path / "t.zip", change="source/run.sh"))
    )
    sums = entries(bundle)["SHA256SUMS"].decode()
    first = sums.splitlines()[0][66:]
    tampered = ("0" if sums[0] != "0" else "1") + sums[1:]
    with zipfile.ZipFile(bundle) as zin, zipfile.ZipFile(tmp_path / "s.zip", "w") as zout:
        for info in zin.infolist():
            zout.writestr(info, tampered.encode() if info.filename == "SHA256SUMS" else zin.read(info))
    assert any(first in p for p in verify_bundle(tmp_path / "s.zip"))


def test_missing_and_extra_entries_are_problems(bundle: Path, tmp_path: Path) -> None:
    problems = verify_bundle(rewrite(bundle, tmp_path / "m.zip", drop="reports/summary.md"))
    assert any("reports/summary.md" in p and "missing" in p for p in problems)
    problems = verify_bundle(rewrite(bundle, tmp_path / "x.zip", add={"reports/extra.txt": b"x"}))
    assert any("reports/extra.txt" in p and "not listed" in p for p in problems)
    problems = verify_bundle(rewrite(bundle, tmp_path / "r.zip", add={f"{RUN}/sneaky.json": b"{}"}))
    assert any("sneaky.json" in p and "not in the receipt" in p for p in problems)
    assert verify_bundle(write(tmp_path, "not.zip", b"nope")) and verify_bundle(tmp_path / "absent.zip")


def test_a_corrupted_download_names_the_entry(bundle: Path, tmp_path: Path) -> None:
    raw = bytearray(bundle.read_bytes())
    with zipfile.ZipFile(bundle) as zf:
        info = zf.getinfo("reports/summary.json")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    raw[start + info.compress_size // 2] ^= 0xFF
    problems = verify_bundle(write(tmp_path, "bad.zip", bytes(raw)))
    assert any(p.startswith("reports/summary.json: unreadable") for p in problems), problems


def test_release_notes_state_every_claim_with_numbers(bundle: Path) -> None:
    notes = entries(bundle)["RELEASE_NOTES.md"].decode()
    row = next(line for line in notes.splitlines() if line.startswith("| pappo-beats-best-baseline"))
    assert (
        "| INCONCLUSIVE |" in row
        and "+0.042 [-0.125, +0.208]" in row
        and "1/3" in row
        and "pappo vs grpo" in row
    )
    row = next(line for line in notes.splitlines() if line.startswith("| pappo-fewer-failed-edits-than-ppo"))
    assert "| HOLDS |" in row and "+0.031 [+0.010, +0.050]" in row
    assert "pappo-beats-best-baseline INCONCLUSIVE: 95% interval" in notes
    assert (
        "| pappo | 1 | 0.500 (one seed: no interval) |" in notes
        and "| pappo | grpo | +0.050 [-0.100, +0.200] | 1/1 |" in notes
    )
    assert "1 of 2 pre-registered claims with a rule hold" in notes and "pipeline check" in notes


@pytest.mark.parametrize(
    "case, expected",
    [
        ("missing", "audit.json is missing"),
        ("integrity", "integrity_ok is false"),
        ("head", "but HEAD is"),
        ("dirty", "working tree is dirty"),
    ],
)
def test_release_refuses_and_says_why(repo: Path, tmp_path: Path, case: str, expected: str) -> None:
    audit = repo / "receipts" / "audit.json"
    if case == "missing":
        audit.unlink()
    elif case == "integrity":
        audit.write_text(verdict(git(repo, "rev-parse", "HEAD"), integrity_ok=False).model_dump_json())
    elif case == "head":
        audit.write_text(verdict("b" * 40).model_dump_json())
    else:
        (repo / "params.yaml").write_text("seeds: [0, 1]\n")
    with pytest.raises(PappoError, match=expected):
        build_bundle(repo, tmp_path / "dist", audit)
    assert not list((tmp_path / "dist").glob("*.zip")) if (tmp_path / "dist").exists() else True


def test_metadata_that_disagrees_is_refused(repo: Path) -> None:
    zenodo = json.loads((repo / ".zenodo.json").read_text())
    (repo / ".zenodo.json").write_text(json.dumps({**zenodo, "version": "0.2.0"}))
    with pytest.raises(PappoError, match="version"):
        read_metadata(repo)


# ------------------------------------------------------------------------------------ zenodo
class FakeZenodo(ThreadingHTTPServer):
    """Zenodo's deposit endpoints in memory; `fail`/`sleep` by step; records (step, method, path, body)."""

    daemon_threads, block_on_close = True, False

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.base = f"http://127.0.0.1:{self.server_address[1]}"
        self.seen: list[tuple[str, str, str, bytes]] = []
        self.fail: dict[str, int] = {}
        self.sleep: dict[str, float] = {}
        self.bad_checksum = False

    def handle_error(self, request, client_address) -> None:
        pass  # a client that timed out closed its socket: expected here

    def steps(self) -> list[str]:
        return [s for s, *_ in self.seen]


class _Handler(BaseHTTPRequestHandler):
    server: FakeZenodo

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, code: int, body: dict | None) -> None:
        raw = json.dumps(body).encode() if body is not None else b""
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _step(self) -> str:
        p = self.path
        if p.startswith("/api/files/b1/"):
            return "upload"
        if p == "/api/deposit/depositions":
            return "create"
        if p.endswith("/actions/publish"):
            return "publish"
        return "delete" if self.command == "DELETE" else "metadata"

    def _dispatch(self) -> None:
        srv, step = self.server, self._step()
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        srv.seen.append((step, self.command, self.path, body))
        auth = self.headers.get("Authorization", "")
        if auth != f"Bearer {TOKEN}":
            return self._send(401, {"status": 401, "message": f"The server could not verify you: got {auth}"})
        time.sleep(srv.sleep.get(step, 0))
        if step in srv.fail:  # echoes the token back: the client must scrub it
            return self._send(srv.fail[step], {"status": srv.fail[step], "message": f"boom for {auth}"})
        if step == "create":
            return self._send(201, {"id": 7, "links": {"bucket": f"{srv.base}/api/files/b1"}})
        if step == "upload":
            md5 = "0" * 32 if srv.bad_checksum else hashlib.md5(body).hexdigest()
            return self._send(
                201, {"key": self.path.rsplit("/", 1)[1], "size": len(body), "checksum": f"md5:{md5}"}
            )
        if step == "metadata":
            return self._send(
                200, {"id": 7, "state": "unsubmitted", "metadata": json.loads(body)["metadata"]}
            )
        if step == "publish":
            return self._send(202, {"id": 7, "state": "done", "submitted": True, "doi": "10.5072/zenodo.7"})
        return self._send(204, None)

    do_POST = do_PUT = do_DELETE = do_GET = _dispatch


@pytest.fixture
def zen() -> FakeZenodo:
    server = FakeZenodo()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def zipfile_path(tmp_path: Path) -> Path:
    return write(tmp_path, "pappo-evidence-0.1.0.zip", os.urandom(3000))


META = {"title": "t", "upload_type": "software", "version": "0.1.0"}


def test_full_upload_creates_uploads_sets_metadata_then_publishes(
    zen: FakeZenodo, zipfile_path: Path
) -> None:
    out = upload(zipfile_path, META, zen.base, TOKEN, publish=True, timeout=5)
    assert out["doi"] == "10.5072/zenodo.7"
    assert zen.steps() == ["create", "upload", "metadata", "publish"]
    assert (
        zen.seen[1][1:3] == ("PUT", "/api/files/b1/pappo-evidence-0.1.0.zip")
        and zen.seen[1][3] == zipfile_path.read_bytes()
    )
    assert json.loads(zen.seen[2][3]) == {"metadata": META} and zen.seen[2][2] == "/api/deposit/depositions/7"


def test_without_publish_a_complete_draft_is_left(zen: FakeZenodo, zipfile_path: Path) -> None:
    out = upload(zipfile_path, META, zen.base, TOKEN, publish=False, timeout=5)
    assert zen.steps() == ["create", "upload", "metadata"] and out["state"] == "unsubmitted"


def test_a_refused_token_is_a_clear_error_and_nothing_more_happens(
    zen: FakeZenodo, zipfile_path: Path
) -> None:
    with pytest.raises(PappoError, match="401") as e:
        upload(zipfile_path, META, zen.base, "wrong-token-xyz", publish=True, timeout=5)
    assert "ZENODO_TOKEN" in str(e.value) and "create the draft" in str(e.value)
    assert zen.steps() == ["create"] and "wrong-token-xyz" not in str(e.value)


def test_a_server_error_on_metadata_deletes_the_draft(zen: FakeZenodo, zipfile_path: Path) -> None:
    zen.fail["metadata"] = 500
    with pytest.raises(PappoError, match="server error") as e:
        upload(zipfile_path, META, zen.base, TOKEN, publish=True, timeout=5)
    assert zen.steps() == ["create", "upload", "metadata", "delete"] and "was deleted" in str(e.value)


def test_a_timeout_deletes_the_draft(zen: FakeZenodo, zipfile_path: Path) -> None:
    zen.sleep["metadata"] = 1.5
    with pytest.raises(PappoError, match="timed out") as e:
        upload(zipfile_path, META, zen.base, TOKEN, publish=True, timeout=0.4)
    assert "was deleted" in str(e.value)
    assert zen.steps() == ["create", "upload", "metadata", "delete"]


def test_a_wrong_checksum_is_detected(zen: FakeZenodo, zipfile_path: Path) -> None:
    zen.bad_checksum = True
    with pytest.raises(PappoError, match="corrupted"):
        upload(zipfile_path, META, zen.base, TOKEN, publish=True, timeout=5)
    assert zen.steps() == ["create", "upload", "delete"]


def test_a_failed_publish_deletes_the_draft(zen: FakeZenodo, zipfile_path: Path) -> None:
    zen.fail["publish"] = 403
    with pytest.raises(PappoError, match="deposit:actions"):
        upload(zipfile_path, META, zen.base, TOKEN, publish=True, timeout=5)
    assert zen.steps() == ["create", "upload", "metadata", "publish", "delete"]


def test_the_token_is_never_shown(
    zen: FakeZenodo, zipfile_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    shown = []
    for step, code in (
        ("create", 500),
        ("upload", 400),
        ("metadata", 500),
        ("publish", 403),
        ("delete", 500),
    ):
        zen.fail = {step: code, "metadata": 500} if step == "delete" else {step: code}
        with pytest.raises(PappoError) as e:
            upload(zipfile_path, META, zen.base, TOKEN, publish=True, timeout=5)
        shown += [str(e.value), repr(e.value), "".join(traceback.format_exception(e.value))]
    assert "<token>" in "".join(shown)  # the server echoed it; it was scrubbed
    assert "could NOT be deleted" in shown[-3]
    zen.fail = {}
    upload(zipfile_path, META, zen.base, TOKEN, publish=True, timeout=5)
    out, err = capsys.readouterr()
    assert all(TOKEN not in text for text in [*shown, caplog.text, out, err])
    assert "created draft deposition 7" in caplog.text


def test_token_from_env_and_base_urls() -> None:
    assert token_from_env({"ZENODO_TOKEN": " abc "}) == "abc"
    with pytest.raises(PappoError, match="ZENODO_TOKEN is not set"):
        token_from_env({})
    assert BASE_URLS == {"zenodo": "https://zenodo.org", "sandbox": "https://sandbox.zenodo.org"}


def test_missing_bundle_is_refused_before_any_request(zen: FakeZenodo, tmp_path: Path) -> None:
    with pytest.raises(PappoError, match="pappo release"):
        upload(tmp_path / "none.zip", META, zen.base, TOKEN, publish=True, timeout=5)
    assert zen.seen == []


def test_a_file_streams_into_the_zip_as_the_same_bytes_in_bounded_memory(tmp_path: Path) -> None:
    """Files on disk are copied into the bundle in chunks, and the zip is byte-for-byte the one
    written from the bytes in memory (zip64 chosen from the same declared size)."""
    from pappo.evidence.bundle_read import REGULAR
    from pappo.evidence.release import _write_zip

    data = os.urandom(24 << 20) + bytes(8 << 20)
    path = write(tmp_path, "adapter.safetensors", data)
    _write_zip(tmp_path / "held.zip", {"a/x.bin": (REGULAR, data), "b": (REGULAR, b"small")})
    del data
    tracemalloc.start()
    try:
        _write_zip(tmp_path / "streamed.zip", {"a/x.bin": (REGULAR, path), "b": (REGULAR, b"small")})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (tmp_path / "streamed.zip").read_bytes() == (tmp_path / "held.zip").read_bytes()
    assert peak < 8 << 20, f"peak {peak / 2**20:.1f} MiB"


def test_release_notes_headline_shows_the_seed_level_interval_not_the_task_bootstrap() -> None:
    from types import SimpleNamespace as NS

    from pappo.evidence.release_notes import _notes_results
    from pappo.rl.results import Interval

    boot, seed = Interval(mean=0.5, lo=0.45, hi=0.55), Interval(mean=0.5, lo=0.30, hi=0.70)
    m = NS(
        method="ppo", n_seeds=7, success=boot, pass_at_k=boot, over_seeds={"success": seed, "pass_at_k": seed}
    )
    text = "\n".join(_notes_results(NS(summaries=[m], comparisons=[], best_baseline="base")))
    assert "| ppo | 7 | 0.500 [0.300, 0.700] | 0.500 [0.300, 0.700] |" in text
    assert "0.450" not in text and "stratified bootstrap" not in text

"""A hostile bundle: symlinks that lead out, odd modes, repeated entries, zip bombs, an edited
history with recomputed sums, stale dvc.lock stages a release must not need, and entries too
large to hold in memory.

Bundles are built from test_release.py's tiny repository; every symlink target is under tmp_path.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tracemalloc
import zipfile
from pathlib import Path

import pytest
import yaml

from pappo.evidence import bundle as bd
from pappo.evidence import bundle_check as bc
from pappo.evidence import bundle_read as br
from pappo.evidence import defined_stages as ds
from pappo.evidence.history import History
from pappo.evidence.importer import plan
from pappo.evidence.release import build_bundle
from pappo.io import PappoError
from test_release import RUN, entries, git, make_repo, verdict, write


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


@pytest.fixture
def bundle(repo: Path, tmp_path: Path) -> Path:
    return build_bundle(repo, tmp_path / "dist", repo / "receipts" / "audit.json").path


LINK, FILE = 0o120777, 0o100644


def forged(
    src: Path,
    dst: Path,
    extra: list[tuple[str, int, bytes]],
    change: dict[str, bytes] | None = None,
    deflate: bool = False,
) -> Path:
    """`src` with `extra` entries (name, mode, bytes) appended and `change`d ones replaced, and
    SHA256SUMS recomputed, as an attacker would: only the new checks can tell."""
    change = change or {}
    with zipfile.ZipFile(src) as zin:
        files = [
            (i.filename, i.external_attr >> 16, change.get(i.filename, zin.read(i))) for i in zin.infolist()
        ]
    files = [f for f in files if f[0] != "SHA256SUMS"] + extra
    sums = "".join(
        f"{hashlib.sha256(d).hexdigest()}  {n}\n" for n, _, d in sorted(files) if n != "SHA256SUMS"
    )
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED) as zout:
        for name, mode, data in [*files, ("SHA256SUMS", FILE, sums.encode())]:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.create_system, info.external_attr = 3, mode << 16
            zout.writestr(info, data, compress_type=zout.compression)
    return dst


# ------------------------------------------------------------------------------------ 1. zip slip
@pytest.mark.parametrize("where", ["absolute", "relative"])
def test_a_symlinked_folder_cannot_carry_a_write_out(bundle: Path, tmp_path: Path, where: str) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    into = tmp_path / "scratch" / "bundle"
    link = str(victim) if where == "absolute" else "../" * 3 + "victim"  # from into/source/d
    name = "evil/d" if where == "absolute" else "source/d"
    evil = forged(
        bundle, tmp_path / "evil.zip", [(name, LINK, link.encode()), (f"{name}/victim.txt", FILE, b"pwned")]
    )
    problems = bc.verify_bundle(evil)
    assert any(name in p and ("symlink" in p or "leaves source" in p) for p in problems), problems
    assert any(f"{name}/victim.txt" in p and "inside" in p for p in problems), problems
    with pytest.raises(PappoError, match="verification"):
        bd.open_bundle(evil, tmp_path / "scratch")
    with pytest.raises(PappoError, match="unsafe"):  # unpack alone (no verification) refuses too
        bd.unpack(evil, into)
    assert list(victim.iterdir()) == []


def test_odd_modes_and_repeated_entries_are_refused(bundle: Path, tmp_path: Path) -> None:
    setuid = forged(bundle, tmp_path / "m.zip", [("reports/x.sh", 0o104755, b"#!/bin/sh\n")])
    assert any("reports/x.sh" in p and "mode" in p for p in bc.verify_bundle(setuid))
    link = forged(bundle, tmp_path / "l.zip", [("reports/l", LINK, b"summary.json")])
    assert any("reports/l" in p and "outside source/" in p for p in bc.verify_bundle(link))
    with pytest.warns(UserWarning, match="Duplicate name"):  # zipfile writes it, and says so
        twice = forged(bundle, tmp_path / "t.zip", [("README.txt", FILE, b"a"), ("README.txt", FILE, b"b")])
    assert any("README.txt" in p and "twice" in p for p in bc.verify_bundle(twice))
    with pytest.raises(PappoError, match="written twice"):
        bd.unpack(twice, tmp_path / "u")


def test_an_unpacked_bundle_is_the_zip_as_it_verified(bundle: Path, tmp_path: Path) -> None:
    folder = bd.unpack(bundle, tmp_path / "u")
    assert bc.verify_bundle(folder) == [] and (folder / "source" / "link").is_symlink()
    with pytest.raises(PappoError, match="written twice"):
        bd.unpack(bundle, folder)  # never over existing files


# ------------------------------------------------------------------------------------ 2. zip bomb
def _declared(src: Path, name: str, size: int) -> bytes:
    """The zip's bytes with `name`'s central-directory uncompressed size set to `size` (a bomb's
    header, without GiBs of zeros to compress here)."""
    raw = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as zf:
        start = zf.start_dir
    at = raw.index(b"PK\x01\x02", start)
    while raw[at + 46 : at + 46 + int.from_bytes(raw[at + 28 : at + 30], "little")] != name.encode():
        at = raw.index(b"PK\x01\x02", at + 4)
    raw[at + 24 : at + 28] = size.to_bytes(4, "little")
    return bytes(raw)


def test_a_zip_bomb_is_refused_before_it_is_read(bundle: Path, tmp_path: Path) -> None:
    bomb = write(tmp_path, "bomb.zip", _declared(bundle, "reports/summary.json", 3 << 30))
    problems = bc.verify_bundle(bomb)
    assert any("reports/summary.json" in p and "limit" in p for p in problems), problems
    with pytest.raises(PappoError, match="limit"):
        with bd.verified(bomb):
            pass


def test_past_the_floor_a_bundle_unpacks_to_at_most_ratio_times_its_size(
    bundle: Path, tmp_path: Path
) -> None:
    """8 MiB of zeros deflate to ~8 KB: under the 2 GiB floor it verifies, with the floor at 1 MiB
    it is past 50 times the zip's size and refused; an incompressible 8 MiB entry is not."""
    zeros = forged(bundle, tmp_path / "z.zip", [("reports/zeros.bin", FILE, bytes(8 << 20))], deflate=True)
    noise = forged(
        bundle, tmp_path / "n.zip", [("reports/noise.bin", FILE, os.urandom(8 << 20))], deflate=True
    )
    assert not any("limit" in p for p in bc.verify_bundle(zeros))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(br, "FLOOR", 1 << 20)
        assert any("reports/zeros.bin" in p and "limit" in p for p in bc.verify_bundle(zeros))
        assert not any("limit" in p for p in bc.verify_bundle(noise))


def test_a_large_entry_verifies_and_unpacks_in_bounded_memory(bundle: Path, tmp_path: Path) -> None:
    """A 48 MiB entry (a hub-profile adapter is ~300 MiB) is hashed and copied in chunks: the
    Python heap never holds it (reading it whole, as before, peaked above 48 MiB)."""
    big = os.urandom(48 << 20)
    zipped = forged(bundle, tmp_path / "big.zip", [("reports/big.bin", FILE, big)])
    del big
    tracemalloc.start()
    try:
        problems = bc.verify_bundle(zipped)
        folder = bd.unpack(zipped, tmp_path / "u")
        problems += bc.verify_bundle(folder)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # an entry no output records: named as such (twice: the zip, the folder), and nothing else
    assert [p for p in problems if "big.bin" in p] == [f"reports/big.bin: {bc.UNBOUND}"] * 2, problems
    assert (folder / "reports" / "big.bin").stat().st_size == 48 << 20
    assert peak < 16 << 20, f"peak {peak / 2**20:.1f} MiB"


# ------------------------------------------------------------------------------ 3. edited history
def test_an_edited_history_with_recomputed_sums_is_caught(repo: Path, tmp_path: Path) -> None:
    from pappo.evidence.history import read_history

    seeds = yaml.safe_load((repo / "params.yaml").read_text())["seeds"]
    stated = verdict(git(repo, "rev-parse", "HEAD")).model_copy(
        update={"history": read_history(repo, seeds, [])}
    )
    write(repo, "receipts/audit.json", stated.model_dump_json(indent=2))
    made = build_bundle(repo, tmp_path / "dist", repo / "receipts/audit.json").path
    assert bc.verify_bundle(made) == []
    record = History.model_validate_json(entries(made)["history.json"])
    edited = record.model_copy(update={"configurations": {**record.configurations, "100": 1}})
    changed = {"history.json": edited.model_dump_json(indent=2).encode()}
    problems = bc.verify_bundle(forged(made, tmp_path / "h.zip", [], changed))
    assert any("history.json disagrees with receipts/audit.json" in p for p in problems), problems
    meta = json.loads(entries(made)["BUNDLE.json"])
    meta["audit"]["verdicts"]["pappo-beats-best-baseline"] = "holds"
    problems = bc.verify_bundle(
        forged(made, tmp_path / "b.zip", [], {"BUNDLE.json": json.dumps(meta).encode()})
    )
    assert any("BUNDLE.json's claim verdicts" in p for p in problems), problems


def test_a_bundle_audit_whose_labels_differ_from_the_release_fails_integrity(tmp_path: Path) -> None:
    found = verdict("a" * 40)
    released = tmp_path / "audit.json"
    released.write_text(found.model_dump_json())
    labels = {c.id: c.label for c in found.claims}
    assert bd._as_released(found, {"audit": {"verdicts": labels}}, released) == found
    claimed = {**labels, "pappo-beats-best-baseline": "exploratory"}
    out = bd._as_released(found, {"audit": {"verdicts": claimed}}, released)
    assert not out.integrity_ok and out.exit_code == 1 and out.verdict.startswith("integrity: FAILED")
    assert "exploratory" in out.failures[-1].expected and "inconclusive" in out.failures[-1].found


# -------------------------------------------------------------------------------- 4. stale stages
DVC_YAML = """stages:
  train:
    matrix:
      seed: ${seeds}
      method: [grpo, pappo]
    cmd: pappo train --seed ${item.seed} --method ${item.method}
  report:
    cmd: pappo report
"""


def test_stale_stages_are_the_lock_stages_dvc_yaml_no_longer_defines() -> None:
    lock = {
        "schema": "2.0",
        "stages": {
            n: {"cmd": "x", "outs": [{"path": f"o/{n}", "md5": "0" * 32}]}
            for n in ("train@5-pappo", "train@0-grpo", "report", "base_run@0")
        },
    }
    text = yaml.safe_dump(lock)
    assert ds.stale(text, DVC_YAML, "seeds: [5, 6]\n") == ["base_run@0", "train@0-grpo"]
    assert [o.stage for o in ds.current_outs(text, DVC_YAML, "seeds: [5, 6]\n")] == [
        "report",
        "train@5-pappo",
    ]
    assert ds.stale(text, "", "") == []  # no dvc.yaml to read: nothing is called stale


def test_pruning_removes_the_stale_entries_and_keeps_the_rest_byte_for_byte(tmp_path: Path) -> None:
    kept = (
        "  report:\n    cmd: pappo report  # a comment DVC would not write, kept\n    outs:\n    - path: r\n"
    )
    lock = "schema: '2.0'\nstages:\n" + kept.replace("report", "train@5-grpo", 1).replace("r\n", "t\n")
    lock += "  train@0-grpo:\n    cmd: x\n" + kept
    for name, text in (("dvc.lock", lock), ("dvc.yaml", DVC_YAML), ("params.yaml", "seeds: [5]\n")):
        (tmp_path / name).write_text(text)
    assert ds.prune_lock(tmp_path) == ["train@0-grpo"] and ds.stale_stages(tmp_path) == []
    assert (tmp_path / "dvc.lock").read_text() == lock.replace("  train@0-grpo:\n    cmd: x\n", "")
    assert ds.prune_lock(tmp_path) == []  # nothing left to prune: the file untouched


def test_a_release_with_stale_lock_stages_imports(repo: Path, tmp_path: Path) -> None:
    lock = yaml.safe_load((repo / "dvc.lock").read_text())
    lock["stages"]["train@9-pappo"] = {
        "cmd": "x",
        "outs": [{"path": "reports/runs/seed_9/pappo/report.json", "md5": "1" * 32}],
    }
    write(repo, "dvc.lock", yaml.safe_dump(lock))
    write(
        repo,
        "dvc.yaml",
        "stages:\n  train:\n    matrix:\n      seed: [0]\n      method: [pappo]\n    cmd: x\n",
    )
    git(repo, "add", "dvc.lock", "dvc.yaml")
    git(repo, "commit", "-q", "-m", "stale")
    write(repo, "receipts/audit.json", verdict(git(repo, "rev-parse", "HEAD")).model_dump_json(indent=2))
    made = build_bundle(repo, tmp_path / "dist", repo / "receipts/audit.json").path
    with bd.verified(made) as opened:  # the import's checks: no "not in the bundle"
        head, todo, _ = plan(repo, opened, force=False)
    assert head == git(repo, "rev-parse", "HEAD") and {o.stage for o, _ in todo} == {"train@0-pappo"}
    assert "train@9-pappo" in entries(made)["RELEASE_NOTES.md"].decode()
    assert ds.stale_stages(repo) == ["train@9-pappo"]


def test_verify_bundle_checks_the_published_sha256(bundle: Path) -> None:
    from typer.testing import CliRunner

    from pappo.cli import app

    good = hashlib.sha256(bundle.read_bytes()).hexdigest()
    ok = CliRunner().invoke(app, ["verify-bundle", str(bundle), "--sha256", good])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(app, ["verify-bundle", str(bundle), "--sha256", "0" * 64])
    assert bad.exit_code != 0 and "not the published zip" in bad.output, bad.output


def test_a_changed_adapter_with_recomputed_sums_fails_its_receipt_and_dvc_lock(
    bundle: Path, tmp_path: Path
) -> None:
    """The receipt and dvc.lock are checked from the digests of the scan: an adapter swapped
    and SHA256SUMS recomputed is named by both."""
    name = f"{RUN}/adapters/adapter_model.safetensors"
    swapped = forged(bundle, tmp_path / "a.zip", [], change={name: b"other weights"})
    problems = bc.verify_bundle(swapped)
    assert any("checkpoint.adapters" in p and "has sha256" in p for p in problems), problems
    assert any(f"{RUN}/adapters: md5" in p and "dvc.lock" in p for p in problems), problems
    assert not any("SHA256SUMS" in p for p in problems), problems


def test_a_long_symlink_is_refused_before_it_is_read(bundle: Path, tmp_path: Path) -> None:
    """A symlink's target is read whole to check where it leads, so it is capped (PATH_MAX)."""
    long = forged(bundle, tmp_path / "l.zip", [("source/far", LINK, b"a/" * 2500)])
    assert any("source/far" in p and "symlink of 5000 bytes" in p for p in bc.verify_bundle(long))


def test_a_file_changed_after_the_scan_reads_as_a_problem(bundle: Path, tmp_path: Path) -> None:
    """What the checks parse is read again after the scan: it must be what was hashed."""
    folder = bd.unpack(bundle, tmp_path / "u")
    with contextlib.closing(br.scan(folder)) as b:
        assert b.problems == [] and b.read("BUNDLE.json")
        (folder / "BUNDLE.json").write_text("{}")
        assert b.read("BUNDLE.json") == b"" and b.read("absent") is None
        assert b.problems == ["BUNDLE.json: changed since the bundle was first read"]

"""A bundle whose parts disagree, or whose files are not the shape the pipeline writes, with every
hash recomputed (SHA256SUMS, dvc.lock, receipts): `verify_bundle` and the bundle's audit name the
file, never pass it and never crash (the adversarial review's s5/s7, a1, a4, crash scripts).

Bundles are built from test_release.py's tiny repository; `forged` recomputes SHA256SUMS.
"""

from __future__ import annotations

import contextlib
import json
import zipfile
from pathlib import Path

import pytest
import yaml

from pappo.evidence import bundle as bd
from pappo.evidence import bundle_agree as ba
from pappo.evidence import bundle_check as bc
from pappo.evidence import bundle_inputs as bi
from pappo.evidence.bundle_read import scan
from pappo.evidence.history import History, from_record
from pappo.evidence.printable import one_line, printable
from pappo.evidence.release import build_bundle
from test_bundle_safety import FILE, forged
from test_release import RUN, entries, make_repo


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("agree")
    repo = make_repo(tmp)
    return build_bundle(repo, tmp / "dist", repo / "receipts" / "audit.json").path


def changed(bundle: Path, tmp_path: Path, change: dict[str, bytes], drop: str = "") -> list[str]:
    src = bundle
    if drop:  # forged keeps every entry: drop one by rewriting without it
        src = tmp_path / "dropped.zip"
        with zipfile.ZipFile(bundle) as zin, zipfile.ZipFile(src, "w") as zout:
            for info in zin.infolist():
                if info.filename != drop:
                    zout.writestr(info, zin.read(info))
    return bc.verify_bundle(forged(src, tmp_path / "f.zip", [], change))


# ---------------------------------------------------------------------- 1. the commit's copies
@pytest.mark.parametrize("name", ["params.yaml", "CITATION.cff", ".zenodo.json"])
def test_a_top_copy_that_is_not_source_s_fails_verification(bundle: Path, tmp_path: Path, name: str) -> None:
    assert bc.verify_bundle(bundle) == []
    data = entries(bundle)[name] + b"\n# all claims hold\n"
    problems = changed(bundle, tmp_path, {name: data})
    assert any(p.startswith(f"{name}: source/{name}") and "differs" in p for p in problems), problems


@pytest.mark.parametrize(
    "name", ["NOTE.md", f"{RUN}/claims.txt", "reports/summary.txt", "receipts/audit.extra.json"]
)
def test_a_file_nothing_binds_fails_verification(bundle: Path, tmp_path: Path, name: str) -> None:
    """A file the release does not write (a note saying every claim holds, beside the runs or at
    the top) is covered by no check, so it is refused by name; a file equal to its source/ copy is
    committed evidence and passes (test_release's bundle holds reports/summary.md so)."""
    note = b"Every pre-registered claim holds.\n"
    found = bc.verify_bundle(forged(bundle, tmp_path / "x.zip", [(name, FILE, note)]))
    assert [p for p in found if bc.UNBOUND in p] == [f"{name}: {bc.UNBOUND}"], found
    committed = [n for n in entries(bundle) if f"source/{n}" in entries(bundle) and n.startswith("reports/")]
    assert committed, "test_release's bundle holds committed evidence under reports/"


def test_staleness_is_judged_from_the_commit_s_params(bundle: Path, tmp_path: Path) -> None:
    """An edited top params.yaml (seeds dropped) cannot decide which dvc.lock stages count."""
    top = yaml.safe_load(entries(bundle)["params.yaml"])
    top["seeds"] = [999]
    f = forged(bundle, tmp_path / "s.zip", [], {"params.yaml": yaml.safe_dump(top).encode()})
    with contextlib.closing(scan(f)) as b:
        assert bc.lock_texts(b)[2] == entries(bundle)["source/params.yaml"]


LOCK = {
    "schema": "2.0",
    "stages": {
        "report": {"cmd": "x", "params": {"params.yaml": {"claims": [{"id": "a", "min_delta": 0.15}]}}},
        "train@5-ppo": {"cmd": "x", "params": {"params.yaml": {"rl.gamma": 1.0, "seeds": [5]}}},
        "train@0-ppo": {"cmd": "x", "params": {"params.yaml": {"seeds": [0]}}},  # stale: not defined
    },
}
DVC_YAML = "stages:\n  train:\n    matrix:\n      seed: ${seeds}\n      method: [ppo]\n    cmd: x\n  report:\n    cmd: x\n"


def test_params_must_be_those_dvc_lock_records_each_stage_ran_with() -> None:
    lock = yaml.safe_dump(LOCK).encode()
    same = b"seeds: [5]\nrl: {gamma: 1.0}\nclaims: [{id: a, min_delta: 0.15}]\n"
    assert ba.lock_param_problems(lock, DVC_YAML.encode(), same) == []  # the stale stage is ignored
    lowered = same.replace(b"0.15", b"0.0")
    problems = ba.lock_param_problems(lock, DVC_YAML.encode(), lowered)
    assert problems == [
        (
            "params.yaml",
            "claims differ from what dvc.lock records that stage report ran with: params edited "
            "after the runs are not the released commit's",
        )
    ]
    assert ba.lock_param_problems(lock, DVC_YAML.encode(), same.replace(b"gamma: 1.0", b"gamma: 0.9"))


# ----------------------------------------------------------------------------- 2. history.json
def test_a_bundle_without_history_fails_verification(bundle: Path, tmp_path: Path) -> None:
    problems = changed(bundle, tmp_path, {}, drop="history.json")
    assert (
        "history.json: missing: the bundle carries no tuning history; rebuild it with `pappo release`"
        in problems
    )


def test_an_unreadable_history_record_fails_verification(bundle: Path, tmp_path: Path) -> None:
    record = History.model_validate_json(entries(bundle)["history.json"])
    hidden = record.model_copy(
        update={"readable": False, "reason": "none\nclaim x: HOLDS", "configurations": {}}
    )
    problems = changed(bundle, tmp_path, {"history.json": hidden.model_dump_json().encode()})
    hit = [p for p in problems if p.startswith("history.json: not a readable tuning history")]
    assert hit and "\n" not in hit[0] and "none\\nclaim x: HOLDS" in hit[0], problems
    assert changed(bundle, tmp_path, {"history.json": b"[]"})  # not a history at all


def test_history_must_agree_with_the_audit_stage_s_verdict(bundle: Path) -> None:
    record = entries(bundle)["history.json"]
    history = History.model_validate_json(record)
    other = history.model_copy(update={"configurations": {**history.configurations, "0/pappo": 3}})
    stage = json.dumps({"history": other.model_dump(mode="json")}).encode()
    files = {"history.json": record, ba.STAGE_VERDICT: stage}
    problems = ba.history_problems(files.get)
    assert len(problems) == 1 and "disagrees with receipts/audit.stage.json" in problems[0][1], problems
    files[ba.STAGE_VERDICT] = json.dumps({"history": history.model_dump(mode="json")}).encode()
    assert ba.history_problems(files.get) == []
    unread = other.model_copy(update={"readable": False})  # a first repro: no dvc.lock committed yet
    files[ba.STAGE_VERDICT] = json.dumps({"history": unread.model_dump(mode="json")}).encode()
    assert ba.history_problems(files.get) == []


def test_bundle_text_is_printed_with_control_characters_escaped() -> None:
    assert printable("ok\x1b[8mhidden\nnext\tcol") == "ok\\x1b[8mhidden\nnext\tcol"
    assert one_line("a\nb\x07") == "a\\nb\\x07"

    record = History(
        readable=True, reason="r\x1b[8m\nclaim x: HOLDS", lock_versions=1, configurations={}, edits=[]
    )
    assert "\x1b" not in from_record(record.model_dump_json().encode(), "b").reason


def test_verify_bundle_prints_problems_escaped(bundle: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from pappo.cli import app

    bad = forged(bundle, tmp_path / "e.zip", [("reports/\x1b[8mx", 0o104755, b"x")])  # setuid: named
    out = CliRunner().invoke(app, ["verify-bundle", str(bad)])
    assert out.exit_code != 0 and "\x1b" not in out.output and "\\x1b[8mx" in out.output, out.output


# ------------------------------------------------------------------------------ 4. shapes
def test_a_bundle_json_of_another_shape_is_a_problem_not_a_crash(bundle: Path, tmp_path: Path) -> None:
    meta = json.loads(entries(bundle)["BUNDLE.json"])
    meta["audit"] = "x"
    problems = changed(bundle, tmp_path, {"BUNDLE.json": json.dumps(meta).encode()})
    assert any(p.startswith("BUNDLE.json: not the shape the pipeline writes (audit:") for p in problems), (
        problems
    )


SHAPES = {
    "reports/base_model.json": [b"[]", b'{"eval": []}', b'{"eval": {"greedy": "x"}}'],
    "data/repofix/manifest.lock.json": [b"{}"],
    "models/base/checkpoint.json": [b"{}"],
    "reports/summary.json": [b"[]"],
    "dvc.lock": [
        b"- 1\n",
        b"stages:\n  report: oops\n",
        b"stages:\n  report:\n    outs: [{md5: x}]\n",
        b"stages:\n  report:\n    outs: [oops]\n",
    ],
    "source/dvc.yaml": [b"stages: ["],
    "history.json": [b"[]"],
    "BUNDLE.json": [b'{"audit": "x"}'],
}


@pytest.mark.parametrize("name,data", [(n, d) for n, ds in SHAPES.items() for d in ds])
def test_an_input_of_another_shape_fails_the_bundle_audit_naming_it(
    tmp_path: Path, name: str, data: bytes
) -> None:
    for rel in bd.AUDIT_INPUTS:  # every input present; only `name` is malformed
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"{}")
    (tmp_path / name).write_bytes(data)
    assert (name, bi.shape_problem(name, data, bi._shapes()[name])) in bi.input_problems(tmp_path)
    verdict = bd.audit_bundle(tmp_path)
    assert verdict.exit_code == 1 and not verdict.integrity_ok
    assert any(f.file == name for f in verdict.failures) and f"  - {name} [bundle]" in verdict.verdict


@pytest.mark.parametrize("data", [b'{"type": 5}', b"{", b"[]"])
def test_a_schema_that_is_not_a_json_schema_is_named(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "source/schemas").mkdir(parents=True)
    (tmp_path / "source/schemas/receipt.schema.json").write_bytes(data)
    problems = bi.input_problems(tmp_path)
    assert [n for n, _ in problems] == ["source/schemas/receipt.schema.json"], problems
    assert "not a valid JSON Schema" in problems[0][1]


# --------------------------------------------------------------- 5. the single-seed experiment
def test_the_experiment_s_receipts_bind_its_files(bundle: Path, tmp_path: Path) -> None:
    """reports/experiment/<method>/ is checked against its receipt like a seed's run (s8)."""
    run = {n: d for n, d in entries(bundle).items() if n.startswith(f"{RUN}/")}
    copy = {n.replace(RUN, "reports/experiment/pappo"): d for n, d in run.items()}
    found = bc.verify_bundle(forged(bundle, tmp_path / "x.zip", [(n, 0o100644, d) for n, d in copy.items()]))
    # this fixture's dvc.lock records no experiment outputs, so only the binding check speaks
    assert all(p.endswith(bc.UNBOUND) for p in found), found
    copy["reports/experiment/pappo/report.json"] = b'{"method": "pappo", "success": 0.59}\n'
    edited = forged(bundle, tmp_path / "y.zip", [(n, 0o100644, d) for n, d in copy.items()])
    problems = bc.verify_bundle(edited)
    assert any(p.startswith("reports/experiment/pappo: outputs.files['report.json']") for p in problems), (
        problems
    )


# ---------------------------------------------------------------------- the release notes
def test_release_notes_edited_to_say_more_fail_verification(bundle: Path, tmp_path: Path) -> None:
    """The adversarial review's a1: notes claiming every claim holds, SHA256SUMS recomputed."""
    notes = entries(bundle)["RELEASE_NOTES.md"]
    edited = notes.replace(b"INCONCLUSIVE", b"HOLDS") + b"\nEvery pre-registered claim holds.\n"
    problems = changed(bundle, tmp_path, {"RELEASE_NOTES.md": edited})
    assert any(p.startswith("RELEASE_NOTES.md: not the notes") for p in problems), problems
    assert changed(bundle, tmp_path, {"RELEASE_NOTES.md": notes}) == []  # the same bytes pass


def test_a_released_verdict_with_other_numbers_fails_the_bundle_audit(tmp_path: Path) -> None:
    """The adversarial review's a3: receipts/audit.json's claim numbers raised (labels kept; the
    notes can be rendered from them): the audit re-derives the claims and compares."""
    from test_bundle_safety import verdict

    found = verdict("a" * 40)
    labels = {"audit": {"verdicts": {c.id: c.label for c in found.claims}}}
    released = tmp_path / "audit.json"
    released.write_text(found.model_dump_json())
    assert bd._as_released(found, labels, released) == found
    raised = [c.model_copy(update={"delta": c.delta + 0.2}) for c in found.claims]
    released.write_text(found.model_copy(update={"claims": raised}).model_dump_json())
    out = bd._as_released(found, labels, released)
    assert not out.integrity_ok and out.exit_code == 1
    assert {f.field for f in out.failures} == {f"claims[{c.id}].delta" for c in found.claims}


def test_a_released_verdict_with_other_words_or_claims_fails_the_bundle_audit(tmp_path: Path) -> None:
    """Not only the numbers: a claim's reasons, its per-seed list and a claim only the release has
    are the release's statement too; a float's last-bit residue is not a difference."""
    from test_bundle_safety import verdict

    found = verdict("a" * 40)
    labels = {"audit": {"verdicts": {c.id: c.label for c in found.claims}}}
    released = tmp_path / "audit.json"
    first, second = found.claims
    edits = {
        "reasons": first.model_copy(update={"reasons": ["the interval is wide; the effect is real"]}),
        "per_seed": first.model_copy(update={"per_seed": [0.5]}),
        "residue": first.model_copy(update={"delta": first.delta + 1e-12}),
    }
    fields = {}
    for name, claim in edits.items():
        released.write_text(found.model_copy(update={"claims": [claim, second]}).model_dump_json())
        fields[name] = {f.field for f in bd._as_released(found, labels, released).failures}
    assert fields == {
        "reasons": {f"claims[{first.id}].reasons[0]"},
        "per_seed": {f"claims[{first.id}].per_seed"},
        "residue": set(),
    }
    extra = second.model_copy(update={"id": "an-extra-claim"})
    released.write_text(found.model_copy(update={"claims": [*found.claims, extra]}).model_dump_json())
    out = bd._as_released(found, labels, released)
    assert not out.integrity_ok and {f.field for f in out.failures} == {"claims[an-extra-claim]"}
    rounded = [c.model_copy(update={"delta": c.delta + 1e-12}) for c in found.claims]  # another CPU's sum
    released.write_text(found.model_copy(update={"claims": rounded}).model_dump_json())
    assert bd._as_released(found, labels, released) == found

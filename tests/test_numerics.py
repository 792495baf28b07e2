"""Pinned CPU numerics: the `pappo` command pins them whatever the shell says, records what ran,
and the fingerprint tells runs that can be compared bit for bit from runs that cannot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from conftest import write_params
from pappo.config import Params
from pappo.config.evidence import NumericsParams
from pappo.evidence.audit_context import AuditContext
from pappo.evidence.numerics_audit import numerics_verdict
from pappo.numerics import PINNED_ENV, NumericsInfo, comparison, pin, requested_env

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
HAS_AVX2 = {"avx2", "fma"} <= set(
    next(
        (
            line.split(":", 1)[1].split()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("flags")
        ),
        [],
    )
)
needs_avx2 = pytest.mark.skipif(
    not HAS_AVX2, reason="this CPU has no AVX2+FMA: the pin falls back (recorded)"
)


def info(**change: object) -> NumericsInfo:
    base = dict(
        pinned=True,
        requested=requested_env(NumericsParams()),
        cpu_capability="AVX2",
        mkl_branch="COMPATIBLE,STRICT",
        threads=2,
        deterministic_algorithms=True,
        fingerprint="ab" * 8,
    )
    return NumericsInfo.model_validate({**base, **change})


def numerics_cmd(params: Params, tmp_path: Path, shell_env: dict[str, str]) -> NumericsInfo:
    """`pappo numerics --json` in a fresh process whose shell exports `shell_env`."""
    path = write_params(params, tmp_path / f"p{len(list(tmp_path.iterdir()))}.yaml")
    env = {k: v for k, v in os.environ.items() if k not in PINNED_ENV}
    env.update(shell_env, PATH=f"{BIN}:{os.environ.get('PATH', '')}")
    out = subprocess.run(
        ["pappo", "numerics", "--json", "--params", str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return NumericsInfo.model_validate_json(out.stdout.strip().splitlines()[-1])


def test_the_pin_asks_for_every_setting_and_opting_out_asks_for_none():
    asked = requested_env(NumericsParams(threads=3))
    assert set(asked) == set(PINNED_ENV)
    assert (asked["ATEN_CPU_CAPABILITY"], asked["MKL_CBWR"], asked["OMP_NUM_THREADS"]) == (
        "avx2",
        "COMPATIBLE,STRICT",
        "3",
    )
    assert requested_env(NumericsParams(pin=False)) == {}


@needs_avx2
def test_the_command_pins_whatever_the_shell_exports_and_the_fingerprint_repeats(
    fx_params: Params, tmp_path: Path
):
    shell = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "AUTO", "OMP_NUM_THREADS": "1"}
    a = numerics_cmd(fx_params, tmp_path, shell)
    b = numerics_cmd(fx_params, tmp_path, {})
    assert a.pinned and a.cpu_capability == "AVX2" and a.threads == 2 and a.deterministic_algorithms
    assert a.mkl_branch in ("COMPATIBLE,STRICT", "n/a")  # n/a: a torch build without MKL
    assert a == b  # same settings and the same bits, whatever the shell said
    # Opting out lets the shell decide: recorded as not pinned, and other kernels give other bits.
    off = fx_params.model_copy(update={"numerics": NumericsParams(pin=False)})
    free = numerics_cmd(off, tmp_path, shell)
    assert not free.pinned and free.requested == {} and free.cpu_capability == "DEFAULT"
    assert free.fingerprint != a.fingerprint
    assert comparison(a, free)[0] == "not bitwise comparable"


def test_a_pin_after_torch_loaded_says_what_it_could_not_pin(monkeypatch: pytest.MonkeyPatch):
    for name in PINNED_ENV:  # restored after the test: pin() writes os.environ
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:
            monkeypatch.delenv(name, raising=False)
    threads, det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    other = "default" if torch.backends.cpu.get_cpu_capability() != "DEFAULT" else "avx2"
    try:
        warnings = pin(NumericsParams(cpu_capability=other))
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(det)
    assert any(w.startswith("ATEN_CPU_CAPABILITY") for w in warnings)
    assert "torch was loaded before the pin" in warnings[-1]


@pytest.mark.parametrize(
    "field, value",
    [
        ("cpu_capability", "AVX512"),
        ("mkl_branch", "AUTO"),
        ("threads", 1),
        ("deterministic_algorithms", False),
        ("fingerprint", "cd" * 8),
    ],
)
def test_runs_compare_bitwise_only_when_every_part_of_the_key_matches(field: str, value: object):
    assert comparison(info(), info())[0] == "bitwise"
    assert comparison(info(), info(pinned=False, requested={}))[0] == "bitwise"  # same kernels, same bits
    kind, why = comparison(info(), info(**{field: value}))
    assert kind == "not bitwise comparable" and str(value) in why


def test_the_audit_reports_mixed_numerics_as_not_bitwise_comparable(fx_params: Params, tmp_path: Path):
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports/base_model.json").write_text(
        json.dumps({"numerics": info().model_dump(mode="json")})
    )
    runs = {(0, m): SimpleNamespace(determinism=SimpleNamespace(numerics=info())) for m in ("base", "ppo")}
    ctx = AuditContext(fx_params, tmp_path, tmp_path / "runs", tmp_path / "base", ROOT / "schemas")
    same = numerics_verdict(ctx, runs)
    assert (
        same is not None
        and same.comparison == "bitwise"
        and same.groups[0].members == ["base_model", "seed_0/base", "seed_0/ppo"]
    )
    runs[1, "ppo"] = SimpleNamespace(
        determinism=SimpleNamespace(numerics=info(cpu_capability="AVX512", fingerprint="cd" * 8))
    )
    mixed = numerics_verdict(ctx, runs)
    assert mixed is not None and mixed.comparison == "not bitwise comparable" and len(mixed.groups) == 2
    assert "ATen" in mixed.reason and "seed_1/ppo" in mixed.groups[1].members and not ctx.failures
    (tmp_path / "reports/base_model.json").write_text("{}")  # written before numerics were recorded
    numerics_verdict(ctx, runs)
    assert [f.field for f in ctx.failures] == ["numerics"] and "base_model" in ctx.failures[0].message


def test_recorded_numerics_come_from_a_receipt_or_a_base_model_report(tmp_path: Path):
    from pappo.io import PappoError
    from pappo.numerics import recorded

    mine = info(threads=4)
    receipt = tmp_path / "receipt.json"
    receipt.write_text(json.dumps({"determinism": {"numerics": mine.model_dump(mode="json")}}))
    report = tmp_path / "base_model.json"
    report.write_text(json.dumps({"numerics": mine.model_dump(mode="json")}))
    assert recorded(receipt) == mine == recorded(report)
    other = tmp_path / "summary.json"
    other.write_text(json.dumps({"methods": {}}))
    for bad, why in ((other, "KeyError"), (tmp_path / "none.json", "FileNotFoundError")):
        with pytest.raises(PappoError, match=f"{bad}: no numerics to compare with \\({why}.*pass --against"):
            recorded(bad)

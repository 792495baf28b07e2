"""CPU numerics pinned before torch loads, so that one commit computes the same bits on any
x86-64 machine with AVX2 (docs/numerics.md has the measurements behind each choice).

What decides float results on a CPU, measured with torch 2.13 (`benchmarks/numerics_pin.py`):
- ATen's vector kernels (`ATEN_CPU_CAPABILITY`): `torch.randn`, softmax and attention give other
  bits under default / avx2 / avx512. `avx2` exists on every x86-64 machine of the last decade.
- MKL's code branch (`MKL_CBWR`): sgemm/sgemv under AUTO differ between CPUs. On a non-Intel
  CPU, MKL ignores `AVX2` and runs AUTO (oneMKL developer guide, "Getting Started with
  Conditional Numerical Reproducibility"); `COMPATIBLE` is the one branch MKL documents as the
  same on Intel and non-Intel CPUs. STRICT makes it hold for unaligned views too.
- The intra-op thread count: reductions are split by it.
- oneDNN's ISA (`ONEDNN_MAX_CPU_ISA`), capped to the same level as ATen's.
Environment variables only count if set before torch (and its OpenMP and MKL) load, so `pin`
runs first in every `pappo` command that trains or evaluates. The effective settings, plus a
fingerprint (the hash of a short fixed training computation), go into every receipt: two runs are
bitwise comparable only when both match.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from pappo.io import PappoError, sha256_bytes

if TYPE_CHECKING:
    from pappo.config.evidence import NumericsParams

# MKL's branch codes (mkl_service.h), for reading back the branch MKL actually runs.
_MKL_BRANCHES = {
    0: "OFF",
    1: "BRANCH_OFF",
    2: "AUTO",
    3: "COMPATIBLE",
    4: "SSE2",
    6: "SSSE3",
    7: "SSE4_1",
    8: "SSE4_2",
    9: "AVX",
    10: "AVX2",
    11: "AVX512_MIC",
    12: "AVX512",
    13: "AVX512_MIC_E1",
    14: "AVX512_E1",
}
_MKL_STRICT = 0x10000
_ONEDNN_ISA = {"avx2": "AVX2", "default": "SSE41"}
PINNED_ENV = (
    "ATEN_CPU_CAPABILITY",
    "MKL_CBWR",
    "ONEDNN_MAX_CPU_ISA",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "MKL_DYNAMIC",
    "CUBLAS_WORKSPACE_CONFIG",
)


class NumericsInfo(BaseModel):
    """The numerics a process computed with: requested, effective, and a measured fingerprint."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    pinned: bool = Field(description="True when the requested pin is what torch and MKL actually run.")
    requested: dict[str, str] = Field(
        description="Environment the pin asked for ({} when numerics.pin is false)."
    )
    cpu_capability: str = Field(
        description="torch.backends.cpu.get_cpu_capability(): ATen's vector kernels in use."
    )
    mkl_branch: str = Field(
        description="MKL's code branch in use (mkl_cbwr_get), ',STRICT' when strict; 'n/a' without MKL."
    )
    threads: int = Field(ge=1, description="torch.get_num_threads().")
    deterministic_algorithms: bool = Field(description="torch.are_deterministic_algorithms_enabled().")
    fingerprint: str = Field(
        pattern=r"^[0-9a-f]{16}$",
        description="sha256 prefix of a fixed 3-step training of a "
        "tiny Qwen2 under these settings: equal fingerprints, same kernels' bits.",
    )

    def key(self) -> tuple[str, str, int, bool, str]:
        """What must match for bitwise comparison (`pinned` and `requested` only explain it)."""
        return (
            self.cpu_capability,
            self.mkl_branch,
            self.threads,
            self.deterministic_algorithms,
            self.fingerprint,
        )

    def describe(self) -> str:
        pin = "pinned" if self.pinned else "NOT pinned"
        det = (
            "deterministic algorithms" if self.deterministic_algorithms else "deterministic algorithms False"
        )
        return (
            f"{pin}: ATen {self.cpu_capability}, MKL {self.mkl_branch}, {self.threads} threads, {det}, "
            f"fingerprint {self.fingerprint}"
        )


def requested_env(settings: NumericsParams) -> dict[str, str]:
    """The environment variables the pin sets ({} when `pin` is false)."""
    if not settings.pin:
        return {}
    n = str(settings.threads)
    values = (
        settings.cpu_capability,
        settings.mkl_cbwr,
        _ONEDNN_ISA[settings.cpu_capability],
        n,
        n,
        "FALSE",
        ":4096:8",
    )  # cuBLAS needs a fixed workspace for deterministic algorithms on a GPU
    return dict(zip(PINNED_ENV, values, strict=True))


def pin(settings: NumericsParams) -> list[str]:
    """Set the pinned environment (before torch loads), then torch's runtime switches.

    Returns warnings: torch loaded before the pin with other settings (an in-process caller), or a
    CPU without the requested kernels. The receipt then records `pinned: false`.
    """
    env = requested_env(settings)
    loaded = "torch" in sys.modules
    for name, value in env.items():
        os.environ[name] = value
    import torch

    if settings.pin:
        torch.set_num_threads(settings.threads)
        torch.use_deterministic_algorithms(True)
    eff = _effective_env(torch)
    problems = [
        f"{k}: asked {env[k]!r}, runs {v!r}" for k, v in eff.items() if k in env and not _same(k, env[k], v)
    ]
    if problems and loaded:
        problems.append(
            "torch was loaded before the pin; run through the `pappo` command for pinned numerics"
        )
    return problems


def _same(name: str, asked: str, running: str) -> bool:
    if name == "ATEN_CPU_CAPABILITY":
        return asked.upper() == running.upper()
    return asked.replace(" ", "").upper() == running.upper()  # MKL_CBWR


def _effective_env(torch) -> dict[str, str]:
    return {"ATEN_CPU_CAPABILITY": torch.backends.cpu.get_cpu_capability(), "MKL_CBWR": mkl_branch()}


def mkl_branch() -> str:
    """The MKL code branch in force, read from the MKL that torch links ('n/a' if there is none)."""
    import ctypes

    import torch

    lib_dir = os.path.join(os.path.dirname(torch.__file__), "lib")
    try:
        get = ctypes.CDLL(os.path.join(lib_dir, "libtorch_cpu.so")).mkl_serv_cbwr_get
    except (OSError, AttributeError):
        return "n/a"
    get.restype = ctypes.c_int
    torch.mm(torch.ones(2, 2), torch.ones(2, 2))  # MKL reads MKL_CBWR on its first call
    code = get(-1)  # MKL_CBWR_ALL: branch plus flags
    name = _MKL_BRANCHES.get(code & 0xFFFF, f"code {code & 0xFFFF}")
    return name + (",STRICT" if code & _MKL_STRICT else "")


def collect(settings: NumericsParams) -> NumericsInfo:
    """The numerics of this process (call after `pin`)."""
    import torch

    env = requested_env(settings)
    eff = _effective_env(torch)
    pinned = settings.pin and all(_same(k, env[k], v) for k, v in eff.items())
    pinned = (
        pinned
        and torch.get_num_threads() == settings.threads
        and torch.are_deterministic_algorithms_enabled()
    )
    return NumericsInfo(
        pinned=pinned,
        requested=env,
        cpu_capability=eff["ATEN_CPU_CAPABILITY"],
        mkl_branch=eff["MKL_CBWR"],
        threads=torch.get_num_threads(),
        deterministic_algorithms=torch.are_deterministic_algorithms_enabled(),
        fingerprint=fingerprint(),
    )


@functools.cache
def fingerprint() -> str:
    """Hash of a fixed computation through the kernels the tiny profile uses: seeded init (randn),
    linear layers (MKL sgemm), attention (SDPA), RMSNorm, SiLU, log-softmax, AdamW; ~0.3 s."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(0)
        cfg = Qwen2Config(
            vocab_size=512,
            hidden_size=64,
            intermediate_size=192,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=256,
        )
        model = Qwen2ForCausalLM(cfg)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        x = torch.randint(0, 512, (2, 96))
        for _ in range(3):
            loss = model(input_ids=x, labels=x).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        data = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
    finally:
        torch.random.set_rng_state(state)
    return sha256_bytes(data)[:16]


Comparison = Literal["bitwise", "not bitwise comparable"]


def comparison(a: NumericsInfo, b: NumericsInfo) -> tuple[Comparison, str]:
    """How two runs' results may be compared, and why."""
    if a.key() == b.key():
        return "bitwise", f"both {a.describe()}"
    diff = [
        n
        for n, x, y in zip(("ATen", "MKL", "threads", "deterministic", "fingerprint"), a.key(), b.key())
        if x != y
    ]
    return "not bitwise comparable", f"differ in {', '.join(diff)}: {a.describe()} vs {b.describe()}"


def recorded(path: Path) -> NumericsInfo:
    """The numerics a run recorded: a receipt.json's `determinism.numerics` or a base-model report's
    `numerics`; a PappoError naming the file where it holds neither."""
    try:
        data = json.loads(Path(path).read_text())
        return NumericsInfo.model_validate(
            data["determinism"]["numerics"] if "determinism" in data else data["numerics"]
        )
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise PappoError(
            f"{path}: no numerics to compare with ({type(e).__name__}: {e}); pass --against a receipt.json "
            "or reports/base_model.json written by this version"
        ) from None

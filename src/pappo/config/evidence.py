"""params.yaml's evidence sections: the pre-registered claims and the CPU kernels' numerics."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pappo.config.section import Section


class ClaimParams(Section):
    """A claim written down before the run and checked by `pappo audit` (part of what receipts hash)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Short unique name.")
    metric: Literal["success", "pass_at_k", "failed_edit_rate", "tool_cost", "repeated_test_rate"] = Field(
        description="Held-out metric of the final evaluation."
    )
    method: Literal["base", "rft", "grpo", "ppo", "pappo"] = Field(
        description="The method the claim is about."
    )
    baseline: Literal["best_non_ppo", "base", "rft", "grpo", "ppo", "pappo"] = Field(
        "best_non_ppo", description="What it is compared with; best_non_ppo = the best of base, rft, grpo."
    )
    direction: Literal["higher", "lower"] = Field("higher", description="Which way is better for the metric.")
    min_delta: float = Field(0.0, ge=0, description="The mean improvement over seeds must be above it.")
    min_seed_wins: int = Field(
        1, ge=0, description="Seeds on which the method must beat the baseline by more than min_delta."
    )
    ci_rule: Literal["lower_bound_above_zero", "none"] = Field(
        "lower_bound_above_zero",
        description="lower_bound_above_zero: the mean improvement must be above 0 by a one-sided t test "
        "over seeds at 2.5% (the 95% interval's lower end), Holm-adjusted over the claims judged "
        "together; none: descriptive, the claim cannot hold.",
    )
    needs_gpu: bool = Field(True, description="Only CUDA receipts can support it (CPU runs cannot).")


class NumericsParams(Section):
    """CPU numerics pinned before torch loads (src/pappo/numerics.py, docs/numerics.md)."""

    pin: bool = Field(
        True,
        description="Pin the settings below in every command that trains or evaluates; "
        "false: the machine chooses (recorded, and runs are then bitwise comparable only with "
        "runs of the same fingerprint).",
    )
    threads: int = Field(
        2,
        ge=1,
        le=256,
        description="Intra-op threads of torch, OpenMP and MKL (reductions "
        "are split by it, so it is part of the result; not the machine's core count).",
    )
    cpu_capability: Literal["avx2", "default"] = Field(
        "avx2",
        description="ATEN_CPU_CAPABILITY: ATen's vector "
        "kernels (avx2: any x86-64 with AVX2; default: scalar-width, slower).",
    )
    mkl_cbwr: Literal["COMPATIBLE,STRICT", "COMPATIBLE", "AVX2,STRICT", "AVX2", "AUTO"] = Field(
        "COMPATIBLE,STRICT",
        description="MKL_CBWR: MKL's code branch. COMPATIBLE is the one MKL documents as the same on "
        "Intel and non-Intel CPUs; AVX2 holds across Intel CPUs only (MKL runs AUTO on others).",
    )

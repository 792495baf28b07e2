"""`pappo profile`: a params profile (a model and the settings it needs, e.g.
profiles/qwen2.5-coder-7b.yaml) merged into params.yaml, refused before anything is written where
the merged run is predicted not to fit in the GPU's memory (policy/memory.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from pappo.config import Params, apply_profile
from pappo.io import PappoError, atomic_write_text
from pappo.policy.memory import check


def write_profile(
    params_path: Path, overlay: Path, revision: str | None, gpu_memory_gib: float | None = None
) -> Params:
    """Merge `overlay` (and the hub `revision` to pin) into `params_path`, validated, and write it
    atomically (comments dropped); the merged params. `gpu_memory_gib`: as policy.memory.check."""
    merged = apply_profile(params_path, overlay, revision)
    too_big = check(merged, gpu_memory_gib)
    if too_big:
        raise PappoError(f"{overlay}: {too_big}; nothing written")
    header = f"# params.yaml with {overlay} merged in by `pappo profile` (field docs: src/pappo/config/)\n"
    dumped = merged.model_dump(mode="json", by_alias=True)
    atomic_write_text(params_path, header + yaml.safe_dump(dumped, sort_keys=False))
    return merged

"""Layers point one way: sandbox -> tasks -> env -> policy -> rl -> experiment -> evidence -> cli.

A module may import its own layer, any lower layer and the shared foundations (the top-level
modules: config, io, numerics, stats, stage_code), never a higher layer. Read from the source with
`ast`, so an import inside a function counts too; imports under `if TYPE_CHECKING:` (annotations
only, nothing runs) do not. The evidence layer and the CLI also load without torch: the data
contracts they read live in torch-free modules."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "pappo"
LAYERS = ["sandbox", "tasks", "env", "policy", "rl", "experiment", "evidence", "cli"]


def _layer(module: str) -> int | None:
    """Index of a `pappo.x...` module's layer; None for a foundation module."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "pappo":
        return None
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else None


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
                   for n in ast.walk(node)}  # fmt: skip
    out = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [(node.lineno, node.module)] + [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return out


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_imports_a_higher_layer(path: Path):
    rel = path.relative_to(SRC)
    own = LAYERS.index(rel.parts[0]) if rel.parts[0] in LAYERS else (LAYERS.index("cli") if rel.stem == "cli" else None)
    bad = []
    for line, module in _imports(path):
        target = _layer(module)
        if target is not None and (own is None or target > own):
            bad.append(f"{rel}:{line} imports {module}")
    assert not bad, "\n".join(bad)


def test_the_check_sees_a_violation(tmp_path: Path):
    f = tmp_path / "m.py"
    f.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pappo.cli\n"
                 "def f():\n    from pappo.evidence.audit import run\n")
    assert [_layer(m) for _, m in _imports(f)] == [None, None, LAYERS.index("evidence"), LAYERS.index("evidence")]


TORCH_FREE = ("pappo.cli", "pappo.evidence.audit", "pappo.evidence.summary", "pappo.evidence.recompute",
              "pappo.evidence.schemas", "pappo.evidence.reproduce", "pappo.evidence.release")  # fmt: skip
HEAVY = ("torch", "transformers", "peft")


def test_the_evidence_layer_and_the_cli_load_without_torch():
    # `pappo audit` / `pappo report` paid ~5 s for torch they never use; a fresh interpreter, as they run
    code = (f"import importlib, json, sys\nout = {{}}\nfor m in {TORCH_FREE!r}:\n    importlib.import_module(m)\n"
            f"    out[m] = [h for h in {HEAVY!r} if h in sys.modules]\nprint(json.dumps(out))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(SRC.parent)})  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = json.loads(out.stdout)
    first = next((m for m, heavy in loaded.items() if heavy), None)
    assert first is None, f"{first} loads {loaded[first]}: import them inside the functions that need them"

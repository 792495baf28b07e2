"""Layers point one way: sandbox -> tasks -> env -> policy -> rl -> experiment -> evidence -> cli.

A module may import its own layer, any lower layer and the shared foundations (the top-level
modules: config, io, numerics, stats, stage_code), never a higher layer. No two modules import
each other, directly or around a longer loop, within a layer too: a cycle is two modules that
cannot be understood (or tested) one without the other. Read from the source with `ast`, so an
import inside a function counts too; imports under `if TYPE_CHECKING:` (annotations only, nothing
runs) do not. The evidence layer and the CLI also load without torch: the data contracts they read
live in torch-free modules."""

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
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for n in ast.walk(node)
    }
    out = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [(node.lineno, node.module)] + [
                (node.lineno, f"{node.module}.{a.name}") for a in node.names
            ]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return out


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_imports_a_higher_layer(path: Path):
    rel = path.relative_to(SRC)
    own = (
        LAYERS.index(rel.parts[0])
        if rel.parts[0] in LAYERS
        else (LAYERS.index("cli") if rel.stem == "cli" else None)
    )
    bad = []
    for line, module in _imports(path):
        target = _layer(module)
        if target is not None and (own is None or target > own):
            bad.append(f"{rel}:{line} imports {module}")
    assert not bad, "\n".join(bad)


def test_the_check_sees_a_violation(tmp_path: Path):
    f = tmp_path / "m.py"
    f.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pappo.cli\n"
        "def f():\n    from pappo.evidence.audit import run\n"
    )
    assert [_layer(m) for _, m in _imports(f)] == [
        None,
        None,
        LAYERS.index("evidence"),
        LAYERS.index("evidence"),
    ]


def _module_name(root: Path, path: Path) -> str:
    """`pappo.a.b` for root/a/b.py, `pappo.a` for root/a/__init__.py (root: the package folder)."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (root: the package folder, e.g. src/pappo).
    `from a.b import c` points at module a.b.c when that is a module, else at a.b."""
    files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    known = {_module_name(root, p) for p in files}
    graph: dict[str, set[str]] = {}
    for path in files:
        name = _module_name(root, path)
        targets = {m for _, m in _imports(path) if m in known}
        # `from a.b import c` lists both a.b and a.b.c: keep the module c when it is one
        graph[name] = {t for t in targets if not any(o.startswith(t + ".") for o in targets)} - {name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_import_cycle():
    cycles = import_cycles(import_graph(SRC))
    assert not cycles, "import cycles (move what both need into a module of its own):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def test_the_cycle_check_sees_a_planted_cycle(tmp_path: Path):
    pkg = tmp_path / "pappo"
    (pkg / "rl").mkdir(parents=True)
    for init in (pkg / "__init__.py", pkg / "rl" / "__init__.py"):
        init.write_text("")
    (pkg / "rl" / "a.py").write_text("from pappo.rl.b import g\n\ndef f():\n    return g()\n")
    (pkg / "rl" / "b.py").write_text("def g():\n    return 1\n")
    (pkg / "rl" / "c.py").write_text("import pappo.rl.a\n")
    assert import_cycles(import_graph(pkg)) == []
    # within one layer, through a function-level import, around a loop of three
    (pkg / "rl" / "b.py").write_text("def g():\n    from pappo.rl.c import h\n    return h\n")
    (pkg / "rl" / "c.py").write_text("import pappo.rl.a\n\nh = 1\n")
    assert import_cycles(import_graph(pkg)) == [["pappo.rl.a", "pappo.rl.b", "pappo.rl.c"]]
    # an import only for annotations is not a cycle
    typing_only = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pappo.rl.a\n"
    (pkg / "rl" / "c.py").write_text(typing_only)
    assert import_cycles(import_graph(pkg)) == []


TORCH_FREE = (
    "pappo.cli",
    "pappo.evidence.audit",
    "pappo.evidence.summary",
    "pappo.evidence.recompute",
    "pappo.evidence.schemas",
    "pappo.evidence.reproduce",
    "pappo.evidence.release",
)
HEAVY = ("torch", "transformers", "peft")


def test_the_evidence_layer_and_the_cli_load_without_torch():
    # `pappo audit` / `pappo report` paid ~5 s for torch they never use; a fresh interpreter, as they run
    code = (
        f"import importlib, json, sys\nout = {{}}\nfor m in {TORCH_FREE!r}:\n    importlib.import_module(m)\n"
        f"    out[m] = [h for h in {HEAVY!r} if h in sys.modules]\nprint(json.dumps(out))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(SRC.parent)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = json.loads(out.stdout)
    first = next((m for m, heavy in loaded.items() if heavy), None)
    assert first is None, f"{first} loads {loaded[first]}: import them inside the functions that need them"

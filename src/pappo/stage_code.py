"""The code each pipeline stage runs, so that evidence goes stale only where its code changed.

A stage's command is `pappo <command>`; the code it can run is the `cli` package (`pappo` loads all
of it to register the commands) plus every pappo module reachable by imports from the cli modules'
top-level imports and from the command's function, counted generously: every import anywhere in a
module (function bodies and TYPE_CHECKING blocks too), its parent packages, and modules started by
name (`python -m pappo.sandbox.server`). The other commands' functions are not followed. dvc.yaml
lists exactly these files as the stage's dependencies (a package folder stands for all its
modules); a test keeps the two equal, so a narrower list can never hide a real change. Receipts
bind the stage's files (`stage_code`), and the audit compares them, not the whole tree.

No torch here: the audit and the train stage both read it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

from pappo.io import canonical_json, sha256_bytes, sha256_file

ENVIRONMENT: tuple[str, ...] = ("pyproject.toml", "requirements.lock")  # what every stage runs under
CLI = "src/pappo/cli"  # the `pappo` command: a package, one module per group of commands
_MODULE_NAME = re.compile(r"pappo(\.[A-Za-z_][A-Za-z0-9_]*)+")


def module_file(src: Path, name: str) -> Path | None:
    """The file of module `name` under `src` (the folder holding the pappo package), if any."""
    base = src.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imports(tree: ast.AST, package: str) -> set[str]:
    """Module names a file may import: every import statement and every module named in a string."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importing package
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}  # `from pkg import module`
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _MODULE_NAME.fullmatch(node.value)
        ):
            found.add(node.value)
    return {n for n in found if n == "pappo" or n.startswith("pappo.")}


def closure(src: Path, start: set[str], skip: frozenset[str] = frozenset()) -> set[Path]:
    """Files of every pappo module reachable from `start`, with their parent packages; the modules
    named in `skip` are neither counted nor followed."""
    seen: set[str] = set(skip)
    todo = list(start)
    files: set[Path] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = module_file(src, name)
        if path is None:
            continue  # `from pkg import function`: not a module
        files.add(path)
        parents = [".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)]
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        todo += parents + sorted(_imports(ast.parse(path.read_text()), package))
    return files


def cli_modules(src: Path) -> dict[str, Path]:
    """The cli package's modules by name (`pappo.cli`, `pappo.cli.app`, ...) and their files."""
    return {
        ("pappo.cli" if p.stem == "__init__" else f"pappo.cli.{p.stem}"): p
        for p in sorted((src / "pappo" / "cli").glob("*.py"))
    }


def command_function(src: Path, command: str) -> ast.FunctionDef:
    """The function behind `pappo <command>` in the cli package under `src` (typer: the decorator's
    name, else the function's)."""
    for path in cli_modules(src).values():
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "command":
                    name = (
                        deco.args[0].value if deco.args and isinstance(deco.args[0], ast.Constant) else None
                    )
                    if (name or node.name.replace("_", "-")) == command:
                        return node
    raise ValueError(f"{src / 'pappo' / 'cli'}: no command {command!r}")


def command_files(src: Path, command: str) -> list[str]:
    """Files the command can run, relative to `src` (the folder holding the pappo package): the cli
    package, the modules its files import at their top, the command function's, and theirs."""
    cli = cli_modules(src)
    start = _imports(command_function(src, command), "pappo")
    for path in cli.values():
        top = [n for n in ast.parse(path.read_text()).body if isinstance(n, (ast.Import, ast.ImportFrom))]
        start |= _imports(ast.Module(body=top, type_ignores=[]), "pappo.cli")
    # the other commands' functions are not followed: their imports run only when they are called
    files = closure(src, start, skip=frozenset(cli)) | set(cli.values())
    return sorted(p.relative_to(src).as_posix() for p in files)


def code_sha256(command: str) -> str:
    """Hash of the installed package's files that `pappo <command>` can run (what a run reports)."""
    src = Path(__file__).resolve().parents[1]
    listing = {rel: sha256_file(src / rel) for rel in command_files(src, command)}
    return sha256_bytes(canonical_json(listing).encode())


def stage_command(dvc_yaml: dict, stage: str) -> str:
    """The pappo sub-command a dvc.yaml stage runs (`pappo base-model --params ...` -> base-model)."""
    cmd = dvc_yaml["stages"][stage]["cmd"].split()
    if cmd[0] != "pappo":
        raise ValueError(f"dvc.yaml stage {stage}: {cmd[0]!r} is not a pappo command")
    return cmd[1]


def expand(root: Path, deps: list[str]) -> set[str]:
    """Code dependencies as files: a folder under src/ stands for every .py file under it."""
    out: set[str] = set()
    for dep in deps:
        path = root / dep
        if dep.startswith("src/") and path.is_dir():
            out |= {
                p.relative_to(root).as_posix() for p in path.rglob("*.py") if "__pycache__" not in p.parts
            }
        elif dep.startswith("src/"):
            out.add(dep)
    return out


def stage_code(root: Path, stage: str, dvc_yaml_text: str | None = None) -> list[str]:
    """The code a receipt of `stage` binds: its dvc.yaml code dependencies and the environment."""
    text = dvc_yaml_text if dvc_yaml_text is not None else (Path(root) / "dvc.yaml").read_text()
    stages = (yaml.safe_load(text) or {}).get("stages", {})
    if stage not in stages:
        raise ValueError(f"dvc.yaml has no stage {stage!r}")
    deps = [d for d in stages[stage].get("deps", []) if isinstance(d, str)]
    return sorted({d for d in deps if d.startswith("src/")} | set(ENVIRONMENT))


def collapse(root: Path, files: list[str]) -> list[str]:
    """`files` as dvc.yaml lists them: a package folder whose every module is in `files` by itself."""
    chosen, out = set(files), set(files)
    for init in sorted((root / "src" / "pappo").rglob("__init__.py")):
        folder = init.parent
        if folder == root / "src" / "pappo":
            continue  # the top package: its files one by one, or every stage would depend on all
        members = {
            p.relative_to(root).as_posix() for p in folder.rglob("*.py") if "__pycache__" not in p.parts
        }
        if members <= chosen:
            out = (out - members) | {folder.relative_to(root).as_posix()}
    return sorted(out)

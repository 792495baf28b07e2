"""A family is a small Python package with a pytest suite: `<family>/<family>/*.py` + `tests/`."""

from __future__ import annotations

import ast
import codecs
import re
import sys
from pathlib import Path

from pappo.io import PappoError, sha256_bytes
from pappo.tasks.models import NAME_PATTERN

# Files that are never part of a family tree (caches, editor droppings).
_IGNORED_PARTS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


def load_tree(root: Path) -> dict[str, bytes]:
    """Read every file under `root` into {posix relative path: bytes}, sorted by path."""
    root = Path(root)
    if not root.is_dir():
        raise PappoError(f"{root}: family folder not found")
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in _IGNORED_PARTS for part in rel.parts) or path.suffix == ".pyc":
            continue
        if path.is_file():
            files[rel.as_posix()] = path.read_bytes()
    return files


def is_test_file(path: str) -> bool:
    return path.startswith("tests/")


def source_files(files: dict[str, bytes]) -> dict[str, bytes]:
    """The package's Python source: what mutations may touch (never tests)."""
    return {p: d for p, d in files.items() if p.endswith(".py") and not is_test_file(p)}


def source_lines(files: dict[str, bytes]) -> int:
    return sum(d.count(b"\n") for d in source_files(files).values())


def files_sha256(files: dict[str, bytes]) -> dict[str, str]:
    return {path: sha256_bytes(data) for path, data in sorted(files.items())}


def list_families(repos: Path) -> list[str]:
    """Family folder names under `repos`, sorted."""
    repos = Path(repos)
    if not repos.is_dir():
        raise PappoError(f"{repos}: repos folder not found")
    return sorted(p.name for p in repos.iterdir() if p.is_dir() and not p.name.startswith("."))


_FAMILY_NAME = re.compile(NAME_PATTERN)  # the manifest's `family` and instance-id pattern


def family_problems(root: Path, files: dict[str, bytes]) -> list[str]:
    """What breaks the layout rules of docs/tasks.md ("Families"), each with its fix; checked before
    any sandbox run, where these would fail late, with a traceback or a bare 'clean tree fails'."""
    name, problems = Path(root).name, []
    if not _FAMILY_NAME.match(name):
        problems.append(
            f"folder name {name!r}: a family name is lower-case letters, digits and _, starting with a "
            "letter (it becomes the task ids); rename the folder"
        )
    for path, data in files.items():
        if path.endswith(".py"):
            problems += _source_problems(path, data)
    if not any(is_test_file(p) and Path(p).name.startswith("test_") and p.endswith(".py") for p in files):
        found = sorted(p for p in files if Path(p).name.startswith("test_") and p.endswith(".py"))
        where = f" (found {', '.join(found[:3])}); move them there" if found else "; add a pytest suite"
        problems.append(f"no tests/test_*.py: the sandbox collects tests from tests/ only{where}")
    problems += _package_problems(files)
    for path in sorted(p for p in files if Path(p).name == "conftest.py"):
        problems.append(
            f"{path}: the sandbox runs pytest with --noconftest and grading drops conftest.py files, "
            "so its fixtures would be missing; move them into the test files and remove it"
        )
    return problems + _config_problems(files)


def _source_problems(path: str, data: bytes) -> list[str]:
    """A module must be BOM-less UTF-8 that parses: mutations, diffs and hidden checks read the text
    (`ast.parse` of a str refuses a BOM, which `import` skips), and a module no test imports
    would otherwise fail only when a mutant of it is made."""
    if data.startswith(codecs.BOM_UTF8):
        return [f"{path}: starts with a UTF-8 byte-order mark; re-save it as UTF-8 without BOM"]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return [f"{path}: not UTF-8 (byte {e.start}); re-save it as UTF-8"]
    try:
        ast.parse(text, filename=path)
    except SyntaxError as e:  # ValueError too (a NUL byte)
        return [f"{path}:{e.lineno}: does not parse as Python ({e.msg}); fix the syntax"]
    except ValueError as e:
        return [f"{path}: does not parse as Python ({e}); fix the file"]
    return []


# pytest reads its settings from the first of these it finds; the sandbox passes its own (-c), so a
# family's would be silently ignored: tests that need them would pass here and fail for the author.
_PYTEST_CONFIG = {
    "pytest.ini": None,
    ".pytest.ini": None,
    "tox.ini": re.compile(r"^\[pytest\]", re.M),
    "setup.cfg": re.compile(r"^\[tool:pytest\]", re.M),
    "pyproject.toml": re.compile(r"^\[tool\.pytest\.ini_options\]", re.M),
}


def _config_problems(files: dict[str, bytes]) -> list[str]:
    out = []
    for path, data in sorted(files.items()):
        name = Path(path).name
        if name in _PYTEST_CONFIG:
            section = _PYTEST_CONFIG[name]
            if section is None or section.search(data.decode("utf-8", "replace")):
                out.append(
                    f"{path}: pytest configuration of the family's own; the sandbox runs pytest with its "
                    "own trusted configuration and ignores it: remove it (and its pytest section) and "
                    "write what the tests need into the tests themselves"
                )
    return out


def _package_problems(files: dict[str, bytes]) -> list[str]:
    inits = [p for p in files if p.endswith("/__init__.py") and not is_test_file(p)]
    top = sorted(p.split("/")[0] for p in inits if p.count("/") == 1)
    # The sandbox's own code imports standard-library modules (json, random...) before the tests
    # run, so a family package of such a name is never the one the tests import.
    if top:
        return [
            f"{name}/: the package name {name!r} is a standard-library module's; rename the package "
            "(and its imports in the tests)"
            for name in top
            if name in sys.stdlib_module_names
        ]
    hint = ""
    if inits:  # e.g. src/<package>/__init__.py
        nested = min((p.rsplit("/", 1)[0] for p in inits), key=lambda p: p.count("/"))
        hint = f"; move {nested}/ to {nested.rsplit('/', 1)[-1]}/ (a src/ layout is not supported)"
    return [
        f"no top-level package (<family>/<package>/__init__.py): the tests import it from the family root{hint}"
    ]


def check_families(repos: Path, families: list[str]) -> None:
    """Raise one PappoError listing every layout problem of every family under `repos`
    (family_problems), so an author fixes them all in one round."""
    blocks = []
    for family in families:
        root = Path(repos) / family
        problems = family_problems(root, load_tree(root))
        if problems:
            blocks.append(f"{root}: not a valid family:\n" + "\n".join(f"  - {p}" for p in problems))
    if blocks:
        raise PappoError("\n".join(blocks))

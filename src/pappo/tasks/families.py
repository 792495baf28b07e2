"""A family is a small Python package with a pytest suite: `<family>/<family>/*.py` + `tests/`."""

from __future__ import annotations

import re
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
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as e:
                problems.append(f"{path}: not UTF-8 (byte {e.start}); re-save it as UTF-8")
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
    return problems


def _package_problems(files: dict[str, bytes]) -> list[str]:
    inits = [p for p in files if p.endswith("/__init__.py") and not is_test_file(p)]
    if any(p.count("/") == 1 for p in inits):
        return []
    hint = ""
    if inits:  # e.g. src/<package>/__init__.py
        nested = min((p.rsplit("/", 1)[0] for p in inits), key=lambda p: p.count("/"))
        hint = f"; move {nested}/ to {nested.rsplit('/', 1)[-1]}/ (a src/ layout is not supported)"
    return [
        f"no top-level package (<family>/<package>/__init__.py): the tests import it from the family root{hint}"
    ]


def check_family(root: Path, files: dict[str, bytes]) -> None:
    """Raise a PappoError listing every layout problem of the family at `root` (family_problems)."""
    problems = family_problems(root, files)
    if problems:
        raise PappoError(f"{root}: not a valid family:\n" + "\n".join(f"  - {p}" for p in problems))

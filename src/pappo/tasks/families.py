"""A family is a small Python package with a pytest suite: `<family>/<family>/*.py` + `tests/`."""

from __future__ import annotations

from pathlib import Path

from pappo.io import PappoError, sha256_bytes

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

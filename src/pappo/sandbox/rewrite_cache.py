"""Cached assertion rewriting for the fork server's pytest session.

Assertion rewriting is the largest single cost of a run, and trusted tests are the same every
time, so rewritten test modules are kept per (path, content). The worker's forker fills the cache
(`prime`) and every child forked later inherits it; library modules are compiled by the child
that runs them, so no child holds another tree's code. A test file under tests/ whose content is
not the trusted one ends the run as tampering. After pytest's rewriting, `typed.instrument`
makes each assert's `==`/`!=` record its operands' exact types.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
from pathlib import Path
from typing import Any

import _pytest.assertion.rewrite as _rewrite
import _pytest.python
import pytest

from pappo.sandbox import pytest_plugin, typed

_CACHE: dict[tuple[str, str], Any] = {}


def _rewrite_typed(fn: Path, source: bytes, config: pytest.Config) -> tuple[bytes, Any]:
    """pytest's `_rewrite_test`, then the typed-assertion pass (`typed.instrument`)."""
    tree = ast.parse(source, filename=str(fn))
    _rewrite.rewrite_asserts(tree, source, str(fn), config)
    typed.instrument(tree, os.path.relpath(str(fn), str(config.rootpath)))
    return importlib.util.source_hash(source), compile(tree, str(fn), "exec", dont_inherit=True)


def cached_rewrite(fn: Path, config: pytest.Config) -> Any:
    source = fn.read_bytes()
    digest = hashlib.sha256(source).hexdigest()
    key = (str(fn), digest)
    if key not in _CACHE:
        trusted = pytest_plugin._RUN.get("trusted_tests", {})
        rel = os.path.relpath(str(fn), str(config.rootpath))
        if pytest_plugin._RUN and rel.startswith("tests/") and trusted.get(rel) != digest:
            pytest_plugin.emit("tamper", where="collection", changed=[f"test file {rel} on disk"])
            pytest_plugin._exit(3)
        _store(key, fn, source, config)
    return _CACHE[key]


def prime(fn: Path, source: bytes, config: pytest.Config) -> None:
    """Rewrite the test file `fn` with content `source` into the cache unless it is there (in the
    forker: no run, so no tamper check)."""
    key = (str(fn), hashlib.sha256(source).hexdigest())
    if key not in _CACHE:
        _store(key, fn, source, config)


def _store(key: tuple[str, str], fn: Path, source: bytes, config: pytest.Config) -> None:
    if len(_CACHE) > 2048:
        _CACHE.clear()
    _CACHE[key] = _rewrite_typed(fn, source, config)


def brief_failure(self: _pytest.python.Function, excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """A one-line failure text. pytest's long traceback costs milliseconds per failing test and
    nothing reads it: the plugin records its own failure details."""
    return f"{excinfo.typename}: {excinfo.exconly(tryshort=True)[:500]}"

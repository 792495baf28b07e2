"""Hidden checks inside the sandbox: run them, and (on the clean tree) record the visible calls.

A check is data: a target (`pkg.mod:Qual.name`), how to call it (`function`, `method`,
`classmethod`, `static`, `property`), and tagged-JSON inputs (`values.encode`). `run_checks`
decodes the inputs afresh for every check, reseeds `random` (`CHECK_SEED`), calls the target under the per-test alarm and encodes
what came out: the return value (`r`) or the exception type (`x`), then the receiver and the
arguments after the call (`s`, for mutations). The outcomes go back over the authenticated
channel; the trusted grader compares them with the clean tree's, as data.

`Tracer` (a `sys.setprofile` hook used only when building checks on the clean tree) records the
*entry calls* of the visible tests: calls into family code whose nearest family-or-test caller
is test code, with their encoded inputs and the family functions each one reached.
"""

from __future__ import annotations

import random
import signal
import sys
from collections.abc import Callable
from typing import Any

from pappo.sandbox import values

_setitimer, _getattr, _type = signal.setitimer, getattr, type
_reseed = random.seed  # captured before any code under test exists, like everything here
CHECK_SEED = 0  # `random` is reseeded with it before every check call
_encode, _decode, _find = values.encode, values.decode, values.find_class
_CO_GEN = 0x20 | 0x80 | 0x200  # generator, coroutine, async generator: resumed, not called
_CO_VARARGS, _CO_VARKW = 0x04, 0x08
_TIMEOUT = "pappo.sandbox.pytest_plugin:SandboxTestTimeout"
_IMMUTABLE = {
    "none",
    "bool",
    "int",
    "float",
    "str",
    "bytes",
    "fraction",
    "decimal",
    "date",
    "timedelta",
    "enum",
    "fn",
}
CHECK_TIMEOUT_S = 1.0  # per check; the clean tree answers each in microseconds
MAX_ENTRIES_PER_TARGET = 40  # per test: a loop over 4000 inputs needs not send them all


def type_name(t: type) -> str:
    return f"{values._type_module(t)}:{values._type_name(t)}"


def run_checks(spec: dict[str, Any], timeout: float) -> list[dict[str, Any]]:
    """Every check's outcome, in order. After a check hits the alarm the rest are not run (the grade
    has failed already): a hanging candidate costs one timeout, not one per check."""
    roots = frozenset(spec["roots"])
    out: list[dict[str, Any]] = []
    for c in spec["checks"]:
        out.append(run_one(c, roots, timeout))
        if out[-1].get("x") == _TIMEOUT:
            return out + [{"x": "not run"}] * (len(spec["checks"]) - len(out))
    return out


def run_one(c: dict[str, Any], roots: frozenset[str], timeout: float) -> dict[str, Any]:
    try:
        receiver, fn, args, kwargs = _prepare(c)
    except BaseException as e:  # a candidate that lost the target fails the check
        return {"x": "setup:" + type_name(_type(e))}
    # The same `random` state for every call: code that breaks ties with random.choice answers the
    # same on every run (two agreeing clean runs would otherwise keep a check that later disagrees).
    _reseed(CHECK_SEED)
    _setitimer(signal.ITIMER_REAL, timeout)
    try:
        result = fn(*args, **kwargs)
        _setitimer(signal.ITIMER_REAL, 0)
        out: dict[str, Any] = {"r": _encode(result, roots)}
    except values.Unencodable as e:
        return {"u": str(e)[:200]}
    except BaseException as e:  # SystemExit and the alarm included
        _setitimer(signal.ITIMER_REAL, 0)
        return _raised(e, roots)
    if c["kind"] in ("method", "property") or not all(
        map(_immutable, [*c["args"], *(v for _, v in c["kwargs"])])
    ):
        try:  # what the call did to its receiver and arguments
            out["s"] = _encode([receiver, args, kwargs], roots)
        except values.Unencodable as e:
            return {"u": "after the call: " + str(e)[:200]}
    return out


def _immutable(e: Any) -> bool:
    """An encoded input no call can change (so its state after the call needs no encoding)."""
    return e[0] in _IMMUTABLE or (e[0] in ("tuple", "frozenset") and all(map(_immutable, e[1])))


def _raised(e: BaseException, roots: frozenset[str]) -> dict[str, Any]:
    """The exception's type; for a family exception also its attributes (`err.cycle`), not its text."""
    out: dict[str, Any] = {"x": type_name(_type(e))}
    if values._type_module(_type(e)).split(".")[0] in roots:
        try:
            out["f"] = values.encode_fields(e, roots)
        except values.Unencodable:
            pass
    return out


def _prepare(c: dict[str, Any]) -> tuple[Any, Callable[..., Any], list[Any], dict[str, Any]]:
    kind, target = c["kind"], c["target"]
    args = [_decode(a) for a in c["args"]]
    kwargs = {k: _decode(v) for k, v in c["kwargs"]}
    if kind in ("function", "static", "classmethod"):
        return None, _find(target), args, kwargs
    receiver = _decode(c["self"])
    name = target.rsplit(".", 1)[-1].rsplit(":", 1)[-1]
    if kind == "property":
        return receiver, lambda: _getattr(receiver, name), [], {}
    return receiver, _getattr(receiver, name), args, kwargs


class Tracer:
    """Records the entry calls of one test (see the module docstring); install with sys.setprofile."""

    def __init__(self, workspace: str, roots: frozenset[str]) -> None:
        self.family = tuple(f"{workspace}/{r}/" for r in sorted(roots) if not r.startswith("test_"))
        self.tests = f"{workspace}/tests/"
        self.roots = roots
        self.entries: list[dict[str, Any]] = []
        self.stack: list[tuple[object, dict[str, Any] | None]] = []
        self.counts: dict[str, int] = {}

    def __call__(self, frame: Any, event: str, arg: object) -> None:
        if event == "return" and self.stack and self.stack[-1][0] is frame:
            _, entry = self.stack.pop()
            if entry is not None:
                entry["reached"] = sorted(entry["reached"])
                self.entries.append(entry)
            return
        if event != "call":
            return
        code = frame.f_code
        if not code.co_filename.startswith(self.family):
            return
        qual = f"{frame.f_globals.get('__name__')}:{code.co_qualname}"
        if self.stack:
            if self.stack[0][1] is not None:
                self.stack[0][1]["reached"].add(qual)
            return
        if code.co_flags & _CO_GEN or not self._called_from_test(frame.f_back):
            return
        entry = self._entry(frame, code, qual)
        self.stack.append((frame, entry))

    def _called_from_test(self, frame: Any) -> bool:
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith(self.tests):
                return True
            if name.startswith(self.family):
                return False
            frame = frame.f_back
        return False

    def _entry(self, frame: Any, code: Any, qual: str) -> dict[str, Any] | None:
        if "<" in code.co_qualname or self.counts.get(qual, 0) >= MAX_ENTRIES_PER_TARGET:
            return None
        try:
            call = describe_call(qual, code, dict(frame.f_locals), self.roots)
        except (values.Unencodable, LookupError, AttributeError, TypeError, ImportError):
            return None
        if call is None:
            return None
        self.counts[qual] = self.counts.get(qual, 0) + 1
        return {**call, "reached": {qual}}


def describe_call(
    qual: str, code: Any, local: dict[str, Any], roots: frozenset[str]
) -> dict[str, Any] | None:
    """The check spec that repeats this call: target, kind, encoded receiver and arguments.

    Arguments equal to their default are left out, so a changed default still shows."""
    module, _, dotted = qual.partition(":")
    parts = dotted.split(".")
    owner: Any = sys.modules[module]
    for p in parts[:-1]:
        owner = _getattr(owner, p)
    raw = owner.__dict__[parts[-1]] if isinstance(owner, type) else _getattr(owner, parts[-1])
    kind = _kind(owner, raw, code)
    if kind is None:
        return None
    func = (
        raw.__func__
        if isinstance(raw, (staticmethod, classmethod))
        else raw.fget
        if kind == "property"
        else raw
    )
    names = code.co_varnames
    n_pos, n_kw = code.co_argcount, code.co_kwonlyargcount
    skip = 1 if kind in ("method", "property", "classmethod") else 0
    spec: dict[str, Any] = {
        "target": qual,
        "kind": kind,
        "args": [],
        "kwargs": [],
        "self": _encode(local[names[0]], roots) if kind in ("method", "property") else None,
    }
    if kind == "property":
        return spec
    defaults = dict(zip(names[n_pos - len(func.__defaults__ or ()) : n_pos], func.__defaults__ or ()))
    defaults.update(func.__kwdefaults__ or {})
    extra = list(local[names[n_pos + n_kw]]) if code.co_flags & _CO_VARARGS else []
    for k, name in enumerate(names[:n_pos]):
        if k < skip:
            continue
        if k < code.co_posonlyargcount or extra:
            spec["args"].append(_encode(local[name], roots))
        elif not _is_default(name, local[name], defaults, roots):
            spec["kwargs"].append([name, _encode(local[name], roots)])
    spec["args"] += [_encode(v, roots) for v in extra]
    for name in names[n_pos : n_pos + n_kw]:
        if not _is_default(name, local[name], defaults, roots):
            spec["kwargs"].append([name, _encode(local[name], roots)])
    if code.co_flags & _CO_VARKW:
        varkw = names[n_pos + n_kw + bool(code.co_flags & _CO_VARARGS)]
        spec["kwargs"] += [[k, _encode(v, roots)] for k, v in local[varkw].items()]
    return spec


def _is_default(name: str, value: object, defaults: dict[str, Any], roots: frozenset[str]) -> bool:
    if name not in defaults:
        return False
    if value is defaults[name]:  # sentinels such as `_MISSING = object()` need no encoding
        return True
    try:
        return _encode(defaults[name], roots) == _encode(value, roots)
    except values.Unencodable:
        return False


def _kind(owner: Any, raw: Any, code: Any) -> str | None:
    if not isinstance(owner, type):
        return "function" if getattr(raw, "__code__", None) is code else None
    if isinstance(raw, staticmethod):
        return "static"
    if isinstance(raw, classmethod):
        return "classmethod"
    if isinstance(raw, property):
        return "property" if getattr(raw.fget, "__code__", None) is code else None
    return "method" if getattr(raw, "__code__", None) is code else None

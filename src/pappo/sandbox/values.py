"""The safe value encoder of hidden checks: exact types only, no untrusted method ever called.

Runs inside the sandbox, on values the code under test produced. A value becomes tagged JSON
(`["int", 3]`, `["list", [...]]`, `["obj", "pkg.mod:Cls", {field: ...}]`) that the trusted grader
compares as plain data; nothing of the candidate's (`__eq__`, `__hash__`, `__repr__`, `__iter__`,
properties) runs there, and here only C-level methods of exact builtin types are used. A subclass
of a builtin type, a class outside the family, a cycle or an oversized value cannot be encoded:
`Unencodable`, and the check that produced it fails. `decode` rebuilds check inputs (family objects
without calling their `__init__`), so the clean tree and a candidate see the same inputs.
Everything used below is captured at import, in the worker, before any code under test exists.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import enum
import fractions
import sys
import types
from typing import Any

_type, _isinstance, _len, _sorted, _repr, _id = type, isinstance, len, sorted, repr, id
_getattr_obj, _setattr_obj, _new_obj = object.__getattribute__, object.__setattr__, object.__new__
_dict_items, _list_iter, _tuple_iter = dict.items, list.__iter__, tuple.__iter__
_float_repr, _str_new, _bytes_hex = float.__repr__, str.__str__, bytes.hex
_type_name = type.__dict__["__qualname__"].__get__
_type_module = type.__dict__["__module__"].__get__
_type_mro = type.__dict__["__mro__"].__get__
_type_dict = type.__dict__["__dict__"].__get__
_modules, _getattr = sys.modules, getattr
_dumps_key = _repr  # sort key of encoded parts (plain JSON-like data made here, never the candidate's)
# Keyed by id: `t in {int: ...}` would hash and compare `t`, which a candidate's metaclass can rig.
_SIMPLE = {id(bool): "bool", id(int): "int", id(str): "str"}
_SEQS = {id(list): "list", id(tuple): "tuple"}
_MAX_NODES, _MAX_DEPTH = 20000, 40


class Unencodable(Exception):
    """The value is not of a type the encoder accepts (or too large, or cyclic)."""


def encode(value: object, roots: frozenset[str]) -> Any:
    """Tagged JSON-able data of `value`; family objects allowed for modules under `roots`."""
    return _Encoder(roots).enc(value, 0)


class _Encoder:
    def __init__(self, roots: frozenset[str]) -> None:
        self.roots, self.nodes, self.active = roots, 0, set()

    def enc(self, v: object, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > _MAX_NODES or depth > _MAX_DEPTH:
            raise Unencodable("value too large or too deep")
        t = _type(v)
        if v is None:
            return ["none"]
        if _id(t) in _SIMPLE:
            return [_SIMPLE[_id(t)], _str_new(v) if t is str else v]
        if t is float:
            return ["float", _float_repr(v)]
        if t is bytes:
            return ["bytes", _bytes_hex(v)]
        if t is bytearray:
            return ["bytearray", bytearray.hex(v)]
        if id(v) in self.active:
            raise Unencodable("cyclic value")
        self.active.add(id(v))
        try:
            return self._container(v, t, depth + 1)
        finally:
            self.active.discard(id(v))

    def _container(self, v: Any, t: type, d: int) -> Any:
        if _id(t) in _SEQS:
            return [_SEQS[_id(t)], [self.enc(x, d) for x in (_list_iter if t is list else _tuple_iter)(v)]]
        if t is dict or t is collections.OrderedDict:
            return [
                "dict" if t is dict else "odict",
                [[self.enc(k, d), self.enc(x, d)] for k, x in _dict_items(v)],
            ]
        if t is set or t is frozenset:
            items = [self.enc(x, d) for x in (set.__iter__ if t is set else frozenset.__iter__)(v)]
            return ["set" if t is set else "frozenset", _sorted(items, key=_dumps_key)]
        if t is collections.deque:
            return ["deque", [self.enc(x, d) for x in collections.deque.__iter__(v)]]
        if t is fractions.Fraction:
            return ["fraction", [_getattr_obj(v, "_numerator"), _getattr_obj(v, "_denominator")]]
        if t is decimal.Decimal:
            return ["decimal", decimal.Decimal.__str__(v)]
        if t is datetime.date:
            return ["date", datetime.date.toordinal(v)]
        if t is types.FunctionType or t is types.BuiltinFunctionType:
            return ["fn", _function_name(v)]
        if t is datetime.timedelta:
            return [
                "timedelta",
                [datetime.timedelta.__dict__[k].__get__(v) for k in ("days", "seconds", "microseconds")],
            ]
        return self._family(v, t, d)

    def _family(self, v: Any, t: type, d: int) -> Any:
        module = _type_module(t)
        if not _isinstance(module, str) or module.split(".")[0] not in self.roots:
            raise Unencodable(f"type {_type_name(t)} is not a builtin or family type")
        name = f"{module}:{_type_name(t)}"
        mro = _type_mro(t)
        if enum.Enum in mro:  # a member is named; mixins (`class State(str, Enum)`) do not matter
            return ["enum", name, _getattr_obj(v, "_name_")]
        if mro[-1] is not object or any(
            b not in (object, enum.Enum) and _type_module(b).split(".")[0] not in self.roots
            for b in mro[1:-1]
        ):
            raise Unencodable(f"type {name} derives from a non-family type")
        fields = {}
        for k, x in _fields(v, mro):
            fields[k] = self.enc(x, d)
        return ["obj", name, [[k, fields[k]] for k in _sorted(fields)]]


def encode_fields(v: object, roots: frozenset[str]) -> Any:
    """Only the instance attributes of `v` (for exceptions, whose builtin base is not a family type)."""
    enc = _Encoder(roots)
    fields = {k: enc.enc(x, 1) for k, x in _fields(v, _type_mro(_type(v)))}
    return [[k, fields[k]] for k in _sorted(fields)]


def _function_name(f: Any) -> str:
    """A module-level function by reference; it must resolve back to the very same object."""
    module, qual = f.__module__, f.__qualname__
    if not _isinstance(module, str) or not _isinstance(qual, str) or "<" in qual:
        raise Unencodable("function without a module-level name")
    name = f"{module}:{qual}"
    try:
        if find_class(name) is f:
            return name
    except (ImportError, AttributeError):
        pass
    raise Unencodable(f"function {name} does not resolve to itself")


def _fields(v: object, mro: tuple[type, ...]) -> list[tuple[str, object]]:
    """Instance attributes from the instance dict and every `__slots__` entry (properties are not fields)."""
    out: list[tuple[str, object]] = []
    try:
        d = _getattr_obj(v, "__dict__")
    except AttributeError:
        d = {}
    if _type(d) is not dict:
        raise Unencodable("instance __dict__ is not a dict")
    out += [(k, x) for k, x in _dict_items(d) if _type(k) is str]
    for cls in mro:
        slots = _type_dict(cls).get("__slots__", ())
        for s in (slots,) if _type(slots) is str else slots:
            if _type(s) is str and s not in ("__dict__", "__weakref__"):
                try:
                    out.append((s, _getattr_obj(v, s)))
                except AttributeError:
                    pass
    return out


def decode(e: Any) -> Any:
    """The value an encoding stands for (family classes are looked up among imported modules)."""
    tag = e[0]
    if tag == "none":
        return None
    if tag in ("bool", "int", "str"):
        return e[1]
    if tag == "float":
        return float(e[1])
    if tag in ("bytes", "bytearray"):
        return (bytes if tag == "bytes" else bytearray).fromhex(e[1])
    if tag in ("list", "tuple", "set", "frozenset", "deque"):
        items = [decode(x) for x in e[1]]
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset, "deque": collections.deque}[
            tag
        ](items)
    if tag in ("dict", "odict"):
        return (dict if tag == "dict" else collections.OrderedDict)((decode(k), decode(x)) for k, x in e[1])
    if tag == "fraction":
        return fractions.Fraction(*e[1])
    if tag == "decimal":
        return decimal.Decimal(e[1])
    if tag == "date":
        return datetime.date.fromordinal(e[1])
    if tag == "timedelta":
        return datetime.timedelta(*e[1])
    cls = find_class(e[1])
    if tag == "fn":
        return cls
    if tag == "enum":
        return cls[e[2]]
    obj = _new_obj(cls)
    for k, x in e[2]:
        _setattr_obj(obj, k, decode(x))
    return obj


def find_class(name: str) -> Any:
    """`pkg.mod:Outer.Inner` -> that object (a class, function or method), importing the module."""
    module, _, qual = name.partition(":")
    if module not in _modules:
        __import__(module)
    obj: Any = _modules[module]
    for part in qual.split("."):
        obj = _getattr(obj, part)
    return obj

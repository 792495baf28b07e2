"""Type-aware mutation of recorded call inputs (EvalPlus-style), on the tagged encodings.

Every mutant keeps each value's exact type: numeric neighbours and boundaries, empty, shorter,
longer and permuted containers, other strings, and values of the same type that the visible
tests used elsewhere (`pool`). Family objects and receivers are only swapped for other recorded
objects of the same class: those are states the public API really reached, so a mutant does
not invent an invalid state on which a correct alternative fix could legitimately differ.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

Enc = list[Any]


def key(e: Any) -> str:
    return json.dumps(e, sort_keys=True, separators=(",", ":"))


def type_key(e: Enc) -> str:
    return f"{e[0]}:{e[1]}" if e[0] in ("obj", "enum") else e[0]


def collect(values: Iterable[Enc], pool: dict[str, dict[str, Enc]]) -> None:
    """Add every value (and every nested value) to `pool`, by type."""
    for e in values:
        pool.setdefault(type_key(e), {})[key(e)] = e
        if e[0] in ("list", "tuple", "set", "frozenset", "deque"):
            collect(e[1], pool)
        elif e[0] in ("dict", "odict"):
            collect([x for kv in e[1] for x in kv], pool)


def variants(e: Enc, pool: dict[str, dict[str, Enc]], depth: int = 0) -> list[Enc]:
    """Mutants of one value, same exact type; the value itself is never among them."""
    tag, out = e[0], []
    if tag == "bool":
        out = [["bool", not e[1]]]
    elif tag == "int":
        v = e[1]
        out = [["int", x] for x in (v + 1, v - 1, 0, 1, -1, -v, 2 * v, v // 2)]
    elif tag == "float":
        v = float(e[1])
        out = [["float", repr(x)] for x in (v + 1.0, v - 1.0, 0.0, -v, 2 * v, v / 2, v + 0.5)]
    elif tag == "str":
        s = e[1]
        out = [["str", x] for x in ("", s[:-1], s + s[-1:], s[::-1], s.upper(), s.lower(), s[1:], " " + s)]
    elif tag in ("list", "tuple", "deque"):
        out = _sequences(e, pool, depth)
    elif tag in ("dict", "odict"):
        items = e[1]
        out = [[tag, []], [tag, items[:-1]], [tag, items[1:]], [tag, items[::-1]]]
        if depth < 2:
            out += [
                [tag, items[:k] + [[kv[0], m]] + items[k + 1 :]]
                for k, kv in enumerate(items[:3])
                for m in variants(kv[1], pool, depth + 1)[:3]
            ]
    elif tag in ("set", "frozenset"):
        out = [[tag, []], [tag, e[1][:-1]], [tag, e[1][1:]]]
    out += list(pool.get(type_key(e), {}).values())
    seen, unique = {key(e)}, []
    for m in out:
        if key(m) not in seen:
            seen.add(key(m))
            unique.append(m)
    return unique


def _sequences(e: Enc, pool: dict[str, dict[str, Enc]], depth: int) -> list[Enc]:
    tag, items = e[0], e[1]
    out = [
        [tag, []],
        [tag, items[:-1]],
        [tag, items[1:]],
        [tag, items + items[-1:]],
        [tag, items[::-1]],
        [tag, items[1:] + items[:1]],
        [tag, items + items],
    ]
    if depth < 2 and items:
        for k in sorted({0, len(items) // 2, len(items) - 1}):
            out += [[tag, items[:k] + [m] + items[k + 1 :]] for m in variants(items[k], pool, depth + 1)[:4]]
    return out


def mutate_call(spec: dict[str, Any], pool: dict[str, dict[str, Enc]]) -> list[dict[str, Any]]:
    """Calls that differ from `spec` in one argument (or by swapping two of the same type)."""
    out: list[dict[str, Any]] = []
    args, kwargs = spec["args"], spec["kwargs"]
    for k, a in enumerate(args):
        out += [{**spec, "args": args[:k] + [m] + args[k + 1 :]} for m in variants(a, pool)]
    for k, (name, v) in enumerate(kwargs):
        out += [{**spec, "kwargs": kwargs[:k] + [[name, m]] + kwargs[k + 1 :]} for m in variants(v, pool)]
    flat = [("a", k, a) for k, a in enumerate(args)] + [("k", k, kv[1]) for k, kv in enumerate(kwargs)]
    for i in range(len(flat)):
        for j in range(i + 1, len(flat)):
            if type_key(flat[i][2]) == type_key(flat[j][2]) and key(flat[i][2]) != key(flat[j][2]):
                out.append(_swap(spec, flat[i], flat[j]))
    if spec.get("self") is not None:  # the same call on other states the tests reached
        out += [
            {**spec, "self": s}
            for s in pool.get(type_key(spec["self"]), {}).values()
            if key(s) != key(spec["self"])
        ]
    return out


def _swap(spec: dict[str, Any], x: tuple[str, int, Enc], y: tuple[str, int, Enc]) -> dict[str, Any]:
    args, kwargs = list(spec["args"]), [list(kv) for kv in spec["kwargs"]]
    for (where, k, _), (_, _, value) in ((x, y), (y, x)):
        if where == "a":
            args[k] = value
        else:
            kwargs[k][1] = value
    return {**spec, "args": args, "kwargs": kwargs}

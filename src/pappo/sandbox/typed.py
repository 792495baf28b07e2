"""Typed visible assertions: the operands of the trusted tests' `==`/`!=` asserts, by exact type.

An always-equal object, or an `int`/`str`/`list` subclass with a rigged `__eq__`, passes
`assert f(x) == 3`. So every `==`/`!=` that an `assert` of a trusted test file makes also records
its two operands' exact types, and the grader requires the types the clean tree gave there.

* In the worker (`instrument`): after pytest's own assertion rewriting of a test file, each
  comparison pytest made from an assert (`@py_assertN = left == right`, also inside `and`, `or`,
  `not` and chained comparisons) gets a call before it, `@pappo_typed.note(site, left, right)`;
  `site` is `tests/test_x.py:<assert line>:<k>`. Operands are plain names there (pytest stores
  every operand in a temporary first), so nothing is evaluated twice.
* In the child (`note`, `signature`): `type(x)` only, looked up among the exact builtin types by
  `id`, never `isinstance`, `==` or `hash` of a candidate's object; elements of exact builtin
  lists, tuples, sets, frozensets and dicts recursively (their own C iterators), to a small depth.
  Another type is named `module:qualname`, marked `^int` (or the builtin type it derives from) and
  `!eq` (a class of its MRO outside the builtins defines `__eq__`/`__ne__`): renaming a class
  after `int` does not make it `int`. What each test saw goes back with its outcome record.
* In the grader (`mismatches`): per graded test, the sites reached and the type pairs seen there
  must be those of the clean tree (`HiddenChecks.typed_asserts`, built with the hidden checks and
  locked by `pappo validate`); a site not reached, reached only here, or a new pair fails the test.
  `rigged` says which of them are the hallmark of a rigged comparison (a new family type that
  derives from a builtin or overrides `__eq__`).
"""

from __future__ import annotations

import ast
import re
import types

_type, _id, _sorted, _len = type, id, sorted, len
_str_copy = str.__str__
_dict_items, _list_iter, _tuple_iter = dict.items, list.__iter__, tuple.__iter__
_set_iter, _frozenset_iter = set.__iter__, frozenset.__iter__
_type_name = type.__dict__["__qualname__"].__get__
_type_module = type.__dict__["__module__"].__get__
_type_mro = type.__dict__["__mro__"].__get__
_type_dict = type.__dict__["__dict__"].__get__
_BUILTINS = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    bytearray,
    list,
    tuple,
    dict,
    set,
    frozenset,
    type,
    range,
    slice,
    object,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    type(NotImplemented),
    type(Ellipsis),
)
_NAMES = {_id(t): ("None" if t is type(None) else t.__name__) for t in _BUILTINS}
_CONTAINERS = frozenset({"list", "tuple", "set", "frozenset", "dict"})
MAX_DEPTH, MAX_NODES = 4, 2000  # per operand; beyond them a container's signature ends in "..."
MAX_NAME = 200
MODULE_ALIAS = "@pappo_typed"
_SEEN: dict[str, set[tuple[str, str]]] = {}  # this test's sites -> operand type pairs


def reset() -> None:
    """Called by the plugin when a test starts."""
    _SEEN.clear()


def collected() -> dict[str, list[list[str]]]:
    """What the current test's asserts saw: site -> sorted [left, right] type pairs."""
    return {site: [list(p) for p in _sorted(pairs)] for site, pairs in _sorted(_SEEN.items())}


def note(site: str, left: object, right: object) -> None:
    """Called by the instrumented test code before each `==`/`!=` of an assert."""
    a, b = _NAMES.get(_id(_type(left))), _NAMES.get(_id(_type(right)))  # scalars: the common case
    pair = (
        a if a is not None and a not in _CONTAINERS else signature(left),
        b if b is not None and b not in _CONTAINERS else signature(right),
    )
    seen = _SEEN.get(site)
    if seen is None:
        seen = _SEEN[site] = set()
    seen.add(pair)


def signature(value: object) -> str:
    """`int`, `list[int|str]`, `dict[str=>float]`, `pkg.mod:Cls^int!eq`: see the module docstring."""
    return _sig(value, 0, [MAX_NODES])


def _sig(v: object, depth: int, budget: list[int]) -> str:
    t = _type(v)
    name = _NAMES.get(_id(t))
    if name is None:
        return _foreign(t)
    if depth >= MAX_DEPTH or name not in _CONTAINERS:
        return name
    if t is dict:
        keys: set[str] = set()
        vals: set[str] = set()
        for k, x in _dict_items(v):
            budget[0] -= 1
            if budget[0] < 0:
                keys.add("...")
                break
            keys.add(_sig(k, depth + 1, budget))
            vals.add(_sig(x, depth + 1, budget))
        return name + "[" + "|".join(_sorted(keys)) + "=>" + "|".join(_sorted(vals)) + "]"
    it = (
        _list_iter if t is list else _tuple_iter if t is tuple else _set_iter if t is set else _frozenset_iter
    )
    items: set[str] = set()
    for x in it(v):
        budget[0] -= 1
        if budget[0] < 0:
            items.add("...")
            break
        items.add(_sig(x, depth + 1, budget))
    return name + "[" + "|".join(_sorted(items)) + "]"


def _foreign(t: type) -> str:
    """`module:qualname` plus the marks of what the type's MRO really holds (names can be set)."""
    module, qual = _text(_type_module(t)), _text(_type_name(t))
    base, eq = "", False
    for c in _tuple_iter(_type_mro(t)):
        known = _NAMES.get(_id(c))
        if known is None:
            d = _type_dict(c)
            eq = eq or "__eq__" in d or "__ne__" in d
        elif not base and c is not object:
            base = "^" + known
    return (module + ":" + qual)[:MAX_NAME] + base + ("!eq" if eq else "")


def _text(s: object) -> str:
    for c in _tuple_iter(_type_mro(_type(s))):
        if c is str:
            return _str_copy(s)
    return "?"


# ---- worker side: the AST pass after pytest's assertion rewriting ----


def instrument(tree: ast.Module, rel: str) -> int:
    """Add `note` calls before the comparisons pytest's rewriting made from asserts; returns how many.
    Sites are numbered in source order: `k` counts the file's comparisons before this one."""
    k = _walk(tree, rel, 0)
    if k:
        pos = _after_imports(tree)
        line = tree.body[pos - 1].lineno if pos else 1
        alias = ast.alias(__name__, MODULE_ALIAS, lineno=line, col_offset=0)
        tree.body.insert(pos, ast.Import([alias], lineno=line, col_offset=0))
    return k


def _walk(node: ast.AST, rel: str, k: int) -> int:
    for name, field in ast.iter_fields(node):
        if isinstance(field, ast.AST) and not isinstance(field, ast.expr):
            k = _walk(field, rel, k)
        if not isinstance(field, list):
            continue
        new: list[ast.AST] = []
        for child in field:  # statements, and except handlers and match cases (their bodies)
            if isinstance(child, ast.stmt) and (operands := _asserted_comparison(child)) is not None:
                new.append(_note_call(f"{rel}:{child.lineno}:{k}", operands, child))
                k += 1
            new.append(child)
            if isinstance(child, ast.AST) and not isinstance(child, ast.expr):
                k = _walk(child, rel, k)
        setattr(node, name, new)
    return k


def _asserted_comparison(stmt: ast.stmt) -> tuple[ast.Name, ast.Name] | None:
    """(left, right) of `@py_assertN = left == right` (or `!=`), the shape pytest gives an assert's compare."""
    if not (
        isinstance(stmt, ast.Assign)
        and _len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id.startswith("@py_assert")
        and isinstance(stmt.value, ast.Compare)
    ):
        return None
    c = stmt.value
    if _len(c.ops) != 1 or not isinstance(c.ops[0], (ast.Eq, ast.NotEq)):
        return None
    if not isinstance(c.left, ast.Name) or not isinstance(c.comparators[0], ast.Name):
        return None
    return c.left, c.comparators[0]


def _note_call(site: str, operands: tuple[ast.Name, ast.Name], where: ast.stmt) -> ast.stmt:
    fn = ast.Attribute(ast.Name(MODULE_ALIAS, ast.Load()), "note", ast.Load())
    args = [ast.Constant(site), *(ast.Name(o.id, ast.Load()) for o in operands)]
    return ast.fix_missing_locations(ast.copy_location(ast.Expr(ast.Call(fn, args, [])), where))


def _after_imports(tree: ast.Module) -> int:
    """Right after pytest's own imports (which follow the docstring and `__future__` imports)."""
    for i, stmt in enumerate(tree.body):
        if isinstance(stmt, ast.Import) and stmt.names[0].asname == "@pytest_ar":
            return i + 1
    return 0


# ---- grader side ----

_TOKEN = re.compile(r"[\[\]|]|=>")


def mismatches(expected: dict[str, list[list[str]]], seen: dict[str, list[list[str]]]) -> list[str]:
    """Why one test's asserts do not match the clean tree's types (empty when they do)."""
    out = []
    for site in _sorted(set(expected) | set(seen)):
        if site not in seen:
            out.append(f"{site}: assertion not reached (the clean tree reaches it)")
        elif site not in expected:
            out.append(f"{site}: assertion reached, the clean tree does not reach it")
        else:
            new = [p for p in seen[site] if p not in expected[site]]
            if new:
                clean = "; ".join(f"{a} vs {b}" for a, b in expected[site][:3])
                out.append(f"{site}: operand types {new[0][0]} vs {new[0][1]}; the clean tree has {clean}")
    return out


def rigged(
    expected: dict[str, list[list[str]]], seen: dict[str, list[list[str]]], roots: list[str]
) -> list[str]:
    """The candidate's own types that derive from a builtin or override `__eq__`, new at a site."""
    out = []
    for site, pairs in _sorted(seen.items()):
        known = {tok for p in expected.get(site, []) for s in p for tok in _TOKEN.split(s)}
        for p in pairs:
            for tok in (tok for s in p for tok in _TOKEN.split(s)):
                family = tok.split(":", 1)[0].split(".")[0] in roots
                if family and tok not in known and ("^" in tok or tok.endswith("!eq")) and tok not in out:
                    out.append(tok)
    return out

"""Problem statements written from the failing behaviour, the way a user files an issue.

Only the tests' source and the values observed when they failed are used (function, input,
expected vs actual); the mutated source is never read here, so a statement cannot leak the fix.
"""

from __future__ import annotations

import ast
import re
import textwrap
from typing import Any

_NOT_API = {
    "len",
    "list",
    "sorted",
    "set",
    "dict",
    "tuple",
    "round",
    "abs",
    "str",
    "repr",
    "int",
    "float",
    "bool",
    "isinstance",
    "pytest.raises",
    "pytest.approx",
    "type",
    "min",
    "max",
    "sum",
    "any",
    "all",
    "range",
    "enumerate",
    "zip",
}


def problem_statement(tests: dict[str, str], failing: list[str], failures: dict[str, Any]) -> str:
    """Issue text for a bug whose failing tests are `failing` (ids), given test file sources."""
    chosen = _choose(failing, failures)
    if not chosen:
        raise ValueError("no failing test with failure details to describe")
    parts: list[str] = []
    for k, test_id in enumerate(chosen):
        info = failures[test_id]
        lines = tests[info["test_file"]].splitlines()
        snippet, docstring = _snippet(tests[info["test_file"]], lines, info)
        failing_src = _statement_at(tests[info["test_file"]], info["test_line"])
        if k == 0:
            parts.append(f"{_title(failing_src, snippet, test_id)}\n")
        else:
            parts.append("The same problem shows up in another case:\n")
        if docstring:
            parts.append(f"What I expect: {docstring}\n")
        parts.append("To reproduce:\n\n```python\n" + snippet + "\n```\n")
        parts.append(_observed(info, failing_src) + "\n")
    return "\n".join(parts).strip() + "\n"


def _choose(failing: list[str], failures: dict[str, Any]) -> list[str]:
    """Up to two described tests: plain (not parametrised) ones with details, comparisons first."""
    usable = [t for t in sorted(failing) if t in failures and failures[t].get("test_line")]
    usable.sort(key=lambda t: ("[" in t, failures[t].get("compare") is None, t))
    return usable[:2]


def _statement_at(source: str, lineno: int) -> str:
    """Source of the smallest statement of the test file that covers line `lineno`."""
    best: ast.stmt | None = None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            if node.lineno <= lineno <= (node.end_lineno or node.lineno):
                if best is None or node.lineno >= best.lineno:
                    best = node
    if best is None:
        return source.splitlines()[lineno - 1].strip()
    return textwrap.dedent(ast.get_source_segment(source, best, padded=True) or "").strip()


def _snippet(source: str, lines: list[str], info: dict[str, Any]) -> tuple[str, str]:
    """Imports the test needs plus the test body up to the failing statement; and the docstring."""
    tree = ast.parse(source)
    func = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.lineno <= info["test_line"] <= (n.end_lineno or 0)
    )
    docstring = (ast.get_docstring(func) or "").strip()
    body = func.body[1:] if docstring else func.body
    if not body:
        return "", docstring
    line = info["test_line"]
    covering = next((st for st in body if st.lineno <= line <= (st.end_lineno or 0)), body[-1])
    code = textwrap.dedent("\n".join(lines[body[0].lineno - 1 : covering.end_lineno]))
    helpers = _helpers_used(tree, source, code)
    used = code + "\n" + "\n".join(helpers)
    imports = [
        _import_line(n, used)
        for n in tree.body
        if isinstance(n, (ast.Import, ast.ImportFrom)) and _used(n, used)
    ]
    blocks = ["\n".join(imports), "\n\n".join(helpers), code]
    return "\n\n".join(b for b in blocks if b).strip(), docstring


def _helpers_used(tree: ast.Module, source: str, code: str) -> list[str]:
    """Module-level helpers and constants of the test file that the snippet uses, transitively."""
    defs: list[tuple[list[str], str]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("test"):
            defs.append(([node.name], ast.get_source_segment(source, node) or ""))
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            defs.append((names, ast.get_source_segment(source, node) or ""))
    chosen: set[int] = set()
    text = code
    while True:
        new = {
            i
            for i, (names, _) in enumerate(defs)
            if i not in chosen and any(_mentions(text, n) for n in names)
        }
        if not new:
            return [defs[i][1] for i in sorted(chosen)]
        chosen |= new
        text += "\n" + "\n".join(defs[i][1] for i in new)


def _import_line(node: ast.Import | ast.ImportFrom, code: str) -> str:
    """The import statement, keeping only the names the snippet uses."""
    kept = [a for a in node.names if _name_used(a, code)]
    if isinstance(node, ast.ImportFrom):
        return ast.unparse(ast.ImportFrom(module=node.module, names=kept, level=node.level))
    return ast.unparse(ast.Import(names=kept))


def _name_used(alias: ast.alias, code: str) -> bool:
    return _mentions(code, (alias.asname or alias.name).split(".")[0])


def _mentions(code: str, name: str) -> bool:
    """`name` occurs in `code` as a whole word."""
    return re.search(rf"\b{re.escape(name)}\b", code) is not None


def _used(node: ast.Import | ast.ImportFrom, code: str) -> bool:
    return any(_name_used(a, code) for a in node.names)


def _title(failing_src: str, snippet: str, test_id: str) -> str:
    """Name the misbehaving API: first call on the observed side, else the last call before it."""
    api = _api_call(_actual_side(failing_src))
    if api is None:
        try:
            stmts = ast.parse(snippet).body
        except SyntaxError:
            stmts = []
        for stmt in reversed(stmts):
            api = _api_call(stmt)
            if api:
                break
    if api:
        return f"`{api}` gives a wrong result"
    words = test_id.split("::")[-1].removeprefix("test_").replace("_", " ")
    return f"Wrong behaviour: {words}"


def _actual_side(failing_src: str) -> ast.AST | None:
    try:
        node = ast.parse(textwrap.dedent(failing_src)).body[0]
    except (SyntaxError, IndexError):
        return None
    if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1:
        left, right = node.test.left, node.test.comparators[0]
        return right if _literal(left) and not _literal(right) else left
    return node


def _api_call(node: ast.AST | None) -> str | None:
    """First package call in pre-order (methods by name), skipping builtins; constructors last."""
    if node is None:
        return None
    found: list[str] = []

    def visit(n: ast.AST) -> None:
        if isinstance(n, ast.Call):
            func = n.func
            name = func.attr if isinstance(func, ast.Attribute) else ast.unparse(func)
            if ast.unparse(func) not in _NOT_API:
                found.append(name + "()")
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    plain = [f for f in found if not f[:1].isupper()]
    return (plain or found or [None])[0]


def _observed(info: dict[str, Any], failing_src: str) -> str:
    exc, message = info["exc_type"], info["message"].strip()
    first = message.splitlines()[0] if message else ""
    if exc == "Failed" and first.startswith("DID NOT RAISE"):
        raised = first.removeprefix("DID NOT RAISE").strip().strip("<>").removeprefix("class ").strip("'")
        return f"I expected `{raised.split('.')[-1]}` to be raised here, but no error was raised."
    if exc != "AssertionError":
        return (
            f"Instead it crashes with `{exc}: {first[:200]}`."
            if first
            else f"Instead it crashes with `{exc}`."
        )
    cmp = info.get("compare")
    if cmp and cmp["op"] in ("==", "is"):
        actual, expected, expr = _sides(failing_src, cmp)
        return f"`{expr}` gives `{actual}`, but it should be `{expected}`."
    if cmp:
        return (
            f"This check fails: `{failing_src}` (left side: `{cmp['left']}`, right side: `{cmp['right']}`)."
        )
    return f"This check fails: `{failing_src}`."


def _sides(failing_src: str, cmp: dict[str, str]) -> tuple[str, str, str]:
    """(actual, expected, expression) of an `assert a == b`: the literal side is the expected one."""
    try:
        node = ast.parse(textwrap.dedent(failing_src)).body[0]
    except (SyntaxError, IndexError):
        return cmp["left"], cmp["right"], "the result"
    if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1:
        left, right = node.test.left, node.test.comparators[0]
        if _literal(left) and not _literal(right):
            return cmp["right"], cmp["left"], ast.unparse(right)
        return cmp["left"], cmp["right"], ast.unparse(left)
    return cmp["left"], cmp["right"], "the result"


def _literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False

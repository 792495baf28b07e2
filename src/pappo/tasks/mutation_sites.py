"""Where each mutation operator can act in a module and the smallest text edit that injects its bug.

One `_sites_*` generator per operator (`sites` picks it by name) walks the AST, leaving out
annotations and docstrings, and yields an `Edit`: a byte span of the original text (AST columns
are UTF-8 bytes) and its replacement. Whether the edited text parses and changes the AST is
checked by `tasks/mutations.py`, which applies the edits.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from pappo.tasks.models import OPERATORS


@dataclass(frozen=True)
class Edit:
    node: ast.AST
    start: int
    end: int
    replacement: str
    description: str


class Source:
    """Original text with (line, col) <-> byte offset conversion (AST columns are UTF-8 bytes)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode()
        self.line_starts = [0]
        for i, byte in enumerate(self.data):
            if byte == 0x0A:
                self.line_starts.append(i + 1)

    def offset(self, lineno: int, col: int) -> int:
        return self.line_starts[lineno - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.offset(node.lineno, node.col_offset),
            self.offset(node.end_lineno, node.end_col_offset),
        )

    def seg(self, start: int, end: int) -> str:
        return self.data[start:end].decode()

    def node_text(self, node: ast.AST) -> str:
        return self.seg(*self.span(node))


_CMP_SWAP = {
    ast.Lt: "<=",
    ast.LtE: "<",
    ast.Gt: ">=",
    ast.GtE: ">",
    ast.Eq: "!=",
    ast.NotEq: "==",
    ast.In: "not in",
    ast.NotIn: "in",
    ast.Is: "is not",
    ast.IsNot: "is",
}
_CMP_TOKEN = r"(<=|>=|==|!=|<|>|\bnot\s+in\b|\bin\b|\bis\s+not\b|\bis\b)"
_ARITH_SWAP = {
    ast.Add: "-",
    ast.Sub: "+",
    ast.Mult: "/",
    ast.Div: "*",
    ast.FloorDiv: "/",
    ast.Mod: "//",
    ast.Pow: "*",
}
_ARITH_TOKEN = r"(\*\*|//|[-+*/%])"
_SIMPLE = (ast.Name, ast.Constant, ast.Attribute, ast.Call, ast.Subscript)


def sites(op: str, tree: ast.AST, src: Source) -> Iterator[Edit]:
    if op == "comparison_flip":
        return _sites_comparison_flip(tree, src)
    if op == "off_by_one":
        return _sites_off_by_one(tree, src)
    if op == "bool_op_swap":
        return _sites_bool_op_swap(tree, src)
    if op == "dropped_negation":
        return _sites_dropped_negation(tree, src)
    if op == "wrong_variable":
        return _sites_wrong_variable(tree, src)
    if op == "wrong_constant":
        return _sites_wrong_constant(tree, src)
    if op == "swapped_arguments":
        return _sites_swapped_arguments(tree, src)
    if op == "removed_branch":
        return _sites_removed_branch(tree, src)
    if op == "arithmetic_op":
        return _sites_arithmetic_op(tree, src)
    if op == "wrong_default":
        return _sites_wrong_default(tree, src)
    raise ValueError(f"unknown mutation operator {op!r}; known: {', '.join(OPERATORS)}")


def _walk(tree: ast.AST) -> Iterator[ast.AST]:
    """ast.walk without annotations and docstrings (no behaviour lives there)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for name, value in reversed(list(ast.iter_fields(node))):
            if name in ("annotation", "returns", "decorator_list", "type_comment"):
                continue
            children = value if isinstance(value, list) else [value]
            for child in reversed(children):
                if isinstance(child, ast.AST) and not _is_docstring(child):
                    stack.append(child)


def _is_docstring(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _token_edit(
    src: Source, node: ast.AST, start: int, end: int, pattern: str, new: str, expect: str | None = None
) -> Edit | None:
    """Replace the operator token found in the gap [start, end) between two operands."""
    gap = src.seg(start, end)
    gap_code = gap.split("#", 1)[0] if "\n" in gap else gap
    matches = list(re.finditer(pattern, gap_code))
    if len(matches) != 1 or (expect is not None and matches[0].group(0) != expect):
        return None
    m = matches[0]
    b0 = start + len(gap[: m.start()].encode())
    b1 = start + len(gap[: m.end()].encode())
    return Edit(node, b0, b1, new, f"'{m.group(0)}' -> '{new}'")


def _sites_comparison_flip(tree: ast.AST, src: Source) -> Iterator[Edit]:
    for node in _walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for i, op in enumerate(node.ops):
                gap_start = src.span(operands[i])[1]
                gap_end = src.span(operands[i + 1])[0]
                edit = _token_edit(src, node, gap_start, gap_end, _CMP_TOKEN, _CMP_SWAP[type(op)])
                if edit:
                    yield edit


def _sites_arithmetic_op(tree: ast.AST, src: Source) -> Iterator[Edit]:
    for node in _walk(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH_SWAP:
            if _stringy(node.left) or _stringy(node.right):
                continue  # string concatenation / %-formatting: not arithmetic
            gap = (src.span(node.left)[1], src.span(node.right)[0])
            edit = _token_edit(src, node, *gap, _ARITH_TOKEN, _ARITH_SWAP[type(node.op)])
            if edit:
                yield edit
        elif isinstance(node, ast.AugAssign) and type(node.op) in _ARITH_SWAP:
            if _stringy(node.value):
                continue
            gap = (src.span(node.target)[1], src.span(node.value)[0])
            new = _ARITH_SWAP[type(node.op)] + "="
            edit = _token_edit(src, node, *gap, _ARITH_TOKEN + "=", new)
            if edit:
                yield edit


_STR_CALLS = {"str", "repr", "join", "format", "upper", "lower", "strip", "rjust", "ljust", "center"}


def _stringy(node: ast.AST) -> bool:
    """Statically a string: literals, f-strings, str()/str-method calls, sums involving them."""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (str, bytes))
    if isinstance(node, ast.BinOp):
        return _stringy(node.left) or _stringy(node.right)
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in _STR_CALLS
    return False


def _sites_bool_op_swap(tree: ast.AST, src: Source) -> Iterator[Edit]:
    for node in _walk(tree):
        if isinstance(node, ast.BoolOp) and len(node.values) == 2:
            old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            gap = (src.span(node.values[0])[1], src.span(node.values[1])[0])
            edit = _token_edit(src, node, *gap, rf"\b{old}\b", new)
            if edit:
                yield edit


def _sites_dropped_negation(tree: ast.AST, src: Source) -> Iterator[Edit]:
    for node in _walk(tree):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            start, end = src.span(node)
            text = src.seg(start, end)
            if text.startswith("not"):
                yield Edit(node, start, end, text[3:].lstrip(), "dropped 'not'")


def _sites_off_by_one(tree: ast.AST, src: Source) -> Iterator[Edit]:
    loop_ints = _range_loop_names(tree)
    for node in _walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
            if 1 <= len(node.args) <= 3 and not node.keywords:
                targets.append(node.args[0] if len(node.args) == 1 else node.args[1])
        elif isinstance(node, ast.Slice):
            targets += [b for b in (node.lower, node.upper) if b is not None]
        elif isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
            idx = node.slice
            if _int_const(idx) or (isinstance(idx, ast.Name) and idx.id in loop_ints):
                targets.append(idx)
        for target in targets:
            yield from _plus_minus_one(src, target)


def _range_loop_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            it = node.iter
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
                names.add(node.target.id)
    return names


def _int_const(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def _plus_minus_one(src: Source, node: ast.expr) -> Iterator[Edit]:
    start, end = src.span(node)
    text = src.seg(start, end)
    if _int_const(node):
        value = ast.literal_eval(node)
        for new in (value + 1, value - 1):
            yield Edit(node, start, end, str(new), f"{text} -> {new}")
        return
    base = text if isinstance(node, (*_SIMPLE, ast.BinOp)) else f"({text})"
    for delta in ("+ 1", "- 1"):
        yield Edit(node, start, end, f"{base} {delta}", f"{text} -> {base} {delta}")


def _sites_wrong_constant(tree: ast.AST, src: Source) -> Iterator[Edit]:
    skip = _default_and_index_constants(tree)
    for node in _walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in skip:
            continue
        start, end = src.span(node)
        for new in _constant_variants(node.value):
            yield Edit(node, start, end, new, f"{src.seg(start, end)} -> {new}")


def _default_and_index_constants(tree: ast.AST) -> set[int]:
    """Constants owned by other operators (defaults, indices, range stops)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arguments):
            skip |= {id(d) for d in [*node.defaults, *node.kw_defaults] if d is not None}
        elif isinstance(node, ast.Subscript):
            skip |= {id(n) for n in ast.walk(node.slice)}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
            skip |= {id(n) for a in node.args for n in ast.walk(a)}
    return skip


def _constant_variants(value: object) -> list[str]:
    if isinstance(value, bool):
        return [repr(not value)]
    if isinstance(value, int):
        return [str(value + 1)] if value in (0, -1) else [str(value + 1), str(value - 1)]
    if isinstance(value, float):
        return [repr(value * 2)] if value else ["1.0"]
    return []


def _sites_wrong_default(tree: ast.AST, src: Source) -> Iterator[Edit]:
    for node in ast.walk(tree):
        if isinstance(node, ast.arguments):
            for default in [*node.defaults, *node.kw_defaults]:
                if isinstance(default, ast.Constant):
                    start, end = src.span(default)
                    for new in _constant_variants(default.value)[:1]:
                        yield Edit(default, start, end, new, f"default {src.seg(start, end)} -> {new}")


def _sites_swapped_arguments(tree: ast.AST, src: Source) -> Iterator[Edit]:
    for node in _walk(tree):
        if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
            continue
        for a, b in zip(node.args, node.args[1:]):
            ta, tb = src.node_text(a), src.node_text(b)
            if ta == tb or "\n" in ta + tb:
                continue
            start, end = src.span(a)[0], src.span(b)[1]
            middle = src.seg(src.span(a)[1], src.span(b)[0])
            yield Edit(node, start, end, tb + middle + ta, f"swapped {ta} and {tb}")


def _sites_removed_branch(tree: ast.AST, src: Source) -> Iterator[Edit]:
    for node in _walk(tree):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if not isinstance(block, list) or (field == "orelse" and not isinstance(node, ast.If)):
                continue  # for/while/try `else` blocks are left alone
            for stmt in block:
                if isinstance(stmt, ast.If) and not stmt.orelse:
                    yield from _delete_statement(src, stmt, alone=len(block) == 1)
                elif isinstance(stmt, ast.If) and stmt.orelse and not _is_elif(src, stmt):
                    yield from _delete_else(src, stmt)


def _is_elif(src: Source, stmt: ast.If) -> bool:
    first = stmt.orelse[0]
    line = src.seg(*_whole_lines(src, first.lineno, first.lineno)).lstrip()
    return len(stmt.orelse) == 1 and isinstance(first, ast.If) and line.startswith("elif")


def _whole_lines(src: Source, first: int, last: int) -> tuple[int, int]:
    return src.line_starts[first - 1], (
        src.line_starts[last] if last < len(src.line_starts) else len(src.data)
    )


def _delete_statement(src: Source, stmt: ast.stmt, alone: bool) -> Iterator[Edit]:
    start, end = _whole_lines(src, stmt.lineno, stmt.end_lineno or stmt.lineno)
    head = src.data[start : src.offset(stmt.lineno, stmt.col_offset)]
    if head.strip():
        return  # shares its line with other code
    replacement = head.decode() + "pass\n" if alone else ""
    yield Edit(stmt, start, end, replacement, f"removed 'if' at line {stmt.lineno}")


def _delete_else(src: Source, stmt: ast.If) -> Iterator[Edit]:
    first_else = stmt.orelse[0].lineno
    else_line = first_else - 1

    def line(n: int) -> str:
        return src.seg(*_whole_lines(src, n, n)).strip()

    while else_line > stmt.lineno and not line(else_line).startswith("else"):
        else_line -= 1
    if not line(else_line).startswith("else:"):
        return
    start, end = _whole_lines(src, else_line, stmt.orelse[-1].end_lineno or first_else)
    yield Edit(stmt, start, end, "", f"removed 'else' branch at line {else_line}")


def _sites_wrong_variable(tree: ast.AST, src: Source) -> Iterator[Edit]:
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        typed = _typed_names(func)
        for node in _walk(func):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in typed:
                type_, _ = typed[node.id]
                for other, (other_type, defined_at) in typed.items():
                    if other != node.id and other_type == type_ and defined_at < node.lineno:
                        start, end = src.span(node)
                        yield Edit(node, start, end, other, f"{node.id} -> {other}")


def _typed_names(func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, tuple[str, int]]:
    """Parameters and annotated locals of `func`: name -> (annotation text, line defined)."""
    args = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
    typed = {a.arg: (ast.unparse(a.annotation), func.lineno) for a in args if a.annotation}
    for node in ast.walk(func):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            typed.setdefault(node.target.id, (ast.unparse(node.annotation), node.end_lineno or 0))
    typed.pop("self", None)
    typed.pop("cls", None)
    return typed

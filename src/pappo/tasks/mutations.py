"""AST mutation operators that inject realistic one-spot bugs into a module's source.

Sites are found on the AST (`tasks/mutation_sites.py`); the edit is applied to the original text
over the smallest span (an operator token, one operand, one statement), so the bug diff shows only
the bug and the rest of the file keeps its formatting. Every mutant must parse and differ in its
AST; each names its enclosing function, the place a fix is needed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from pappo.tasks.models import OPERATORS
from pappo.tasks.mutation_sites import Source, sites


@dataclass(frozen=True)
class Mutant:
    operator: str
    path: str
    lineno: int
    function: str | None  # enclosing function, the place a fix is needed
    description: str  # e.g. "'<' -> '<='"; for logs and docs only, never shown to the agent
    start: int  # byte span of the edit in the original file
    end: int
    replacement: str
    source: str  # the whole mutated file


def enumerate_mutants(path: str, text: str, operators: tuple[str, ...] = OPERATORS) -> list[Mutant]:
    """Every mutant of one module for the given operators, in a stable order."""
    src = Source(text)
    tree = ast.parse(text)
    original = ast.dump(tree)
    funcs = _enclosing_functions(tree)
    out: list[Mutant] = []
    seen: set[tuple[int, int, str]] = set()
    for op in operators:
        for edit in sites(op, tree, src):
            key = (edit.start, edit.end, edit.replacement)
            if key in seen:
                continue
            new_text = (src.data[: edit.start] + edit.replacement.encode() + src.data[edit.end :]).decode()
            try:
                changed = ast.dump(ast.parse(new_text)) != original
            except SyntaxError:
                continue
            if changed:
                seen.add(key)
                lineno = edit.node.lineno
                out.append(
                    Mutant(
                        op,
                        path,
                        lineno,
                        funcs.get(id(edit.node)),
                        edit.description,
                        edit.start,
                        edit.end,
                        edit.replacement,
                        new_text,
                    )
                )
    return out


def _enclosing_functions(tree: ast.AST) -> dict[int, str]:
    """Map id(node) -> qualified name of the innermost enclosing function."""
    owner: dict[int, str] = {}

    def visit(node: ast.AST, scope: list[str], func: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = ".".join([*scope, child.name])
                inner = name if not isinstance(child, ast.ClassDef) else func
                owner[id(child)] = func or ""
                visit(child, [*scope, child.name], inner)
            else:
                if func:
                    owner[id(child)] = func
                visit(child, scope, func)

    visit(tree, [], None)
    return {k: v for k, v in owner.items() if v}

"""AST node types and helpers."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class Num:
    """A numeric literal."""
    value: Union[int, float]


@dataclass(frozen=True)
class Var:
    """A variable reference."""
    name: str


@dataclass(frozen=True)
class UnaryOp:
    """A prefix operator applied to one operand."""
    op: str
    operand: "Node"


@dataclass(frozen=True)
class BinOp:
    """A binary operator applied to two operands."""
    op: str
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Call:
    """A function call with positional arguments."""
    name: str
    args: tuple["Node", ...]


Node = Union[Num, Var, UnaryOp, BinOp, Call]


def to_sexpr(node: Node) -> str:
    """Render ``node`` in fully parenthesised prefix notation."""
    if isinstance(node, Num):
        return str(node.value)
    if isinstance(node, Var):
        return node.name
    if isinstance(node, UnaryOp):
        return f"({node.op} {to_sexpr(node.operand)})"
    if isinstance(node, BinOp):
        return f"({node.op} {to_sexpr(node.left)} {to_sexpr(node.right)})"
    inner = " ".join(to_sexpr(arg) for arg in node.args)
    return f"({node.name} {inner})" if inner else f"({node.name})"


def free_variables(node: Node) -> list[str]:
    """Return the sorted distinct variable names used in ``node``."""
    found: set[str] = set()
    stack: list[Node] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Var):
            found.add(current.name)
        elif isinstance(current, UnaryOp):
            stack.append(current.operand)
        elif isinstance(current, BinOp):
            stack.extend([current.left, current.right])
        elif isinstance(current, Call):
            stack.extend(current.args)
    return sorted(found)

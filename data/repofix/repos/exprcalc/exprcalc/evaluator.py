"""Evaluation of expression ASTs."""
from __future__ import annotations

import math
from typing import Callable, Mapping, Optional, Union

from .nodes import BinOp, Call, Node, Num, UnaryOp, Var
from .parser import parse

Value = Union[int, float]

CONSTANTS: dict[str, Value] = {"pi": math.pi, "e": math.e}

# name -> (implementation, minimum arity, maximum arity or None for unbounded)
FUNCTIONS: dict[str, tuple[Callable[..., Value], int, Optional[int]]] = {
    "min": (lambda *args: min(args), 1, None),
    "max": (lambda *args: max(args), 1, None),
    "abs": (abs, 1, 1),
}


class EvalError(ValueError):
    """Raised for runtime errors such as unknown names or division by zero."""


def _binary(op: str, left: Value, right: Value) -> Value:
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if op == "/":
        if right == 0:
            raise EvalError("division by zero")
        return left / right
    if op == "%":
        if right == 0:
            raise EvalError("modulo by zero")
        return left % right
    if op == "^":
        if left == 0 and right < 0:
            raise EvalError("zero to a negative power")
        return left**right
    raise EvalError(f"unknown operator {op!r}")


def _call(name: str, args: list[Value]) -> Value:
    if name not in FUNCTIONS:
        raise EvalError(f"unknown function {name!r}")
    func, low, high = FUNCTIONS[name]
    if len(args) < low or (high is not None and len(args) > high):
        raise EvalError(f"{name} got {len(args)} arguments")
    return func(*args)


def evaluate(node: Node, variables: Optional[Mapping[str, Value]] = None) -> Value:
    """Evaluate ``node``; variables shadow the built-in constants."""
    scope: dict[str, Value] = dict(CONSTANTS)
    if variables:
        scope.update(variables)
    return _eval(node, scope)


def _eval(node: Node, scope: Mapping[str, Value]) -> Value:
    if isinstance(node, Num):
        return node.value
    if isinstance(node, Var):
        if node.name not in scope:
            raise EvalError(f"undefined variable {node.name!r}")
        return scope[node.name]
    if isinstance(node, UnaryOp):
        value = _eval(node.operand, scope)
        return -value if node.op == "-" else value
    if isinstance(node, BinOp):
        return _binary(node.op, _eval(node.left, scope), _eval(node.right, scope))
    return _call(node.name, [_eval(arg, scope) for arg in node.args])


def calculate(source: str, variables: Optional[Mapping[str, Value]] = None) -> Value:
    """Parse and evaluate ``source`` in one step."""
    return evaluate(parse(source), variables)

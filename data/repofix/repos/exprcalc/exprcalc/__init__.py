"""A small arithmetic expression language."""
from .evaluator import CONSTANTS, FUNCTIONS, EvalError, calculate, evaluate
from .nodes import BinOp, Call, Node, Num, UnaryOp, Var, free_variables, to_sexpr
from .parser import Parser, parse
from .tokens import ExprSyntaxError, Token, tokenize

__all__ = [
    "BinOp", "CONSTANTS", "Call", "EvalError", "ExprSyntaxError", "FUNCTIONS", "Node", "Num",
    "Parser", "Token", "UnaryOp", "Var", "calculate", "evaluate", "free_variables", "parse",
    "to_sexpr", "tokenize",
]

"""Recursive-descent parser producing an AST.

Grammar::

    expr    := term (('+' | '-') term)*
    term    := unary (('*' | '/' | '%') unary)*
    unary   := ('-' | '+') unary | power
    power   := primary ('^' unary)?
    primary := NUMBER | NAME | NAME '(' [expr (',' expr)*] ')' | '(' expr ')'
"""
from __future__ import annotations

from .nodes import BinOp, Call, Node, Num, UnaryOp, Var
from .tokens import ExprSyntaxError, Token, tokenize


class Parser:
    """Parses a token list into a single expression node."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.index = 0

    def peek(self) -> Token:
        return self.tokens[self.index]

    def advance(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def expect(self, text: str) -> Token:
        token = self.peek()
        if token.text != text:
            raise ExprSyntaxError(f"expected {text!r}", token.pos)
        return self.advance()

    def parse(self) -> Node:
        node = self.expr()
        token = self.peek()
        if token.kind != "end":
            raise ExprSyntaxError(f"unexpected {token.text!r}", token.pos)
        return node

    def expr(self) -> Node:
        node = self.term()
        while self.peek().kind == "op" and self.peek().text in "+-":
            op = self.advance().text
            node = BinOp(op, node, self.term())
        return node

    def term(self) -> Node:
        node = self.unary()
        while self.peek().kind == "op" and self.peek().text in "*/%":
            op = self.advance().text
            node = BinOp(op, node, self.unary())
        return node

    def unary(self) -> Node:
        token = self.peek()
        if token.kind == "op" and token.text in ("-", "+"):
            self.advance()
            return UnaryOp(token.text, self.unary())
        return self.power()

    def power(self) -> Node:
        base = self.primary()
        if self.peek().kind == "op" and self.peek().text == "^":
            self.advance()
            return BinOp("^", base, self.unary())
        return base

    def primary(self) -> Node:
        token = self.advance()
        if token.kind == "num":
            return Num(float(token.text) if "." in token.text else int(token.text))
        if token.kind == "name":
            if self.peek().text == "(":
                return Call(token.text, self.arguments())
            return Var(token.text)
        if token.kind == "op" and token.text == "(":
            node = self.expr()
            self.expect(")")
            return node
        what = "end of input" if token.kind == "end" else repr(token.text)
        raise ExprSyntaxError(f"unexpected {what}", token.pos)

    def arguments(self) -> tuple[Node, ...]:
        self.expect("(")
        if self.peek().text == ")":
            self.advance()
            return ()
        args = [self.expr()]
        while self.peek().text == ",":
            self.advance()
            args.append(self.expr())
        self.expect(")")
        return tuple(args)


def parse(source: str) -> Node:
    """Parse ``source`` into an AST, raising ExprSyntaxError on bad input."""
    return Parser(tokenize(source)).parse()

"""Parameters as paper-style expressions: a number, or arithmetic in named quantities ("H**2/25")."""
from __future__ import annotations

import ast
import operator

Expr = float | str
"""A number, or an arithmetic expression in named quantities, e.g. "H**2/25"."""

MAX_LENGTH = 200                # characters in an expression (the paper's longest, "3*H**2", has 6)
MAX_DEPTH = 20                  # operations nested in one another (parsing and evaluating recurse)


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.Pow: operator.pow, ast.USub: operator.neg,
        ast.UAdd: operator.pos}


def evaluate(expr: Expr, names: dict[str, float]) -> float:
    """Value of a number or of an arithmetic expression over `names` (no calls, no attributes), of at
    most MAX_LENGTH characters and MAX_DEPTH nested operations. ValueError: not such an expression;
    ArithmeticError: no real value at these `names` (a division by zero, an overflow, a negative
    number to a fractional power)."""
    if not isinstance(expr, str):
        return float(expr)
    if len(expr) > MAX_LENGTH:
        raise ValueError(f"an expression of {len(expr):,} characters, more than the {MAX_LENGTH} one may hold")

    def ev(node, depth=0):
        if depth > MAX_DEPTH:
            raise ValueError(f"operations nested more than {MAX_DEPTH} deep: {expr!r}")
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise ValueError(f"unknown name {node.id!r} (allowed: {', '.join(sorted(names)) or 'none'})")
            return float(names[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            value = _OPS[type(node.op)](ev(node.left, depth + 1), ev(node.right, depth + 1))
            if isinstance(value, complex):
                raise ArithmeticError("not a real number (a negative number to a fractional power)")
            return value
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand, depth + 1))
        raise ValueError(f"not an arithmetic expression: {expr!r}")

    try:
        tree = ast.parse(expr, mode="eval")
    except (SyntaxError, RecursionError, MemoryError):
        raise ValueError(f"not an arithmetic expression: {expr!r}") from None
    return ev(tree)

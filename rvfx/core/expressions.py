"""Parameters as paper-style expressions: a number, or arithmetic in named quantities ("H**2/25")."""
from __future__ import annotations

import ast
import operator

Expr = float | str
"""A number, or an arithmetic expression in named quantities, e.g. "H**2/25"."""


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.Pow: operator.pow, ast.USub: operator.neg,
        ast.UAdd: operator.pos}


def evaluate(expr: Expr, names: dict[str, float]) -> float:
    """Value of a number or of an arithmetic expression over `names` (no calls, no attributes)."""
    if not isinstance(expr, str):
        return float(expr)

    def ev(node):
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
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand))
        raise ValueError(f"not an arithmetic expression: {expr!r}")

    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        raise ValueError(f"not an arithmetic expression: {expr!r}") from None
    return ev(tree)

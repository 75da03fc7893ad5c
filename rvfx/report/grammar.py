"""claims.yaml's conditions (`where`, a fraction's `criterion`, a best_in `set`, a ratio's numerator
and reference) in a grammar of their own, parsed here and evaluated on a table column by column, so
that nothing a claims file says is ever run as Python or pandas code.

    condition := or;   or := and ('or' and)*;   and := not ('and' not)*;   not := 'not' not | compare
    compare   := sum [('==' | '!=' | '<' | '<=' | '>' | '>=') sum | ['not'] 'in' list]
    sum       := product (('+' | '-') product)*;   product := unary (('*' | '/') unary)*
    unary     := '-' unary | number | 'string' | "string" | True | False | column | function '(' sum ')'
                 | '(' condition ')'
    list      := '[' literal (',' literal)* [','] ']'      (literal: a string, number, True or False)

A column is a name (agent, env.size) or any text between backticks (`agent.M`); a function is abs or
log10. Text is at most MAX_LENGTH characters and nests at most MAX_DEPTH deep; a number is
finite, a whole one below 2^63 in size (a 64-bit column's range), so that no comparison overflows.
"""
from __future__ import annotations

import functools
import math
import operator
import re

import numpy as np
import pandas as pd

MAX_LENGTH = 300
MAX_DEPTH = 20
FUNCTIONS = {"abs": np.abs, "log10": np.log10}
COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
           ">": operator.gt, ">=": operator.ge}
ARITHMETIC = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
KEYWORDS = {"and", "or", "not", "in", "True", "False"}

_TOKEN = re.compile(r"""(?:
    (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<string>'(?:[^'\\]|\\['\\])*'|"(?:[^"\\]|\\["\\])*")
  | `(?P<quoted>[^`]+)`
  | (?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)
  | (?P<op>==|!=|<=|>=|[<>+\-*/()\[\],])
)""", re.VERBOSE)


class ExpressionError(ValueError):
    """A condition that does not parse, or that cannot be evaluated on a table (its message says why)."""


def _tokens(text: str) -> list[tuple[str, object, int]]:
    """(kind, value, column) of each token; kind is number, string, column, keyword or op."""
    out, pos = [], 0
    while True:
        pos = len(text) - len(text[pos:].lstrip()) if pos < len(text) else pos
        if pos >= len(text):
            return out
        m = _TOKEN.match(text, pos)
        if not m:
            raise ExpressionError(f"unexpected {text[pos]!r} at column {pos + 1}")
        col = pos + 1
        kind, value = m.lastgroup, m.group(m.lastgroup)
        if kind == "number":
            value = float(value) if re.search(r"[.eE]", value) else int(value)
            if not math.isfinite(value) or isinstance(value, int) and abs(value) >= 2**63:
                raise ExpressionError(f"the number at column {col} is beyond a 64-bit column's range")
        elif kind == "string":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        elif kind == "quoted":
            kind = "column"
        elif kind == "name":
            kind = "keyword" if value in KEYWORDS else "column"
        out.append((kind, value, col))
        pos = m.end()


class _Parser:
    """Recursive descent over the tokens; a node is a tuple (kind, ...) as built by `_node`."""

    def __init__(self, text: str):
        self.tokens, self.i, self.end, self.depth = _tokens(text), 0, len(text) + 1, 0

    def peek(self, *values) -> bool:
        return self.i < len(self.tokens) and self.tokens[self.i][0] in ("op", "keyword") \
            and self.tokens[self.i][1] in values

    def take(self):
        if self.i >= len(self.tokens):
            raise ExpressionError("unexpected end of the condition")
        self.i += 1
        return self.tokens[self.i - 1]

    def expect(self, value: str) -> None:
        kind, got, col = self.take() if self.i < len(self.tokens) else (None, "the end", self.end)
        if got != value or kind not in ("op", "keyword"):
            raise ExpressionError(f"expected {value!r} at column {col}, got {got!r}")

    def nested(self, parse):
        """parse() one level deeper: the recursion is bounded by MAX_DEPTH as the tree is."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(f"nested more than {MAX_DEPTH} deep")
        node = parse()
        self.depth -= 1
        return node

    def chain(self, ops: tuple, operand, kind: str):
        """operand (op operand)*, grouped from the left: a - b - c is (a - b) - c."""
        node = operand()
        while self.peek(*ops):
            node = _node(kind, self.take()[1], node, operand())
        return node

    def condition(self):
        return self.chain(("or",), self.conjunction, "logic")

    def conjunction(self):
        return self.chain(("and",), self.negation, "logic")

    def negation(self):
        if self.peek("not"):
            self.take()
            return _node("not", self.nested(self.negation))
        return self.comparison()

    def comparison(self):
        left = self.sum()
        if self.peek(*COMPARE):
            node = _node("compare", self.take()[1], left, self.sum())
            if self.peek(*COMPARE, "in", "not"):
                raise ExpressionError(f"a chained comparison at column {self.tokens[self.i][2]}: "
                                      f"write a < b and b < c")
            return node
        negated = self.peek("not")
        if negated:
            self.take()
            if not self.peek("in"):
                raise ExpressionError(f"expected 'in' after 'not' at column {self.tokens[self.i - 1][2]}")
        if self.peek("in"):
            self.take()
            return _node("in", negated, left, self.literals())
        return left

    def sum(self):
        return self.chain(("+", "-"), self.product, "arithmetic")

    def product(self):
        return self.chain(("*", "/"), self.unary, "arithmetic")

    def unary(self):
        if self.peek("-"):
            self.take()
            return _node("negative", self.nested(self.unary))
        kind, value, col = self.take()
        if kind == "number" or kind == "string" or (kind == "keyword" and value in ("True", "False")):
            return ("literal", value == "True" if kind == "keyword" else value, 1)
        if kind == "column" and self.peek("("):
            if value not in FUNCTIONS:
                raise ExpressionError(f"unknown function {value!r} at column {col} (known: {', '.join(FUNCTIONS)})")
            self.take()
            node = _node("call", value, self.nested(self.sum))
            self.expect(")")
            return node
        if kind == "column":
            return ("column", value, 1)
        if (kind, value) == ("op", "("):
            node = self.nested(self.condition)
            self.expect(")")
            return node
        raise ExpressionError(f"unexpected {value!r} at column {col}")

    def literals(self) -> list:
        self.expect("[")
        values = []
        while not self.peek("]"):
            negative = self.peek("-") and self.take()
            kind, value, col = self.take()
            if kind == "keyword" and value in ("True", "False"):
                value = value == "True"
            elif kind not in ("number", "string") or (negative and kind != "number"):
                raise ExpressionError(f"a list holds strings, numbers, True or False; got {value!r} at column {col}")
            values.append(-value if negative else value)
            if not self.peek("]"):
                self.expect(",")
        self.take()
        return values


def _node(kind: str, *parts):
    """A tree node (kind, *parts, depth), refused when it nests deeper than MAX_DEPTH."""
    depth = 1 + max((p[-1] for p in parts if isinstance(p, tuple)), default=0)
    if depth > MAX_DEPTH:
        raise ExpressionError(f"nested more than {MAX_DEPTH} deep")
    return (kind, *parts, depth)


_CONDITIONS = {"logic", "not", "compare", "in"}


def parse(text: str):
    """The tree of a condition; ExpressionError says what is wrong and at which column."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("a condition is a non-empty string")
    return _parse(text)


@functools.lru_cache(maxsize=512)
def _parse(text: str):
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"longer than {MAX_LENGTH} characters ({len(text):,})")
    if "\n" in text or not text.isprintable():
        raise ExpressionError("a condition is one line of printable characters")
    parser = _Parser(text)
    tree = parser.condition()
    if parser.i < len(parser.tokens):
        _, value, col = parser.tokens[parser.i]
        raise ExpressionError(f"unexpected {value!r} at column {col}")
    if tree[0] not in _CONDITIONS | {"column"} and not (tree[0] == "literal" and isinstance(tree[1], bool)):
        raise ExpressionError("not a condition: give a comparison, an 'in' list, and/or/not, or a true/false column")
    return tree


def _kind(x, kinds: str, wanted: str, what: str):
    """x itself when its dtype kind is one of `kinds`; else ExpressionError saying `what` needs `wanted`."""
    series = isinstance(x, pd.Series)
    if (x.dtype if series else np.asarray(x).dtype).kind not in kinds:
        raise ExpressionError(f"{what} needs {wanted}, got {'a column of ' + str(x.dtype) if series else repr(x)}")
    return x


def _numeric(x, what: str):
    return _kind(x, "iuf", "numbers", what)


def _truth(x, what: str):
    return _kind(x, "b", "true/false values", what)


def _value(tree, df: pd.DataFrame):
    """A column (Series) or a scalar: the tree evaluated on `df`, operation by operation."""
    kind = tree[0]
    if kind == "literal":
        return tree[1]
    if kind == "column":
        if tree[1] not in df.columns:
            raise KeyError(tree[1])
        return df[tree[1]]
    if kind == "logic":
        a, b = (_truth(_value(t, df), tree[1]) for t in tree[2:4])
        return (a & b) if tree[1] == "and" else (a | b)
    if kind == "not":
        a = _truth(_value(tree[1], df), "not")
        return ~a if isinstance(a, pd.Series) else not a
    if kind == "in":
        negated, a, values = tree[1], _value(tree[2], df), tree[3]
        inside = a.isin(values) if isinstance(a, pd.Series) else a in values
        return ~inside if negated else inside
    if kind == "negative":
        return -_numeric(_value(tree[1], df), "-")
    if kind == "call":
        with np.errstate(all="ignore"):
            return FUNCTIONS[tree[1]](_numeric(_value(tree[2], df), tree[1]))
    op, a, b = tree[1], _value(tree[2], df), _value(tree[3], df)
    if kind == "arithmetic":
        a, b = _numeric(a, op), _numeric(b, op)
        if not isinstance(a, pd.Series) and not isinstance(b, pd.Series):
            a = np.float64(a)
        with np.errstate(all="ignore"):
            return ARITHMETIC[op](a, b)
    try:
        return COMPARE[op](a, b)
    except TypeError as err:
        raise ExpressionError(f"cannot compare with {op}: {err}") from None


def evaluate(text: str, df: pd.DataFrame) -> pd.Series:
    """Whether each row of `df` meets the condition `text` (a missing value does not); KeyError names a
    column the table lacks, ExpressionError any other problem."""
    out = _value(parse(text), df)
    if not isinstance(out, pd.Series):
        out = pd.Series(_truth(out, "a condition"), index=df.index)
    return _kind(out, "bO", "true/false values", "a condition").eq(True)

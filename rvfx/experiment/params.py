"""Declared parameters: dataclass fields checked against raw spec values, with paper-style expressions.

An agent or environment declares its parameters as a frozen dataclass. Field types
are int, float, bool, str, Literal[...] or Expr; `metadata` may bound numbers
("min", "gt", "max") and name the symbols an Expr may use ("names"). Every number must be
finite; an Expr is bounded by its value at the run's quantities (`check_expressions`).
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import re
import typing
from typing import Literal

from rvfx.core.expressions import Expr, evaluate


class SpecError(Exception):
    """A bad value in a spec: `path` is the dotted key, `line` its line in `file`."""

    def __init__(self, path: str, message: str, file: str | None = None, line: int | None = None):
        super().__init__(message)
        self.path, self.message, self.file, self.line = path, message, file, line

    def __str__(self) -> str:
        where = f"{self.file or '<spec>'}:{self.line or '?'}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


def did_you_mean(word: str, options) -> str:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


MAX_NAME = 100                  # characters in a name that becomes a file or folder name
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def name_problem(name) -> str | None:
    """Why `name` (an experiment name, an agent label) cannot name a file or folder, or None: it
    must be at most MAX_NAME of [A-Za-z0-9_.-], not starting with '.' or '-', so it stays one
    path component (no '/', no '..') on every filesystem."""
    if not isinstance(name, str):
        return f"expected a name, got {name!r}"
    if len(name) > MAX_NAME:
        return f"a name of {len(name):,} characters, more than the {MAX_NAME} one may hold"
    if not _NAME.fullmatch(name):
        return f"expected a name of letters, digits, '_', '.' and '-', not starting with '.' or '-', got {name!r}"
    return None


def _check_bounds(value: float, meta: dict, fail, shown: str = "") -> None:
    """A number must be finite and within the field's declared bounds ("min", "gt", "max")."""
    got = f"got {value!r}{shown}"
    if not math.isfinite(value):
        fail(f"must be a finite number, {got}")
    if "min" in meta and value < meta["min"]:
        fail(f"must be >= {meta['min']}, {got}")
    if "gt" in meta and value <= meta["gt"]:
        fail(f"must be > {meta['gt']}, {got}")
    if "max" in meta and value > meta["max"]:
        fail(f"must be <= {meta['max']}, {got}")


def _check_value(name: str, typ, value, meta: dict, path: str):
    """`value` checked against the field `name`'s type and its metadata (SpecError at `path`), as the
    field holds it (a float for an int given to a float field)."""
    def fail(msg):
        raise SpecError(path, msg)

    if typing.get_origin(typ) is Literal:
        return _check_choice(typing.get_args(typ), value, meta, fail)
    check = _CHECKS.get(typ)
    if check is None:  # pragma: no cover - a declaration error, not a spec error
        raise TypeError(f"unsupported parameter type {typ!r} for {name}")
    return check(value, meta, fail)


def _check_bool(value, meta: dict, fail):
    if not isinstance(value, bool):
        fail(f"expected true or false, got {value!r}")
    return value


def _check_int(value, meta: dict, fail):
    if isinstance(value, bool) or not isinstance(value, int):
        fail(f"expected an integer, got {value!r}")
    if abs(value) >= 2**63:
        fail(f"too large for a 64-bit integer, got {value!r}")
    _check_bounds(value, meta, fail)
    return value


def _check_float(value, meta: dict, fail):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        fail(f"expected a number, got {value!r}")
    try:
        value = float(value)
    except OverflowError:
        fail(f"too large for a float, got {value!r}")
    _check_bounds(value, meta, fail)
    return value


def _check_str(value, meta: dict, fail):
    if not isinstance(value, str):
        fail(f"expected a string, got {value!r}")
    return value


def _check_choice(choices: tuple, value, meta: dict, fail):
    """One of a Literal's `choices`; an old name of one (`renamed`) is named as such."""
    if value not in choices:
        old_names = {old: new for new, old in meta.get("renamed", {}).items()}
        hint = (f" ({value!r} was renamed {old_names[value]!r})" if value in old_names
                else did_you_mean(value, choices) if isinstance(value, str) else "")
        fail(f"expected one of {', '.join(map(repr, choices))}, got {value!r}{hint}")
    return value


def _check_expr(value, meta: dict, fail):
    """A number within bounds, or an expression whose syntax and names are checked here (its value,
    which needs the run's sizes, in check_expressions)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        fail(f"expected a number or an expression, got {value!r}")
    if isinstance(value, str):
        try:
            evaluate(value, {n: 1.0 for n in meta.get("names", ())})
        except ArithmeticError:
            pass
        except ValueError as err:
            fail(str(err))
        return value
    try:
        float(value)
    except OverflowError:
        fail(f"too large for a float, got {value!r}")
    _check_bounds(value, meta, fail)
    return value


_CHECKS = {bool: _check_bool, int: _check_int, float: _check_float, str: _check_str, Expr: _check_expr}


def build(cls, raw: dict, path: str, paths: dict[str, str] | None = None):
    """Instantiate the params dataclass `cls` from `raw`, naming the key path of any bad value
    (`path`.key, or `paths`[key] for a value that came from elsewhere, e.g. a grid axis)."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for key, value in raw.items():
        where = (paths or {}).get(key, f"{path}.{key}")
        if key not in fields:
            raise SpecError(where, f"unknown parameter{did_you_mean(key, fields)}; known: {', '.join(fields)}")
        values[key] = _check_value(key, hints[key], value, dict(fields[key].metadata), where)
    try:
        return cls(**values)
    except ValueError as err:           # a setting the parameters' __post_init__ refuses as a whole
        raise SpecError(path, str(err)) from None


def check_expressions(obj, names: dict[str, float], path: str, paths: dict[str, str] | None = None) -> None:
    """Evaluate every Expr field of the params `obj` as its run will (at the run's `names`, e.g. H,
    the numbers of `obj`, and the fields before it, as lam: v) and check the value is finite and
    within the field's bounds. A name without a value here (no H for this environment) skips it."""
    hints = typing.get_type_hints(type(obj))
    known = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if hints[f.name] in (int, float)}
    known.update(names)
    for f in dataclasses.fields(obj):
        if hints[f.name] != Expr:
            continue
        expr = getattr(obj, f.name)
        used = {n: known[n] for n in f.metadata.get("names", ()) if n in known}
        at = f" ({expr} at {', '.join(f'{n}={v:g}' for n, v in used.items())})" if isinstance(expr, str) else ""

        def fail(msg):   # called within this iteration only
            raise SpecError((paths or {}).get(f.name, f"{path}.{f.name}"), msg)  # noqa: B023

        try:
            value = evaluate(expr, used)
        except ValueError:
            continue
        except ZeroDivisionError:
            fail(f"division by zero{at}")
        except OverflowError:
            fail(f"too large for a float{at}")
        except ArithmeticError as err:
            fail(f"{err}{at}")
        _check_bounds(value, dict(f.metadata), fail, at)
        known[f.name] = value


def describe(cls) -> list[tuple[str, str, object, str]]:
    """(name, type, default, doc) of each declared parameter, for `rvfx list`."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        typ = hints[f.name]
        tname = ("|".join(map(str, typing.get_args(typ))) if typing.get_origin(typ) is Literal
                 else "expr" if typ == Expr else typ.__name__)
        out.append((f.name, tname, f.default, f.metadata.get("doc", "")))
    return out

"""Declared parameters: dataclass fields checked against raw spec values, with paper-style expressions.

An agent or environment declares its parameters as a frozen dataclass. Field types
are int, float, bool, str, Literal[...] or Expr; `metadata` may bound numbers
("min", "gt", "max") and name the symbols an Expr may use ("names").
"""
from __future__ import annotations

import dataclasses
import difflib
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


def _check_value(name: str, typ, value, meta: dict, path: str):
    def fail(msg):
        raise SpecError(path, msg)

    origin = typing.get_origin(typ)
    if typ is bool:
        if not isinstance(value, bool):
            fail(f"expected true or false, got {value!r}")
        return value
    if typ is int:
        if isinstance(value, bool) or not isinstance(value, int):
            fail(f"expected an integer, got {value!r}")
    elif typ is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fail(f"expected a number, got {value!r}")
        value = float(value)
    elif typ is str:
        if not isinstance(value, str):
            fail(f"expected a string, got {value!r}")
    elif origin is Literal:
        choices = typing.get_args(typ)
        if value not in choices:
            fail(f"expected one of {', '.join(map(repr, choices))}, got {value!r}"
                 + (did_you_mean(value, choices) if isinstance(value, str) else ""))
        return value
    elif typ == Expr:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            fail(f"expected a number or an expression, got {value!r}")
        names = {n: 1.0 for n in meta.get("names", ())}
        try:
            evaluate(value, names)
        except ZeroDivisionError:
            pass
        except (ValueError, OverflowError) as err:
            fail(str(err))
        return value
    else:  # pragma: no cover - a declaration error, not a spec error
        raise TypeError(f"unsupported parameter type {typ!r} for {name}")
    if "min" in meta and value < meta["min"]:
        fail(f"must be >= {meta['min']}, got {value!r}")
    if "gt" in meta and value <= meta["gt"]:
        fail(f"must be > {meta['gt']}, got {value!r}")
    if "max" in meta and value > meta["max"]:
        fail(f"must be <= {meta['max']}, got {value!r}")
    return value


def build(cls, raw: dict, path: str):
    """Instantiate the params dataclass `cls` from `raw`, naming the key path of any bad value."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for key, value in raw.items():
        if key not in fields:
            raise SpecError(f"{path}.{key}", f"unknown parameter{did_you_mean(key, fields)}; "
                            f"known: {', '.join(fields)}")
        values[key] = _check_value(key, hints[key], value, dict(fields[key].metadata), f"{path}.{key}")
    return cls(**values)


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

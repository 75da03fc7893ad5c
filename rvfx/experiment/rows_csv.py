"""A shard's rows as CSV text, the bytes `pd.DataFrame(rows).to_csv(index=False, lineterminator="\\n")`
gives, without pandas: building a frame and writing it costs ~1 ms per table, as much as a short
run's own work, and a shard writes three.

pandas makes a column of the rows' values (a key absent from a row is missing) and writes it by its
type: numbers with a float or a missing value among them as float64 (an int 3 as "3.0"), anything
else as text; a missing value (None, NaN) as "". `rows_csv` does the same for the plain types a run
logs (bool, int, float, str, None and NumPy's float64, int64 and bool) and returns None for any other
(the caller writes those through pandas). tests/test_shards.py compares the two on random rows.
"""
from __future__ import annotations

import csv
import io

import numpy as np

_ABSENT = object()
_NUMBERS = {int, float, np.float64, np.int64}
_INTS = {int, np.int64}
_PLAIN = {bool, str, type(None), np.bool_, *_NUMBERS}


def _missing(v) -> bool:
    """A value pandas writes as "": a row without the key (_ABSENT), None, or NaN (unequal to itself)."""
    return v is None or v is _ABSENT or v != v


def _float_column(values, kinds: set) -> list[str] | None:
    """A column of numbers with a float or a missing value among them, as float64 writes them (an
    int 3 as "3.0"), or None for an int beyond float64's exact integers (left to pandas)."""
    if kinds & _INTS and any(type(v) in _INTS and abs(int(v)) >= 2**53 for v in values):
        return None
    return ["" if _missing(v) else repr(float(v)) for v in values]


def _column(values) -> list[str] | None:
    """The cells of one column as pandas writes them, or None where pandas' rules are not these."""
    kinds = set(map(type, values))
    if kinds == {float}:            # the usual metric column, as _float_column spells it
        return [repr(v) if v == v else "" for v in values]
    gaps = object in kinds or type(None) in kinds      # a row without the key (_ABSENT), or None
    kinds.discard(object)
    if not kinds <= _PLAIN:
        return None
    floats = float in kinds or np.float64 in kinds
    if kinds - {type(None)} <= _NUMBERS and (gaps or floats):
        return _float_column(values, kinds)
    if gaps or floats:
        return ["" if _missing(v) else str(v) for v in values]
    return list(map(str, values))


def rows_csv(rows: list[dict], first: dict | None = None) -> str | None:
    """The table of `rows`, each after the columns of `first` ([{**first, **row} for row in rows]), as
    the CSV text pandas writes for it (columns in order of first appearance), or None when a value is
    of a type whose spelling is left to pandas, or there are no rows. `first`'s columns, the same in
    every row (a run's identity), are spelt once."""
    first = first or {}
    if not rows:
        return None
    if not first.keys().isdisjoint(k for row in rows for k in row):     # a row sets one: the merged rows
        return rows_csv([{**first, **row} for row in rows])
    names = tuple(rows[0])
    if all(tuple(row) == names for row in rows):       # the usual shard: every row has the same keys
        values = zip(*(row.values() for row in rows))
    else:
        names = tuple(dict.fromkeys(k for row in rows for k in row))
        values = ([row.get(name, _ABSENT) for row in rows] for name in names)
    columns = [_column([v]) for v in first.values()]
    columns = [None if c is None else c * len(rows) for c in columns] + list(map(_column, values))
    if any(c is None for c in columns):
        return None
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*first, *names])
    writer.writerows(zip(*columns))
    return out.getvalue()

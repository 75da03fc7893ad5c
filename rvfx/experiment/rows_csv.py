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
_PLAIN = {bool, str, type(None), np.bool_, *_NUMBERS}


def _missing(v) -> bool:
    return v is None or v is _ABSENT or (v != v)      # NaN is the one value unequal to itself


def _column(values: list) -> list[str] | None:
    """The cells of one column as pandas writes them, or None where pandas' rules are not these."""
    kinds = {type(v) for v in values}
    gaps = object in kinds or type(None) in kinds      # a row without the key (_ABSENT), or None
    kinds.discard(object)
    if not kinds <= _PLAIN:
        return None
    if kinds - {type(None)} <= _NUMBERS and (gaps or float in kinds or np.float64 in kinds):
        if any(type(v) in (int, np.int64) and abs(int(v)) >= 2**53 for v in values):
            return None                                # beyond float64's exact integers: left to pandas
        return ["" if _missing(v) else repr(float(v)) for v in values]
    return ["" if _missing(v) else str(v) for v in values]


def rows_csv(rows: list[dict]) -> str | None:
    """`rows` as the CSV text pandas writes for them (columns in order of first appearance), or None
    when a value is of a type whose spelling is left to pandas, or there are no rows."""
    if not rows:
        return None
    names = list(dict.fromkeys(k for row in rows for k in row))
    columns = []
    for name in names:
        cells = _column([row.get(name, _ABSENT) for row in rows])
        if cells is None:
            return None
        columns.append(cells)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(names)
    writer.writerows(zip(*columns))
    return out.getvalue()

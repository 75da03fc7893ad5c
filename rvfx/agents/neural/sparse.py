"""Sparse network inputs and the sparse gradients they give (Section 7.2's deep sea inputs).

A one-hot input (deep sea's N x N pixels) or a `BlockInput` (nonzero on one block of consecutive
coordinates, e.g. the linear basis of Section 7.1.2) touches a few rows of the first weight W_1, so
its gradient is a `SparseRows`: the rows seen in the batch, duplicates summed (`row_sums`), never
a dense N^2-wide matmul.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class BlockInput(NamedTuple):
    """A batch of B sparse inputs x_b in R^(n_blocks * width), each nonzero on one block only:
    x_b[block_b * width + j] = values[b, j] for j < width, zero elsewhere.

    A one-hot input is the case width = 1, values = 1. `key` (optional, (B,) ints)
    names each input (e.g. the state it encodes): equal keys promise equal inputs,
    which lets `PriorEnsemble` cache prior and target values per key exactly.
    """
    block: np.ndarray          # (B,) int block index
    values: np.ndarray         # (B, width) the block's entries
    key: np.ndarray | None = None

    @property
    def shape(self) -> tuple:
        """(B, n_nonzero): only the batch size is used, as for an array input."""
        return self.values.shape

    def take(self, idx: np.ndarray) -> BlockInput:
        """The inputs at positions `idx` of the batch."""
        return BlockInput(self.block[idx], self.values[idx], None if self.key is None else self.key[idx])

    def dense(self, input_dim: int) -> np.ndarray:
        """The (B, input_dim) dense matrix (for tests and references only)."""
        B, width = self.values.shape
        out = np.zeros((B, input_dim), self.values.dtype)
        out[np.arange(B)[:, None], self.block[:, None] * width + np.arange(width)] = self.values
        return out


class SparseRows(NamedTuple):
    """Gradient of a weight W nonzero only on some rows W[rows] (first axis)."""
    rows: np.ndarray     # unique, sorted row indices
    values: np.ndarray   # (len(rows), *W.shape[1:]) summed gradient of each row
    runs: list | None = None   # optional [(i, j), ...]: rows[i:j] are consecutive integers (slices, no gather)


def row_sums(rows: np.ndarray, values: np.ndarray) -> SparseRows:
    """Sum the rows of `values` (n, ...) that share an index in `rows` (n,): a one-hot layer's gradient.

    The first occurrence of each index is gathered; the duplicates are added by a
    sparse product, a 0/1 matrix (indices that repeat) x (duplicates) in BLAS:
    cheap both when the indices are spread out and when they are concentrated.
    Distinct sorted `rows` (np.unique output) return `values` itself, uncopied.
    """
    n = rows.shape[0]
    if n < 2 or bool((rows[1:] > rows[:-1]).all()):   # already distinct and sorted (np.unique output)
        return SparseRows(rows, values)
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    first = np.empty(n, bool)
    first[0] = True
    np.not_equal(sorted_rows[1:], sorted_rows[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    flat = values.reshape(n, -1)
    out = flat[order[starts]]
    dup = np.flatnonzero(~first)
    if dup.size:
        segment = np.cumsum(first)[dup] - 1              # which distinct index each duplicate adds to
        repeated = np.flatnonzero(np.bincount(segment, minlength=starts.size))
        local = np.empty(starts.size, np.intp)
        local[repeated] = np.arange(repeated.size)
        onehot = np.zeros((repeated.size, dup.size), values.dtype)
        onehot[local[segment], np.arange(dup.size)] = 1.0
        out[repeated] += onehot @ flat[order[dup]]
    return SparseRows(sorted_rows[starts], out.reshape(starts.size, *values.shape[1:]))

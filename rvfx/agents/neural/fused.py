"""The element-wise passes of the SGD step (Algorithm 8) in NumPy: the reference that the fast extra's
numba kernels (`kernels`) compute with the same bits, each in one loop over memory. They are the hidden
layers' bias and ReLU and its derivative, Adam, the TD errors and their value gradient (eq. 5.7), the
distinct states of a minibatch of discrete states, and the target's copy of W_1's changed rows. Which
of the two an agent's networks run is its `kernels` (`backend`).

Both do the same floating-point operations in the same order per element (tests/test_fused.py): no
fastmath, no FMA contraction (numba's default), float64 where NumPy uses it. The bias gradient's sum
over the batch adds rows in order 0..B-1 from 0.0, as NumPy's `add.reduce` along a non-contiguous axis
(no pairwise summation there; over one column, contiguous, NumPy's is pairwise, and so is used).
"""
from __future__ import annotations

import importlib.util
import math
import os
import threading

import numpy as np

from rvfx.agents.neural import td as _td

WIDE = np.float64

_local = threading.local()          # scratch: per thread, one grow-only buffer per dtype


def _buffer(shape: tuple, dtype) -> np.ndarray:
    scratch = _local.__dict__.setdefault("scratch", {})
    size = math.prod(shape)
    flat = scratch.get(np.dtype(dtype))
    if flat is None or flat.size < size:
        flat = scratch[np.dtype(dtype)] = np.empty(max(size, 1), dtype)
    return flat[:size].reshape(shape)


def bias_relu(z: np.ndarray, b: np.ndarray, mask: np.ndarray) -> None:
    """z <- relu(z + b) and mask <- relu'(z + b) (0/1 floats, or bools); z (B, n), b (n,), all in place."""
    z += b
    positive = _buffer(z.shape, np.bool_)
    np.greater(z, 0.0, out=positive)
    np.copyto(mask, positive)                      # bool then a copy beats a casting comparison
    z *= mask


def relu(z: np.ndarray, b: np.ndarray) -> None:
    """z <- relu(z + b) in place, no ReLU' kept (passes with no backward after them)."""
    bias_relu(z, b, _buffer(z.shape, z.dtype))


def relu_grad_sum(d: np.ndarray, mask: np.ndarray, out: np.ndarray) -> None:
    """d <- d * mask in place and out <- sum over rows of d (the next bias gradient); d (B, n), out (n,)."""
    d *= mask
    np.add.reduce(d, axis=0, out=out)


def adam(p, g, m, v, b1w, b2, stepw, eps, one) -> None:
    """Adam's update of p with unnormalised moments m, v (see `optimisers.Adam`); g is overwritten.
    b1w, stepw: float64 of the dtype's b1 and step; b2, eps: the dtype's; `one` is unused here."""
    np.multiply(m, b1w, out=m, dtype=WIDE)         # m~ <- b1 m~ + g
    m += g
    g *= g
    v *= b2                                        # v~ <- b2 v~ + g^2
    v += g
    np.sqrt(v, out=g)
    g += eps
    np.divide(m, g, out=g, dtype=WIDE)
    np.multiply(g, stepw, out=g, dtype=WIDE)
    p -= g


def adam_rows(p, rows, g, m, v, b1w, b2, stepw, eps, one) -> None:
    """`adam` on the rows `rows` (distinct) of p, m, v (n, width); g is (len(rows), width)."""
    pr, mr, vr = p[rows], m[rows], v[rows]
    adam(pr, g, mr, vr, b1w, b2, stepw, eps, one)
    p[rows], m[rows], v[rows] = pr, mr, vr


def bootstrap(q_next, online_next, v) -> None:
    """v (K, U') <- the bootstrap values of the target values q_next (K, U', A) (`td.bootstrap_values`)."""
    v[...] = _td.bootstrap_values(q_next, online_next)


def td(q, v, action, reward, discount, weight, rows, next_rows, scale, delta, g, dout) -> None:
    """delta (K, B) <- `td.td_errors`, g <- delta * 2 weight (the bootstrap bits; or delta without them);
    with `dout` (K, B, A), any strides (no `rows`: one state per sample), dout <- dL/dQ, g * scale at
    Q_k(s_b, a_b) and zero elsewhere. reward is (K, B), or (1, B) shared by the members."""
    _, d = _td.td_errors(q, action, reward, discount, v, rows, next_rows)
    delta[...] = d
    if weight is None:
        g[...] = d
    else:
        np.multiply(d, np.multiply(weight, d.dtype.type(2.0), dtype=d.dtype), out=g)
    if dout is not None:
        K, B = g.shape
        dout.fill(0.0)
        dout[np.arange(K)[:, None], np.arange(B), action] = g * scale


def distinct(codes):
    """np.unique(codes, return_index=True, return_inverse=True) of 1-d integer codes: the sorted distinct
    codes, each one's first sample, and each sample's rank among them (repeated states' shared passes)."""
    return np.unique(codes, return_index=True, return_inverse=True)


def copy_rows(dst, src, rows) -> None:
    """dst[rows] <- src[rows] (the target network's changed rows of W_1)."""
    dst[rows] = src[rows]


def available() -> bool:
    """numba is installed (the compiled kernels are possible); not imported here, so that its cache
    folder is set before it loads (kernels)."""
    return importlib.util.find_spec("numba") is not None


def requested_problem() -> str | None:
    """Why RVFX_KERNELS names no kernels this environment has, or None (unset: the default): checked
    before a sweep starts, so that a typo fails once and not in every run."""
    wanted = os.environ.get("RVFX_KERNELS")
    if wanted and wanted not in ("numba", "numpy"):
        return f"RVFX_KERNELS={wanted!r}: expected numba or numpy (unset: numba where the fast extra is installed)"
    if wanted == "numba" and not available():
        return "RVFX_KERNELS='numba': numba is not installed (pip install 'rvfx[fast]'), or unset it for NumPy's passes"
    return None

"""The numba kernels (the `fast` extra): `fused`'s passes compiled, each one loop over memory, with the
same bits; `Numba` is the kernels object an agent holds (`backend`). One module, so that numba's on-disk
cache, which it checks against this file's size and time, is never stale for a kernel that another
calls: they are compiled once per machine into numba_cache.folder() (a private folder, checked), or in
each process where there is none.

error_model="numpy" lets a quotient by zero be inf or nan as in NumPy (Python's model would test and
raise, which also keeps the loops from vectorising).
"""
from __future__ import annotations

import os

import numpy as np

from rvfx.agents.neural import numba_cache

FOLDER = numba_cache.folder()
if FOLDER is not None:                       # read by numba as it loads, hence before it
    os.environ["NUMBA_CACHE_DIR"] = str(FOLDER)

import numba  # noqa: E402

from rvfx.agents.neural import fused  # noqa: E402  (its pass where NumPy's sum is pairwise)

WIDE = np.float64
jit = numba.njit(cache=FOLDER is not None and numba.config.CACHE_DIR == str(FOLDER), nogil=True,
                 error_model="numpy", fastmath=False)


@jit
def bias_relu(z, b, mask):
    zero, unit = z.dtype.type(0.0), z.dtype.type(1.0)
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            x = z[i, j] + b[j]
            r = unit if x > zero else zero
            z[i, j] = x * r                    # x * 0 as NumPy: -0.0 below zero, nan stays nan
            mask[i, j] = r                     # a bool mask (1 byte) stores r != 0

@jit
def relu(z, b):
    zero, unit = z.dtype.type(0.0), z.dtype.type(1.0)
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            x = z[i, j] + b[j]
            z[i, j] = x * (unit if x > zero else zero)

@jit
def relu_grad_sum(d, mask, out):
    zero, unit = d.dtype.type(0.0), d.dtype.type(1.0)
    if d.shape[0] == 0:
        out[:] = zero                          # NumPy's sum of no rows
        return
    for j in range(d.shape[1]):
        x = d[0, j] * (unit if mask[0, j] else zero)   # the 0/1 float NumPy multiplies by
        d[0, j] = x
        out[j] = zero + x                      # NumPy's sum starts from 0.0: a dead unit's -0.0s sum to 0.0
    for i in range(1, d.shape[0]):
        for j in range(d.shape[1]):
            x = d[i, j] * (unit if mask[i, j] else zero)
            d[i, j] = x
            out[j] += x


@jit
def adam(p, g, m, v, b1w, b2, stepw, eps, one):
    # The quotient m~ / s in p's dtype: a float32 division is float64's rounded (`Adam._update`) at a
    # quarter of its cost, but x86 takes a microcode slow path on a subnormal operand, and unused
    # weights' m~ decay to subnormals (b1^t). Those take no step here, which is exact where their
    # step is below half the gap between p and its neighbours: |q| <= tiny / eps, so |q| step is at
    # most tiny / eps * step, and half a gap is at least |p| eps_p / 4 (below a power of two), so any
    # |p| > 4 tiny / eps * step / eps_p; `small` doubles that against the roundings of q and its step.
    # The rare rest are redone after, from their unchanged p, with the quotient in float64 (the opaque
    # `one` keeps LLVM from narrowing it back to a float32 division). The step's product q * step is
    # made in p's dtype too: a product of two float32s is exact in float64, so float64's product
    # rounded once is float32's own. The tests compare |x| (comparisons take no slow path): a nan
    # passes neither.
    dt, zero = p.dtype.type, p.dtype.type(0.0)
    step = dt(stepw)
    tiny = m.dtype.type(np.finfo(m.dtype).tiny)
    small = WIDE(tiny) / WIDE(eps) * stepw * (WIDE(8.0) / WIDE(np.finfo(p.dtype).eps))   # x 2^26 in float32
    below = dt(small)
    if WIDE(below) > small:
        below = np.nextafter(below, zero)               # |p| <= small, as the greatest such p
    late = False
    for i in range(p.shape[0]):
        gi = g[i]
        mi = m.dtype.type(WIDE(m[i]) * b1w) + gi
        vi = v[i] * b2 + gi * gi
        m[i] = mi
        v[i] = vi
        pi, a = p[i], abs(mi)
        subnormal = (a > zero) & (a < tiny)
        late |= subnormal & (abs(pi) <= below)
        q = (zero if subnormal else mi) / (np.sqrt(vi) + eps)
        p[i] = pi - (zero if subnormal else q * step)
    if late:
        for i in range(p.shape[0]):
            a = abs(m[i])
            if a > zero and a < tiny and abs(p[i]) <= below:        # the loop's own tests
                q = dt((WIDE(m[i]) * one) / WIDE(np.sqrt(v[i]) + eps))
                p[i] = p[i] - dt(WIDE(q) * stepw)


# bootstrap and td loop over samples, then members: the order of the (U, K, A) memory under the
# (K, U, A) views they are handed (each element is computed alone, so the order changes no bit)
@jit
def bootstrap(q_next, online_next, v):
    for u in range(q_next.shape[1]):
        for k in range(q_next.shape[0]):
            if online_next is None:             # np.maximum in turn: the second unless the first is
                x = q_next[k, u, 0]             # greater or nan (its signed zeros and nans)
                for a in range(1, q_next.shape[2]):
                    y = q_next[k, u, a]
                    if not (x > y or x != x):
                        x = y
                v[k, u] = x
            else:                               # np.argmax: the first greatest, or the first nan
                best, top = 0, online_next[k, u, 0]
                if top == top:
                    for a in range(1, q_next.shape[2]):
                        y = online_next[k, u, a]
                        if y != y:
                            best = a
                            break
                        if y > top:
                            best, top = a, y
                v[k, u] = q_next[k, u, best]

@jit
def td(q, v, action, reward, discount, weight, rows, next_rows, scale, delta, g, dout):
    zero, two = delta.dtype.type(0.0), delta.dtype.type(2.0)
    shared = reward.shape[0] == 1
    for b in range(delta.shape[1]):
        a = action[b]
        for k in range(delta.shape[0]):
            if next_rows is None:
                y = v[k, b] * discount[b]
            else:
                y = v[k, next_rows[b]] * discount[b]
            y = y + reward[0 if shared else k, b]
            if rows is None:
                d = q[k, b, a] - y
            else:
                d = q[k, rows[b], a] - y
            delta[k, b] = d
            if weight is not None:
                d = d * (two if weight[k, b] else zero)
            g[k, b] = d
            if dout is not None:
                for c in range(dout.shape[2]):
                    dout[k, b, c] = d * scale if c == a else zero

@jit
def distinct(codes):
    order = np.argsort(codes, kind="mergesort")     # stable: a group's first is its first sample
    state, first = np.empty_like(codes), np.empty_like(order)
    index = np.empty_like(order)
    n = 0
    for i in range(codes.shape[0]):
        b = order[i]
        if n == 0 or codes[b] != state[n - 1]:
            state[n], first[n] = codes[b], b
            n += 1
        index[b] = n - 1
    return state[:n], first[:n], index

@jit
def adam_rows(p, rows, g, m, v, b1w, b2, stepw, eps, one):
    for r in range(rows.shape[0]):
        adam(p[rows[r]], g[r], m[rows[r]], v[rows[r]], b1w, b2, stepw, eps, one)

@jit
def copy_rows(dst, src, rows):
    for r in range(rows.shape[0]):             # in place, no gathered copy in between
        dst[rows[r]] = src[rows[r]]


class Numba:
    """numba's kernels (an agent's `kernels`, the fast extra): the passes above, with NumPy's bits."""

    name = "numba"
    bias_relu, relu = staticmethod(bias_relu), staticmethod(relu)
    adam, adam_rows, bootstrap = staticmethod(adam), staticmethod(adam_rows), staticmethod(bootstrap)
    td, distinct, copy_rows = staticmethod(td), staticmethod(distinct), staticmethod(copy_rows)

    @staticmethod
    def relu_grad_sum(d, mask, out) -> None:
        """The kernel's, rows in order; for one column, which NumPy sums as contiguous memory (pairwise),
        NumPy's own pass."""
        (fused.relu_grad_sum if d.shape[1] == 1 else relu_grad_sum)(d, mask, out)

    @staticmethod
    def mask_dtype(dtype) -> np.dtype:
        """ReLU' kept as bytes: a quarter of the memory traffic of 0/1 floats."""
        return np.dtype(np.bool_)

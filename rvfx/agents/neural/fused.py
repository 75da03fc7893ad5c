"""Fused element-wise passes of the SGD step (Algorithm 8): each one loop over memory instead of a few
NumPy passes, compiled by numba when it is installed, else the NumPy passes themselves. They are the
hidden layers' bias and ReLU and its derivative, Adam, the TD errors and their value gradient (eq. 5.7),
the distinct states of a minibatch of discrete states, and the target's copy of W_1's changed rows.

Both do the same floating-point operations in the same order per element, so they give the same bits
(tests/test_fused.py): no fastmath, no FMA contraction (numba's default), float64 where NumPy uses it.
The one reduction, the bias gradient's sum over the batch, adds rows in order 0..B-1, which is the
order of NumPy's `add.reduce` along a non-contiguous axis (no pairwise summation there).

numba is imported and each kernel compiled on first use, never read from an on-disk cache (the
project runs nothing read from disk unverified). RVFX_KERNELS=numpy forces the NumPy passes.
"""
from __future__ import annotations

import math
import os
import threading

import numpy as np

from rvfx.agents.neural import td as _td

WIDE = np.float64


# --- the NumPy passes (the reference, and the fallback without numba) ---------------------------

_local = threading.local()          # the NumPy passes' scratch: per thread, one grow-only buffer per dtype


def _buffer(shape: tuple, dtype) -> np.ndarray:
    scratch = _local.__dict__.setdefault("scratch", {})
    size = math.prod(shape)
    flat = scratch.get(np.dtype(dtype))
    if flat is None or flat.size < size:
        flat = scratch[np.dtype(dtype)] = np.empty(max(size, 1), dtype)
    return flat[:size].reshape(shape)


def _bias_relu_numpy(z: np.ndarray, b: np.ndarray, mask: np.ndarray) -> None:
    """z <- relu(z + b) and mask <- relu'(z + b) as 0/1 floats; z (B, n), b (n,), all in place."""
    z += b
    positive = _buffer(z.shape, np.bool_)
    np.greater(z, 0.0, out=positive)
    np.copyto(mask, positive)                      # bool then a copy beats a casting comparison
    z *= mask


def _relu_numpy(z: np.ndarray, b: np.ndarray) -> None:
    """z <- relu(z + b) in place, no ReLU' kept (passes with no backward after them)."""
    _bias_relu_numpy(z, b, _buffer(z.shape, z.dtype))


def _relu_grad_sum_numpy(d: np.ndarray, mask: np.ndarray, out: np.ndarray) -> None:
    """d <- d * mask in place and out <- sum over rows of d (the next bias gradient); d (B, n), out (n,)."""
    d *= mask
    np.add.reduce(d, axis=0, out=out)


def _adam_numpy(p, g, m, v, b1w, b2, stepw, eps, one) -> None:
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


def _bootstrap_numpy(q_next, online_next, v) -> None:
    """v (K, U') <- the bootstrap values of the target values q_next (K, U', A) (`td.bootstrap_values`)."""
    v[...] = _td.bootstrap_values(q_next, online_next)


def _td_numpy(q, v, action, reward, discount, weight, rows, next_rows, scale, delta, g, dout) -> None:
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


def _distinct_numpy(codes):
    """np.unique(codes, return_index=True, return_inverse=True) of 1-d integer codes: the sorted distinct
    codes, each one's first sample, and each sample's rank among them (repeated states' shared passes)."""
    return np.unique(codes, return_index=True, return_inverse=True)


def _copy_rows_numpy(dst, src, rows) -> None:
    """dst[rows] <- src[rows] (the target network's changed rows of W_1)."""
    dst[rows] = src[rows]


def _adam_rows_numpy(p, rows, g, m, v, b1w, b2, stepw, eps, one) -> None:
    """`_adam_numpy` on the rows `rows` (distinct) of p, m, v (n, width); g is (len(rows), width)."""
    pr, mr, vr = p[rows], m[rows], v[rows]
    _adam_numpy(pr, g, mr, vr, b1w, b2, stepw, eps, one)
    p[rows], m[rows], v[rows] = pr, mr, vr


# --- the numba kernels ---------------------------------------------------------------------------

def _compile() -> dict:
    """The kernels, compiled lazily per signature (cache=False: nothing is loaded from disk).

    error_model="numpy" lets a quotient by zero be inf or nan as in NumPy (Python's model would test
    and raise, which also keeps the loops from vectorising)."""
    import numba
    from llvmlite import ir
    from numba.extending import intrinsic

    jit = numba.njit(cache=False, nogil=True, error_model="numpy", fastmath=False)

    @intrinsic
    def bits(typingctx, x):
        """A float's bits as the signed integer of its width (a bitcast: no arithmetic, no slow path)."""
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.IntType(x.bitwidth))
        return (numba.types.int32 if x.bitwidth == 32 else numba.types.int64)(x), codegen

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
            out[j] = x                             # the first row itself (not 0 + it: -0.0 stays)
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
        # step is below half an ulp of p (|q| <= tiny / eps: any |p| > `small`); the rare rest are
        # redone after, from their unchanged p, with the quotient in float64 (the opaque `one` keeps
        # LLVM from narrowing it back to a float32 division). The step's product q * step is made in p's
        # dtype too: a product of two float32s is exact in float64, so float64's product rounded once is
        # float32's own (a third less time than the conversions it replaces). Both tests compare |x|'s
        # bits (abs clears the sign bit, no arithmetic): they order as |x| does, a nan's above every bound.
        dt, zero = p.dtype.type, p.dtype.type(0.0)
        step = dt(stepw)
        tiny = WIDE(np.finfo(m.dtype).tiny)
        small = tiny / WIDE(eps) * stepw * (WIDE(8.0) / WIDE(np.finfo(p.dtype).eps))   # x 2^26 in float32
        below = dt(small)
        if WIDE(below) > small:
            below = np.nextafter(below, zero)               # |p| <= small, as the greatest such p's bits
        normal, small_bits = bits(m.dtype.type(tiny)), bits(below)
        late = False
        for i in range(p.shape[0]):
            gi = g[i]
            mi = m.dtype.type(WIDE(m[i]) * b1w) + gi
            vi = v[i] * b2 + gi * gi
            m[i] = mi
            v[i] = vi
            pi, a = p[i], bits(abs(mi))
            subnormal = (a > 0) & (a < normal)
            late |= subnormal & (bits(abs(pi)) <= small_bits)
            q = (zero if subnormal else mi) / (np.sqrt(vi) + eps)
            p[i] = pi - (zero if subnormal else q * step)
        if late:
            for i in range(p.shape[0]):
                a = bits(abs(m[i]))
                if a > 0 and a < normal and bits(abs(p[i])) <= small_bits:     # the loop's own tests
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

    return {"bias_relu": bias_relu, "relu": relu, "relu_grad_sum": relu_grad_sum, "adam": adam,
            "adam_rows": adam_rows, "bootstrap": bootstrap, "td": td, "distinct": distinct, "copy_rows": copy_rows}


NUMPY = {"bias_relu": _bias_relu_numpy, "relu": _relu_numpy, "relu_grad_sum": _relu_grad_sum_numpy,
         "adam": _adam_numpy, "adam_rows": _adam_rows_numpy, "bootstrap": _bootstrap_numpy, "td": _td_numpy,
         "distinct": _distinct_numpy, "copy_rows": _copy_rows_numpy}


def available() -> bool:
    """numba can be imported (the compiled kernels are possible)."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def requested_problem() -> str | None:
    """Why RVFX_KERNELS names no kernels this environment has, or None (unset: the default): checked
    before a sweep starts, so that a typo fails once and not in every run."""
    wanted = os.environ.get("RVFX_KERNELS")
    if wanted and wanted not in ("numba", "numpy"):
        return f"RVFX_KERNELS={wanted!r}: expected numba or numpy (unset: numba where the fast extra is installed)"
    if wanted == "numba" and not available():
        return "RVFX_KERNELS='numba': numba is not installed (pip install 'rvfx[fast]'), or unset it for NumPy's passes"
    return None


def use(backend: str) -> None:
    """Bind the module's kernels to "numba" or "numpy" (tests compare the two; RVFX_KERNELS picks one)."""
    global _compiled
    if backend == "numba" and _compiled is None:
        _compiled = _compile()
    kernels = _compiled if backend == "numba" else NUMPY if backend == "numpy" else None
    if kernels is None:
        raise ValueError(f"unknown kernels {backend!r} (numba, numpy)")
    globals().update(kernels)
    globals()["backend"] = backend


def _bind() -> None:
    use(os.environ.get("RVFX_KERNELS") or ("numba" if available() else "numpy"))


def current() -> str:
    """The kernels in use, "numba" or "numpy" (bound here on first use)."""
    if backend is None:
        _bind()
    return backend


def mask_dtype(dtype) -> np.dtype:
    """How `bias_relu` keeps ReLU': bytes for the numba kernels (a quarter of the memory traffic), 0/1
    floats of `dtype` for the NumPy passes (whose products by them are plain float multiplies)."""
    return np.dtype(np.bool_) if current() == "numba" else np.dtype(dtype)


def _bind_on_first_use(name: str):
    def first_call(*args):
        _bind()
        return globals()[name](*args)
    first_call.__name__ = name
    return first_call


backend = None                      # "numba" or "numpy" once bound
_compiled = None                    # the numba kernels once made
bias_relu = _bind_on_first_use("bias_relu")
relu = _bind_on_first_use("relu")
relu_grad_sum = _bind_on_first_use("relu_grad_sum")
adam = _bind_on_first_use("adam")
adam_rows = _bind_on_first_use("adam_rows")
bootstrap = _bind_on_first_use("bootstrap")
td = _bind_on_first_use("td")
distinct = _bind_on_first_use("distinct")
copy_rows = _bind_on_first_use("copy_rows")

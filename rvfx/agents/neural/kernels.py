"""The numba kernels (the `fast` extra), with `fused`'s bits: its passes compiled, each one loop over
memory; `layers`' forward and backward compiled over them; and the SGD step on one-hot inputs compiled
whole (`keyed_step`, see compiled_step). `Numba` is the kernels object an agent holds.

Each pass is registered as numba's implementation of its NumPy original (numba.extending.overload),
so that `layers`, written once over NumPy's passes, compiles to these. The members' products call the
BLAS `sgemm` of SciPy's documented Cython interface (scipy.linalg.cython_blas), by a symbol name bound
to its address in each process (no address is kept in numba's cache); they give np.matmul's bits where
SciPy's BLAS rounds as NumPy's does, which `unfaithful` checks before they are used. Everything is
compiled on first use into numba_cache's private folder, once per machine and version of these sources.

error_model="numpy" lets a quotient by zero be inf or nan as in NumPy (Python's model would test and
raise, which also keeps the loops from vectorising).
"""
from __future__ import annotations

from pathlib import Path

import llvmlite.binding
import numba
import numpy as np
from numba.extending import get_cython_function_address, overload

from rvfx.agents.neural import fused, layers, numba_cache

FOLDER = numba_cache.folder(sources=[Path(__file__), Path(layers.__file__)])
if FOLDER is not None:
    numba.config.CACHE_DIR = str(FOLDER)     # read as each kernel below is made

WIDE = np.float64
OPTIONS = {"nogil": True, "error_model": "numpy", "fastmath": False}
jit = numba.njit(cache=FOLDER is not None, **OPTIONS)

SGEMM = "rvfx_scipy_sgemm"
llvmlite.binding.add_symbol(SGEMM, get_cython_function_address("scipy.linalg.cython_blas", "sgemm"))
sgemm = numba.types.ExternalFunction(SGEMM, numba.types.void(*[numba.types.intp] * 13))   # Fortran: by address
NO_TRANS, TRANS = ord("N"), ord("T")


def compiled(reference):
    """Register the decorated function as numba's implementation of `reference` (one of `fused`'s passes),
    where compiled code calls it, and return it compiled for Python's calls."""
    def register(impl):
        overload(reference, jit_options=OPTIONS, strict=False)(lambda *args: impl)
        return jit(impl)
    return register


# --- fused's passes --------------------------------------------------------------------------------

@compiled(fused.bias_relu)
def bias_relu(z, b, mask):
    zero, unit = z.dtype.type(0.0), z.dtype.type(1.0)
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            x = z[i, j] + b[j]
            r = unit if x > zero else zero
            z[i, j] = x * r                    # x * 0 as NumPy: -0.0 below zero, nan stays nan
            mask[i, j] = r                     # a bool mask (1 byte) stores r != 0


@compiled(fused.relu)
def relu(z, b):
    zero, unit = z.dtype.type(0.0), z.dtype.type(1.0)
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            x = z[i, j] + b[j]
            z[i, j] = x * (unit if x > zero else zero)


@compiled(fused.relu_grad_sum)
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
def gemm(a, b, c, ints, scalars):
    """c <- c + a @ b (float32 matrices, each with a unit stride: row- or column-major) as NumPy's matmul
    has OpenBLAS compute a @ b: row-major c = a b is column-major c^T = b^T a^T, the call NumPy's row-major
    one becomes inside OpenBLAS. `ints` (8 int32) and `scalars` (2 float32) hold the call's arguments."""
    size = a.itemsize
    ints[0] = NO_TRANS if b.strides[1] == size else TRANS
    ints[5] = (b.strides[0] if b.strides[1] == size else b.strides[1]) // size
    ints[1] = NO_TRANS if a.strides[1] == size else TRANS
    ints[6] = (a.strides[0] if a.strides[1] == size else a.strides[1]) // size
    ints[2], ints[3], ints[4], ints[7] = c.shape[1], c.shape[0], a.shape[1], c.strides[0] // size
    scalars[0] = scalars[1] = 1.0
    sgemm(ints[0:].ctypes.data, ints[1:].ctypes.data, ints[2:].ctypes.data, ints[3:].ctypes.data,
          ints[4:].ctypes.data, scalars[0:].ctypes.data, b.ctypes.data, ints[5:].ctypes.data, a.ctypes.data,
          ints[6:].ctypes.data, scalars[1:].ctypes.data, c.ctypes.data, ints[7:].ctypes.data)


@compiled(fused.member_products)
def member_products(a, b, out):
    # Added to `out` zeroed in one pass: where out[k] is a strided block of an activation, NumPy's beta 0
    # has OpenBLAS zero each of its rows with a call of its own, then add the product (the same bits).
    ints, scalars = np.empty(8, np.int32), np.empty(2, np.float32)
    for i in range(out.shape[1]):
        for k in range(out.shape[0]):
            for j in range(out.shape[2]):
                out[k, i, j] = 0.0
    for k in range(out.shape[0]):
        gemm(a[k], b[k], out[k], ints, scalars)


@compiled(fused.batch_sum)
def batch_sum(d, out):
    # d a (K, B, W) view of (B, K, W) memory, as the compiled step hands it: NumPy's reduction of its rows
    zero = d.dtype.type(0.0)
    for k in range(d.shape[0]):                # in sample order, from 0.0 as NumPy's sum
        for w in range(d.shape[2]):
            out[k, w] = zero + d[k, 0, w]
    for b in range(1, d.shape[1]):
        for k in range(d.shape[0]):
            for w in range(d.shape[2]):
                out[k, w] += d[k, b, w]


@compiled(fused.adam)
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


@compiled(fused.adam_rows)
def adam_rows(p, rows, g, m, v, b1w, b2, stepw, eps, one):
    for r in range(rows.shape[0]):
        adam(p[rows[r]], g[r], m[rows[r]], v[rows[r]], b1w, b2, stepw, eps, one)


# bootstrap and td loop over samples, then members: the order of the (U, K, A) memory under the
# (K, U, A) views they are handed (each element is computed alone, so the order changes no bit)
@compiled(fused.bootstrap)
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


@compiled(fused.td)
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


@compiled(fused.distinct)
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


@compiled(fused.copy_rows)
def copy_rows(dst, src, rows):
    for r in range(rows.shape[0]):             # in place, no gathered copy in between
        dst[rows[r]] = src[rows[r]]


layer_forward = jit(layers.forward)
layer_backward = jit(layers.backward)


# --- the SGD step on one-hot inputs, compiled whole (compiled_step) --------------------------------

@jit
def _param(flat, starts, r, shape):
    """Parameter r (W_1, b_1, W_2, ...) of the members, laid out as `PriorEnsemble` packs them."""
    return flat[starts[r]:starts[r + 1]].reshape(shape)


@jit
def _activation(z, sizes, K, rows, l):
    """Layer l's (rows, K, sizes[l + 1]) activation in the scratch `z`, after the layers before it."""
    start = rows * K * (sizes[1:l + 1].sum())
    return z[start:start + rows * K * sizes[l + 1]].reshape(rows, K, sizes[l + 1])


@jit
def values(w1, flat, net, keys, prior, work, keep, out):
    """out (rows, K, A) <- Q of the one-hot inputs `keys` (`PriorEnsemble.value`): W_1's rows, the hidden
    layers (`layers.forward`, their activations and ReLU' kept in `work` when `keep`), the output's bias,
    plus the prior table's rows (none where it is empty)."""
    sizes, U, K = net.sizes, keys.shape[0], out.shape[1]
    L = sizes.shape[0] - 1
    z = _activation(work.z, sizes, K, U, 0)
    first = z.reshape(U, K * sizes[1])
    for i in range(U):
        first[i] = w1[keys[i]]
    for l in range(1, L):
        n = sizes[l]
        mask = _activation(work.masks, sizes, K, U if keep else 0, l - 1)
        nxt = _activation(work.z, sizes, K, U, l)
        layer_forward(z, _param(flat, net.starts, 2 * l - 1, (K, n)), mask,
                       _param(flat, net.starts, 2 * l, (K, n, sizes[l + 1])), nxt)
        z = nxt
    bias = _param(flat, net.starts, 2 * L - 1, (K, sizes[L]))
    for u in range(U):
        for k in range(K):
            for a in range(sizes[L]):
                out[u, k, a] = z[u, k, a] + bias[k, a]
                if prior.shape[0]:
                    out[u, k, a] += prior[keys[u], k, a]


@jit
def _gather(idx, memory, work):
    """`EnsembleBuffer.sample`'s fields of the transitions idx: actions, rewards (plus each member's
    noise), discounts and bootstrap bits."""
    for i in range(idx.shape[0]):
        j = idx[i]
        work.act[i] = memory.action[j]
        work.disc[i] = memory.discount[j]
        for r in range(work.rew.shape[0]):
            work.rew[r, i] = memory.reward[j] + memory.noise[j, r] if memory.noise.shape[0] else memory.reward[j]
        for k in range(work.weight.shape[1] if work.weight.shape[0] else 0):
            work.weight[i, k] = memory.mask[j, k]


@jit
def keyed_step(idx, memory, net, caches, adam_state, work):
    """`td_step` and Adam's step on the transitions idx for one-hot inputs (`compiled_step`); False, with
    nothing changed, where a pass would have a single row (a single distinct or fresh state)."""
    _gather(idx, memory, work)
    B, K, sizes = idx.shape[0], work.delta.shape[0], net.sizes
    L, A = sizes.shape[0] - 1, sizes[-1]
    state, _, index = distinct(memory.code[idx])
    nxt, _, next_index = distinct(memory.next_code[idx])
    fresh = nxt[~caches.valid[nxt]]
    if state.shape[0] < 2 or fresh.shape[0] == 1:
        return False
    U, Un, F = state.shape[0], nxt.shape[0], fresh.shape[0]
    if F:                                       # target values of states not seen since the target's copy
        values(net.w1_target, net.target, net, fresh, caches.prior, work, False, work.q[:F])
        for i in range(F):
            caches.values[fresh[i]] = work.q[i]
            caches.valid[fresh[i]] = True
    for i in range(Un):
        work.q_next[i] = caches.values[nxt[i]]
    bootstrap(work.q_next[:Un].transpose(1, 0, 2), None, work.v_next[:, :Un])
    q = work.q[:U]
    values(net.w1, net.flat, net, state, caches.prior, work, True, q)
    scale = np.float32(1.0 / B)
    td(q.transpose(1, 0, 2), work.v_next[:, :Un], work.act, work.rew, work.disc,
       work.weight.T if work.weight.shape[0] else None, index, next_index, scale, work.delta, work.g, None)
    for k in range(K):                          # `ensemble.value_gradient`: g * scale, one product
        for b in range(B):
            work.scaled[k, b] = work.g[k, b] * scale
    hot = work.onehot[:B * U * A].reshape(B, U * A)
    hot[:] = 0.0
    for b in range(B):
        hot[b, index[b] * A + work.act[b]] = 1.0
    dsum = work.dsum[:U * A * K].reshape(U * A, K)
    dsum[:] = 0.0
    gemm(hot.T, work.scaled.T, dsum, np.empty(8, np.int32), np.empty(2, np.float32))
    dout = work.dout[:U * K * A].reshape(U, K, A)
    for u in range(U):
        for k in range(K):
            for a in range(A):
                dout[u, k, a] = dsum[u * A + a, k]
    d = dout.transpose(1, 0, 2)                 # `EnsembleMLP.backward`
    batch_sum(d, _param(net.grad, net.starts, 2 * L - 1, (K, A)))
    for l in range(L - 1, 0, -1):
        n = sizes[l]
        d = layer_backward(_activation(work.z, sizes, K, U, l - 1), _activation(work.masks, sizes, K, U, l - 1),
                           _param(net.flat, net.starts, 2 * l, (K, n, sizes[l + 1])), d,
                           _param(net.grad, net.starts, 2 * l, (K, n, sizes[l + 1])),
                           _param(net.grad, net.starts, 2 * l - 1, (K, n)))
    for i in range(U):
        caches.changed[state[i]] = True
    b1w, b2, stepw, eps, one = adam_state.constants       # `Adam.step`: W_1's rows of the batch, then the rest
    adam_rows(net.w1, state, _activation(work.z, sizes, K, U, 0).reshape(U, K * sizes[1]), adam_state.m1,
              adam_state.v1, b1w, b2, stepw, eps, one)
    adam(net.flat, net.grad, adam_state.m, adam_state.v, b1w, b2, stepw, eps, one)
    return True


# --- the kernels object ----------------------------------------------------------------------------

def _by_blas(x, out) -> bool:
    """A layer's products go through BLAS's gemm in NumPy too: float32, no dimension of 1 (where NumPy's
    matmul calls gemv, a dot or a loop of its own) among the batch and the layer's widths."""
    return x.dtype == np.float32 and min(x.shape[0], x.shape[2], out.shape[2]) > 1


class Numba:
    """numba's kernels (an agent's `kernels`, the fast extra): the passes compiled, and with `whole_step`
    the SGD step on one-hot inputs compiled whole where it applies (compiled_step). A layer whose
    products NumPy would not make with gemm runs `layers` over NumPy's passes."""

    name = "numba"
    adam, adam_rows, bootstrap = staticmethod(adam), staticmethod(adam_rows), staticmethod(bootstrap)
    td, distinct, copy_rows, keyed_step = staticmethod(td), staticmethod(distinct), staticmethod(copy_rows), \
        staticmethod(keyed_step)

    def __init__(self, whole_step: bool = True):
        self.whole_step = whole_step

    @staticmethod
    def mask_dtype(dtype) -> np.dtype:
        """ReLU' kept as bytes: a quarter of the memory traffic of 0/1 floats."""
        return np.dtype(np.bool_)

    @staticmethod
    def hidden_forward(z, bias, mask, weight, out) -> None:
        (layer_forward if _by_blas(z, out) else layers.forward)(z, bias, mask, weight, out)

    @staticmethod
    def hidden_backward(inp, mask, weight, d, weight_grad, bias_grad):
        return (layer_backward if _by_blas(inp, d) else layers.backward)(inp, mask, weight, d, weight_grad, bias_grad)


def unfaithful() -> str | None:
    """Why the compiled products would not give np.matmul's bits here (SciPy's BLAS rounds otherwise than
    NumPy's), or None: each kind of the step's products, on random operands with a row and a column of
    signed zeros, over batch and layer widths from 2 to 128."""
    rng = np.random.default_rng(0)
    for m, n, p in ((2, 2, 2), (3, 50, 2), (17, 50, 50), (85, 50, 3), (128, 16, 64), (128, 50, 50), (40, 128, 20)):
        x, w, d = (rng.standard_normal(s).astype(np.float32) for s in ((m, 3, n), (3, n, p), (m, 3, p)))
        x[0], w[:, :, 0], d[:, :, 0] = -0.0, -0.0, -0.0
        for a, b, out in ((x.transpose(1, 0, 2), w, np.empty((m, 3, p), np.float32).transpose(1, 0, 2)),
                          (x.transpose(1, 2, 0), d.transpose(1, 0, 2), np.empty((3, n, p), np.float32)),
                          (d.transpose(1, 0, 2), w.transpose(0, 2, 1), np.empty((m, 3, n), np.float32).transpose(
                              1, 0, 2))):
            member_products(a, b, out)
            if out.tobytes() != np.matmul(a, b).tobytes():
                return f"SciPy's BLAS gives other bits than NumPy's matmul on a {a.shape} @ {b.shape} product"
    return None

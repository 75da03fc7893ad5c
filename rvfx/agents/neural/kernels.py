"""The numba kernels of the neural step (the `fast` extra): `fused`'s element-wise passes and
`compiled_step`'s whole SGD step, imported only where they are used (fused.use("numba")). One module,
so that numba's on-disk cache, which it checks against this file's size and time, is never stale for
a kernel that another calls: they are compiled once per machine into numba_cache.folder() (a private
folder, checked), or in each process where there is none.

error_model="numpy" lets a quotient by zero be inf or nan as in NumPy (Python's model would test and
raise, which also keeps the loops from vectorising). The step calls NumPy's OpenBLAS `cblas_sgemm`
(64-bit integers) by the name SGEMM, which compiled_step binds to its address in each process, so no
address is kept in the cache.
"""
from __future__ import annotations

import os

import numpy as np

from rvfx.agents.neural import numba_cache

FOLDER = numba_cache.folder()
if FOLDER is not None:                       # read by numba as it loads, hence before it
    os.environ["NUMBA_CACHE_DIR"] = str(FOLDER)

import numba  # noqa: E402
from llvmlite import ir  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

WIDE = np.float64
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112      # CBLAS_ORDER, CBLAS_TRANSPOSE
ONE, ZERO = np.float32(1.0), np.float32(0.0)
SGEMM = "rvfx_numpy_cblas_sgemm64"
_t = numba.types
sgemm = _t.ExternalFunction(SGEMM, _t.void(_t.int32, _t.int32, _t.int32, _t.int64, _t.int64, _t.int64, _t.float32,
                                           _t.int64, _t.int64, _t.int64, _t.int64, _t.float32, _t.int64, _t.int64))
jit = numba.njit(cache=FOLDER is not None and numba.config.CACHE_DIR == str(FOLDER), nogil=True,
                 error_model="numpy", fastmath=False)


# --- fused's passes --------------------------------------------------------------------------------

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


# --- compiled_step's step --------------------------------------------------------------------------

@jit
def gemm(trans_a, trans_b, m, p, n, a, lda, b, ldb, c, ldc, beta=ZERO):
    """Row-major c (m x p) = op(a) op(b) (+ c with beta 1) on addresses, as NumPy's matmul calls it."""
    sgemm(ROW_MAJOR, TRANS if trans_a else NO_TRANS, TRANS if trans_b else NO_TRANS, m, p, n, ONE, a, lda,
          b, ldb, beta, c, ldc)

@jit
def forward(flat, off, sizes, x, w1, keys, z, zoff, masks, keep):
    """`EnsembleMLP.forward` of the parameters in `flat` (the r-th parameter's member k at off[r, k]) on
    the rows of x (B, in) (dense: one product) or on the one-hot inputs `keys` (W_1's rows w1[keys], as
    `np.take`): layer l's (rows, K, sizes[l+1]) activation at z[zoff[l]:], its ReLU' (keep) at masks[zoff[l]:].
    Returns the number of rows."""
    B = keys.shape[0] if w1.shape[0] else x.shape[0]
    L, K = sizes.shape[0] - 1, off.shape[1]
    w = flat.ctypes.data
    for l in range(L):
        n_in, n_out = sizes[l], sizes[l + 1]
        here = z.ctypes.data + 4 * zoff[l]
        act = z[zoff[l]:zoff[l] + B * K * n_out].reshape(B, K * n_out)
        if l == 0 and w1.shape[0]:
            for i in range(B):
                act[i] = w1[keys[i]]
        elif l == 0:   # (B, in) @ (in, K * out): one product
            gemm(False, False, B, K * n_out, n_in, x.ctypes.data, n_in, w + 4 * off[0, 0], K * n_out, here,
                 K * n_out)
        else:          # per member: (B, in) rows K * in apart @ (in, out)
            before = z.ctypes.data + 4 * zoff[l - 1]
            act[:] = ZERO
            for k in range(K):
                gemm(False, False, B, n_out, n_in, before + 4 * k * n_in, K * n_in, w + 4 * off[2 * l, k],
                     n_out, here + 4 * k * n_out, K * n_out, ONE)
        bias = flat[off[2 * l + 1, 0]:off[2 * l + 1, 0] + K * n_out]
        if l == L - 1:
            break                       # the output's bias: `values`
        if keep:
            bias_relu(act, bias, masks[zoff[l]:zoff[l] + B * K * n_out].reshape(B, K * n_out))
        else:
            relu(act, bias)
    return B

@jit
def values(flat, off, sizes, x, w1, keys, z, zoff, masks, keep, prior, out):
    """out <- Q = f(x) + prior (`PriorEnsemble.value`): out and prior (rows, K, A) in memory, the prior
    empty for none."""
    B = forward(flat, off, sizes, x, w1, keys, z, zoff, masks, keep)
    L, K = sizes.shape[0] - 1, off.shape[1]
    A = sizes[L]
    f = z[zoff[L - 1]:zoff[L - 1] + B * K * A].reshape(B, K, A)
    bias = flat[off[2 * L - 1, 0]:off[2 * L - 1, 0] + K * A].reshape(K, A)
    if prior.shape[0]:
        for b in range(B):
            for k in range(K):
                for a in range(A):
                    out[b, k, a] = (f[b, k, a] + bias[k, a]) + prior[b, k, a]
    else:
        for b in range(B):
            for k in range(K):
                for a in range(A):
                    out[b, k, a] = f[b, k, a] + bias[k, a]

@jit
def gather(idx, action, reward, noise, discount, mask, act, rew, disc, weight):
    """`EnsembleBuffer.sample`'s fields of the transitions idx: the minibatch's actions, rewards (plus each
    member's noise), discounts and bootstrap bits."""
    for i in range(idx.shape[0]):
        j = idx[i]
        act[i] = action[j]
        disc[i] = discount[j]
        for r in range(rew.shape[0]):
            rew[r, i] = reward[j] + noise[j, r] if noise.shape[0] else reward[j]
        for k in range(weight.shape[1] if weight.shape[0] else 0):
            weight[i, k] = mask[j, k]

@jit
def step(idx, code, next_code, action, reward, noise, discount, mask, prior, next_prior,
         flat, target, grad, off, sizes, double, x, xn, act, rew, disc, weight, pr, npr,
         z, zoff, masks, q_next, q_online, v_next, q, delta, g, dout, adam_on, m, v, constants):
    """Gather the minibatch idx, then `td_step`'s passes: the gradient into `grad`, then Adam's step
    (adam_on)."""
    gather(idx, action, reward, noise, discount, mask, act, rew, disc, weight)
    B = idx.shape[0]
    rows = pr.reshape(pr.shape[0], -1)
    next_rows = npr.reshape(npr.shape[0], -1)
    for i in range(B):                          # element loops: numba's row slices cost more here
        j = idx[i]
        for c in range(x.shape[1]):
            x[i, c] = code[j, c]
            xn[i, c] = next_code[j, c]
        for c in range(rows.shape[1] if rows.shape[0] else 0):
            rows[i, c] = prior[j, c]
            next_rows[i, c] = next_prior[j, c]
    w1, keys = np.zeros((0, 0), np.float32), np.zeros(0, np.int32)       # dense: no row gather
    if double:
        values(flat, off, sizes, xn, w1, keys, z, zoff, masks, False, npr, q_online)
    values(target, off, sizes, xn, w1, keys, z, zoff, masks, False, npr, q_next)
    bootstrap(q_next.transpose(1, 0, 2), q_online.transpose(1, 0, 2) if double else None, v_next)
    values(flat, off, sizes, x, w1, keys, z, zoff, masks, True, pr, q)
    d = dout.transpose(1, 0, 2)
    td(q.transpose(1, 0, 2), v_next, act, rew, disc, weight.T if weight.shape[0] else None, None, None,
       np.float32(1.0 / B), delta, g, d)
    backward(flat, grad, off, sizes, x, z, zoff, masks, dout)
    if adam_on:
        b1w, b2, stepw, eps, unit = constants
        adam(flat, grad, m, v, b1w, b2, stepw, eps, unit)

@jit
def backward(flat, grad, off, sizes, x, z, zoff, masks, dout):
    """`EnsembleMLP.backward` of the online pass just made, its gradient into `grad`: the output bias's
    batch sum in sample order, then per layer the weight gradient, the input gradient over the layer's
    input activation, ReLU' and its bias's sum."""
    B, K, A = dout.shape
    L, gw, pw = sizes.shape[0] - 1, grad.ctypes.data, flat.ctypes.data
    rows = dout.reshape(B, K * A)
    gb = grad[off[2 * L - 1, 0]:off[2 * L - 1, 0] + K * A]
    gb[:] = rows[0]
    for b in range(1, B):
        for j in range(K * A):
            gb[j] += rows[b, j]
    d, n_out = dout.ctypes.data, A
    for l in range(L - 1, 0, -1):
        n_in = sizes[l]
        inp = z.ctypes.data + 4 * zoff[l - 1]
        act = z[zoff[l - 1]:zoff[l - 1] + B * K * n_in].reshape(B, K * n_in)
        for k in range(K):
            gemm(True, False, n_in, n_out, B, inp + 4 * k * n_in, K * n_in, d + 4 * k * n_out, K * n_out,
                 gw + 4 * off[2 * l, k], n_out)
        act[:] = ZERO                   # the input gradients are added into it (`forward`'s products)
        for k in range(K):
            gemm(False, True, B, n_in, n_out, d + 4 * k * n_out, K * n_out, pw + 4 * off[2 * l, k], n_out,
                 inp + 4 * k * n_in, K * n_in, ONE)
        relu_grad_sum(act, masks[zoff[l - 1]:zoff[l - 1] + B * K * n_in].reshape(B, K * n_in),
                      grad[off[2 * l - 1, 0]:off[2 * l - 1, 0] + K * n_in])
        d, n_out = inp, n_in
    if x.shape[0]:                              # dense: W_1's gradient, one product
        gemm(True, False, sizes[0], K * n_out, B, x.ctypes.data, sizes[0], d, K * n_out, gw + 4 * off[0, 0],
             K * n_out)

@jit
def keyed_step(idx, code, next_code, action, reward, noise, discount, mask, flat, target, grad,
               w1, w1_target, off, sizes, table, cache, valid, dirty, act, rew, disc, weight, pr, z, zoff,
               masks, q_next, v_next, q, delta, g, scaled, onehot, dsum, dout, m1, v1, m, v, constants):
    """The same for one-hot inputs (deep sea's pixels; `EnsembleRLSVI._td_step` with `td_step`): repeated
    states share their passes, target values are cached per state until the target's next copy, prior
    values read from `table`, the first layer's gradient is its batch's rows, W_1's Adam step on those
    rows only. False, with nothing changed, where a pass would have one row (a single distinct or fresh
    state: NumPy's matmul then leaves gemm); the caller runs `td_step` on idx."""
    gather(idx, action, reward, noise, discount, mask, act, rew, disc, weight)
    B, K, L = idx.shape[0], off.shape[1], sizes.shape[0] - 1
    A = sizes[L]
    states, nexts = code[idx], next_code[idx]
    state, _, index = distinct(states)
    nxt, _, next_index = distinct(nexts)
    fresh = nxt[~valid[nxt]]
    if state.shape[0] < 2 or fresh.shape[0] == 1:
        return False
    none = np.zeros((0, 0), np.float32)
    if fresh.shape[0]:
        F = fresh.shape[0]
        if table.shape[0]:
            for i in range(F):
                pr[i] = table[fresh[i]]
        values(target, off, sizes, none, w1_target, fresh, z, zoff, masks, False, pr[:F] if table.shape[0]
               else pr[:0], q[:F])
        for i in range(F):
            cache[fresh[i]] = q[i]
            valid[fresh[i]] = True
    U, Un = state.shape[0], nxt.shape[0]
    for i in range(Un):
        q_next[i] = cache[nxt[i]]
    bootstrap(q_next[:Un].transpose(1, 0, 2), None, v_next[:, :Un])
    if table.shape[0]:
        for i in range(U):
            pr[i] = table[state[i]]
    values(flat, off, sizes, none, w1, state, z, zoff, masks, True, pr[:U] if table.shape[0] else pr[:0], q[:U])
    scale = np.float32(1.0 / B)
    td(q[:U].transpose(1, 0, 2), v_next[:, :Un], act, rew, disc, weight.T if weight.shape[0] else None, index,
       next_index, scale, delta, g, None)
    for k in range(K):                          # `td_step`: g * scale, then `value_gradient`'s product
        for b in range(B):
            scaled[k, b] = g[k, b] * scale
    hot = onehot[:B * U * A].reshape(B, U * A)
    hot[:] = 0.0
    for b in range(B):
        hot[b, index[b] * A + act[b]] = 1.0
    gemm(True, True, U * A, K, B, hot.ctypes.data, U * A, scaled.ctypes.data, B, dsum.ctypes.data, K)
    d = dout[:U * K * A].reshape(U, K, A)
    sums = dsum[:U * A * K].reshape(U, A, K)
    for u in range(U):
        for k in range(K):
            for a in range(A):
                d[u, k, a] = sums[u, a, k]
    backward(flat, grad, off, sizes, none, z, zoff, masks, d)
    b1w, b2, stepw, eps, unit = constants       # `Adam.step`: W_1's rows of the batch, then the rest
    width = w1.shape[1]
    rows = z[zoff[0]:zoff[0] + U * width].reshape(U, width)
    for i in range(U):
        dirty[state[i]] = True
        adam(w1[state[i]], rows[i], m1[state[i]], v1[state[i]], b1w, b2, stepw, eps, unit)
    adam(flat, grad, m, v, b1w, b2, stepw, eps, unit)
    return True


FUSED = {"bias_relu": bias_relu, "relu": relu, "relu_grad_sum": relu_grad_sum, "adam": adam, "adam_rows": adam_rows,
         "bootstrap": bootstrap, "td": td, "distinct": distinct, "copy_rows": copy_rows}
STEP = {"gemm": gemm, "step": step, "keyed_step": keyed_step}

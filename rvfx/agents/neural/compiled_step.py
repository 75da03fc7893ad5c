"""The SGD step of an ensemble compiled whole, on dense inputs (cartpole's observations) and on one-hot
pixels (deep sea): minibatch draw and gather, target and online passes, TD errors, backward pass and Adam
in one numba call (Algorithm 8, lines 1-4).

The step's products are NumPy's own: its OpenBLAS's `cblas_sgemm`, called with the arguments NumPy's
matmul gives it for the same operands (row-major, the same transposes and leading dimensions), so the
step has the bits of `td_step` on the same minibatch; the element-wise work is `fused`'s kernels. What
it saves is Python's calls between the passes, each of which pays for reloading its code and data from
cache after passes over the step's activations (benchmarks/profile_neural_step.py). One difference in
the call: the hidden layers' per-member products, whose outputs are strided blocks of one activation,
are added (beta 1) to that activation zeroed in one pass, where beta 0 has OpenBLAS zero each of their
rows with its own `memset` (2,560 per layer on cartpole); OpenBLAS's beta 0 is that zeroing followed by
the same addition, so the bits are the same (checked with the products).

It is used where all of this holds, and `td_step` everywhere else: the fast extra's kernels are in use,
NumPy's OpenBLAS exports a `cblas_sgemm` that gives `np.matmul`'s bits on the step's product shapes
(checked once per shape set, on random operands), no dimension of 1 among the layers and batch (where
NumPy's matmul calls gemv, a dot or its own loop instead of gemm), and the agent has a dense float32
input with stored or no priors, or one-hot inputs with K >= 2 members, a max target and Adam. Nothing is
read from disk: numba compiles on first use.
"""
from __future__ import annotations

import ctypes
import functools
import os

import numpy as np

from rvfx.agents.neural import fused
from rvfx.agents.neural.optimisers import Adam
from rvfx.agents.neural.representations import DenseVector

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112      # CBLAS_ORDER, CBLAS_TRANSPOSE
_kernel = None                                  # the compiled step once made, False where it cannot be
_checked: dict = {}                             # product shapes -> the check's outcome
enabled = True                                  # tests and benchmarks switch it off to compare


def _numpy_sgemm():
    """NumPy's OpenBLAS `cblas_sgemm` as a ctypes function (integers 64-bit where the library's are), or None."""
    from threadpoolctl import threadpool_info
    bundled = os.path.realpath(os.path.dirname(np.__file__)) + ".libs"        # NumPy's wheels' own libraries
    for lib in threadpool_info():
        path = lib.get("filepath", "")
        if lib.get("internal_api") != "openblas" or os.path.dirname(os.path.realpath(path)) != bundled:
            continue
        handle = ctypes.CDLL(path)
        for name, integer in (("scipy_cblas_sgemm64_", ctypes.c_int64), ("cblas_sgemm64_", ctypes.c_int64),
                              ("scipy_cblas_sgemm", ctypes.c_int), ("cblas_sgemm", ctypes.c_int)):
            address = ctypes.cast(getattr(handle, name, None), ctypes.c_void_p).value
            if address:
                enum, n, f, p = ctypes.c_int, integer, ctypes.c_float, ctypes.c_int64
                return ctypes.CFUNCTYPE(None, enum, enum, enum, n, n, n, f, p, n, p, n, f, p, n)(address)
    return None


def _compile():
    """The step's kernels (numba), or False without numba or NumPy's `cblas_sgemm`."""
    if not fused.available():
        return False
    sgemm = _numpy_sgemm()
    if sgemm is None:
        return False
    import numba
    bias_relu, relu, relu_grad_sum = fused.bias_relu, fused.relu, fused.relu_grad_sum     # numba's (`applies`)
    bootstrap, td, adam, distinct = fused.bootstrap, fused.td, fused.adam, fused.distinct
    jit = numba.njit(cache=False, nogil=True, error_model="numpy", fastmath=False)
    one, zero = np.float32(1.0), np.float32(0.0)

    @jit
    def gemm(trans_a, trans_b, m, p, n, a, lda, b, ldb, c, ldc, beta=zero):
        """Row-major c (m x p) = op(a) op(b) (+ c with beta 1) on addresses, as NumPy's matmul calls it."""
        sgemm(ROW_MAJOR, TRANS if trans_a else NO_TRANS, TRANS if trans_b else NO_TRANS, m, p, n, one, a, lda,
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
                act[:] = zero
                for k in range(K):
                    gemm(False, False, B, n_out, n_in, before + 4 * k * n_in, K * n_in, w + 4 * off[2 * l, k],
                         n_out, here + 4 * k * n_out, K * n_out, one)
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
            act[:] = zero                   # the input gradients are added into it (`forward`'s products)
            for k in range(K):
                gemm(False, True, B, n_in, n_out, d + 4 * k * n_out, K * n_out, pw + 4 * off[2 * l, k], n_out,
                     inp + 4 * k * n_in, K * n_in, one)
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

    return {"gemm": gemm, "step": step, "keyed_step": keyed_step}


def _kernels():
    """The compiled step's kernels, made on first use (False where they cannot be)."""
    global _kernel
    if _kernel is None:
        _kernel = _compile()
    return _kernel


def _products_match(kernels, sizes: tuple, K: int, B: int, one_hot: bool) -> bool:
    """The compiled products give np.matmul's bits on this network's shapes, each kind of the step's calls
    (random operands with a row and a column of signed zeros, once per shapes): a check that the library
    found is the one NumPy multiplies with, and that adding a product to a zero-filled output (beta 1, as
    the hidden layers' per-member products into their strided activations) is NumPy's writing it (beta 0)."""
    key = (sizes, K, B, one_hot)
    if key not in _checked:
        rng = np.random.default_rng(0)
        ok = True
        hidden = list(zip(sizes[1:-1], sizes[2:]))
        shapes = [(B, i, o, False, False, True) for i, o in hidden]      # forward, per member, strided
        shapes += [(i, B, o, True, False, False) for i, o in hidden]     # weight gradient
        shapes += [(B, o, i, False, True, True) for i, o in hidden]      # input gradient, per member, strided
        if one_hot:    # the value gradient's product (its rows: A per distinct state)
            shapes += [(2 * sizes[-1], B, K, True, True, False)]
        else:          # the first layer's product and its gradient
            shapes += [(B, sizes[0], K * sizes[1], False, False, False),
                       (sizes[0], B, K * sizes[1], True, False, False)]
        for m, n, p, ta, tb, strided in shapes:
            a = rng.standard_normal((n, m) if ta else (m, n)).astype(np.float32)
            b = rng.standard_normal((p, n) if tb else (n, p)).astype(np.float32)
            (a[:, 0] if ta else a[0])[:] = -0.0
            (b[0] if tb else b[:, 0])[:] = -0.0
            c = np.zeros((m, 2 * p if strided else p), np.float32)
            kernels["gemm"](ta, tb, m, p, n, a.ctypes.data, a.shape[1], b.ctypes.data, b.shape[1], c.ctypes.data,
                            c.shape[1], np.float32(strided))
            ok &= np.matmul(a.T if ta else a, b.T if tb else b).tobytes() == np.ascontiguousarray(c[:, :p]).tobytes()
        _checked[key] = ok
    return _checked[key]


def applies(agent) -> bool:
    """This agent's SGD step can run compiled: see the module's docstring."""
    e, net = agent.ensemble, agent.net
    if not enabled or fused.current() != "numba" or net.dtype != np.float32:
        return False
    if min(net.sizes[1:]) < 2 or agent.params.batch_size < 2:     # NumPy's matmul takes other paths on a 1
        return False
    if net.index_input:           # one-hot pixels: their value gradient's product has K columns
        if agent.K < 2 or agent.params.td_target != "max" or not isinstance(e.opt, Adam):
            return False
    elif not isinstance(agent.rep, DenseVector) or net.sparse_input or net.sizes[0] < 2 or e.keyed or (
            e.prior_params is not None and agent.buffer.prior is None):
        return False
    kernels = _kernels()
    return bool(kernels) and _products_match(kernels, tuple(net.sizes), agent.K, agent.params.batch_size,
                                             net.index_input)


@functools.lru_cache(maxsize=64)
def _layout(sizes: tuple, K: int, B: int, sparse: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(off, zoff, sizes as an array): off[r, k] the element offset of member k's block of the r-th parameter
    (W_1, b_1, W_2, ...) in the flat buffers (which hold W_1 only for dense inputs); zoff[l] where layer l's
    (B, K, sizes[l + 1]) activation starts in the scratch."""
    blocks = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        blocks += [n_in * n_out, n_out]
    starts = (np.concatenate(([0], np.cumsum(blocks[:-1]))) - (blocks[0] if sparse else 0)) * K
    off = starts[:, None] + np.array(blocks)[:, None] * np.arange(K)
    zoff = np.concatenate(([0], np.cumsum([B * K * n for n in sizes[1:]])))
    return off.astype(np.int64), zoff.astype(np.int64), np.array(sizes, np.int64)


def _draw_inputs(agent) -> tuple:
    """A minibatch's draw (`EnsembleBuffer.draw`, as `sample` makes it) and `gather`'s inputs from the buffer
    (empty arrays for a perturbation it does not keep), the states' codes before the per-transition fields, as
    both kernels take them."""
    buf, none = agent.buffer, np.zeros((0, 0), np.float32)
    return (buf.draw(agent.params.batch_size), buf.code, buf.next_code, buf.action, buf.reward,
            buf.noise if buf.noise is not None else none, buf.discount,
            buf.mask if buf.mask is not None else none.astype(np.bool_))


def _draw_scratch(agent) -> tuple:
    """`gather`'s outputs: the minibatch's actions, rewards (one row, or one per member with noise), discounts and
    bootstrap bits (none without them)."""
    buf, tape, K, B = agent.buffer, agent._tape, agent.K, agent.params.batch_size
    return (tape.buf("c_act", (B,), np.intp), tape.buf("c_rew", (K if buf.noise is not None else 1, B), np.float32),
            tape.buf("c_disc", (B,), np.float32), tape.buf("c_w", (B if buf.mask is not None else 0, K), np.bool_))


def keyed_sgd_step(agent) -> float:
    """`sgd_step` for one-hot inputs: compiled, or `td_step` on the same draw where the kernel declines it."""
    e, tape, net, opt = agent.ensemble, agent._tape, agent.net, agent.ensemble.opt
    K, B, A, dt = agent.K, agent.params.batch_size, net.sizes[-1], np.float32
    off, zoff, sizes = _layout(tuple(net.sizes), K, B, True)
    delta, g = tape.buf("delta", (K, B), dt), tape.buf("g", (K, B), dt)
    constants = opt.constants(dt, *opt.step_sizes(opt.t + 1))      # counted below if the kernel takes the step
    w1, w1_target, m1, v1 = (x.reshape(x.shape[0], -1) for x in (e.params[0], e.target_params[0], opt.m[0], opt.v[0]))
    drawn = _draw_inputs(agent)
    done = _kernels()["keyed_step"](
        *drawn, e.flat, e.target_flat, e._flat_grad, w1, w1_target, off, sizes,
        e.prior_table if e.prior_table is not None else np.zeros((0, K, A), dt), e._target_cache, e._target_valid,
        e._dirty, *_draw_scratch(agent), tape.buf("c_pr", (B, K, A), dt), tape.buf("c_z", (int(zoff[-1]),), dt), zoff,
        tape.buf("c_m", (int(zoff[-1]),), np.bool_), tape.buf("c_qn", (B, K, A), dt), tape.buf("v_next", (K, B), dt),
        tape.buf("c_q", (B, K, A), dt), delta, g, tape.buf("c_g", (K, B), dt), tape.buf("c_hot", (B * B * A,), dt),
        tape.buf("c_dsum", (B * A * K,), dt), tape.buf("c_dout", (B * K * A,), dt), m1, v1, opt.m[1], opt.v[1],
        constants)
    if not done:
        return agent._td_step(drawn[0])             # the same draw, `td_step`'s own Adam step
    opt.t += 1
    return 0.5 * float(np.vdot(g, delta)) / (B * K)


def sgd_step(agent) -> float:
    """`td_step` of `agent` on a minibatch of its buffer, compiled, then its optimiser's step; the mean loss."""
    if agent.net.index_input:
        return keyed_sgd_step(agent)
    e, buf, tape, net, opt = agent.ensemble, agent.buffer, agent._tape, agent.net, agent.ensemble.opt
    K, B, A, dt = agent.K, agent.params.batch_size, net.sizes[-1], np.float32
    off, zoff, sizes = _layout(tuple(net.sizes), K, B)
    kp = K if buf.prior is not None else 0
    none = np.zeros((0, 0), dt)
    priors = (buf.prior.reshape(len(buf.prior), -1), buf.next_prior.reshape(len(buf.prior), -1)) if kp else (none, none)
    delta, g = tape.buf("delta", (K, B), dt), tape.buf("g", (K, B), dt)
    adam_on = isinstance(opt, Adam)
    constants = opt.constants(dt, *opt.advance()) if adam_on else (0.0, dt(0), 0.0, dt(0), 0.0)
    _kernels()["step"](
        *_draw_inputs(agent), *priors, e.flat, e.target_flat, e._flat_grad, off, sizes,
        agent.params.td_target == "double", tape.buf("c_x", (B, net.sizes[0]), dt),
        tape.buf("c_xn", (B, net.sizes[0]), dt), *_draw_scratch(agent), tape.buf("c_pr", (B if kp else 0, K, A), dt),
        tape.buf("c_npr", (B if kp else 0, K, A), dt),
        tape.buf("c_z", (int(zoff[-1]),), dt), zoff, tape.buf("c_m", (int(zoff[-1]),), np.bool_),
        tape.buf("c_qn", (B, K, A), dt), tape.buf("c_qo", (B, K, A), dt), tape.buf("v_next", (K, B), dt),
        tape.buf("c_q", (B, K, A), dt), delta, g, tape.buf("c_dout", (B, K, A), dt),
        adam_on, opt.m[0] if adam_on else e.flat, opt.v[0] if adam_on else e.flat, constants)
    if not adam_on:
        opt.step(e._opt_params(), [e._flat_grad])
    return 0.5 * float(np.vdot(g, delta)) / (B * K)

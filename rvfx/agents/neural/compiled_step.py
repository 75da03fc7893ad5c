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
NumPy's OpenBLAS exports a `cblas_sgemm` of 64-bit integers (its wheels' ILP64 build) that gives
`np.matmul`'s bits on the step's product shapes (checked once per shape set, on random operands), no
dimension of 1 among the layers and batch (where NumPy's matmul calls gemv, a dot or its own loop
instead of gemm), and the agent has a dense float32 input with stored or no priors, or one-hot inputs
with K >= 2 members, a max target and Adam. Its kernels are `kernels`' (compiled once per machine into
a checked private folder: numba_cache).
"""
from __future__ import annotations

import ctypes
import functools
import os

import numpy as np

from rvfx.agents.neural import fused
from rvfx.agents.neural.optimisers import Adam
from rvfx.agents.neural.representations import DenseVector

_kernel = None                                  # the compiled step once made, False where it cannot be
_checked: dict = {}                             # product shapes -> the check's outcome
enabled = True                                  # tests and benchmarks switch it off to compare


def _numpy_sgemm() -> int | None:
    """The address of NumPy's OpenBLAS `cblas_sgemm` with 64-bit integers (NumPy's wheels' ILP64
    OpenBLAS), or None."""
    from threadpoolctl import threadpool_info
    bundled = os.path.realpath(os.path.dirname(np.__file__)) + ".libs"        # NumPy's wheels' own libraries
    for lib in threadpool_info():
        path = lib.get("filepath", "")
        if lib.get("internal_api") != "openblas" or os.path.dirname(os.path.realpath(path)) != bundled:
            continue
        handle = ctypes.CDLL(path)
        for name in ("scipy_cblas_sgemm64_", "cblas_sgemm64_"):
            address = ctypes.cast(getattr(handle, name, None), ctypes.c_void_p).value
            if address:
                return address
    return None


def _compile():
    """The step's kernels (rvfx.agents.neural.kernels), their `cblas_sgemm` bound to NumPy's in this
    process, or False without numba or that function."""
    if not fused.available():
        return False
    address = _numpy_sgemm()
    if address is None:
        return False
    import llvmlite.binding

    from rvfx.agents.neural import kernels
    llvmlite.binding.add_symbol(kernels.SGEMM, address)
    return kernels.STEP


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

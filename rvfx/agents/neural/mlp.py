"""A small NumPy MLP for an ensemble of K members, computed together (Algorithm 8, Section 7.2.1).

All members read the same minibatch (as the authors' bootstrapped DQN does; the
members differ by their weights, priors and data perturbations), so:

- the first layer of all K members is one (B, in) @ (in, K*H) product, or, for a
  one-hot input given by its integer index, one row gather of W_1 stored (in, K, H),
  or, for a `BlockInput` (rvfx.agents.neural.sparse), a gather-and-weighted-sum of that
  block's rows of W_1, one small (n, width) @ (width, K*H) product per distinct block in the batch;
- every later layer is one batched matmul (K, B, in) @ (K, in, out) on strided
  views of (B, K, H) activations, whose bias adds and ReLUs run over long
  contiguous rows (the passes of the network's `kernels`: NumPy's, or numba's);
- the gradient of a one-hot or block layer is a `SparseRows`, of the rows seen in the batch.

Activations live in a `Tape`'s buffers, reused across calls. Everything is float32 unless asked
otherwise; scalars are Python floats so that arithmetic never silently upcasts to float64.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from rvfx.agents.neural import backend
from rvfx.agents.neural.sparse import BlockInput, SparseRows, row_sums


def _sum_batch(d: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """sum over b of d (K, B, W): a contiguous row reduction when d is a view of a (B, K, W) buffer."""
    bk = d.transpose(1, 0, 2)
    if bk.flags.c_contiguous and (out is None or out.flags.c_contiguous):
        flat = bk.reshape(bk.shape[0], -1)
        if out is None:
            return np.add.reduce(flat, axis=0).reshape(d.shape[0], d.shape[2])
        np.add.reduce(flat, axis=0, out=out.reshape(-1))
        return out
    return np.add.reduce(d, axis=1, out=out)


def glorot_uniform(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """U(+-sqrt(6/(fan_in+fan_out))) for weights of shape (..., fan_in, fan_out) (Glorot & Bengio, 2010;
    the paper's initialisation)."""
    limit = math.sqrt(6.0 / (shape[-2] + shape[-1]))
    return rng.uniform(-limit, limit, shape)


TRUNCATION = 2.0     # haiku.initializers.TruncatedNormal's default bounds, in units of its stddev


def haiku_default(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """haiku.Linear's default weights: TruncatedNormal(stddev=1/sqrt(fan_in)), i.e. (1/sqrt(fan_in)) z with z
    a standard normal truncated to [-2, 2] (so the weights' s.d. is 0.880/sqrt(fan_in): Haiku does not
    rescale here, unlike VarianceScaling). What bsuite's boot_dqn draws through hk.nets.MLP. One uniform
    per weight through the inverse normal CDF, so the draw count is fixed."""
    from scipy import special  # here: only this initialisation needs SciPy's import
    lo = special.ndtr(-TRUNCATION)
    u = rng.uniform(lo, 1.0 - lo, shape)
    return special.ndtri(u) / math.sqrt(shape[-2])


INITS = {"glorot_uniform": glorot_uniform, "haiku_default": haiku_default}


def _fresh(name: str, shape: tuple, dtype) -> np.ndarray:
    """`Tape.buf`'s stand-in without a tape: a new array."""
    return np.empty(shape, dtype)


class Tape:
    """Activations of one forward pass, kept for `backward`, in buffers reused across calls."""

    def __init__(self):
        self._bufs: dict[str, np.ndarray] = {}
        self._views: dict[str, np.ndarray] = {}
        self.x = None
        self.groups = None                   # block inputs: how the batch was grouped by block
        self.acts: list[np.ndarray] = []
        self.masks: list[np.ndarray] = []

    def buf(self, name: str, shape: tuple, dtype) -> np.ndarray:
        """A contiguous scratch array of `shape`, carved from a buffer that only ever grows.

        The last view handed out under `name` is kept, so a repeated shape costs one lookup."""
        view = self._views.get(name)
        if view is not None and view.shape == shape and view.dtype == dtype:
            return view
        size = math.prod(shape)
        b = self._bufs.get(name)
        if b is None or b.size < size or b.dtype != dtype:
            b = self._bufs[name] = np.empty(max(size, 1), dtype)
        view = self._views[name] = b[:size].reshape(shape)
        return view


class EnsembleMLP:
    """The architecture of K stacked MLPs (ReLU hidden layers, linear output); parameters are passed in.

    Parameters are [W_1, b_1, ..., W_L, b_L] with W_1 (in, K, H_1), b_l (K, H_l) and
    W_l (K, H_{l-1}, H_l) for l > 1. Input x is a shared minibatch: (B, in) floats;
    or (B,) integer indices of a one-hot vector of width `input_dim` when
    `index_input`; or a `BlockInput` when `block_size` > 0 (input_dim is then a
    multiple of it, W_1 read as (input_dim / block_size, block_size, K, H_1));
    or (K, B, in) floats, member k's own minibatch x[k] (per-member buffers).
    Output is (K, B, output_dim). The element-wise passes are `kernels`' (`backend`; the process's
    choice unless given).
    """

    def __init__(self, input_dim: int, hidden: Sequence[int], output_dim: int,
                 index_input: bool = False, dtype=np.float32, block_size: int = 0,
                 init: str = "glorot_uniform", kernels=None):
        self.sizes = [int(input_dim), *map(int, hidden), int(output_dim)]
        if init not in INITS:
            raise ValueError(f"unknown init {init!r} ({', '.join(INITS)})")
        self.init_scheme = init
        self.index_input = index_input
        self.block_size = int(block_size)
        if self.block_size and (index_input or input_dim % self.block_size):
            raise ValueError(f"block_size {block_size} must divide input_dim {input_dim} (and no index_input)")
        self.dtype = np.dtype(dtype)
        self.num_layers = len(self.sizes) - 1
        self.kernels = kernels if kernels is not None else backend.choose()

    @property
    def sparse_input(self) -> bool:
        """The first layer reads a few rows of W_1 per input, and its gradient is a `SparseRows`."""
        return self.index_input or self.block_size > 0

    def init(self, rng: np.random.Generator, num_members: int) -> list[np.ndarray]:
        """Weights drawn per member by `init_scheme` (`INITS`), zero biases."""
        params = []
        for l, (fan_in, fan_out) in enumerate(zip(self.sizes[:-1], self.sizes[1:])):
            w = INITS[self.init_scheme](rng, (num_members, fan_in, fan_out)).astype(self.dtype)
            params.append(np.ascontiguousarray(w.transpose(1, 0, 2)) if l == 0 else w)
            params.append(np.zeros((num_members, fan_out), self.dtype))
        return params

    @staticmethod
    def member(params: list[np.ndarray], k: int) -> list[np.ndarray]:
        """Member k's parameters as a one-member ensemble (copies)."""
        return [p[:, k:k + 1].copy() if i == 0 else p[k:k + 1].copy() for i, p in enumerate(params)]

    def _block_groups(self, x: BlockInput):
        """(order or None, sorted blocks, sorted values, group starts, group ends) of a `BlockInput`.

        Inputs are grouped by block so that each distinct block costs one small product;
        inputs built from sorted state codes arrive sorted and need no permutation.
        """
        blk = np.asarray(x.block)
        vals = np.asarray(x.values, self.dtype)
        B = blk.shape[0]
        order = None
        if B == 0:
            return order, blk, vals, [], []
        if B > 1 and not bool((blk[1:] >= blk[:-1]).all()):
            order = np.argsort(blk, kind="stable")
            blk, vals = blk[order], vals[order]
        cut = np.flatnonzero(blk[1:] != blk[:-1]) + 1
        starts = np.concatenate(([0], cut)).tolist()
        ends = np.concatenate((cut, [B])).tolist()
        return order, blk, vals, starts, ends

    def _block_first_layer(self, w1: np.ndarray, x: BlockInput, out: np.ndarray, tape: Tape | None):
        """out (B, K*H) = x @ W_1: for each distinct block b, values[group] @ W_1[rows of b] (gather + weighted sum).

        One BLAS product per distinct block (at most N for deep sea) reads each touched
        row of W_1 once; gathering the rows per input instead would move B * width * K * H
        floats (~10 MB per minibatch at K=20, M=10), and a zero-padded stacked product
        measured slower."""
        order, blk, vals, starts, ends = groups = self._block_groups(x)
        bs = self.block_size
        w = w1.reshape(self.sizes[0] // bs, bs, w1.shape[-1])
        dst = out if order is None else (tape.buf("zperm", out.shape, self.dtype) if tape is not None
                                         else np.empty_like(out))
        for s, e in zip(starts, ends):
            np.matmul(vals[s:e], w[blk[s]], out=dst[s:e])
        if order is not None:
            out[order] = dst
        return groups

    def forward(self, params: list[np.ndarray], x, tape: Tape | None = None, grad: bool = True) -> np.ndarray:
        """f_theta(x), (K, B, out), for every member; with a `tape`, record activations for `backward`.

        With a tape the output lives in the tape's scratch: consume it before the tape's next use.
        With grad=False the tape is scratch only: no ReLU' is kept, and no `backward` may follow.
        """
        per_member = not self.sparse_input and x.ndim == 3          # (K, B, in): each member's own minibatch
        K, dt, B = params[1].shape[0], self.dtype, x.shape[1 if per_member else 0]
        new = tape.buf if tape is not None else _fresh
        width = self.sizes[1]
        z = new("z0", (B, K, width), dt)
        w1 = params[0].reshape(self.sizes[0], K * width)
        groups = None
        if self.index_input:
            np.take(w1, x, axis=0, out=z.reshape(B, K * width), mode="clip")
        elif self.block_size:
            groups = self._block_first_layer(w1, x, z.reshape(B, K * width), tape)
        elif per_member:
            np.matmul(x, params[0].transpose(1, 0, 2), out=z.transpose(1, 0, 2))
        else:
            np.matmul(x, w1, out=z.reshape(B, K * width))
        acts, masks = [], []
        keep = grad and tape is not None
        mask_dt = self.kernels.mask_dtype(dt) if keep else None
        for l in range(1, self.num_layers):                # z <- relu(z + b_l), with ReLU' for backward
            n = K * self.sizes[l]
            if keep:
                mask = new(f"m{l}", z.shape, mask_dt)
                self.kernels.bias_relu(z.reshape(B, n), params[2 * l - 1].reshape(n), mask.reshape(B, n))
                masks.append(mask)
            else:
                self.kernels.relu(z.reshape(B, n), params[2 * l - 1].reshape(n))
            acts.append(z)
            nxt = new(f"z{l}", (B, K, self.sizes[l + 1]), dt)
            np.matmul(z.transpose(1, 0, 2), params[2 * l], out=nxt.transpose(1, 0, 2))
            z = nxt
        z += params[-1]
        if tape is not None:
            tape.x, tape.acts, tape.masks, tape.groups = x, acts, masks, groups
        return z.transpose(1, 0, 2)

    def backward(self, params: list[np.ndarray], tape: Tape, dout: np.ndarray, out: list | None = None) -> list:
        """Exact gradients of sum(dout * f_theta(x)) for the pass recorded on `tape`; dout is (K, B, out).

        The first weight's gradient is a `SparseRows` for index and block inputs, else dense.
        `out` may give arrays (e.g. views of one flat buffer) to write the dense gradients
        into, None for the ones to allocate. The tape's activations are consumed: each layer's
        input gradient overwrites the input activation once its weight gradient is taken
        (no buffers beyond the forward pass's), and a sparse first-layer gradient is a view of them.
        """
        K, B = dout.shape[0], dout.shape[1]
        grads: list = [None] * (2 * self.num_layers)
        out = out if out is not None else grads
        d = dout                                              # (K, B, width), any strides
        grads[-1] = _sum_batch(d, out[-1])
        for l in range(self.num_layers - 1, 0, -1):
            inp = tape.acts[l - 1]                            # (B, K, in) post-ReLU
            grads[2 * l] = np.matmul(inp.transpose(1, 2, 0), d, out=out[2 * l])
            prev = inp                                        # read for the last time above: reuse it
            np.matmul(d, params[2 * l].transpose(0, 2, 1), out=prev.transpose(1, 0, 2))   # W^T as a view
            bias = out[2 * l - 1] if out[2 * l - 1] is not None else np.empty(params[2 * l - 1].shape, prev.dtype)
            n = K * self.sizes[l]
            self.kernels.relu_grad_sum(prev.reshape(B, n), tape.masks[l - 1].reshape(B, n), bias.reshape(n))
            grads[2 * l - 1] = bias                           # ReLU', then the sum over the batch
            d = prev.transpose(1, 0, 2)
        width = self.sizes[1]
        d_bk = d.transpose(1, 0, 2)                           # (B, K, width)
        if self.index_input:
            grads[0] = row_sums(tape.x, d_bk)
        elif self.block_size:
            grads[0] = self._block_grad(tape, np.ascontiguousarray(d_bk).reshape(B, K * width), K, width)
        else:
            g0 = out[0] if out[0] is not None else np.empty((self.sizes[0], K, width), self.dtype)
            if tape.x.ndim == 3:                              # each member's own minibatch
                np.matmul(tape.x.transpose(0, 2, 1), d, out=g0.transpose(1, 0, 2))
            else:
                flat = np.ascontiguousarray(d_bk).reshape(B, K * width)
                np.matmul(tape.x.T, flat, out=g0.reshape(self.sizes[0], K * width))
            grads[0] = g0
        return grads

    def _block_grad(self, tape: Tape, d: np.ndarray, K: int, width: int) -> SparseRows:
        """dL/dW_1 of a block input: for each distinct block b, values[group]^T @ d[group], on b's rows only."""
        order, blk, vals, starts, ends = tape.groups
        bs = self.block_size
        if order is not None:
            d = d[order]
        g = np.empty((len(starts), bs, K * width), self.dtype)
        for i, (s, e) in enumerate(zip(starts, ends)):
            np.matmul(vals[s:e].T, d[s:e], out=g[i])
        blocks = blk[starts]
        rows = (blocks[:, None] * bs + np.arange(bs)).reshape(-1)         # sorted and distinct
        cut = (np.flatnonzero(blocks[1:] != blocks[:-1] + 1) + 1) * bs    # where adjacent blocks stop touching
        edges = [0, *cut.tolist(), rows.shape[0]]
        return SparseRows(rows, g.reshape(len(starts) * bs, K, width), list(zip(edges[:-1], edges[1:])))

    def forward_member(self, params: list[np.ndarray], k: int, x) -> np.ndarray:
        """f_theta_k(x), (B, out), of member k alone: the same math as `forward`, for `act`."""
        w1 = params[0][:, k]
        if self.index_input:
            h = w1[x]
        elif self.block_size:
            bs = self.block_size
            w = w1.reshape(self.sizes[0] // bs, bs, w1.shape[-1])[x.block]      # (B, bs, H)
            h = np.matmul(np.asarray(x.values, self.dtype)[:, None, :], w)[:, 0]
        else:
            h = x @ w1
        h = h + params[1][k]
        for l in range(1, self.num_layers):
            np.maximum(h, 0.0, out=h)
            h = h @ params[2 * l][k]
            h += params[2 * l + 1][k]
        return h

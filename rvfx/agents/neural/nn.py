"""A small NumPy MLP for an ensemble of K members, computed together (Algorithm 8, Section 7.2.1).

All members read the same minibatch (as the authors' bootstrapped DQN does; the
members differ by their weights, priors and data perturbations), so:

- the first layer of all K members is one (B, in) @ (in, K*H) product, or, for a
  one-hot input given by its integer index, one row gather of W_1 stored (in, K, H),
  or, for a `BlockInput` (nonzero on one block of consecutive coordinates, e.g. the
  linear basis of deep sea), a gather-and-weighted-sum of that block's rows of W_1,
  one small (n, width) @ (width, K*H) product per distinct block in the batch;
- every later layer is one batched matmul (K, B, in) @ (K, in, out) on strided
  views of (B, K, H) activations, whose bias adds and ReLUs run over long
  contiguous rows;
- the gradient of a one-hot or block layer is a `SparseRows`: the rows seen in the
  batch, duplicates summed, never a dense N^2-wide matmul.

`PriorEnsemble` adds the randomized prior functions of Section 7.2.1
(Osband et al., 2018): Q_k = f(theta_k) + beta * f(theta0_k), with theta0_k held
at its initial draw (`INITS`). Everything is float32 unless asked otherwise; scalars are
Python floats so that arithmetic never silently upcasts to float64.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy import special


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


def pack(arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Copy `arrays` into one flat buffer; return it and views shaped like the originals.

    An optimiser then updates all of them in one pass instead of one call per small tensor.
    """
    flat = np.empty(sum(a.size for a in arrays), arrays[0].dtype)
    views, i = [], 0
    for a in arrays:
        v = flat[i:i + a.size].reshape(a.shape)
        v[...] = a
        views.append(v)
        i += a.size
    return flat, views


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
    multiple of it, W_1 read as (input_dim / block_size, block_size, K, H_1)).
    Output is (K, B, output_dim).
    """

    def __init__(self, input_dim: int, hidden: Sequence[int], output_dim: int,
                 index_input: bool = False, dtype=np.float32, block_size: int = 0,
                 init: str = "glorot_uniform"):
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

    def forward(self, params: list[np.ndarray], x, tape: Tape | None = None) -> np.ndarray:
        """f_theta(x), (K, B, out), for every member; with a `tape`, record activations for `backward`.

        With a tape the output lives in the tape's scratch: consume it before the tape's next use.
        """
        K, dt, B = params[1].shape[0], self.dtype, x.shape[0]
        new = tape.buf if tape is not None else _fresh
        width = self.sizes[1]
        z = new("z0", (B, K, width), dt)
        w1 = params[0].reshape(self.sizes[0], K * width)
        groups = None
        if self.index_input:
            np.take(w1, x, axis=0, out=z.reshape(B, K * width), mode="clip")
        elif self.block_size:
            groups = self._block_first_layer(w1, x, z.reshape(B, K * width), tape)
        else:
            np.matmul(x, w1, out=z.reshape(B, K * width))
        z += params[1]
        acts, masks = [], []
        for l in range(1, self.num_layers):
            positive = new(f"p{l}", z.shape, np.bool_)
            mask = new(f"m{l}", z.shape, dt)               # ReLU' as 0/1 floats: the products below
            np.greater(z, 0.0, out=positive)               # are plain float multiplies (2x a bool mask's);
            np.copyto(mask, positive)                      # bool then a copy beats a casting comparison
            z *= mask
            acts.append(z)
            masks.append(mask)
            nxt = new(f"z{l}", (B, K, self.sizes[l + 1]), dt)
            np.matmul(z.transpose(1, 0, 2), params[2 * l], out=nxt.transpose(1, 0, 2))
            nxt += params[2 * l + 1]
            z = nxt
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
        for l in range(self.num_layers - 1, 0, -1):
            grads[2 * l + 1] = _sum_batch(d, out[2 * l + 1])
            inp = tape.acts[l - 1]                            # (B, K, in) post-ReLU
            grads[2 * l] = np.matmul(inp.transpose(1, 2, 0), d, out=out[2 * l])
            prev = inp                                        # read for the last time above: reuse it
            np.matmul(d, params[2 * l].transpose(0, 2, 1), out=prev.transpose(1, 0, 2))   # W^T as a view
            prev *= tape.masks[l - 1]                         # ReLU'
            d = prev.transpose(1, 0, 2)
        width = self.sizes[1]
        d_bk = d.transpose(1, 0, 2)                           # (B, K, width)
        grads[1] = _sum_batch(d, out[1])
        if self.index_input:
            grads[0] = row_sums(tape.x, d_bk)
        elif self.block_size:
            grads[0] = self._block_grad(tape, np.ascontiguousarray(d_bk).reshape(B, K * width), K, width)
        else:
            flat = np.ascontiguousarray(d_bk).reshape(B, K * width)
            g0 = out[0] if out[0] is not None else np.empty((self.sizes[0], K, width), self.dtype)
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


class SGD:
    """theta <- theta - lr * grad; a `SparseRows` gradient touches only its rows (exact)."""

    def __init__(self, params: list[np.ndarray], learning_rate: float):
        self.lr = float(learning_rate)

    def step(self, params: list[np.ndarray], grads: list) -> None:
        lr = self.lr
        for p, g in zip(params, grads):
            if isinstance(g, SparseRows):
                p[g.rows] -= lr * g.values
            else:
                g *= lr
                p -= g


class Adam:
    """Adam (Kingma & Ba, 2015) with bias correction, in place; gradients are consumed (used as scratch).

    The moments are kept unnormalised, m~ = m / (1 - b1) and v~ = v / (1 - b2), so each
    update is m~ <- b1 m~ + g and v~ <- b2 v~ + g^2 (two passes fewer per step than the
    textbook form, whose constants move into the step size and epsilon; the same update
    up to rounding, see `step`).

    For a `SparseRows` gradient only the rows seen in the minibatch update their
    moments and weights (the "lazy"/SparseAdam rule of TF and PyTorch), so the
    cost of a one-hot layer follows the batch, not N^2; other rows keep their
    weights and moments until they are seen again. Rows given as runs of consecutive
    rows (block inputs touch whole blocks) are updated in place on slices; scattered
    rows are gathered, updated and scattered back. Both do the same arithmetic.
    """

    def __init__(self, params: list[np.ndarray], learning_rate: float,
                 b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        self.lr, self.b1, self.b2, self.eps = float(learning_rate), float(b1), float(b2), float(eps)
        self.m = [np.zeros_like(p) for p in params]      # m / (1 - b1)
        self.v = [np.zeros_like(p) for p in params]      # v / (1 - b2)
        self.t = 0

    def _update(self, p, g, m, v, step: float, eps: float) -> None:
        """theta -= step * m~ / (sqrt(v~) + eps) after the moment updates, all in place; g is overwritten."""
        m *= self.b1                            # m~ <- b1 m~ + g
        m += g
        g *= g
        v *= self.b2                            # v~ <- b2 v~ + g^2
        v += g
        np.sqrt(v, out=g)
        g += eps
        np.divide(m, g, out=g)
        g *= step
        p -= g

    def step(self, params: list[np.ndarray], grads: list) -> None:
        self.t += 1
        b1, b2 = self.b1, self.b2
        # theta -= lr m_hat / (sqrt(v_hat) + eps), m_hat = (1 - b1) m~ / c1, v_hat = (1 - b2) v~ / c2, is
        # theta -= step * m~ / (sqrt(v~) + eps * r), r = sqrt(c2 / (1 - b2)), step = lr (1 - b1) r / c1.
        c1, c2 = 1.0 - b1 ** self.t, 1.0 - b2 ** self.t
        r = math.sqrt(c2 / (1.0 - b2))
        step = self.lr * (1.0 - b1) * r / c1
        eps_scaled = self.eps * r
        for p, g, m, v in zip(params, grads, self.m, self.v):
            if not isinstance(g, SparseRows):
                self._update(p, g, m, v, step, eps_scaled)
                continue
            rows, gv = g.rows, g.values                   # m, v, theta of the rows seen only
            if rows.shape[0] == 0:
                continue
            if g.runs is not None:                        # runs of consecutive rows: slices, no gather
                for a, b in g.runs:
                    lo, hi = int(rows[a]), int(rows[b - 1]) + 1
                    self._update(p[lo:hi], gv[a:b], m[lo:hi], v[lo:hi], step, eps_scaled)
                continue
            pr, mr, vr = p[rows], m[rows], v[rows]        # scattered rows: update gathered copies
            self._update(pr, gv, mr, vr, step, eps_scaled)
            p[rows], m[rows], v[rows] = pr, mr, vr


def make_optimizer(name: str, params: list[np.ndarray], learning_rate: float):
    if name == "adam":
        return Adam(params, learning_rate)
    if name == "sgd":
        return SGD(params, learning_rate)
    raise ValueError(f"unknown optimizer {name!r} (adam, sgd)")


class PriorEnsemble:
    """Q_k(x) = f(theta_k; x) + beta * f(theta0_k; x), k = 1..K, with a target copy theta^-.

    The randomized prior of Section 7.2.1 stands in for the regulariser R(theta; theta^p)
    of Algorithm 8: theta0_k is drawn like theta_k and never trained. Dense parameters
    live in one flat buffer (one optimiser pass); with index or block inputs the first
    layer W_1 is updated and copied to the target by rows.

    Keyed inputs (a finite set of inputs named by an integer key: index inputs are
    their own key; a `BlockInput` carries `key` when `key_inputs`, the inputs of keys
    0..n-1, are given) get two exact caches: beta * f(theta0; .) of every key,
    computed once, and target values per key, valid until the next `sync_target`.
    """

    def __init__(self, net: EnsembleMLP, num_members: int, rng: np.random.Generator,
                 prior_scale: float = 1.0, optimizer: str = "adam", learning_rate: float = 1e-3,
                 key_inputs: BlockInput | None = None):
        self.net, self.K = net, num_members
        self.prior_scale = float(prior_scale)
        self.sparse = net.sparse_input
        if key_inputs is not None and not net.block_size:
            raise ValueError("key_inputs are for block inputs (index inputs are their own keys)")
        self.keyed = net.index_input or key_inputs is not None
        num_keys = net.sizes[0] if net.index_input else (key_inputs.shape[0] if self.keyed else 0)
        init = net.init(rng, num_members)
        first = 1 if self.sparse else 0
        self.flat, views = pack(init[first:])
        self.params = init[:first] + views
        self.target_flat, target_views = pack(init[first:])
        self.target_params = [p.copy() for p in init[:first]] + target_views
        self._flat_grad, grad_views = pack(init[first:])          # backward writes straight into it
        self._grad_out = [None] * first + grad_views
        self._dirty = np.zeros(net.sizes[0], bool) if self.sparse else None
        if self.keyed:
            self._target_cache = np.zeros((num_keys, num_members, net.sizes[-1]), net.dtype)
            self._target_valid = np.zeros(num_keys, bool)
        self.opt = make_optimizer(optimizer, self._opt_params(), learning_rate)
        self.prior_params = net.init(rng, num_members) if self.prior_scale else None
        self._prior_tape, self._fresh_tape = Tape(), Tape()
        self.prior_table = None                                # (num_keys, K, out) when cached
        if self.prior_params is not None and self.keyed:
            every = np.arange(num_keys) if net.index_input else key_inputs
            table = net.forward(self.prior_params, every)
            self.prior_table = np.ascontiguousarray(table.transpose(1, 0, 2)) * self.prior_scale

    def __setstate__(self, state: dict) -> None:
        """After pickle or deepcopy (which copy views as separate arrays), make the dense
        parameters (and their gradients) views of the flat buffers again, or the optimiser would
        update stale copies."""
        self.__dict__.update(state)
        first = 1 if self.sparse else 0
        for flat, params in ((self.flat, self.params), (self.target_flat, self.target_params),
                             (self._flat_grad, self._grad_out)):
            i = 0
            for j in range(first, len(params)):
                n = params[j].size
                params[j] = flat[i:i + n].reshape(params[j].shape)
                i += n

    def _opt_params(self) -> list[np.ndarray]:
        return [self.params[0], self.flat] if self.sparse else [self.flat]

    def _keys(self, x) -> np.ndarray:
        if self.net.index_input:
            return x
        if x.key is None:
            raise ValueError("this ensemble caches by key: its BlockInput needs `key`")
        return x.key

    def prior(self, x) -> np.ndarray | None:
        """beta * f(theta0; x), (K, B, out); None without a prior."""
        if self.prior_params is None:
            return None
        if self.prior_table is not None:
            return self.prior_table[self._keys(x)].transpose(1, 0, 2)
        out = self.net.forward(self.prior_params, x, self._prior_tape)   # scratch: no fresh 0.5 MB arrays
        out *= self.prior_scale
        return out

    def value(self, x, target: bool = False, tape: Tape | None = None,
              prior: np.ndarray | None = None) -> np.ndarray:
        """(K, B, out) values of the online (or target) ensemble, prior included.

        `prior` may hand in beta * f(theta0; x) computed earlier (it never changes).
        Target values of keyed inputs are cached per key until the next `sync_target`
        (exact: theta^- does not change in between), so each is computed once per period;
        their pass uses `tape` as scratch when one is given.
        """
        if target and self.keyed:
            keys = self._keys(x)
            miss = ~self._target_valid[keys]
            if miss.any():
                fresh, first = np.unique(keys[miss], return_index=True)
                xf = fresh if self.net.index_input else x.take(np.flatnonzero(miss)[first])
                v = self.net.forward(self.target_params, xf, self._fresh_tape if tape is None else tape)
                p = self.prior(xf)
                self._target_cache[fresh] = (v if p is None else v + p).transpose(1, 0, 2)
                self._target_valid[fresh] = True
            return self._target_cache[keys].transpose(1, 0, 2)
        f = self.net.forward(self.target_params if target else self.params, x, tape)
        p = self.prior(x) if prior is None else prior
        if p is not None:
            f += p                               # f is fresh or the tape's scratch: add in place
        return f

    def snapshot(self, k: int) -> list[np.ndarray]:
        """A copy of member k's online weights (a one-member ensemble), to act with while SGD goes on."""
        return self.net.member(self.params, k)

    def member_value(self, k: int, x, weights: list[np.ndarray] | None = None) -> np.ndarray:
        """(B, out) values of member k alone, for `act`: its online weights, or `weights` (its snapshot)."""
        f = self.net.forward_member(self.params, k, x) if weights is None else self.net.forward_member(weights, 0, x)
        if self.prior_params is None:
            return f
        if self.prior_table is not None:
            return f + self.prior_table[self._keys(x), k]
        return f + self.prior_scale * self.net.forward_member(self.prior_params, k, x)

    def apply_gradient(self, tape: Tape, dout: np.ndarray) -> None:
        """One optimiser step on sum(dout * Q(x)) for the pass recorded on `tape`."""
        grads = self.net.backward(self.params, tape, dout, self._grad_out)
        if self.sparse:
            self._dirty[grads[0].rows] = True
            self.opt.step(self._opt_params(), [grads[0], self._flat_grad])
        else:
            self.opt.step(self._opt_params(), [self._flat_grad])

    def sync_target(self) -> None:
        """theta^- <- theta (the target network of the TD loss, eq. 5.7); only changed rows of W_1."""
        np.copyto(self.target_flat, self.flat)
        if self.keyed:
            self._target_valid[:] = False
        if self.sparse:
            rows = np.flatnonzero(self._dirty)
            self.target_params[0][rows] = self.params[0][rows]
            self._dirty[rows] = False

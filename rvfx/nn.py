"""A small NumPy MLP for an ensemble of K members, computed together (Algorithm 8, Section 7.2.1).

All members read the same minibatch (as the authors' bootstrapped DQN does; the
members differ by their weights, priors and data perturbations), so:

- the first layer of all K members is one (B, in) @ (in, K*H) product, or, for a
  one-hot input given by its integer index, one row gather of W_1 stored (in, K, H);
- every later layer is one batched matmul (K, B, in) @ (K, in, out) on strided
  views of (B, K, H) activations, whose bias adds and ReLUs run over long
  contiguous rows;
- the gradient of a one-hot layer is a `SparseRows`: the rows seen in the batch,
  duplicates summed by a small sparse product, never a dense N^2-wide matmul.

`PriorEnsemble` adds the randomized prior functions of Section 7.2.1
(Osband et al., 2018): Q_k = f(theta_k) + beta * f(theta0_k), with theta0_k held
at its Glorot draw. Everything is float32 unless asked otherwise; scalars are
Python floats so that arithmetic never silently upcasts to float64.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numpy as np


class SparseRows(NamedTuple):
    """Gradient of a weight W nonzero only on some rows W[rows] (first axis)."""
    rows: np.ndarray     # unique, sorted row indices
    values: np.ndarray   # (len(rows), *W.shape[1:]) summed gradient of each row


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


def _sum_batch(d: np.ndarray) -> np.ndarray:
    """sum over b of d (K, B, W): a contiguous row reduction when d is a view of a (B, K, W) buffer."""
    bk = d.transpose(1, 0, 2)
    if bk.flags.c_contiguous:
        return bk.reshape(bk.shape[0], -1).sum(axis=0).reshape(d.shape[0], d.shape[2])
    return d.sum(axis=1)


class Tape:
    """Activations of one forward pass, kept for `backward`, in buffers reused across calls."""

    def __init__(self):
        self._bufs: dict[str, np.ndarray] = {}
        self.x = None
        self.acts: list[np.ndarray] = []
        self.masks: list[np.ndarray] = []

    def buf(self, name: str, shape: tuple, dtype) -> np.ndarray:
        """A contiguous scratch array of `shape`, carved from a buffer that only ever grows."""
        size = math.prod(shape)
        b = self._bufs.get(name)
        if b is None or b.size < size or b.dtype != dtype:
            b = self._bufs[name] = np.empty(max(size, 1), dtype)
        return b[:size].reshape(shape)


class EnsembleMLP:
    """The architecture of K stacked MLPs (ReLU hidden layers, linear output); parameters are passed in.

    Parameters are [W_1, b_1, ..., W_L, b_L] with W_1 (in, K, H_1), b_l (K, H_l) and
    W_l (K, H_{l-1}, H_l) for l > 1. Input x is a shared minibatch: (B, in) floats,
    or (B,) integer indices of a one-hot vector of width `input_dim` when
    `index_input`. Output is (K, B, output_dim).
    """

    def __init__(self, input_dim: int, hidden: Sequence[int], output_dim: int,
                 index_input: bool = False, dtype=np.float32):
        self.sizes = [int(input_dim), *map(int, hidden), int(output_dim)]
        self.index_input = index_input
        self.dtype = np.dtype(dtype)
        self.num_layers = len(self.sizes) - 1

    def init(self, rng: np.random.Generator, num_members: int) -> list[np.ndarray]:
        """Glorot-uniform weights, U(+-sqrt(6/(fan_in+fan_out))) per member, zero biases (Glorot & Bengio, 2010)."""
        params = []
        for l, (fan_in, fan_out) in enumerate(zip(self.sizes[:-1], self.sizes[1:])):
            limit = math.sqrt(6.0 / (fan_in + fan_out))
            w = rng.uniform(-limit, limit, (num_members, fan_in, fan_out)).astype(self.dtype)
            params.append(np.ascontiguousarray(w.transpose(1, 0, 2)) if l == 0 else w)
            params.append(np.zeros((num_members, fan_out), self.dtype))
        return params

    @staticmethod
    def member(params: list[np.ndarray], k: int) -> list[np.ndarray]:
        """Member k's parameters as a one-member ensemble (copies)."""
        return [p[:, k:k + 1].copy() if i == 0 else p[k:k + 1].copy() for i, p in enumerate(params)]

    def forward(self, params: list[np.ndarray], x: np.ndarray, tape: Tape | None = None) -> np.ndarray:
        """f_theta(x), (K, B, out), for every member; with a `tape`, record activations for `backward`.

        With a tape the output lives in the tape's scratch: consume it before the tape's next use.
        """
        K, dt, B = params[1].shape[0], self.dtype, x.shape[0]
        new = (lambda name, shape: tape.buf(name, shape, dt)) if tape is not None \
            else (lambda name, shape: np.empty(shape, dt))
        width = self.sizes[1]
        z = new("z0", (B, K, width))
        w1 = params[0].reshape(self.sizes[0], K * width)
        if self.index_input:
            np.take(w1, x, axis=0, out=z.reshape(B, K * width), mode="clip")
        else:
            np.matmul(x, w1, out=z.reshape(B, K * width))
        z += params[1]
        acts, masks = [], []
        for l in range(1, self.num_layers):
            mask = tape.buf(f"m{l}", z.shape, bool) if tape is not None else np.empty(z.shape, bool)
            np.greater(z, 0.0, out=mask)                   # ReLU, keeping its derivative
            z *= mask
            acts.append(z)
            masks.append(mask)
            nxt = new(f"z{l}", (B, K, self.sizes[l + 1]))
            np.matmul(z.transpose(1, 0, 2), params[2 * l], out=nxt.transpose(1, 0, 2))
            nxt += params[2 * l + 1]
            z = nxt
        if tape is not None:
            tape.x, tape.acts, tape.masks = x, acts, masks
        return z.transpose(1, 0, 2)

    def backward(self, params: list[np.ndarray], tape: Tape, dout: np.ndarray) -> list:
        """Exact gradients of sum(dout * f_theta(x)) for the pass recorded on `tape`; dout is (K, B, out).

        The first weight's gradient is a `SparseRows` for index inputs, else dense.
        """
        K, B = dout.shape[0], dout.shape[1]
        grads: list = [None] * (2 * self.num_layers)
        d = dout                                              # (K, B, width), any strides
        for l in range(self.num_layers - 1, 0, -1):
            grads[2 * l + 1] = _sum_batch(d)
            inp = tape.acts[l - 1]                            # (B, K, in) post-ReLU
            grads[2 * l] = np.matmul(inp.transpose(1, 2, 0), d)
            prev = tape.buf(f"d{l - 1}", inp.shape, self.dtype)
            w = params[2 * l]
            w_t = tape.buf(f"wt{l}", (w.shape[0], w.shape[2], w.shape[1]), self.dtype)
            np.copyto(w_t, w.transpose(0, 2, 1))             # BLAS runs faster on a contiguous W^T
            np.matmul(d, w_t, out=prev.transpose(1, 0, 2))
            prev *= tape.masks[l - 1]                         # ReLU'
            d = prev.transpose(1, 0, 2)
        width = self.sizes[1]
        d_bk = d.transpose(1, 0, 2)                           # (B, K, width)
        grads[1] = _sum_batch(d)
        if self.index_input:
            grads[0] = row_sums(tape.x, d_bk)
        else:
            flat = np.ascontiguousarray(d_bk).reshape(B, K * width)
            grads[0] = (tape.x.T @ flat).reshape(self.sizes[0], K, width)
        return grads

    def forward_member(self, params: list[np.ndarray], k: int, x: np.ndarray) -> np.ndarray:
        """f_theta_k(x), (B, out), of member k alone: the same math as `forward`, for `act`."""
        w1 = params[0][:, k]
        h = w1[x] if self.index_input else x @ w1
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
    """Adam (Kingma & Ba, 2015) with bias correction, in place.

    For a `SparseRows` gradient only the rows seen in the minibatch update their
    moments and weights (the "lazy"/SparseAdam rule of TF and PyTorch), so the
    cost of a one-hot layer follows the batch, not N^2; other rows keep their
    weights and moments until they are seen again.
    """

    def __init__(self, params: list[np.ndarray], learning_rate: float,
                 b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        self.lr, self.b1, self.b2, self.eps = float(learning_rate), float(b1), float(b2), float(eps)
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.tmp = [np.empty_like(p) for p in params]
        self.t = 0

    def step(self, params: list[np.ndarray], grads: list) -> None:
        self.t += 1
        b1, b2, eps = self.b1, self.b2, self.eps
        # theta -= lr m_hat / (sqrt(v_hat) + eps), with m_hat = m / c1, v_hat = v / c2, written as
        # theta -= step * m / (sqrt(v) + eps * sqrt(c2)), step = lr sqrt(c2) / c1.
        c1, c2 = 1.0 - b1 ** self.t, 1.0 - b2 ** self.t
        step = self.lr * math.sqrt(c2) / c1
        eps_scaled = eps * math.sqrt(c2)
        for p, g, m, v, tmp in zip(params, grads, self.m, self.v, self.tmp):
            if isinstance(g, SparseRows):          # m, v, theta of the rows seen only
                rows, gv = g.rows, g.values
                mr, vr = m[rows], v[rows]
                mr -= gv                                # m <- b1 m + (1 - b1) g
                mr *= b1
                mr += gv
                gv *= gv
                vr -= gv                                # v <- b2 v + (1 - b2) g^2
                vr *= b2
                vr += gv
                m[rows] = mr
                v[rows] = vr
                np.sqrt(vr, out=vr)
                vr += eps_scaled
                mr /= vr
                mr *= step
                p[rows] -= mr
            else:
                m -= g
                m *= b1
                m += g
                np.multiply(g, g, out=tmp)
                v -= tmp
                v *= b2
                v += tmp
                np.sqrt(v, out=tmp)
                tmp += eps_scaled
                np.divide(m, tmp, out=tmp)
                tmp *= step
                p -= tmp


def make_optimizer(name: str, params: list[np.ndarray], learning_rate: float):
    if name == "adam":
        return Adam(params, learning_rate)
    if name == "sgd":
        return SGD(params, learning_rate)
    raise ValueError(f"unknown optimizer {name!r} (adam, sgd)")


class PriorEnsemble:
    """Q_k(x) = f(theta_k; x) + beta * f(theta0_k; x), k = 1..K, with a target copy theta^-.

    The randomized prior of Section 7.2.1 stands in for the regulariser R(theta; theta^p)
    of Algorithm 8: theta0_k is drawn like theta_k and never trained. For index
    inputs, beta * f(theta0; .) over all `input_dim` inputs is cached once (exact).
    Dense parameters live in one flat buffer (one optimiser pass); with index
    inputs the one-hot layer W_1 is updated and copied to the target by rows.
    """

    def __init__(self, net: EnsembleMLP, num_members: int, rng: np.random.Generator,
                 prior_scale: float = 1.0, optimizer: str = "adam", learning_rate: float = 1e-3):
        self.net, self.K = net, num_members
        self.prior_scale = float(prior_scale)
        self.sparse = net.index_input
        init = net.init(rng, num_members)
        first = 1 if self.sparse else 0
        self.flat, views = pack(init[first:])
        self.params = init[:first] + views
        self.target_flat, target_views = pack(init[first:])
        self.target_params = [p.copy() for p in init[:first]] + target_views
        self._flat_grad = np.empty_like(self.flat)
        self._dirty = np.zeros(net.sizes[0], bool) if self.sparse else None
        if self.sparse:
            self._target_cache = np.zeros((net.sizes[0], num_members, net.sizes[-1]), net.dtype)
            self._target_valid = np.zeros(net.sizes[0], bool)
        self.opt = make_optimizer(optimizer, self._opt_params(), learning_rate)
        self.prior_params = net.init(rng, num_members) if self.prior_scale else None
        self._prior_tape, self._fresh_tape = Tape(), Tape()
        self.prior_table = None                                # (input_dim, K, out) when cached
        if self.prior_params is not None and net.index_input:
            table = net.forward(self.prior_params, np.arange(net.sizes[0]))
            self.prior_table = np.ascontiguousarray(table.transpose(1, 0, 2)) * self.prior_scale

    def __setstate__(self, state: dict) -> None:
        """After pickle or deepcopy (which copy views as separate arrays), make the dense
        parameters views of the flat buffers again, or the optimiser would update stale copies."""
        self.__dict__.update(state)
        first = 1 if self.sparse else 0
        for flat, params in ((self.flat, self.params), (self.target_flat, self.target_params)):
            i = 0
            for j in range(first, len(params)):
                n = params[j].size
                params[j] = flat[i:i + n].reshape(params[j].shape)
                i += n

    def _opt_params(self) -> list[np.ndarray]:
        return [self.params[0], self.flat] if self.sparse else [self.flat]

    def prior(self, x: np.ndarray) -> np.ndarray | None:
        """beta * f(theta0; x), (K, B, out); None without a prior."""
        if self.prior_params is None:
            return None
        if self.prior_table is not None:
            return self.prior_table[x].transpose(1, 0, 2)
        out = self.net.forward(self.prior_params, x, self._prior_tape)   # scratch: no fresh 0.5 MB arrays
        out *= self.prior_scale
        return out

    def value(self, x: np.ndarray, target: bool = False, tape: Tape | None = None,
              prior: np.ndarray | None = None) -> np.ndarray:
        """(K, B, out) values of the online (or target) ensemble, prior included.

        `prior` may hand in beta * f(theta0; x) computed earlier (it never changes).
        Target values of index inputs are cached per input until the next `sync_target`
        (exact: theta^- does not change in between), so each is computed once per period.
        """
        if target and self.sparse:
            fresh = x[~self._target_valid[x]]
            if fresh.size:
                fresh = np.unique(fresh)
                v = self.net.forward(self.target_params, fresh, self._fresh_tape)
                p = self.prior(fresh)
                self._target_cache[fresh] = (v if p is None else v + p).transpose(1, 0, 2)
                self._target_valid[fresh] = True
            return self._target_cache[x].transpose(1, 0, 2)
        f = self.net.forward(self.target_params if target else self.params, x, tape)
        p = self.prior(x) if prior is None else prior
        return f if p is None else f + p

    def member_value(self, k: int, x: np.ndarray) -> np.ndarray:
        """(B, out) values of member k alone (online weights), for `act`."""
        f = self.net.forward_member(self.params, k, x)
        if self.prior_params is None:
            return f
        if self.prior_table is not None:
            return f + self.prior_table[x, k]
        return f + self.prior_scale * self.net.forward_member(self.prior_params, k, x)

    def apply_gradient(self, tape: Tape, dout: np.ndarray) -> None:
        """One optimiser step on sum(dout * Q(x)) for the pass recorded on `tape`."""
        grads = self.net.backward(self.params, tape, dout)
        first = 1 if self.sparse else 0
        np.concatenate([g.reshape(-1) for g in grads[first:]], out=self._flat_grad)
        if self.sparse:
            self._dirty[grads[0].rows] = True
            self.opt.step(self._opt_params(), [grads[0], self._flat_grad])
        else:
            self.opt.step(self._opt_params(), [self._flat_grad])

    def sync_target(self) -> None:
        """theta^- <- theta (the target network of the TD loss, eq. 5.7); only changed rows of W_1."""
        np.copyto(self.target_flat, self.flat)
        if self.sparse:
            self._target_valid[:] = False
            rows = np.flatnonzero(self._dirty)
            self.target_params[0][rows] = self.params[0][rows]
            self._dirty[rows] = False

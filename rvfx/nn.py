"""A small NumPy MLP for an ensemble of K members, computed together (Algorithm 8, Section 7.2.1).

Member k has weights W_l[k] and biases b_l[k]; the K members are stacked so that
each layer is one batched matmul, (K, B, fan_in) @ (K, fan_in, fan_out). Hidden
layers are ReLU, the output is linear, parameters start at their Glorot-uniform
draw. A one-hot input (deep-sea pixels) is given as integer indices: the first
layer is then a row gather of W_1 and its gradient a sparse set of summed rows
(`SparseRows`), so a one-hot input of width N^2 never costs a dense matmul.

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
    """Gradient of a stacked weight W (K, D, H) nonzero only on some rows of W.reshape(K*D, H)."""
    rows: np.ndarray     # unique, sorted flat row indices
    values: np.ndarray   # (len(rows), H) summed gradient of each row


def glorot_uniform(rng: np.random.Generator, num_members: int, sizes: Sequence[int],
                   dtype=np.float32) -> list[np.ndarray]:
    """[W_1, b_1, W_2, b_2, ...]: W_l ~ U(+-sqrt(6/(fan_in+fan_out))) per member, b_l = 0 (Glorot & Bengio, 2010)."""
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        params.append(rng.uniform(-limit, limit, (num_members, fan_in, fan_out)).astype(dtype))
        params.append(np.zeros((num_members, 1, fan_out), dtype))
    return params


def row_sums(rows: np.ndarray, values: np.ndarray, num_rows: int) -> SparseRows:
    """Sum the rows of `values` that share an index in `rows` (a one-hot layer's weight gradient).

    Two bincounts, linear in the batch: one finds the distinct rows, the second sums
    each (row, column) cell. Avoids np.add.at, which is an order of magnitude slower.
    """
    counts = np.bincount(rows, minlength=num_rows)
    uniq = np.flatnonzero(counts)
    pos = np.empty(num_rows, np.intp)
    pos[uniq] = np.arange(uniq.size)
    width = values.shape[1]
    keys = (pos[rows] * width)[:, None] + np.arange(width)
    sums = np.bincount(keys.ravel(), weights=values.ravel(), minlength=uniq.size * width)
    return SparseRows(uniq, sums.reshape(uniq.size, width).astype(values.dtype, copy=False))


class Tape:
    """Activations of one forward pass, kept for `backward`, in buffers reused across calls."""

    def __init__(self):
        self._bufs: dict[str, np.ndarray] = {}
        self.rows = self.x = None
        self.acts: list[np.ndarray] = []

    def buf(self, name: str, shape: tuple, dtype) -> np.ndarray:
        b = self._bufs.get(name)
        if b is None or b.shape != shape or b.dtype != dtype:
            b = self._bufs[name] = np.empty(shape, dtype)
        return b


class EnsembleMLP:
    """The architecture (layer sizes, input kind) of K stacked MLPs; parameters are passed in.

    Inputs are (K, B, input_dim) floats, or (K, B) integer indices when
    `index_input` (a one-hot vector of width input_dim). Output is (K, B, output_dim).
    A parameter list sliced to members [k:k+1] runs member k alone.
    """

    def __init__(self, input_dim: int, hidden: Sequence[int], output_dim: int,
                 index_input: bool = False, dtype=np.float32):
        self.sizes = [int(input_dim), *map(int, hidden), int(output_dim)]
        self.index_input = index_input
        self.dtype = np.dtype(dtype)
        self.num_layers = len(self.sizes) - 1
        self._offsets: dict[int, np.ndarray] = {}
        self._ones: dict[tuple, np.ndarray] = {}

    def init(self, rng: np.random.Generator, num_members: int) -> list[np.ndarray]:
        return glorot_uniform(rng, num_members, self.sizes, self.dtype)

    def _flat_rows(self, x: np.ndarray, num_members: int) -> np.ndarray:
        """Row of W_1.reshape(K*D, H) selected by index input x (K, B)."""
        off = self._offsets.get(num_members)
        if off is None:
            off = self._offsets[num_members] = np.arange(num_members, dtype=np.intp)[:, None] * self.sizes[0]
        return (x + off).ravel()

    def forward(self, params: list[np.ndarray], x: np.ndarray, tape: Tape | None = None) -> np.ndarray:
        """f_theta(x) for every member; with a `tape`, record activations for `backward`.

        The output lives in the tape's scratch: consume it before the tape's next use.
        """
        K, dt = params[0].shape[0], self.dtype
        B = x.shape[1]
        new = (lambda name, shape: tape.buf(name, shape, dt)) if tape is not None \
            else (lambda name, shape: np.empty(shape, dt))
        width = self.sizes[1]
        h = new("z0", (K, B, width))
        if self.index_input:
            rows = self._flat_rows(x, K)
            np.take(params[0].reshape(K * self.sizes[0], width), rows, axis=0,
                    out=h.reshape(K * B, width), mode="clip")
        else:
            rows = None
            np.matmul(x, params[0], out=h)
        h += params[1]
        acts = []
        for l in range(1, self.num_layers):
            np.maximum(h, 0.0, out=h)
            acts.append(h)
            z = new(f"z{l}", (K, B, self.sizes[l + 1]))
            np.matmul(h, params[2 * l], out=z)
            z += params[2 * l + 1]
            h = z
        if tape is not None:
            tape.rows, tape.x, tape.acts = rows, x, acts
        return h

    def _sum_batch(self, d: np.ndarray) -> np.ndarray:
        """Sum over the batch axis as a matmul with ones (several times faster than d.sum(axis=1))."""
        key = (d.shape[0], d.shape[1])
        ones = self._ones.get(key)
        if ones is None:
            ones = self._ones[key] = np.ones((key[0], 1, key[1]), self.dtype)
        return np.matmul(ones, d)

    def backward(self, params: list[np.ndarray], tape: Tape, dout: np.ndarray) -> list:
        """Exact gradients of sum(dout * f_theta(x)) wrt params, for the pass recorded on `tape`.

        The first weight's gradient is a `SparseRows` for index inputs, else dense.
        """
        K, B = dout.shape[0], dout.shape[1]
        grads: list = [None] * (2 * self.num_layers)
        d = dout
        for l in range(self.num_layers - 1, -1, -1):
            grads[2 * l + 1] = self._sum_batch(d)
            if l == 0:
                break
            inp = tape.acts[l - 1]
            grads[2 * l] = np.matmul(inp.transpose(0, 2, 1), d)
            prev = tape.buf(f"d{l - 1}", inp.shape, self.dtype)
            np.matmul(d, params[2 * l].transpose(0, 2, 1), out=prev)
            prev *= inp > 0.0        # ReLU'
            d = prev
        if self.index_input:
            width = self.sizes[1]
            grads[0] = row_sums(tape.rows, d.reshape(K * B, width), K * self.sizes[0])
        else:
            grads[0] = np.matmul(tape.x.transpose(0, 2, 1), d)
        return grads


class SGD:
    """theta <- theta - lr * grad; a `SparseRows` gradient touches only its rows (exact)."""

    def __init__(self, params: list[np.ndarray], learning_rate: float):
        self.lr = float(learning_rate)

    def step(self, params: list[np.ndarray], grads: list) -> None:
        lr = self.lr
        for p, g in zip(params, grads):
            if isinstance(g, SparseRows):
                flat = p.reshape(-1, p.shape[-1])
                flat[g.rows] -= lr * g.values
            else:
                g *= lr
                p -= g


class Adam:
    """Adam (Kingma & Ba, 2015) with bias correction, in place.

    For a `SparseRows` gradient only the rows seen in the minibatch update their
    moments and weights (the "lazy"/SparseAdam rule of TF and PyTorch): the cost
    of a one-hot layer stays proportional to the batch, not to N^2.
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
        step_size = self.lr / (1.0 - b1 ** self.t)
        v_scale = 1.0 / math.sqrt(1.0 - b2 ** self.t)
        for p, g, m, v, tmp in zip(params, grads, self.m, self.v, self.tmp):
            if isinstance(g, SparseRows):
                width = p.shape[-1]
                mf, vf, pf = m.reshape(-1, width), v.reshape(-1, width), p.reshape(-1, width)
                rows, gv = g.rows, g.values
                mr = mf[rows]
                mr *= b1
                mr += (1.0 - b1) * gv
                mf[rows] = mr
                vr = vf[rows]
                vr *= b2
                gv *= gv
                gv *= 1.0 - b2
                vr += gv
                vf[rows] = vr
                np.sqrt(vr, out=vr)
                vr *= v_scale
                vr += eps
                mr /= vr
                mr *= step_size
                pf[rows] -= mr
            else:
                m *= b1
                np.multiply(g, 1.0 - b1, out=tmp)
                m += tmp
                v *= b2
                np.multiply(g, g, out=tmp)
                tmp *= 1.0 - b2
                v += tmp
                np.sqrt(v, out=tmp)
                tmp *= v_scale
                tmp += eps
                np.divide(m, tmp, out=tmp)
                tmp *= step_size
                p -= tmp


def make_optimizer(name: str, params: list[np.ndarray], learning_rate: float):
    if name == "adam":
        return Adam(params, learning_rate)
    if name == "sgd":
        return SGD(params, learning_rate)
    raise ValueError(f"unknown optimizer {name!r} (adam, sgd)")


class PriorEnsemble:
    """Q_k(x) = f(theta_k; x) + beta * f(theta0_k; x), k = 1..K, with a target copy theta^-.

    The randomized prior of Section 7.2.1 replaces the regulariser R(theta; theta^p)
    of Algorithm 8: theta0_k is drawn like theta_k and never trained. For index
    inputs, beta * f(theta0; .) over all input_dim inputs is cached once (exact).
    """

    def __init__(self, net: EnsembleMLP, num_members: int, rng: np.random.Generator,
                 prior_scale: float = 1.0, optimizer: str = "adam", learning_rate: float = 1e-3):
        self.net, self.K = net, num_members
        self.prior_scale = float(prior_scale)
        self.params = net.init(rng, num_members)
        self.prior_params = net.init(rng, num_members) if self.prior_scale else None
        self.target_params = [p.copy() for p in self.params]
        self.opt = make_optimizer(optimizer, self.params, learning_rate)
        self.prior_table = None
        if self.prior_params is not None and net.index_input:
            everything = np.broadcast_to(np.arange(net.sizes[0]), (num_members, net.sizes[0]))
            self.prior_table = net.forward(self.prior_params, everything) * self.prior_scale
        self._karange = np.arange(num_members)[:, None]

    def prior(self, x: np.ndarray, members: slice | None = None) -> np.ndarray | None:
        """beta * f(theta0; x) for all members (or `members`), None without a prior."""
        if self.prior_params is None:
            return None
        if self.prior_table is not None:
            table = self.prior_table if members is None else self.prior_table[members]
            k = self._karange if members is None else np.arange(table.shape[0])[:, None]
            return table[k, x]
        pp = self.prior_params if members is None else [p[members] for p in self.prior_params]
        out = self.net.forward(pp, x)
        out *= self.prior_scale
        return out

    def value(self, x: np.ndarray, target: bool = False, tape: Tape | None = None) -> np.ndarray:
        """(K, B, A) values of the online (or target) ensemble including the prior."""
        f = self.net.forward(self.target_params if target else self.params, x, tape)
        p = self.prior(x)
        return f if p is None else f + p

    def member_value(self, k: int, x: np.ndarray) -> np.ndarray:
        """(B, A) values of member k alone, for `act`."""
        sl = slice(k, k + 1)
        f = self.net.forward([p[sl] for p in self.params], x[None])
        p = self.prior(x[None], sl)
        return (f if p is None else f + p)[0]

    def apply_gradient(self, tape: Tape, dout: np.ndarray) -> None:
        """One optimiser step on sum(dout * Q(x)) for the pass recorded on `tape`."""
        self.opt.step(self.params, self.net.backward(self.params, tape, dout))

    def sync_target(self) -> None:
        for t, p in zip(self.target_params, self.params):
            np.copyto(t, p)

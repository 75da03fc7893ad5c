"""The optimisers of the SGD steps (Algorithm 8): SGD and Adam, in place, lazy on sparse rows.

Dense parameters are updated as one flat buffer (`pack`): one pass per step instead of one call
per small tensor. A `SparseRows` gradient updates only its rows.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from rvfx.agents.neural import backend, fused
from rvfx.agents.neural.sparse import SparseRows


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
    weights and moments until they are seen again, in one pass over those rows in place
    (`adam_rows`). The passes are `kernels`' (`backend`; the process's choice unless given).
    """

    def __init__(self, params: list[np.ndarray], learning_rate: float,
                 b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, kernels=None):
        self.lr, self.b1, self.b2, self.eps = float(learning_rate), float(b1), float(b2), float(eps)
        self.kernels = kernels if kernels is not None else backend.choose()
        self.m = [np.zeros_like(p) for p in params]      # m / (1 - b1)
        self.v = [np.zeros_like(p) for p in params]      # v / (1 - b2)
        self.t = 0

    def constants(self, dtype, step: float, eps: float) -> tuple:
        """(b1, b2, step, eps, 1) as the `adam` pass reads them: b1 and step in the dtype, then float64,
        b2 and eps in the dtype (as `v *= b2`, `g += eps` read a Python float)."""
        t = np.dtype(dtype).type
        return fused.WIDE(t(self.b1)), t(self.b2), fused.WIDE(t(step)), t(eps), 1.0

    def _update(self, p, g, m, v, step: float, eps: float) -> None:
        """theta -= step * m~ / (sqrt(v~) + eps) after the moment updates, all in place, in one pass
        (the kernels' `adam`); g may be overwritten.

        The products by b1 and by step and the quotient by sqrt(v~) + eps run in float64, rounded once
        to p's dtype: float32's own results bit for bit (a product of two float32s is exact in float64,
        and a quotient rounded to 53 bits then to 24 is rounded correctly, 53 >= 2 x 24 + 2: Figueroa
        1995), without x86's slow path on the subnormal m~ that a weight whose gradient stays 0 reaches
        (b1^t; ~10% of them on cartpole, where it was 85% of Adam). The compiled pass divides in float32
        (the same quotient, a quarter of the cost) and keeps subnormal m~ off the division (`kernels.adam`).
        """
        c = self.constants(p.dtype, step, eps)
        if p.flags.c_contiguous and m.flags.c_contiguous and v.flags.c_contiguous:
            self.kernels.adam(p.reshape(-1), g.reshape(-1), m.reshape(-1), v.reshape(-1), *c)
        else:                                           # strided views: the NumPy passes, in place
            fused.adam(p, g, m, v, *c)

    def step_sizes(self, t: int) -> tuple[float, float]:
        """(step size, epsilon) of the t-th step for the unnormalised moments."""
        b1, b2 = self.b1, self.b2
        # theta -= lr m_hat / (sqrt(v_hat) + eps), m_hat = (1 - b1) m~ / c1, v_hat = (1 - b2) v~ / c2, is
        # theta -= step * m~ / (sqrt(v~) + eps * r), r = sqrt(c2 / (1 - b2)), step = lr (1 - b1) r / c1.
        c1, c2 = 1.0 - b1 ** t, 1.0 - b2 ** t
        r = math.sqrt(c2 / (1.0 - b2))
        return self.lr * (1.0 - b1) * r / c1, self.eps * r

    def advance(self) -> tuple[float, float]:
        """Count a step and return its `step_sizes`."""
        self.t += 1
        return self.step_sizes(self.t)

    def step(self, params: list[np.ndarray], grads: list) -> None:
        step, eps_scaled = self.advance()
        for p, g, m, v in zip(params, grads, self.m, self.v):
            if not isinstance(g, SparseRows):
                self._update(p, g, m, v, step, eps_scaled)
                continue
            rows, gv = g.rows, g.values                   # m, v, theta of the rows seen only
            if rows.shape[0] == 0:
                continue
            c = self.constants(p.dtype, step, eps_scaled)
            if p.flags.c_contiguous and m.flags.c_contiguous and v.flags.c_contiguous:
                n = p.shape[0]                            # one pass over the rows, in place
                self.kernels.adam_rows(p.reshape(n, -1), rows, gv.reshape(rows.shape[0], -1), m.reshape(n, -1),
                                       v.reshape(n, -1), *c)
            else:
                fused.adam_rows(p, rows, gv, m, v, *c)


def make_optimizer(name: str, params: list[np.ndarray], learning_rate: float, kernels=None):
    if name == "adam":
        return Adam(params, learning_rate, kernels=kernels)
    if name == "sgd":
        return SGD(params, learning_rate)
    raise ValueError(f"unknown optimizer {name!r} (adam, sgd)")

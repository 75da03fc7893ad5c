"""`PriorEnsemble`: K value networks with randomized prior functions and a target copy (Section 7.2.1).

Q_k = f(theta_k) + beta * f(theta0_k) (Osband et al., 2018), with theta0_k held at its initial
draw (`rvfx.agents.neural.mlp.INITS`), and the caches that make its keyed inputs cheap.
"""
from __future__ import annotations

import numpy as np

from rvfx.agents.neural.mlp import EnsembleMLP, Tape
from rvfx.agents.neural.optimisers import make_optimizer, pack
from rvfx.agents.neural.sparse import BlockInput


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
        self.opt = make_optimizer(optimizer, self._opt_params(), learning_rate, net.kernels)
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
        out = self.net.forward(self.prior_params, x, self._prior_tape, grad=False)   # scratch: no fresh 0.5 MB arrays
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
                fresh, first, _ = self.net.kernels.distinct(keys[miss])
                xf = fresh if self.net.index_input else x.take(np.flatnonzero(miss)[first])
                v = self.net.forward(self.target_params, xf, self._fresh_tape if tape is None else tape, grad=False)
                p = self.prior(xf)
                self._target_cache[fresh] = (v if p is None else v + p).transpose(1, 0, 2)
                self._target_valid[fresh] = True
            return self._target_cache[keys].transpose(1, 0, 2)
        f = self.net.forward(self.target_params if target else self.params, x, tape, grad=not target)
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
            n = self._dirty.shape[0]
            self.net.kernels.copy_rows(self.target_params[0].reshape(n, -1), self.params[0].reshape(n, -1), rows)
            self._dirty[rows] = False

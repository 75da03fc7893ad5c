"""Linear `learn_lsvi`, `learn_grlsvi` and `learn_brlsvi` on deep sea (Algorithms 3-4, Section 7.1.2).

Q_h(s, a) = phi[h, s, a] . theta_h with M features per row, each nonzero on one
row only, so the D = N*M regression of Algorithm 4 splits into one M x M system
per row, solved backwards from the last row (eq. 5.4):

    theta_h = (X_h^T X_h / v + I / lambda)^-1 (X_h^T (y_h + z_h) / v + theta_hat_h / lambda),
    y_t = r_t + max_a Q_{h+1}(s'_t, a).

Sufficient statistics per row: the Gram matrix X_h^T X_h, X_h^T r, and
F_h = sum_t phi_t e(s'_t)^T, so X_h^T y = X_h^T r + F_h V_{h+1} needs counts of next
states, not the replayed transitions. The Gaussian data term X_h^T z ~ N(0, v X_h^T X_h)
is drawn exactly: features depend on the (s, a) pair only, so
X_h^T X_h = Phi_h^T diag(n_h) Phi_h and Phi_h^T (sqrt(v n_h) * w), w ~ N(0, I_{2N}), has
that law whatever the rank of the Gram matrix. An episode therefore costs
O(N (M^3 + N M)) for `none`/`gaussian`, whatever the history; the bootstrap
(eq. 5.6) resamples every stored transition and costs O(history) by nature.

With one-hot features (`basis="one_hot"`) every quantity and every random draw,
in the same order, coincides with `TabularRLSVI`: same seed, same Q table.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from rvfx.agents.tabular.base import ActRule, QPolicy, TransitionStore, act_fields
from rvfx.core.backward_induction import backward_induction
from rvfx.core.expressions import Expr, evaluate
from rvfx.envs.features import misspecify, one_hot_basis

Perturbation = Literal["none", "gaussian", "bootstrap"]
FOLD_GRAMS_AT_ONCE = 32     # up to this M, a batch's Gram updates are one (k, M, M) product


def _singular(err, flag):
    raise np.linalg.LinAlgError("Singular matrix")


# np.linalg.solve's floating-point handling: a singular system raises, over/underflow is LAPACK's own
SOLVE_ERRSTATE = {"call": _singular, "invalid": "call", "over": "ignore", "divide": "ignore", "under": "ignore"}
try:        # the gufunc np.linalg.solve calls for one right-hand side, without its ~5 us of checks per call
    from numpy.linalg._umath_linalg import solve1 as _solve1
except ImportError:         # pragma: no cover - a NumPy without it: the public function, same LAPACK call
    _solve1 = None


def solve_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out = np.linalg.solve(a, b) for float64 a (M, M) and b (M,), the same bits (the same gufunc,
    LAPACK's dgesv), inside `np.errstate(**SOLVE_ERRSTATE)`: the linear backward pass calls it N
    times an episode, where np.linalg.solve's argument checks cost as much as a small solve."""
    if _solve1 is None:
        out[...] = np.linalg.solve(a, b)
    else:
        _solve1(a, b, out=out, signature="dd->d")


@dataclass(frozen=True)
class LinearRLSVIParams:
    v: Expr = field(default=0.01, metadata={"names": ("H", "M"), "gt": 0.0,
                                            "doc": "noise variance v (paper, Sec. 7.1.2: 0.01)"})
    lam: Expr = field(default=100.0, metadata={"names": ("H", "M", "v"), "gt": 0.0,
                                               "doc": "prior variance lambda (paper, Sec. 7.1.2: 100)"})
    prior_mean: Expr = field(default=0.0, metadata={"names": ("H", "M"),
                                                     "doc": "prior mean theta-bar, every component (paper: 0)"})
    M: int = field(default=10, metadata={"min": 1, "doc": "features per row (ignored for one_hot: 2N)"})
    basis: Literal["random_unit", "orthonormal", "one_hot"] = field(
        default="random_unit",
        metadata={"doc": "coherent basis reading: random unit vectors (default) or orthonormal; "
                         "one_hot = tabular"})
    psi: float = field(default=0.0, metadata={"min": 0.0,
                                              "doc": "misspecification: variance of eta_d added to phi_d (Sec. 7.1.3)"})
    act: ActRule = act_fields()["act"]
    epsilon: float = act_fields()["epsilon"]
    temperature: float = act_fields()["temperature"]


def linear_features(env, params: LinearRLSVIParams, rng: np.random.Generator) -> np.ndarray:
    """Feature tensor (H, S, A, M) for `params`: the environment's basis (`LinearFeatures`, e.g. deep
    sea's coherent basis) or the one-hot basis, then phi + eta if psi > 0 (Section 7.1.3)."""
    if params.basis == "one_hot":
        phi = one_hot_basis(env)
    else:
        phi = env.linear_features(params.M, rng, params.basis)
    return misspecify(phi, params.psi, rng) if params.psi > 0 else phi


def backward_solve(phi_rows: np.ndarray, gram: np.ndarray, targets: np.ndarray, next_sum: np.ndarray,
                   prior: np.ndarray, v: float, lam: float, num_actions: int):
    """The H regressions of Algorithm 3/4, one M x M system per row, last row first (eq. 5.4).

    phi_rows (H, S*A, M); gram (H, M, M) = X_h^T X_h; targets (H, M) = X_h^T (r + z);
    next_sum (H, M, S) = sum phi_t e(s'_t)^T; prior (H, M) = theta_hat. Returns theta
    (H, M) and Q (H, S*A).

    Each row's system is built in one reused M x M buffer (per row, not as (H, M, M) temporaries:
    at M = 160 those leave the cache) and solved by `solve_into`, LAPACK's gesv as np.linalg.solve
    calls it.
    """
    H, SA, M = phi_rows.shape
    ridge = np.eye(M) / lam
    prior_term = prior / lam
    theta = np.empty((H, M))
    system = np.empty((M, M))

    def backup(h, v_next):
        rhs = (targets[h] + next_sum[h] @ v_next) / v + prior_term[h]
        np.divide(gram[h], v, out=system)
        np.add(system, ridge, out=system)
        solve_into(system, rhs, theta[h])
        return (phi_rows[h] @ theta[h]).reshape(-1, num_actions)

    with np.errstate(**SOLVE_ERRSTATE):
        q = backward_induction(backup, H, np.zeros(next_sum.shape[2]))
    return theta, q.reshape(H, SA)


class LinearRLSVI(QPolicy):
    """LSVI (`perturbation="none"`), `learn_grlsvi` (`"gaussian"`) or `learn_brlsvi` (`"bootstrap"`)
    with a linear value function on a layered environment (deep sea); acts as the tabular agents
    do (`QPolicy`) on the Q table the features give, states (h, s).

    The feature tensor (H, S, A, M) is drawn from `rng` at construction (`linear_features`),
    or given as `features` (then `params.M`/`basis`/`psi` are unused).
    """

    def __init__(self, env, rng: np.random.Generator, params: LinearRLSVIParams,
                 perturbation: Perturbation, features: np.ndarray | None = None):
        if perturbation not in ("none", "gaussian", "bootstrap"):
            raise ValueError(f"perturbation must be none, gaussian or bootstrap, got {perturbation!r}")
        super().__init__(env.shape, rng, params.act, params.epsilon, params.temperature)
        self.params = params
        self.perturbation = perturbation
        phi = linear_features(env, params, rng) if features is None else np.asarray(features, float)
        if phi.shape[:3] != (self.H, self.S, self.A):
            raise ValueError(f"features must have shape {(self.H, self.S, self.A)} + (M,), got {phi.shape}")
        self.phi = phi
        self.M = M = phi.shape[3]
        self._phi_rows = phi.reshape(self.H, self.S * self.A, M)
        names = {"H": self.H, "M": M}
        self.v = evaluate(params.v, names)
        self.lam = evaluate(params.lam, {**names, "v": self.v})
        self.prior_mean = evaluate(params.prior_mean, names)
        if not (self.v > 0 and self.lam > 0):
            raise ValueError(f"v and lam must be > 0, got v={self.v}, lam={self.lam}")
        # Sufficient statistics, per row h (none/gaussian: the bootstrap fits on resamples of its store)
        self.gram = np.zeros((self.H, M, M))              # X_h^T X_h
        self.target_sum = np.zeros((self.H, M))           # X_h^T r
        self.next_sum = np.zeros((self.H, M, self.S))     # sum_t phi_t e(s'_t)^T
        self.count = np.zeros((self.H, self.S, self.A))   # n_h(s, a): square root of the Gram
        self._pending: list[tuple] = []                     # (h, s, a, r, s' or -1) not yet folded in
        self._pending_row = np.zeros(self.H, bool)        # rows with a pending transition
        self.steps = 0
        # resampling needs every transition
        self.store = TransitionStore(env.shape) if perturbation == "bootstrap" else None
        self.theta = np.zeros((self.H, M))
        self.set_q(np.zeros((self.H, self.S, self.A)))

    def update_buffer(self, transition) -> None:
        """Record one transition. `bootstrap` only stores it (it fits on resamples of the store);
        `none`/`gaussian` fold it into the row statistics, O(M^2) and independent of the history, a
        batch at a time (`_fold`): at the episode's end, before a fit, or when its row comes again."""
        self.steps += 1
        if self.store is not None:
            self.store.add(transition)
            return
        (h, s), a = transition.old_state, transition.action
        if self._pending_row[h]:
            self._fold()
        self._pending.append((h, s, a, transition.reward,
                              -1 if transition.new_state is None else transition.new_state[1]))
        self._pending_row[h] = True
        if transition.ends_episode:
            self._fold()

    def _fold(self) -> None:
        """Add the pending transitions to their rows' statistics, one row each, so every entry gets the
        sum it would get one transition at a time (gram[h] + x x^T, target_sum[h] + r x, ...)."""
        if not self._pending:
            return
        h, s, a, r, nxt = (np.array(column) for column in zip(*self._pending))
        self._pending.clear()
        self._pending_row[h] = False
        x = self._phi_rows[h, s * self.A + a]                     # (k, M): one row of phi per transition
        if self.M <= FOLD_GRAMS_AT_ONCE:
            self.gram[h] += x[:, :, None] * x[:, None, :]
        else:                   # a (k, M, M) temporary would leave the cache: one product at a time
            for i, row in enumerate(h.tolist()):
                self.gram[row] += x[i, :, None] * x[i]
        self.target_sum[h] += r[:, None] * x
        has_next = nxt >= 0
        self.next_sum[h[has_next], :, nxt[has_next]] += x[has_next]
        self.count[h, s, a] += 1.0

    def _bootstrap_statistics(self):
        """Row statistics of a with-replacement resample of all stored transitions (eq. 5.6)."""
        count, reward_sum, next_count = self.store.bootstrap_statistics(self.rng)
        count = count.reshape(self.H, self.S * self.A)
        reward_sum = reward_sum.reshape(self.H, self.S * self.A)
        next_count = next_count.reshape(self.H, self.S * self.A, self.S)
        phi_t = self._phi_rows.transpose(0, 2, 1)                     # (H, M, S*A)
        gram = (phi_t * count[:, None, :]) @ self._phi_rows
        targets = (reward_sum[:, None, :] @ self._phi_rows)[:, 0]
        return gram, targets, phi_t @ next_count

    def learn_from_buffer(self) -> None:
        """`learn_lsvi` / `learn_grlsvi` / `learn_brlsvi` (Algorithms 3-4, eqs. 5.4-5.6)."""
        self._fold()
        if self.perturbation == "bootstrap":
            gram, targets, next_sum = self._bootstrap_statistics()
        else:
            gram, targets, next_sum = self.gram, self.target_sum.copy(), self.next_sum
        shape = (self.H, self.M)
        if self.perturbation == "none":
            prior = np.full(shape, self.prior_mean)                              # prior.mean()
        else:
            prior = self.prior_mean + np.sqrt(self.lam) * self.rng.standard_normal(shape)  # prior.sample()
        if self.perturbation == "gaussian":                                      # X^T z ~ N(0, v X^T X)
            root = np.sqrt(self.v * self.count) * self.rng.standard_normal(self.count.shape)
            targets += (root.reshape(self.H, 1, -1) @ self._phi_rows)[:, 0]
        self.theta, q = backward_solve(self._phi_rows, gram, targets, next_sum, prior,
                                       self.v, self.lam, self.A)
        self.set_q(q.reshape(self.H, self.S, self.A))

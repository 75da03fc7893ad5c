"""An instrument for the optimism step of Theorem 1's proof (Corollary "optimism of RLSVI",
eq. "optimism in expectation"), so that the check is an experiment: seeded, resumable, tabled.

`OptimismProbe` is tabular `learn_grlsvi` (with the spec's v, lambda, theta-bar: Theorem 1's
v = 3H^2, v/lambda = beta, theta-bar = H 1) on a `RandomMDP`. It acts exactly as `TabularRLSVI`
and leaves two per-run tables:

- `optimism`: per episode l, max_a Q_{l,0}(x_0, a) of the value function sampled for that
  episode, and V*_{M,0}(x_0) of the MDP M it acts on (read from the environment, as the cartpole
  reference controller reads its state: an instrument, not a learner);
- `posterior` (with `samples` > 0), given the run's history H: the mean and standard error of
  max_a Q_{l,0}(x_0, a) over `samples` resamples of learn_grlsvi on the same buffer, and of
  V*_{M,0}(x_0) over `samples` MDPs drawn from the Dirichlet posterior of Assumption 2 given H.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rvfx.agents.tabular.rlsvi import RLSVIParams, TabularRLSVI
from rvfx.core.backward_induction import backward_induction
from rvfx.envs.random_mdp import RandomMDP, RandomMDPParams


@dataclass(frozen=True)
class OptimismParams(RLSVIParams):
    samples: int = field(default=1000, metadata={
        "min": 0, "doc": "resamples of learn_grlsvi and posterior MDPs given the final history (0: no table)"})


class OutcomeCounts:
    """Counts of outcomes (r, x') per (h, x, a): the sufficient statistic of the Dirichlet posterior."""

    def __init__(self, shape):
        H, X, A = shape
        self.shape = shape
        self.trans = np.zeros((max(H - 1, 0), X, A, 2 * X))
        self.last = np.zeros((X, A, 2))

    def add(self, tr) -> None:
        if tr.old_state is None:            # the reset: no outcome yet
            return
        (h, x), a, r = tr.old_state, tr.action, int(tr.reward)
        if tr.new_state is None:
            self.last[x, a, r] += 1
        else:
            self.trans[h, x, a, r * self.shape[1] + tr.new_state[1]] += 1


def posterior_optimal_values(counts: OutcomeCounts, params: RandomMDPParams, samples: int,
                             rng: np.random.Generator) -> np.ndarray:
    """V*_{M,0}(x0) for `samples` MDPs M drawn from the Dirichlet posterior given `counts`."""
    H, X, A = counts.shape
    beta = params.beta
    alpha = beta / (2 * X) + counts.trans                                  # eq. p_rlsvi
    g = rng.standard_gamma(np.broadcast_to(alpha, (samples,) + alpha.shape))
    P = (g / g.sum(axis=-1, keepdims=True)).reshape(samples, H - 1, X, A, 2, X)
    a1 = beta / 2 + counts.last[..., 1]
    a0 = beta / 2 + counts.last[..., 0]
    q_last = rng.beta(np.broadcast_to(a1, (samples, X, A)), np.broadcast_to(a0, (samples, X, A)))

    def backup(h, v):                                                      # v: (samples, X)
        if h == H - 1:
            return q_last
        return P[:, h, :, :, 1, :].sum(axis=-1) + np.einsum("ksat,kt->ksa", P[:, h].sum(axis=3), v)

    q = backward_induction(backup, H, np.zeros((samples, X)))
    return q[0].max(axis=-1)[:, params.start_state]


class OptimismProbe(TabularRLSVI):
    """`learn_grlsvi` that records its sampled value of the start state each episode; see the module."""

    def __init__(self, env: RandomMDP, rng: np.random.Generator, params: OptimismParams):
        if not isinstance(env, RandomMDP):
            raise TypeError("the optimism probe needs a random_mdp environment (the Dirichlet prior of Assumption 2)")
        super().__init__(env.shape, rng, params, "gaussian")
        self.samples = params.samples
        self.env_params = env.params
        self.optimal_value = env.optimal_return
        self.counts = OutcomeCounts(env.shape)
        self.start_values: list[float] = []

    def start_value(self) -> float:
        """max_a Q_0(x_0, a) of the current sampled value function."""
        return float(self.q[0, self.env_params.start_state].max())

    def learn_from_buffer(self) -> None:
        super().learn_from_buffer()
        self.start_values.append(self.start_value())

    def update_buffer(self, transition) -> None:
        super().update_buffer(transition)
        self.counts.add(transition)

    def run_tables(self) -> dict:
        values = np.array(self.start_values)
        tables = {"optimism": pd.DataFrame({"episode": np.arange(1, len(values) + 1), "start_value": values,
                                            "optimal_value": self.optimal_value,
                                            "gap": values - self.optimal_value})}
        if self.samples:
            n = self.samples
            q = np.empty(n)
            for k in range(n):                       # resample learn_grlsvi on the same buffer
                TabularRLSVI.learn_from_buffer(self)
                q[k] = self.start_value()
            v = posterior_optimal_values(self.counts, self.env_params, n, self.rng)
            tables["posterior"] = pd.DataFrame([{
                "history": len(values), "samples": n, "q_mean": q.mean(), "q_se": q.std() / math.sqrt(n),
                "v_mean": v.mean(), "v_se": v.std() / math.sqrt(n), "optimal_value": self.optimal_value}])
        return tables

"""An instrument for Fig. 2 (Section 5.2.2, fig:rlsvi), so that the figure is an experiment: seeded,
resumable, tabled.

`UncertaintyProbe` samples Q_h(s, a), h = 1..H, from tabular `learn_grlsvi` with lambda = infinity
on the figure's data set for the example MDP (rvfx.envs.four_state): one observation of
(4, down) (r = 0, s' = 4) and `n_big` ("virtually infinite") observations of every other pair,
whose empirical distribution is then P itself. Q_{h+1}(s, a) is the mean over the n(s, a)
observations of (r + max_a' Q_h(s', a') + z), so for the n_big-observed pairs the mean noise is
N(0, v / n_big) and for (4, down) N(0, v); `shared_noise` draws z once for all iterations
(Algorithm 4), else per h. It acts "up" throughout (the example has no reward to learn) and
leaves one per-run table, `q_variance`: per (h, s, a) the mean and variance of its `samples`
samples.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rvfx.core.backward_induction import backward_induction
from rvfx.envs.four_state import DOWN, UP, FourStateExample


@dataclass(frozen=True)
class UncertaintyParams:
    v: float = field(default=1.0, metadata={"gt": 0.0, "doc": "noise variance v"})
    samples: int = field(default=1000, metadata={"min": 2, "doc": "samples of Q drawn in the run"})
    n_big: float = field(default=1e6, metadata={
        "min": 2.0, "doc": "observations of every pair but (4, down) ('virtually infinite')"})
    shared_noise: bool = field(default=True, metadata={
        "doc": "the same z in every iteration (Algorithm 4); false redraws it per h"})


def grlsvi_q_samples(P: np.ndarray, R: np.ndarray, H: int, params: UncertaintyParams,
                     rng: np.random.Generator) -> np.ndarray:
    """`params.samples` samples of Q_h(s, a) on the figure's data set (see the module), as an
    array (samples, H, S, A) whose index h-1 holds Q_h."""
    S, A = R.shape
    n = np.full((S, A), params.n_big)
    n[S - 1, DOWN] = 1.0
    exact = n > 1                                    # empirical distribution = P exactly
    obs_next = np.zeros((S, A, S))
    obs_next[S - 1, DOWN, S - 1] = 1.0               # the one observed transition: 4 -> 4
    P_hat = np.where(exact[..., None], P, obs_next)
    sd = np.sqrt(params.v / n)
    noise = [rng.standard_normal((params.samples, S, A)) * sd]

    def backup(layer, v_next):                       # layer H-1 is computed first: it holds Q_1
        if not params.shared_noise and layer < H - 1:
            noise.append(rng.standard_normal((params.samples, S, A)) * sd)
        return R + np.einsum("sat,kt->ksa", P_hat, v_next) + noise[-1]

    q = backward_induction(backup, H, np.zeros((params.samples, S)))
    return np.ascontiguousarray(q[::-1].transpose(1, 0, 2, 3))


def pair_name(s: int, a: int) -> str:
    """The paper's name of a state-action pair: "(4, down)" for s = 3 (0-based), a = DOWN."""
    return f"({s + 1}, {'up' if a == UP else 'down'})"


class UncertaintyProbe:
    """Samples of learn_grlsvi's Q on Fig. 2's data set; see the module."""

    def __init__(self, env: FourStateExample, rng: np.random.Generator, params: UncertaintyParams):
        self.env, self.rng, self.params = env, rng, params

    def act(self, state) -> int:
        return UP

    def update_buffer(self, transition) -> None:
        pass

    def learn_from_buffer(self) -> None:
        pass

    def run_tables(self) -> dict:
        q = grlsvi_q_samples(self.env.P, self.env.R, self.env.shape[0], self.params, self.rng)
        H, S, A = q.shape[1:]
        h, s, a = (x.ravel() for x in np.meshgrid(np.arange(H), np.arange(S), np.arange(A), indexing="ij"))
        return {"q_variance": pd.DataFrame({
            "h": h + 1, "state": s + 1, "action": np.where(a == UP, "up", "down"),
            "pair": [pair_name(i, j) for i, j in zip(s, a)], "samples": self.params.samples,
            "mean": q.mean(axis=0).ravel(), "variance": q.var(axis=0, ddof=1).ravel()})}

"""Tabular `learn_lsvi`, `learn_grlsvi` and `learn_brlsvi` (Algorithms 3-4, eqs. 5.4-5.6).

With one parameter per (h, s, a), each regression of Algorithm 4 decouples into
a scalar Bayesian update per state-action pair (eq. 5.4 with X^T X = n):

    Q_h(s,a) = (sum of perturbed targets / v + prior sample / lambda) / (n / v + 1 / lambda)

The Gaussian perturbation of the n targets enters only through its sum, drawn
exactly as N(0, n v); so the cost per episode is O(H S A S), whatever the history.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from rvfx.agents.tabular import ActRule, TabularAgent, act_fields
from rvfx.params import Expr, evaluate


@dataclass(frozen=True)
class RLSVIParams:
    v: Expr = field(default="H**2/25", metadata={"names": ("H",), "doc": "noise variance v (paper: H^2/25)"})
    lam: Expr = field(default="v", metadata={"names": ("H", "v"), "doc": "prior variance lambda (paper: v)"})
    prior_mean: Expr = field(default=0.0, metadata={"names": ("H",), "doc": "prior mean theta-bar (paper: 0)"})
    act: ActRule = act_fields()["act"]
    epsilon: float = act_fields()["epsilon"]
    temperature: float = act_fields()["temperature"]


class TabularRLSVI(TabularAgent):
    """LSVI (`perturbation="none"`), RLSVI with Gaussian noise, or with the bootstrap."""

    def __init__(self, shape, rng, params: RLSVIParams,
                 perturbation: Literal["none", "gaussian", "bootstrap"]):
        super().__init__(shape, rng, params.act, params.epsilon, params.temperature)
        H = shape[0]
        self.v = evaluate(params.v, {"H": H})
        self.lam = evaluate(params.lam, {"H": H, "v": self.v})
        self.prior_mean = evaluate(params.prior_mean, {"H": H})
        self.perturbation = perturbation
        if perturbation == "bootstrap":   # the bootstrap resamples transitions, so keep them
            self._data = np.empty((1024, 3))   # flat (h,s,a) index, reward, next flat index
            self._n = 0

    def update_buffer(self, transition) -> None:
        super().update_buffer(transition)
        if self.perturbation == "bootstrap":
            (h, s), a = transition.old_state, transition.action
            nxt = -1 if transition.new_state is None else (h * self.S + s) * self.A * self.S \
                + a * self.S + transition.new_state[1]
            if self._n == len(self._data):
                self._data = np.concatenate([self._data, np.empty_like(self._data)])
            self._data[self._n] = ((h * self.S + s) * self.A + a, transition.reward, nxt)
            self._n += 1

    def _bootstrap_statistics(self):
        """Counts and sums of a with-replacement resample of all stored transitions (eq. 5.6)."""
        n = self._n
        data = self._data[:n]
        w = np.bincount(self.rng.integers(0, n, n), minlength=n).astype(float) if n else np.zeros(0)
        size = self.H * self.S * self.A
        idx = data[:, 0].astype(np.int64)
        count = np.bincount(idx, weights=w, minlength=size).reshape(self.count.shape)
        reward_sum = np.bincount(idx, weights=w * data[:, 1], minlength=size).reshape(self.count.shape)
        has_next = data[:, 2] >= 0
        next_count = np.bincount(data[has_next, 2].astype(np.int64), weights=w[has_next],
                                 minlength=size * self.S).reshape(self.next_count.shape)
        return count, reward_sum, next_count

    def learn_from_buffer(self) -> None:
        if self.perturbation == "bootstrap":
            count, reward_sum, next_count = self._bootstrap_statistics()
        else:
            count, reward_sum, next_count = self.count, self.reward_sum, self.next_count
        shape = count.shape
        if self.perturbation == "none":
            prior = np.full(shape, self.prior_mean)                 # prior.mean()
        else:
            prior = self.prior_mean + np.sqrt(self.lam) * self.rng.standard_normal(shape)
        targets = reward_sum.copy()
        if self.perturbation == "gaussian":
            targets += np.sqrt(self.v * count) * self.rng.standard_normal(shape)
        precision = count / self.v + 1.0 / self.lam
        q = np.empty(shape)
        v_next = np.zeros(self.S)
        for h in range(self.H - 1, -1, -1):
            q[h] = ((targets[h] + next_count[h] @ v_next) / self.v + prior[h] / self.lam) / precision[h]
            v_next = q[h].max(axis=1)
        self.set_q(q)

"""Tabular `learn_lsvi`, `learn_grlsvi` and `learn_brlsvi` (Algorithms 3-4, eqs. 5.4-5.6).

With one parameter per (h, s, a), each regression of Algorithm 4 decouples into
a scalar Bayesian update per state-action pair (eq. 5.4 with X^T X = n):

    Q_h(s,a) = (sum of perturbed targets / v + prior sample / lambda) / (n / v + 1 / lambda)

The Gaussian perturbation of the n targets enters only through its sum, drawn
exactly as N(0, n v); so the cost per episode is O(H S A S), whatever the history, and
O(H S A) where transitions are deterministic (deep sea: `expected_next`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from rvfx.agents.tabular.base import ActRule, TabularAgent, TransitionStore, act_fields, expected_next
from rvfx.core.backward_induction import backward_induction
from rvfx.core.expressions import Expr, evaluate


@dataclass(frozen=True)
class RLSVIParams:
    v: Expr = field(default="H**2/25", metadata={"names": ("H",), "gt": 0.0, "doc": "noise variance v (paper: H^2/25)"})
    lam: Expr = field(default="v", metadata={"names": ("H", "v"), "gt": 0.0, "doc": "prior variance lambda (paper: v)"})
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
        self.store = TransitionStore(shape) if perturbation == "bootstrap" else None

    def update_buffer(self, transition) -> None:
        super().update_buffer(transition)
        if self.store is not None:
            self.store.add(transition)

    def learn_from_buffer(self) -> None:
        if self.perturbation == "bootstrap":
            count, reward_sum, next_count = self.store.bootstrap_statistics(self.rng)
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
        expected = expected_next(next_count, self.next_of if self.deterministic else None)

        def backup(h, v_next):                                      # eq. 5.4, one parameter per (s, a)
            return ((targets[h] + expected(h, v_next)) / self.v + prior[h] / self.lam) / precision[h]

        self.set_q(backward_induction(backup, self.H, np.zeros(self.S)))

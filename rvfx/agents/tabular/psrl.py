"""Posterior sampling for RL (PSRL, Osband et al. 2013) on a layered tabular MDP.

Each episode samples an MDP from the posterior and follows its optimal policy.
Transitions: Dirichlet(alpha) prior over the S states of the next layer (the
support is explicit: spreading the prior over all H*S states would put most
sampled mass on unreachable states). Rewards: Gaussian with known noise
precision and a Gaussian prior. `data_weight` counts each observation that many
times (the paper's acceleration: 10).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rvfx.agents.tabular.base import TabularAgent
from rvfx.core.backward_induction import backward_induction


@dataclass(frozen=True)
class PSRLParams:
    dirichlet_alpha: float = field(
        default=1.0, metadata={"gt": 0.0, "doc": "Dirichlet concentration per next-layer state"})
    reward_prior_mean: float = field(default=0.0, metadata={"doc": "prior mean of each mean reward"})
    reward_prior_precision: float = field(
        default=1.0, metadata={"gt": 0.0, "doc": "prior precision of each mean reward"})
    reward_noise_precision: float = field(default=1.0, metadata={"gt": 0.0, "doc": "assumed precision of reward noise"})
    data_weight: float = field(
        default=10.0, metadata={"gt": 0.0, "doc": "count each transition this many times (paper: 10)"})


class PSRL(TabularAgent):

    def __init__(self, shape, rng, params: PSRLParams):
        super().__init__(shape, rng)
        self.p = params

    def learn_from_buffer(self) -> None:
        p, k = self.p, self.p.data_weight
        precision = p.reward_prior_precision + k * p.reward_noise_precision * self.count
        mean = (p.reward_prior_precision * p.reward_prior_mean
                + k * p.reward_noise_precision * self.reward_sum) / precision
        reward = mean + self.rng.standard_normal(mean.shape) / np.sqrt(precision)
        gammas = self.rng.standard_gamma(p.dirichlet_alpha + k * self.next_count[:-1])
        transition = gammas / gammas.sum(axis=-1, keepdims=True)
        last = self.H - 1
        self.set_q(backward_induction(lambda h, v: reward[h] + (transition[h] @ v if h < last else 0.0),
                                      self.H, np.zeros(self.S)))

"""UCRL2 (Jaksch et al. 2010) for a layered tabular MDP: extended value iteration per episode.

Confidence widths follow the paper's Theorem/Algorithm 1 with t_k the number of
steps taken so far (not the episode index):
    reward:     sqrt(7 log(2 S A t_k / delta) / (2 max(1, n)))
    transition: sqrt(14 S log(2 A t_k / delta) / max(1, n))      (L1 ball)
both multiplied by `confidence_scale` (paper: 1/10); `data_weight` counts each
transition that many times (paper: 10). Which S enters the widths in the layered
deep sea is not stated in the paper: `width_states` picks the S states of the
next layer or all H*S states. Unvisited pairs start from a uniform estimate.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from rvfx.agents.tabular.base import TabularAgent
from rvfx.core.backward_induction import backward_induction


@dataclass(frozen=True)
class UCRL2Params:
    delta: float = field(default=0.05, metadata={"gt": 0.0, "max": 1.0, "doc": "confidence level delta"})
    confidence_scale: float = field(default=0.1, metadata={"gt": 0.0, "doc": "multiplies both widths (paper: 0.1)"})
    data_weight: float = field(
        default=10.0, metadata={"gt": 0.0, "doc": "count each transition this many times (paper: 10)"})
    width_states: Literal["next_layer", "all"] = field(
        default="next_layer", metadata={"doc": "S in the widths: N cells of the next row, or all N^2 states"})
    reward_max: float = field(default=1.0, metadata={"doc": "optimistic rewards are clipped at this bound"})


def optimistic_transition(p_hat: np.ndarray, width: np.ndarray, v_next: np.ndarray) -> np.ndarray:
    """Inner maximisation of extended value iteration (Jaksch et al., Fig. 2), vectorised.

    Over the L1 ball of radius `width` around each row of `p_hat`, the maximiser of
    p . v_next moves min(width/2, 1 - p_hat[best]) mass onto the best next state,
    taken from the worst states first. `p_hat` is never modified.
    """
    order = np.argsort(v_next, kind="stable")
    best = order[-1]
    p = p_hat[..., order].copy()
    p[..., -1] = np.minimum(1.0, p_hat[..., best] + width / 2)
    excess = p.sum(axis=-1) - 1.0
    before = np.cumsum(p[..., :-1], axis=-1) - p[..., :-1]    # mass below each state
    p[..., :-1] -= np.clip(excess[..., None] - before, 0.0, p[..., :-1])
    out = np.empty_like(p)
    out[..., order] = p
    return out


class UCRL2(TabularAgent):

    def __init__(self, shape, rng, params: UCRL2Params):
        super().__init__(shape, rng)
        self.p = params

    def learn_from_buffer(self) -> None:
        p, k = self.p, self.p.data_weight
        S_w = self.S if p.width_states == "next_layer" else self.H * self.S
        t = max(1.0, k * self.steps)
        n = np.maximum(1.0, k * self.count)
        r_hat = np.divide(self.reward_sum, self.count, out=np.zeros_like(self.reward_sum),
                          where=self.count > 0)
        w_r = p.confidence_scale * np.sqrt(7 * np.log(2 * S_w * self.A * t / p.delta) / (2 * n))
        w_p = p.confidence_scale * np.sqrt(14 * S_w * np.log(2 * self.A * t / p.delta) / n)
        reward = np.minimum(r_hat + w_r, p.reward_max)
        visited = self.count[..., None] > 0
        p_hat = np.where(visited, self.next_count / np.maximum(self.count, 1)[..., None], 1.0 / self.S)

        def backup(h, v_next):                                      # extended value iteration
            if h == self.H - 1:
                return reward[h]
            return reward[h] + optimistic_transition(p_hat[h], w_p[h], v_next) @ v_next

        self.set_q(backward_induction(backup, self.H, np.zeros(self.S)))

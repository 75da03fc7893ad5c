"""The 4-state, 2-action example of Section 5.2.2 (Fig. 2), as a layered tabular environment.

The paper gives only its shape; we fix: "down" moves to s+1 (clipped at 4) and "up" to s-1
(clipped at 1) with probability 1 - `stay`, and otherwise the state stays, so only (4, up),
(3, down) and (4, down) itself can reach state 4, as in the paper's text. Rewards are 0 (the
figure is about uncertainty, not value), so every policy is optimal and regret is 0. States are
(h, s) with s = 0..3 for the paper's 1..4; episodes start in state 1 and last H periods.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rvfx.core.protocols import Layered
from rvfx.core.transition import Transition

STATES = 4
UP, DOWN = 0, 1


@dataclass(frozen=True)
class FourStateParams:
    horizon: int = field(default=6, metadata={"min": 1, "doc": "H: periods per episode"})
    stay: float = field(default=0.2, metadata={"min": 0.0, "max": 1.0,
                                               "doc": "probability that an action leaves the state unchanged"})

    size_key = "env.horizon"

    def run_sizes(self) -> dict:
        """H layers of 4 states, 2 actions, H steps; no network input (`RunSizes`)."""
        return {"H": self.horizon, "S": STATES, "A": 2, "steps": self.horizon, "inputs": 0, "keys": 0}

    def run_memory(self) -> dict:
        return {}


def four_state_example(stay: float = 0.2) -> np.ndarray:
    """Transition probabilities P[s, a, s'] of the example (states 1..4 stored as 0..3)."""
    P = np.zeros((STATES, 2, STATES))
    for s in range(STATES):
        P[s, UP, max(s - 1, 0)] += 1 - stay
        P[s, DOWN, min(s + 1, STATES - 1)] += 1 - stay
        P[s, :, s] += stay
    return P


class FourStateExample:
    """The four-state example of Sec. 5.2.2 (Fig. 2): `P` (S, A, S) and mean rewards `R` (S, A), all 0."""
    offers = (Layered,)
    num_actions = 2
    optimal_return = 0.0

    def __init__(self, params: FourStateParams, rng: np.random.Generator):
        self.params = params
        self.rng = rng
        self.shape = (params.horizon, STATES, 2)
        self.P = four_state_example(params.stay)
        self.R = np.zeros((STATES, 2))
        self.expected_return = 0.0
        self._h, self._s = 0, 0

    def reset(self) -> Transition:
        self._h, self._s = 0, 0
        return Transition(None, None, 0.0, (0, 0), 0)

    def step(self, action: int) -> Transition:
        h, s = self._h, self._s
        self._h, self._s = h + 1, int(self.rng.choice(STATES, p=self.P[s, action]))
        new_state = (self._h, self._s) if self._h < self.shape[0] else None
        return Transition((h, s), action, 0.0, new_state, h)

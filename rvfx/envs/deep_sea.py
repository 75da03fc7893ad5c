"""Deep-sea exploration (Example 1): an N x N grid where only deep exploration finds the chest."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from rvfx.core.protocols import LinearFeatures, Pixels
from rvfx.core.transition import Transition
from rvfx.envs.features import Basis, coherent_basis


@dataclass(frozen=True)
class DeepSeaParams:
    size: int = field(default=10, metadata={"min": 2, "doc": "N: grid side and episode length"})
    treasure: bool = field(default=True, metadata={"doc": "chest holds +1 (treasure) or -1 (bomb)"})
    move_cost: Literal["diagonal", "every_right"] = field(
        default="diagonal", metadata={"doc": "paper: 'right' costs 0.01/N on the diagonal; bsuite: on every cell"})
    reward_noise: float = field(default=0.0, metadata={"min": 0.0, "doc": "std of N(0, sd^2) added to every reward"})
    randomize_actions: bool = field(default=True, metadata={"doc": "False: action 1 is always 'right'"})

    size_key = "env.size"

    def run_sizes(self) -> dict:
        """N layers of N states, 2 actions, N steps; the one-hot input of N x N cells (`RunSizes`)."""
        n = self.size
        return {"H": n, "S": n, "A": 2, "steps": n, "inputs": n * n, "keys": n * n}

    def run_memory(self) -> dict:
        return {"the deep sea action map": 24 * self.size ** 2}


def optimal_return(params: DeepSeaParams) -> float:
    """V* of the start: 1 - 0.01 for the treasure (N diagonal "right"s at 0.01/N each), 0 for the bomb.

    Going left always returns 0 exactly, so it is also the regret per episode of never opening the chest.
    """
    return 0.99 if params.treasure else 0.0


class DeepSea:
    """Deep sea (Example 1): N x N grid, a chest at the bottom right that only deep exploration finds.

    States are (row, column); row is also the time step, so H = N layers of N cells.

    `right_action[row, col]` is the action index meaning "right", drawn once per
    instance. Rewards are the paper's; `expected_return` accumulates the noise-free
    reward of the current episode so regret ignores observation noise.
    """
    offers = (LinearFeatures, Pixels)

    def __init__(self, params: DeepSeaParams, rng: np.random.Generator):
        self.params = params
        self.size = n = params.size
        self.rng = rng
        if params.randomize_actions:
            self.right_action = rng.integers(0, 2, size=(n, n))
        else:
            self.right_action = np.ones((n, n), dtype=np.int64)
        self.move_cost = 0.01 / n
        self.chest = 1.0 if params.treasure else -1.0
        self.optimal_return = optimal_return(params)
        # Layered tabular shape (H, S, A) for agents that need it.
        self.shape = (n, n, 2)
        self.num_actions = 2
        self._right = self.right_action.tolist()
        self._row = self._col = 0
        self.expected_return = 0.0

    def mean_reward(self, row: int, col: int, right: bool, chest: float | None = None) -> float:
        """Expected reward of moving right/left from (row, col); `chest` overrides the chest's value."""
        if not right:
            return 0.0
        n = self.size
        r = -self.move_cost if (self.params.move_cost == "every_right" or row == col) else 0.0
        if row == n - 1 and col == n - 1:
            r += self.chest if chest is None else chest
        return r

    def reset(self) -> Transition:
        self._row = self._col = 0
        self.expected_return = 0.0
        return Transition(None, None, 0.0, (0, 0), 0)

    def step(self, action: int) -> Transition:
        row, col = self._row, self._col
        right = action == self._right[row][col]
        reward = self.mean_reward(row, col, right)
        self.expected_return += reward
        if self.params.reward_noise > 0:
            reward += self.params.reward_noise * self.rng.standard_normal()
        self._col = min(col + 1, self.size - 1) if right else max(col - 1, 0)
        self._row = row + 1
        new_state = (self._row, self._col) if self._row < self.size else None
        return Transition((row, col), action, reward, new_state, row)

    def linear_features(self, M: int, rng: np.random.Generator, basis: Basis = "random_unit") -> np.ndarray:
        """The coherent basis of Section 7.1.2 (`features.coherent_basis`): phi (N, N, 2, M) from `rng`."""
        return coherent_basis(self, M, rng, basis)

    def optimal_actions(self) -> np.ndarray:
        """Action index of the optimal policy at every cell (right iff treasure)."""
        return self.right_action if self.params.treasure else 1 - self.right_action

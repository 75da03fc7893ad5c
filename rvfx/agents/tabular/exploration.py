"""The exploration methods of Section 4 (Table 1) that know deep sea's structure.

Section 4 gives the agent the whole of Example 1 except two things: which action means
"right" in each cell (each association equally likely, independently across cells) and
whether the chest holds treasure (+1) or a bomb (-1), each with probability 1/2. The
agents here hold exactly that belief:

- `known_right[h, c]` is the action index meaning "right" at cell (h, c), or -1 while
  unknown. Every transition reveals the association of the cell it left: the next column
  tells left from right; in the last row, where the episode ends, the reward does (a
  "right" there is charged, a "left" is not).
- `chest` is +1 or -1 once the agent has taken "right" at the bottom-right cell.

Each episode the agent plans by value iteration on one MDP consistent with its belief: a
chest value c and, at a cell of unknown association, a rule for where each action leads.
The methods differ only in that MDP and in an optional myopic bonus:

  optimal            optimism: c = +1 while the chest is unknown, and at an unknown cell
                     whichever action is taken is assumed to be "right" (the most favourable
                     plausible association). Both actions then tie at unknown cells, so the
                     greedy policy (ties broken uniformly, eq. 4.1) guesses at random, and it
                     goes right wherever it knows how: the learner of Section 4, which is
                     also what optimism does with this prior.
  pure exploitation  the posterior-mean MDP: c = E[chest] = 0 while unknown, and at an unknown
                     cell each action goes right or left with probability 1/2 (so both actions
                     tie there too). Greedy on it.
  myopic             pure exploitation plus `bonus` x (expected information, in bits,
                     revealed by this step's own outcome) added to Q(s, a) for acting,
                     but not propagated through the Bellman backup.
  thompson           an MDP drawn from the posterior each episode: c = +1 or -1 with
                     probability 1/2 while unknown, unknown associations drawn uniformly
                     (the "randomized" row of Table 1 with an exact posterior).

Expected episodes until the optimal learner first opens the chest (derivation used by the
tests): it reaches the bottom-right cell through the N diagonal cells (0,0)..(N-1,N-1);
at each it either knows "right" or guesses, wrong with probability 1/2, and a wrong guess
ends that episode's attempt but teaches the association, so each diagonal cell costs at
most one failed episode. The episode of the first opening is 1 + Binomial(N, 1/2):
mean (N + 2)/2, variance N/4. (The paper states (N+1)/2, which N-1 uncertain cells would
give; the chest cell's own association is uncertain too.)

Pure exploitation and myopic can only reach a diagonal cell (h, h), h >= 1, by going right
at (0, 0), which they do only while its association is unknown, i.e. in the first episode.
They open the chest with probability 2^-N (the first episode going right N times) and
never after.

All agents also accept the dithering action rules of `TabularAgent` (epsilon-greedy,
Boltzmann) on top of their Q. The environment must be a `DeepSea` with noise-free rewards.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from rvfx.agents.tabular.base import ActRule, TabularAgent, act_fields
from rvfx.core.backward_induction import backward_induction
from rvfx.core.live import live
from rvfx.core.transition import Transition
from rvfx.envs.deep_sea import DeepSea

ChestBelief = Literal["optimistic", "mean", "sample"]


@dataclass(frozen=True)
class DeepSeaKnownParams:
    act: ActRule = act_fields()["act"]
    epsilon: float = act_fields()["epsilon"]
    temperature: float = act_fields()["temperature"]


@dataclass(frozen=True)
class MyopicParams:
    bonus: float = field(default=1.0, metadata={
        "min": 0.0, "doc": "value per bit of information revealed by the immediate outcome (not propagated)"})
    act: ActRule = act_fields()["act"]
    epsilon: float = act_fields()["epsilon"]
    temperature: float = act_fields()["temperature"]


class DeepSeaKnownStructure(TabularAgent):
    """Belief over deep sea's action associations and chest, planning by value iteration."""

    def __init__(self, env, rng: np.random.Generator, chest_belief: ChestBelief,
                 bonus: float = 0.0, act: ActRule = "greedy", epsilon: float = 0.1,
                 temperature: float = 0.1):
        if not isinstance(env, DeepSea):
            raise TypeError("the structured exploration agents need a deep_sea environment")
        if env.params.reward_noise > 0:
            raise ValueError("the structured exploration agents assume noise-free rewards (reward_noise: 0)")
        super().__init__(env.shape, rng, act, epsilon, temperature)
        n = self.N = env.size
        self.chest_belief = chest_belief
        self.bonus = bonus
        self.known_right = np.full((n, n), -1, dtype=np.int64)
        self.chest: float | None = None
        # What the agent knows for sure: the charge for "right" at every cell.
        cols, rows = np.meshgrid(np.arange(n), np.arange(n))
        charged = (rows == cols) if env.params.move_cost == "diagonal" else np.ones((n, n), bool)
        self.right_cost = np.where(charged, env.move_cost, 0.0)
        self._right_col = np.minimum(np.arange(n) + 1, n - 1)
        self._left_col = np.maximum(np.arange(n) - 1, 0)
        self._dirty = True

    # -- learning the associations and the chest -------------------------------------
    def update_buffer(self, transition: Transition) -> None:
        super().update_buffer(transition)
        (h, c), a = transition.old_state, transition.action
        n = self.N
        if transition.new_state is not None:
            went_right = transition.new_state[1] == self._right_col[c]     # differs from left for N >= 2
        elif self.right_cost[h, c] > 0 or (h == n - 1 and c == n - 1):
            went_right = transition.reward != 0.0
        else:
            return                       # last row, uncharged cell: left and right look alike
        if self.known_right[h, c] < 0:
            self.known_right[h, c] = a if went_right else 1 - a
            self._dirty = True
        if went_right and h == n - 1 and c == n - 1 and self.chest is None:
            self.chest = 1.0 if transition.reward + self.right_cost[h, c] > 0 else -1.0
            self._dirty = True

    # -- planning ----------------------------------------------------------------------
    def chest_value(self) -> float:
        if self.chest is not None:
            return self.chest
        if self.chest_belief == "optimistic":
            return 1.0
        if self.chest_belief == "mean":
            return 0.0
        return 1.0 if self.rng.random() < 0.5 else -1.0

    def right_probability(self, belief: ChestBelief) -> np.ndarray:
        """P(action a moves right at (h, c)) for a = 0, 1, in the MDP the agent plans with.

        Known cells: 0 or 1. Unknown cells: 1/2 for the posterior mean ("mean"), a draw
        from the posterior ("sample"), or 1 for both actions under optimism (the most
        favourable plausible association: whichever action is taken is the right one).
        """
        known = self.known_right
        unknown = known < 0
        p = np.stack([known == 0, known == 1], axis=-1).astype(float)
        if belief == "optimistic":
            p[unknown] = 1.0
        elif belief == "mean":
            p[unknown] = 0.5
        else:
            p1 = self.rng.integers(0, 2, int(unknown.sum())).astype(float)
            p[unknown] = np.stack([1.0 - p1, p1], axis=-1)
        return p

    def plan(self, chest: float, p_right: np.ndarray) -> np.ndarray:
        """Q_h(c, a) = P(right) (r_right + V(h+1, c+1)) + P(left) V(h+1, c-1), backwards in h."""
        n = self.N
        reward_right = -self.right_cost.copy()
        reward_right[n - 1, n - 1] += chest

        def backup(h, v):
            v_right, v_left = (v, v) if h == n - 1 else (v[self._right_col], v[self._left_col])
            go_right = (reward_right[h] + v_right)[:, None]
            return p_right[h] * go_right + (1.0 - p_right[h]) * v_left[:, None]

        return backward_induction(backup, n, np.zeros(n))

    def information(self) -> np.ndarray:
        """Bits about the unknowns revealed by the outcome of (h, c, a) itself."""
        info = (self.known_right < 0).astype(float)[..., None].repeat(2, axis=-1)
        if self.chest is None:
            n = self.N
            info[n - 1, n - 1] += self.right_probability("mean")[n - 1, n - 1]
        return info

    def learn_from_buffer(self) -> None:
        sample = self.chest_belief == "sample"
        if not (self._dirty or sample):
            return
        q = self.plan(self.chest_value(), self.right_probability(self.chest_belief))
        if self.bonus > 0:
            q = q + self.bonus * self.information()
        self.set_q(q)
        self._dirty = False


def make_optimal(params: DeepSeaKnownParams, env, rng):
    return DeepSeaKnownStructure(env, rng, "optimistic", 0.0, params.act, params.epsilon, params.temperature)


def make_pure_exploitation(params: DeepSeaKnownParams, env, rng):
    return DeepSeaKnownStructure(env, rng, "mean", 0.0, params.act, params.epsilon, params.temperature)


def make_myopic(params: MyopicParams, env, rng):
    return DeepSeaKnownStructure(env, rng, "mean", params.bonus, params.act, params.epsilon, params.temperature)


def make_thompson(params: DeepSeaKnownParams, env, rng):
    return DeepSeaKnownStructure(env, rng, "sample", 0.0, params.act, params.epsilon, params.temperature)


def first_open(agent, env, budget: int) -> int | None:
    """Run Algorithm 1 until the agent first takes "right" at the chest; its episode index.

    None if it has not within `budget` episodes. Works for any agent on a `DeepSea`.
    """
    n = env.size
    chest = (n - 1, n - 1)
    chest_right = int(env.right_action[chest])
    opened = []

    def on_transition(transition):
        if transition.old_state == chest and transition.action == chest_right:
            opened.append(True)

    metrics = live(agent, env, budget, on_transition=on_transition, on_episode=lambda _: bool(opened))
    return metrics["episodes_run"] if opened else None

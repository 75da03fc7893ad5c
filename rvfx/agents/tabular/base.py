"""Layered tabular statistics and action selection shared by the tabular agents.

A time-inhomogeneous MDP with H layers of S states and A actions (deep sea: the
row is the layer). Agents keep counts, reward sums and next-state counts, so an
episode's cost does not grow with the history; and, while each (h, s, a) has led to one
next state only (deterministic transitions, as on deep sea), which one, so that a backup
can skip the next-state table's zeros (`expected_next`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Literal

import numpy as np

ActRule = Literal["greedy", "epsilon_greedy", "boltzmann"]


def act_fields():
    """Dataclass fields for the action rule (`act_greedy`, `act_epsilon_greedy`, `act_boltzmann`)."""
    return {
        "act": field(default="greedy", metadata={"doc": "greedy | epsilon_greedy | boltzmann (dithering)"}),
        "epsilon": field(default=0.1, metadata={"min": 0.0, "max": 1.0, "doc": "epsilon of epsilon-greedy"}),
        "temperature": field(default=0.1, metadata={"gt": 0.0, "doc": "Boltzmann temperature"}),
    }


def greedy_policy(q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """argmax over the last axis with ties broken uniformly at random (eq. 4.1)."""
    is_max = q == q.max(axis=-1, keepdims=True)
    return np.where(is_max, rng.random(q.shape), -1.0).argmax(axis=-1)


class QPolicy:
    """Acts on a Q table (H, S, A) over layered states (h, s): greedy with ties broken at random
    (eq. 4.1), epsilon-greedy, or Boltzmann (eq. 4.2). `set_q` installs the table."""

    def __init__(self, shape, rng: np.random.Generator, act: ActRule = "greedy",
                 epsilon: float = 0.1, temperature: float = 0.1):
        self.H, self.S, self.A = shape
        self.rng = rng
        self.act_rule, self.epsilon, self.temperature = act, epsilon, temperature

    def set_q(self, q: np.ndarray) -> None:
        """Install the value estimate that `act` follows this episode."""
        self.q = q
        self._policy = greedy_policy(q, self.rng).tolist()

    def act(self, state) -> int:
        h, s = state
        if self.act_rule == "epsilon_greedy" and self.rng.random() < self.epsilon:
            return int(self.rng.integers(self.A))
        if self.act_rule == "boltzmann":
            logits = self.q[h, s] / self.temperature
            p = np.exp(logits - logits.max())
            return int(self.rng.choice(self.A, p=p / p.sum()))
        return self._policy[h][s]


class TabularAgent(QPolicy):
    """Sufficient statistics of a layered tabular MDP plus act over the current Q table."""

    def __init__(self, shape, rng: np.random.Generator, act: ActRule = "greedy",
                 epsilon: float = 0.1, temperature: float = 0.1):
        super().__init__(shape, rng, act, epsilon, temperature)
        self.count = np.zeros(shape)
        self.reward_sum = np.zeros(shape)
        self.next_count = np.zeros(shape + (self.S,))
        self.next_of = np.zeros(shape, np.int64)         # the next state each (h, s, a) has led to (0 if none)
        self.deterministic = True                        # no (h, s, a) has yet led to two next states
        self.steps = 0
        self.set_q(np.zeros(shape))

    def update_buffer(self, transition) -> None:
        (h, s), a = transition.old_state, transition.action
        self.count[h, s, a] += 1
        self.reward_sum[h, s, a] += transition.reward
        if transition.new_state is not None:
            s_next = transition.new_state[1]
            if not self.next_count[h, s, a, s_next]:
                self.deterministic &= not self.next_count[h, s, a].any()
                self.next_of[h, s, a] = s_next
            self.next_count[h, s, a, s_next] += 1
        self.steps += 1


def expected_next(next_count: np.ndarray, next_of: np.ndarray | None) -> Callable:
    """(h, v_next) -> sum over s' of next_count[h, s, a, s'] v_next[s'], (S, A): the product by layer h's table
    (H, S, A, S), or, with `next_of` (each (h, s, a)'s only next state: deterministic transitions, as on deep
    sea), that one term, O(S A) a layer instead of O(S^2 A). BLAS's sum over a row with a single nonzero
    term is that product too, from 0.0 (+ 0.0: -0.0 becomes 0.0 as there): the same bits."""
    if next_of is None:
        return lambda h, v: next_count[h] @ v
    rows = np.arange(next_of.shape[0])[:, None, None]
    counts = next_count[rows, np.arange(next_of.shape[1])[:, None], np.arange(next_of.shape[2]), next_of]
    return lambda h, v: counts[h] * v[next_of[h]] + 0.0


class TransitionStore:
    """Every transition of a layered MDP as (flat (h,s,a), reward, flat next index), for the
    bootstrap (eq. 5.6), which resamples transitions and so cannot use counts alone when
    rewards are noisy.

    Kept column by column, each index in the integer form the resample's bincounts read, and a
    terminal transition's next index pointing at one extra bin past the H*S*A*S real ones: an
    episode's resample then costs the draws and four bincounts over the history, with no per-episode
    conversion, column copy or masking (each bin still sums the same weights in the same order)."""

    def __init__(self, shape):
        self.H, self.S, self.A = shape
        self._terminal = self.H * self.S * self.A * self.S       # the extra bin of "no next state"
        self._atom = np.empty(1024, np.int64)
        self._reward = np.empty(1024)
        self._next = np.empty(1024, np.int64)
        self._n = 0

    def add(self, transition) -> None:
        (h, s), a = transition.old_state, transition.action
        atom = (h * self.S + s) * self.A + a
        if self._n == len(self._atom):
            self._atom, self._reward, self._next = (np.concatenate([c, np.empty_like(c)])
                                                    for c in (self._atom, self._reward, self._next))
        n = self._n
        self._atom[n] = atom
        self._reward[n] = transition.reward
        self._next[n] = self._terminal if transition.new_state is None else atom * self.S + transition.new_state[1]
        self._n = n + 1

    def bootstrap_statistics(self, rng: np.random.Generator):
        """Counts (H,S,A), reward sums (H,S,A) and next-state counts (H,S,A,S) of a
        with-replacement resample of the stored transitions, by weighted bincounts."""
        n = self._n
        w = np.bincount(rng.integers(0, n, n), minlength=n).astype(float) if n else np.zeros(0)
        shape = (self.H, self.S, self.A)
        size = self.H * self.S * self.A
        atom = self._atom[:n]
        count = np.bincount(atom, weights=w, minlength=size).reshape(shape)
        reward_sum = np.bincount(atom, weights=w * self._reward[:n], minlength=size).reshape(shape)
        next_count = np.bincount(self._next[:n], weights=w, minlength=self._terminal + 1)
        return count, reward_sum, next_count[:self._terminal].reshape(shape + (self.S,))

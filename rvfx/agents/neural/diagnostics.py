"""What the members of an ensemble value function believe, measured without touching their learning.

Every `every` episodes, at the episode's start (the buffer then holds whole episodes):
- `q_max`: each member's max_a Q_k(s, a) on the environment's named probe states;
- `overestimation`: mean over the last `recent` transitions of Q_k(s_t, a_t) - G_t, with
  G_t = r_t + discount_t G_{t+1} the behaviour's discounted return (discount 0 ends an episode);
- `flip_rate`: the fraction of those states (every 10th) whose greedy action under member k's
  live weights changes over the next `flip_window` SGD steps, divided by `flip_window`.
With `prior_spread` (on its own or beside them), once at episode 1: `prior_spread`, per probe
state, the standard deviation over the K members of the prior beta f(theta0_k; s, a), averaged
over actions (member -1: all members); the prior never trains, so once is enough.
Nothing here draws a random number or writes the agent's state, so turning it on changes no result.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = ["episode", "sgd_steps", "metric", "probe", "member", "value"]


def discounted_returns(reward: np.ndarray, discount: np.ndarray) -> np.ndarray:
    """G_t = r_t + discount_t G_{t+1} backwards over consecutive transitions; the last must end its episode."""
    g = np.zeros(len(reward))
    acc = 0.0
    for t in range(len(reward) - 1, -1, -1):
        acc = reward[t] + discount[t] * acc
        g[t] = acc
    return g


def recent_indices(size: int, next_slot: int, capacity: int, n: int) -> np.ndarray:
    """Ring positions of the last min(n, size) transitions, oldest first (across a wrap-around)."""
    n = min(n, size)
    return (next_slot - n + np.arange(n)) % capacity


class EnsembleDiagnostics:
    def __init__(self, agent, probes: dict, every: int, prior_spread: bool = False, recent: int = 10_000,
                 flip_window: int = 25, chunk: int = 2_000):
        self.agent, self.every, self.recent = agent, every, recent
        self.prior_spread = prior_spread
        self.flip_window, self.chunk = flip_window, chunk
        self.probe_names = list(probes)
        self.probe_codes = (np.stack([np.asarray(agent.rep.encode(s), agent.rep.code_dtype) for s in probes.values()])
                            if probes else None)
        self.rows: list[tuple] = []
        self._flip = None                      # (episode, sgd step to measure at, codes, greedy actions)

    def _values(self, codes: np.ndarray) -> np.ndarray:
        """(K, n, A) online Q of every member at the given state codes, in chunks."""
        ens, rep = self.agent.ensemble, self.agent.rep
        return np.concatenate([ens.value(rep.inputs(codes[i:i + self.chunk]))
                               for i in range(0, len(codes), self.chunk)], axis=1)

    def _add(self, episode, metric, probe, values) -> None:
        steps = self.agent.sgd_steps
        self.rows.extend((episode, steps, metric, probe, k, float(v)) for k, v in enumerate(values))

    def _prior_spread(self, episode: int) -> None:
        """s.d. over members of the prior on each probe state, mean over actions (no prior: 0)."""
        rep, ens = self.agent.rep, self.agent.ensemble
        prior = ens.prior(rep.inputs(self.probe_codes))                     # (K, P, A) or None
        names = self.probe_names
        spread = np.zeros(len(names)) if prior is None else prior.astype(np.float64).std(axis=0).mean(axis=1)
        steps = self.agent.sgd_steps
        self.rows.extend((episode, steps, "prior_spread", name, -1, float(v)) for name, v in zip(names, spread))

    def episode_start(self, episode: int) -> None:
        if self.prior_spread and episode == 1 and self.probe_codes is not None:
            self._prior_spread(episode)
        if not self.every or (episode - 1) % self.every:
            return
        if self.probe_codes is not None:
            q_max = self._values(self.probe_codes).max(axis=2)                 # (K, P)
            for j, name in enumerate(self.probe_names):
                self._add(episode, "q_max", name, q_max[:, j])
        buf = self.agent.buffer
        if buf.size == 0:
            return
        idx = recent_indices(buf.size, buf.next_slot, buf.capacity, self.recent)
        q = self._values(buf.code[idx])                                      # (K, n, A)
        q_sa = q[:, np.arange(len(idx)), buf.action[idx]]
        g = discounted_returns(buf.reward[idx].astype(np.float64), buf.discount[idx].astype(np.float64))
        self._add(episode, "overestimation", "", (q_sa - g).mean(axis=1))
        codes = buf.code[idx[::10]]
        self._flip = (episode, self.agent.sgd_steps + self.flip_window, codes, self._values(codes).argmax(axis=2))

    def after_sgd_step(self, sgd_steps: int) -> None:
        if self._flip is None or sgd_steps < self._flip[1]:
            return
        episode, _, codes, before = self._flip
        self._flip = None
        changed = (self._values(codes).argmax(axis=2) != before).mean(axis=1)
        self._add(episode, "flip_rate", "", changed / self.flip_window)

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=COLUMNS)

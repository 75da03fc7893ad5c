"""The `live` loop (Algorithm 1) and the per-episode metrics it reports."""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np


class Transition(NamedTuple):
    """(s_t, a_t, r_t, s'_t, t) as in Section 5.1.

    The episode ends at a terminal state, new_state None (nothing to bootstrap from), or by
    truncation: `truncated` with the real next state in new_state, e.g. a time limit that the
    state does not show, after which a value estimate may still bootstrap from new_state.
    """
    old_state: Any
    action: Any
    reward: float
    new_state: Any
    timestep: int
    truncated: bool = False

    @property
    def ends_episode(self) -> bool:
        return self.new_state is None or self.truncated


def log_grid(num_episodes: int, per_decade: int = 30) -> np.ndarray:
    """Episodes to log: 1..10, then `per_decade` log-spaced points per decade, and the last."""
    top = math.log10(max(num_episodes, 1))
    pts = np.unique(np.round(np.logspace(0, top, int(per_decade * top) + 2)).astype(np.int64))
    pts = np.union1d(pts, np.arange(1, min(10, num_episodes) + 1))
    return np.union1d(pts[pts <= num_episodes], [num_episodes])


class LearningTime:
    """Tracks eq. 7.1: min{L > 1 : Regret(L)/L <= 0.5}, from per-episode regret."""

    def __init__(self, threshold: float = 0.5):
        self.threshold = threshold
        self.cum_regret = 0.0
        self.episodes = 0
        self.value: int | None = None

    def update(self, regret: float) -> None:
        self.episodes += 1
        self.cum_regret += regret
        if (self.value is None and self.episodes > 1
                and self.cum_regret <= self.threshold * self.episodes):
            self.value = self.episodes


def live(agent, environment, num_episodes: int, log_every: str = "log",
         stop_at_learning: bool = False, on_episode=None) -> dict:
    """Run Algorithm 1 for `num_episodes` episodes and return the logged metrics.

    Regret of an episode is the environment's optimal expected return minus the
    expected return of what the agent did (so reward noise does not enter it).
    With `stop_at_learning`, stop at the learning time (eq. 7.1): scaling studies
    need nothing after it.
    """
    logged = set(log_grid(num_episodes).tolist()) if log_every == "log" else None
    has_regret = environment.optimal_return is not None
    rows = []
    learning = LearningTime()
    cum_return = 0.0
    for episode in range(1, num_episodes + 1):
        agent.learn_from_buffer()
        transition = environment.reset()
        episode_return = 0.0
        while not transition.ends_episode:
            action = agent.act(transition.new_state)
            transition = environment.step(action)
            agent.update_buffer(transition)
            episode_return += transition.reward
        cum_return += episode_return
        regret = environment.optimal_return - environment.expected_return if has_regret else math.nan
        if has_regret:
            learning.update(regret)
        if on_episode is not None:
            on_episode(episode)
        done = stop_at_learning and learning.value is not None
        if logged is None or episode in logged or done:
            extra = environment.episode_metrics() if hasattr(environment, "episode_metrics") else {}
            rows.append({"episode": episode, "return": episode_return, "cum_return": cum_return,
                         "regret": regret,
                         "cum_regret": learning.cum_regret if has_regret else math.nan, **extra})
        if done:
            break
    return {"episodes": rows, "learning_time": learning.value,
            "episodes_run": episode, "final_cum_regret": learning.cum_regret if has_regret else None}

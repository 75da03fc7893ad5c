"""The `live` loop (Algorithm 1) and the per-episode metrics it reports."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rvfx.core.protocols import Agent, Environment, EpisodeMetrics
from rvfx.core.transition import Transition


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


def episode(agent: Agent, environment: Environment, on_transition: Callable[[Transition], None] | None = None,
            learn: bool = True) -> float:
    """One episode of Algorithm 1 (reset, then act / step / update_buffer until it ends); its return.

    `on_transition` sees every transition the environment returns, the reset's (no action)
    included. `learn=False` only acts: the buffer is not updated (a rollout of the current policy).
    """
    transition = environment.reset()
    if on_transition is not None:
        on_transition(transition)
    episode_return = 0.0
    while not transition.ends_episode:
        transition = environment.step(agent.act(transition.new_state))
        if learn:
            agent.update_buffer(transition)
        if on_transition is not None:
            on_transition(transition)
        episode_return += transition.reward
    return episode_return


@dataclass
class LiveState:
    """What `live` carries from one episode to the next: with the agent and the environment, all a
    run needs to go on from `episode` (a checkpoint writes the three as data)."""
    episode: int = 0
    cum_return: float = 0.0
    learning: LearningTime = field(default_factory=LearningTime)
    rows: list = field(default_factory=list)


def live(agent: Agent, environment: Environment, num_episodes: int, log_every: str = "log",
         stop_at_learning: bool = False, on_episode_start: Callable[[int], None] | None = None,
         on_transition: Callable[[Transition], None] | None = None,
         on_episode: Callable[[int], bool | None] | None = None,
         state: LiveState | None = None, after_episode: Callable[[LiveState], None] | None = None) -> dict:
    """Run Algorithm 1 for `num_episodes` episodes and return the logged metrics.

    Regret of an episode is the environment's optimal expected return minus the
    expected return of what the agent did (so reward noise does not enter it).
    With `stop_at_learning`, stop at the learning time (eq. 7.1): scaling studies
    need nothing after it. Hooks: `on_episode_start(l)` after learn_from_buffer,
    `on_transition` as in `episode`, `on_episode(l)` at the end of episode l
    (returning True stops the loop there), `after_episode(state)` once episode l is
    logged and another follows (a checkpoint). `state` resumes a run where it was.
    """
    logged = set(log_grid(num_episodes).tolist()) if log_every == "log" else None
    has_regret = environment.optimal_return is not None
    metrics = environment.episode_metrics if isinstance(environment, EpisodeMetrics) else dict   # checked once
    state = state if state is not None else LiveState()
    learning = state.learning
    for ell in range(state.episode + 1, num_episodes + 1):
        agent.learn_from_buffer()
        if on_episode_start is not None:
            on_episode_start(ell)
        episode_return = episode(agent, environment, on_transition)
        state.cum_return += episode_return
        regret = environment.optimal_return - environment.expected_return if has_regret else math.nan
        if has_regret:
            learning.update(regret)
        stop = bool(on_episode(ell)) if on_episode is not None else False
        done = stop or (stop_at_learning and learning.value is not None)
        if logged is None or ell in logged or done:
            state.rows.append({"episode": ell, "return": episode_return, "cum_return": state.cum_return,
                               "regret": regret, "cum_regret": learning.cum_regret if has_regret else math.nan,
                               **metrics()})
        state.episode = ell
        if done:
            break
        if after_episode is not None and ell < num_episodes:
            after_episode(state)
    return {"episodes": state.rows, "learning_time": learning.value,
            "episodes_run": state.episode, "final_cum_regret": learning.cum_regret if has_regret else None}

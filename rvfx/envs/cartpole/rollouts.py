"""Greedy rollouts of a learned cartpole policy, so `rvfx plot` can draw the swing-up from CSV (§7.2.2).

Policies are not stored, so the environment declares one episode of each run's final
policy as a per-run table (`CartpoleSwingUp.run_tables`), kept in the run's shard
(results/<experiment>/trajectory.csv once collected): one row per state, with `action`
taken from that state (empty at the last) and `reward` received on arriving in it (0 at
the start).

The rollout is the policy Algorithm 8 would follow next: `learn_from_buffer`
(which samples the acting member), then greedy actions with epsilon = 0, and no
`update_buffer`, so nothing is learned from it. It runs after the last logged
episode, so the logged metrics are the same with or without it.
"""
from __future__ import annotations

import math

import pandas as pd

from rvfx.core.live import episode
from rvfx.core.protocols import Dithering

STATE = ["theta", "theta_dot", "x", "x_dot"]


def greedy_rollout(agent, env) -> pd.DataFrame:
    """One episode of `agent`'s current policy on the cartpole `env`, greedy (epsilon 0), learning nothing.

    Returns one row per state s_0 .. s_H with columns step, t, theta, theta_dot, x, x_dot,
    action (from that state; NaN at the last) and reward (on arriving; 0 at s_0).
    """
    agent.learn_from_buffer()
    if isinstance(agent, Dithering):
        agent.epsilon = 0.0
    dt = env.params.dt
    rows = []

    def record(transition):
        if rows:
            rows[-1]["action"] = transition.action
        rows.append({"step": len(rows), "t": len(rows) * dt, **dict(zip(STATE, env.state)),
                     "reward": transition.reward, "action": math.nan})

    episode(agent, env, on_transition=record, learn=False)
    return pd.DataFrame(rows, columns=["step", "t", *STATE, "action", "reward"])

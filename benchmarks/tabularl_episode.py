"""TabulaRL's PSRL or UCRL2 (Osband's reference code, iosband/TabulaRL) on deep sea: CPU ms per episode.

Run by a Python that runs TabulaRL's own code (Python 2.7 with NumPy; bench_tabular.py calls it with
RVFX_TABULARL_PYTHON and RVFX_TABULARL_SRC): deep sea of size N as TabulaRL's `TabularMDP` (N^2 states,
two actions, horizon N, each cell's action mapping drawn at random, a move right costs 0.01/N and the
bottom-right corner pays 1), its agent stepped as its `run_finite_tabular_experiment` does, `warmup`
episodes first, then `rounds` rounds of `episodes` timed in process CPU time (BLAS on one thread).

usage: python tabularl_episode.py SRC AGENT N WARMUP EPISODES ROUNDS   (AGENT: PSRL or UCRL2)
prints one JSON line: the median, least and largest ms per episode over the rounds.
"""
from __future__ import division, print_function  # noqa: UP010  (TabulaRL runs on Python 2.7)

import json
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, sys.argv[1])

import environment  # noqa: E402, I001  (TabulaRL's modules, from SRC)
import finite_tabular_agents  # noqa: E402
import numpy as np  # noqa: E402


def deep_sea(n, rng):
    mdp = environment.TabularMDP(n * n, 2, n)
    right = rng.randint(2, size=n * n)                      # the action that moves right, per cell
    for row in range(n):
        for col in range(n):
            s = row * n + col
            for a in range(2):
                moves_right = a == right[s]
                col2 = min(col + 1, n - 1) if moves_right else max(col - 1, 0)
                p = np.zeros(n * n)
                p[min(row + 1, n - 1) * n + col2] = 1.0
                mdp.P[s, a] = p
                treasure = moves_right and row == n - 1 and col == n - 1
                mdp.R[s, a] = ((-0.01 / n if moves_right else 0.0) + (1.0 if treasure else 0.0), 0.0)
    return mdp


def episode(agent, env, ep):
    env.reset()
    agent.update_policy(ep)
    go = 1
    while go > 0:
        h, state = env.timestep, env.state
        action = agent.pick_action(state, h)
        reward, new_state, go = env.advance(action)
        agent.update_obs(state, action, reward, new_state, go, h)


def cpu():
    t = os.times()
    return t[0] + t[1]


def main():
    name, n, warmup, episodes, rounds = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), \
        int(sys.argv[6])
    np.random.seed(0)
    env = deep_sea(n, np.random.RandomState(0))
    agent = getattr(finite_tabular_agents, name)(env.nState, env.nAction, env.epLen)
    ep = 0
    for _ in range(warmup):
        ep += 1
        episode(agent, env, ep)
    ms = []
    for _ in range(rounds):
        start = cpu()
        for _ in range(episodes):
            ep += 1
            episode(agent, env, ep)
        ms.append((cpu() - start) / episodes * 1e3)
    print(json.dumps({"ms": float(np.median(ms)), "min": min(ms), "max": max(ms)}))


if __name__ == "__main__":
    main()

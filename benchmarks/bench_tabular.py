"""Tabular agents: per-episode cost stays flat with history, the speed-up of sufficient statistics,
how the cost grows with deep sea's size (the backup of deterministic transitions, one term per state
and action, against the dense product by the next-state table, and the fitted exponent of each),
`rvfx validate`'s speed model against each tabular agent of the paper's specs (estimate_check), and
PSRL and UCRL2 against TabulaRL's (Osband's reference code) on deep sea where it is set up:
RVFX_TABULARL_SRC, TabulaRL's `src` folder, and RVFX_TABULARL_PYTHON, a Python that runs it (2.7 with
NumPy; `tabularl_episode.py` says how it is timed).

Baseline (kept here only): `learn_grlsvi` that replays every stored transition each
episode, draws one noise term per transition and solves each layer's regression
(eq. 5.4) with a one-hot design matrix.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np
from estimate_check import agent_params, check, deep_sea_case

from rvfx.agents import AGENTS, make_agent
from rvfx.agents.linear.regression import perturbed_sample
from rvfx.core.live import live
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams


class NaiveGRLSVI:
    """learn_grlsvi by refitting on the whole replayed history every episode."""

    def __init__(self, shape, rng, v, lam):
        self.H, self.S, self.A = shape
        self.rng, self.v, self.lam = rng, v, lam
        self.data = [[] for _ in range(self.H)]       # per layer: (s, a, r, s' or -1)
        self.policy = np.zeros((self.H, self.S), dtype=int)

    def update_buffer(self, t):
        (h, s), a = t.old_state, t.action
        self.data[h].append((s, a, t.reward, -1 if t.new_state is None else t.new_state[1]))

    def act(self, state):
        return int(self.policy[state])

    def learn_from_buffer(self):
        SA = self.S * self.A
        v_next = np.zeros(self.S)
        q = np.zeros((self.H, self.S, self.A))
        for h in range(self.H - 1, -1, -1):
            d = np.array(self.data[h], dtype=float).reshape(-1, 4)
            X = np.zeros((len(d), SA))
            X[np.arange(len(d)), (d[:, 0] * self.A + d[:, 1]).astype(int)] = 1.0
            nxt = d[:, 3].astype(int)
            y = d[:, 2] + np.where(nxt >= 0, v_next[np.maximum(nxt, 0)], 0.0)
            z = np.sqrt(self.v) * self.rng.standard_normal(len(d))
            theta_hat = np.sqrt(self.lam) * self.rng.standard_normal(SA)
            q[h] = perturbed_sample(X, y, self.v, self.lam, z, theta_hat).reshape(self.S, self.A)
            v_next = q[h].max(axis=1)
        ties = np.where(q == q.max(-1, keepdims=True), self.rng.random(q.shape), -1)
        self.policy = ties.argmax(-1)


def ms_per_episode(agent, env, episodes: int) -> float:
    start = time.perf_counter()
    live(agent, env, episodes)
    return (time.perf_counter() - start) / episodes * 1e3


def cpu_ms_per_episode(agent, env, warmup: int, episodes: int, rounds: int) -> float:
    """Median process CPU ms per episode over `rounds` rounds of `episodes`, after `warmup` episodes."""
    live(agent, env, warmup)
    ms = []
    for _ in range(rounds):
        start = time.process_time()
        live(agent, env, episodes)
        ms.append((time.process_time() - start) / episodes * 1e3)
    return float(np.median(ms))


def peer_lines() -> list[str]:
    """rvfx's PSRL and UCRL2 against TabulaRL's on deep sea N = 10, 20 (the same warm-up, process CPU
    time, one BLAS thread each; rvfx's rounds 10x longer, its episodes being short), or why they are skipped."""
    src, python = os.environ.get("RVFX_TABULARL_SRC"), os.environ.get("RVFX_TABULARL_PYTHON", "python2.7")
    if not src or not (Path(src) / "finite_tabular_agents.py").is_file():
        return ["TabulaRL: skipped (set RVFX_TABULARL_SRC to TabulaRL's src folder and RVFX_TABULARL_PYTHON to a "
                "Python 2.7 with NumPy)"]
    lines = ["PSRL and UCRL2 vs TabulaRL's (deep sea, process CPU ms per episode, medians of 3 rounds)"]
    for name, theirs_name in (("psrl", "PSRL"), ("ucrl2", "UCRL2")):
        for n, warmup, episodes in ((10, 100, 100), (20, 40, 20)):
            agent, env = setup(name, n)
            ours = cpu_ms_per_episode(agent, env, warmup, episodes * 10, 3)
            done = subprocess.run([python, str(Path(__file__).with_name("tabularl_episode.py")), src, theirs_name,
                                   str(n), str(warmup), str(episodes), "3"],
                                  capture_output=True, text=True, timeout=1800, check=True)
            theirs = json.loads(done.stdout.strip().splitlines()[-1])
            lines.append(f"  {name:6s} N={n}: TabulaRL {theirs['ms']:.2f} ms ({theirs['min']:.2f}-{theirs['max']:.2f}) "
                         f"vs rvfx {ours:.3f} ms: peer ratio {theirs['ms'] / ours:.0f}")
    return lines


def size_exponents(name: str = "grlsvi", sizes=(10, 20, 40, 80), rounds: int = 5) -> str:
    """CPU ms per episode of `name` on deep sea over `sizes` (after 100 episodes), its backup of deterministic
    transitions and forced dense (the product by the whole next-state table), timed in alternating rounds;
    and the exponent of a power law fitted to each over the sizes."""
    ms = {"one term": {}, "dense": {}}
    for n in sizes:
        agents = {}
        for way in ms:
            agent, env = setup(name, n)
            agent.deterministic = way == "one term"         # once False it stays False: the dense product
            live(agent, env, 100)
            agents[way] = agent, env, []
        episodes = max(20, 40_000 // n ** 2)
        for r in range(rounds):
            for way in (ms if r % 2 == 0 else list(ms)[::-1]):
                agent, env, times = agents[way]
                start = time.process_time()
                live(agent, env, episodes)
                times.append((time.process_time() - start) / episodes * 1e3)
        for way in ms:
            ms[way][n] = float(np.median(agents[way][2]))
    lines = [f"{name} on deep sea, CPU ms per episode by N (one term per (s, a), the dense product); exponents:"]
    for way, by_n in ms.items():
        slope = np.polyfit(np.log(sizes), np.log([by_n[n] for n in sizes]), 1)[0]
        last = np.log(by_n[sizes[-1]] / by_n[sizes[-2]]) / np.log(sizes[-1] / sizes[-2])
        lines.append(f"  {way:8s} " + ", ".join(f"N={n} {by_n[n]:.3f}" for n in sizes)
                     + f"; exponent {slope:.2f} over N={sizes[0]}-{sizes[-1]}, {last:.2f} over {sizes[-2]}-{sizes[-1]}")
    return "\n".join(lines)


def setup(name, n, seed=0):
    env = DeepSea(DeepSeaParams(size=n), np.random.default_rng(seed))
    return make_agent(name, AGENTS[name].params(), env, np.random.default_rng(seed)), env


# label, algorithm, settings: the tabular agents of configs/deepsea_tabular*.yaml and exploration_table.yaml
MODEL_CASES = [
    ("grlsvi", "grlsvi", {}),
    ("brlsvi", "brlsvi", {}),
    ("lsvi boltzmann", "lsvi", {"act": "boltzmann", "temperature": 0.1}),
    ("psrl", "psrl", {"data_weight": 10}),
    ("ucrl2", "ucrl2", {"data_weight": 10, "confidence_scale": 0.1}),
    ("ucrl2 all states", "ucrl2", {"data_weight": 10, "confidence_scale": 0.1, "width_states": "all"}),
    ("deepsea_optimal", "deepsea_optimal", {}),
    ("deepsea_exploitation", "deepsea_exploitation", {}),
    ("deepsea_myopic", "deepsea_myopic", {}),
    ("deepsea_thompson", "deepsea_thompson", {}),
]


def model_cases() -> list:
    """`MODEL_CASES` on deep sea N = 5-40, 50 episodes of warm-up, ~100,000 steps timed (at least 20 episodes)."""
    return [deep_sea_case("tabular", label, algorithm, agent_params(algorithm, **values), n, 50,
                          max(20, 100_000 // n**2))
            for label, algorithm, values in MODEL_CASES for n in (5, 10, 20, 40)]


def main():
    print("== tabular agents (deep sea, treasure) ==")
    agent, env = setup("grlsvi", 10)
    early = ms_per_episode(agent, env, 100)
    live(agent, env, 10_000)
    late = ms_per_episode(agent, env, 100)
    print(f"grlsvi N=10 ms/episode: episodes 1-100 {early:.3f}, after 10,000 {late:.3f}, "
          f"ratio {late / early:.2f} (target <= 1.3)")

    fast, env_f = setup("grlsvi", 10, 1)
    v = lam = 10 ** 2 / 25
    naive, env_n = NaiveGRLSVI((10, 10, 2), np.random.default_rng(1), v, lam), \
        DeepSea(DeepSeaParams(size=10), np.random.default_rng(1))
    live(fast, env_f, 5_000)
    live(naive, env_n, 5_000)
    t_fast = ms_per_episode(fast, env_f, 50)
    t_naive = ms_per_episode(naive, env_n, 50)
    print(f"grlsvi N=10 at 5,000 episodes: sufficient statistics {t_fast:.3f} ms/episode, "
          f"replayed-history refit {t_naive:.3f} ms/episode, speed-up {t_naive / t_fast:.0f}x (target >= 50x)")

    for name in ("lsvi", "grlsvi", "brlsvi", "psrl", "ucrl2"):
        cells = []
        for n in (10, 20):
            agent, env = setup(name, n)
            live(agent, env, 200)
            cells.append(f"N={n} {ms_per_episode(agent, env, 500):.3f}")
        print(f"{name:8s} ms/episode (after 200 episodes): " + ", ".join(cells))

    print(size_exponents())

    check("tabular agents (deep sea, treasure; the specs' settings)", model_cases())
    print("\n".join(peer_lines()))


if __name__ == "__main__":
    main()

"""Per-episode cost of linear `learn_grlsvi` on deep sea (N = 50, M = 50, Section 7.1.2).

Reports ms per episode early (episodes 1-100) and after 5,000 episodes, and the
speed-up over a naive agent that refits eq. 5.4 on the replayed history every
episode (cost O(history * M^2) per row), measured in the same run on the same
history. Run: `.venv/bin/python benchmarks/bench_linear.py` (about a minute).
"""
import rvfx  # noqa: F401, I001  (first: BLAS threads and kernels pinned as in the runs)

import time

import numpy as np

from rvfx.agents.linear.rlsvi import LinearRLSVI, LinearRLSVIParams
from rvfx.core.live import live
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams


class NaiveLinearRLSVI(LinearRLSVI):
    """Same agent, but every episode rebuilds X_h, y_h, z_h from all stored transitions (baseline only)."""

    def __init__(self, env, rng, params, perturbation, features):
        super().__init__(env, rng, params, perturbation, features)
        self._rows: list[list[tuple]] = [[] for _ in range(self.H)]   # per row: (s*A + a, r, s' or -1)

    def update_buffer(self, transition) -> None:
        (h, s), a = transition.old_state, transition.action
        nxt = -1 if transition.new_state is None else transition.new_state[1]
        self._rows[h].append((s * self.A + a, transition.reward, nxt))
        self.steps += 1

    def learn_from_buffer(self) -> None:
        prior = np.full((self.H, self.M), self.prior_mean)
        if self.perturbation == "gaussian":
            prior += np.sqrt(self.lam) * self.rng.standard_normal((self.H, self.M))
        theta = np.zeros((self.H, self.M))
        q = np.zeros((self.H, self.S * self.A))
        v_next = np.zeros(self.S)
        for h in range(self.H - 1, -1, -1):
            data = np.array(self._rows[h], dtype=float).reshape(-1, 3)
            X = self._phi_rows[h][data[:, 0].astype(np.int64)]
            nxt = data[:, 2].astype(np.int64)
            y = data[:, 1] + np.where(nxt >= 0, v_next[nxt], 0.0)
            if self.perturbation == "gaussian":
                y = y + np.sqrt(self.v) * self.rng.standard_normal(len(y))
            rhs = X.T @ y / self.v + prior[h] / self.lam
            theta[h] = np.linalg.solve(X.T @ X / self.v + np.eye(self.M) / self.lam, rhs)
            q[h] = self._phi_rows[h] @ theta[h]
            v_next = q[h].reshape(self.S, self.A).max(axis=1)
        self.theta = theta
        self.set_q(q.reshape(self.H, self.S, self.A))


class Recorder:
    """Forwards to an agent and keeps every transition, to hand the same history to the baseline."""

    def __init__(self, agent):
        self.agent, self.history = agent, []

    def learn_from_buffer(self):
        self.agent.learn_from_buffer()

    def act(self, state):
        return self.agent.act(state)

    def update_buffer(self, transition):
        self.history.append(transition)
        self.agent.update_buffer(transition)


def ms_per_episode(agent, env, episodes: int) -> float:
    start = time.perf_counter()
    live(agent, env, episodes, log_every="all")
    return (time.perf_counter() - start) / episodes * 1e3


def main(size: int = 50, M: int = 50, history: int = 5000, window: int = 100,
         naive_window: int = 10, seed: int = 0) -> dict:
    params = LinearRLSVIParams(M=M, v=0.01, lam=100.0)          # Fig. 6 settings
    env = DeepSea(DeepSeaParams(size=size), np.random.default_rng(seed))
    agent = LinearRLSVI(env, np.random.default_rng(seed + 1), params, "gaussian")
    rec = Recorder(agent)
    t0 = time.perf_counter()
    early = ms_per_episode(rec, env, window)
    out = live(rec, env, history - window)
    late = ms_per_episode(rec, env, window)
    fast_total = time.perf_counter() - t0

    def naive(n_history):
        nv = NaiveLinearRLSVI(env, np.random.default_rng(seed + 2), params, "gaussian", agent.phi)
        for t in rec.history[:n_history]:
            nv.update_buffer(t)
        return nv

    naive_early = ms_per_episode(naive(0), env, window)
    naive_late = ms_per_episode(naive(history * size), env, naive_window)

    # Guard: without noise the baseline and the agent solve the same regressions.
    check = {}
    for cls in (LinearRLSVI, NaiveLinearRLSVI):
        a = cls(env, np.random.default_rng(0), params, "none", agent.phi)
        for t in rec.history[:history * size]:
            a.update_buffer(t)
        a.learn_from_buffer()
        check[cls.__name__] = a.theta
    gap = np.abs(check["LinearRLSVI"] - check["NaiveLinearRLSVI"]).max() / np.abs(check["LinearRLSVI"]).max()
    assert gap <= 1e-6, f"baseline disagrees with the agent: relative gap {gap:g}"

    result = {"early_ms": early, "late_ms": late, "late_over_early": late / early,
              "naive_early_ms": naive_early, "naive_late_ms": naive_late,
              "speedup_late": naive_late / late, "learning_time": out["learning_time"],
              "agent_seconds": fast_total}
    print(f"linear learn_grlsvi, deep sea N={size}, M={M} (v=0.01, lambda=100)")
    print(f"  incremental: {early:7.2f} ms/episode (episodes 1-{window}), "
          f"{late:7.2f} ms/episode (episodes {history + 1}-{history + window}); "
          f"ratio late/early {late / early:.2f}")
    print(f"  naive refit: {naive_early:7.2f} ms/episode (episodes 1-{window}), "
          f"{naive_late:7.2f} ms/episode (episodes {history + 1}-{history + naive_window})")
    print(f"  speed-up over naive after {history} episodes: {naive_late / late:.1f}x  "
          f"(lsvi check: relative theta gap {gap:.1e}; learning time {out['learning_time']})")
    return result


if __name__ == "__main__":
    main()

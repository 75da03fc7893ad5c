"""Per-episode cost of the linear agents on deep sea (Section 7.1.2), each against a baseline timed in the same run.

1. `learn_grlsvi` (N = 50, M = 50): ms per episode early (episodes 1-100) and after 5,000
   episodes, and the speed-up over a naive agent that refits eq. 5.4 on the replayed history
   every episode (cost O(history * M^2) per row), on the same history.
2. `learn_brlsvi` (N = 30, M = 20, a Fig. 13 cell): ms per episode early and after 5,000
   episodes (the bootstrap resamples the whole history, so it grows), and the resample itself
   against the transition store's first layout (one float row per transition, converted and
   masked at every resample) on the same history: same bytes, ratio of times.
3. The backward pass (N = 40, M = 5, 20, 160): `backward_solve` against its first form
   (np.linalg.solve on fresh per-row arrays) on the same statistics: same bytes, ratio of times.
4. `rvfx validate`'s speed model against the CPU time per episode of the linear specs' runs
   (estimate_check): N = 10-80, M = 2-160, Gaussian and bootstrap, at their histories.

Run: `.venv/bin/python benchmarks/bench_linear.py` (about two minutes).
"""
import rvfx  # noqa: F401, I001  (first: BLAS threads and kernels pinned as in the runs)

import time

import numpy as np
from estimate_check import check, spec_case

from rvfx.agents.linear.rlsvi import LinearRLSVI, LinearRLSVIParams, backward_solve
from rvfx.agents.tabular.base import TransitionStore
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


class RowStore(TransitionStore):
    """The transition store's first layout (baseline only): one float row (atom, reward, next or -1)
    per transition; every resample converts the index columns and masks the terminal rows."""

    def __init__(self, shape):
        super().__init__(shape)
        self._data = np.empty((1024, 3))

    def add(self, transition) -> None:
        (h, s), a = transition.old_state, transition.action
        atom = (h * self.S + s) * self.A + a
        nxt = -1 if transition.new_state is None else atom * self.S + transition.new_state[1]
        if self._n == len(self._data):
            self._data = np.concatenate([self._data, np.empty_like(self._data)])
        self._data[self._n] = (atom, transition.reward, nxt)
        self._n += 1

    def bootstrap_statistics(self, rng):
        n = self._n
        data = self._data[:n]
        w = np.bincount(rng.integers(0, n, n), minlength=n).astype(float) if n else np.zeros(0)
        shape, size = (self.H, self.S, self.A), self.H * self.S * self.A
        idx = data[:, 0].astype(np.int64)
        has_next = data[:, 2] >= 0
        return (np.bincount(idx, weights=w, minlength=size).reshape(shape),
                np.bincount(idx, weights=w * data[:, 1], minlength=size).reshape(shape),
                np.bincount(data[has_next, 2].astype(np.int64), weights=w[has_next],
                            minlength=size * self.S).reshape(shape + (self.S,)))


def first_backward_solve(phi_rows, gram, targets, next_sum, prior, v, lam, num_actions):
    """`backward_solve` as first written (baseline only): np.linalg.solve on fresh per-row arrays."""
    H, SA, M = phi_rows.shape
    theta, q, v_next = np.empty((H, M)), np.empty((H, SA)), np.zeros(next_sum.shape[2])
    for h in range(H - 1, -1, -1):
        rhs = (targets[h] + next_sum[h] @ v_next) / v + prior[h] / lam
        theta[h] = np.linalg.solve(gram[h] / v + np.eye(M) / lam, rhs)
        q[h] = phi_rows[h] @ theta[h]
        v_next = q[h].reshape(-1, num_actions).max(axis=1)
    return theta, q


def best_of(fn, args=(), repeats: int = 5, number: int = 1) -> float:
    """Least CPU seconds per call fn(*args) over `repeats` rounds of `number` calls (the least-disturbed round)."""
    best = np.inf
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(number):
            fn(*args)
        best = min(best, (time.process_time() - start) / number)
    return best


def ms_per_episode(agent, env, episodes: int) -> float:
    """CPU ms per episode (CPU, not wall, time: a busy machine stretches the wall clock far more)."""
    start = time.process_time()
    live(agent, env, episodes, log_every="all")
    return (time.process_time() - start) / episodes * 1e3


def incremental(size: int = 50, M: int = 50, history: int = 5000, window: int = 100,
                naive_window: int = 10, seed: int = 0) -> dict:
    """linear learn_grlsvi: early and late ms per episode; the naive refit on the same history."""
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


def bootstrap(size: int = 30, M: int = 20, history: int = 5000, window: int = 100, seed: int = 0) -> dict:
    """linear learn_brlsvi: early and late ms per episode; the resample against RowStore."""
    params = LinearRLSVIParams(M=M, v=0.01, lam=100.0)
    env = DeepSea(DeepSeaParams(size=size), np.random.default_rng(seed))
    agent = LinearRLSVI(env, np.random.default_rng(seed + 1), params, "bootstrap")
    rec = Recorder(agent)
    early = ms_per_episode(rec, env, window)
    live(rec, env, history - window)
    late = ms_per_episode(rec, env, window)
    rows = RowStore(env.shape)
    for t in rec.history:
        rows.add(t)
    store = agent.store
    same = all(a.tobytes() == b.tobytes() for a, b in zip(store.bootstrap_statistics(np.random.default_rng(7)),
                                                          rows.bootstrap_statistics(np.random.default_rng(7))))
    assert same, "the store's resample differs from the first layout's"
    new = best_of(store.bootstrap_statistics, (np.random.default_rng(7),))
    old = best_of(rows.bootstrap_statistics, (np.random.default_rng(7),))
    n = store._n
    print(f"linear learn_brlsvi, deep sea N={size}, M={M}")
    print(f"  {early:7.2f} ms/episode (episodes 1-{window}), {late:7.2f} ms/episode (episodes "
          f"{history + 1}-{history + window}); ratio late/early {late / early:.2f} (the resample reads all "
          f"{n:,} stored transitions)")
    print(f"  resample of {n:,} transitions: {new * 1e3:.2f} ms ({new / n * 1e9:.1f} ns/transition) vs the first "
          f"layout's {old * 1e3:.2f} ms ({old / n * 1e9:.1f} ns); {old / new:.2f}x faster, same bytes")
    return {"early_ms": early, "late_ms": late, "late_over_early": late / early, "resample_ms": new * 1e3,
            "first_layout_resample_ms": old * 1e3, "resample_speedup": old / new}


def solves(size: int = 40, Ms=(5, 20, 160), seed: int = 0) -> dict:
    """backward_solve against its first form on the same statistics (a Gram of 3M random rows per row)."""
    out = {}
    print(f"linear backward pass, N={size} rows (H = S = N, A = 2), v=0.01, lambda=100")
    for M in Ms:
        rng = np.random.default_rng(seed + M)
        H, SA = size, 2 * size
        phi_rows = rng.normal(size=(H, SA, M)) / np.sqrt(M)
        X = rng.normal(size=(H, 3 * M, M))
        args = (phi_rows, X.transpose(0, 2, 1) @ X, rng.normal(size=(H, M)), rng.random((H, M, size)),
                rng.normal(size=(H, M)), 0.01, 100.0, 2)
        same = all(a.tobytes() == b.tobytes() for a, b in zip(backward_solve(*args), first_backward_solve(*args)))
        assert same, f"backward_solve differs from its first form at M={M}"
        number = max(1, 2000 // (M * M))
        new = best_of(backward_solve, args, number=number)
        old = best_of(first_backward_solve, args, number=number)
        print(f"  M={M:4d}: {new * 1e3:7.3f} ms vs first form {old * 1e3:7.3f} ms; {old / new:.2f}x faster, same bytes")
        out[M] = old / new
    return out


def model_cases() -> list:
    """The linear specs' runs at their settings (N, M) after a history like theirs (warm-up episodes)."""
    features, bootstrap = "deepsea_linear_features", "deepsea_bootstrap_scaling"
    return [spec_case("linear", spec, label, warmup, episodes, size=n, M=M)
            for spec, label, n, M, warmup, episodes in (
                (features, "grlsvi", 10, 2, 200, 400), (features, "grlsvi", 10, 40, 200, 200),
                (features, "grlsvi", 20, 10, 200, 200), (features, "grlsvi", 40, 5, 200, 100),
                (features, "grlsvi", 40, 40, 200, 100), (features, "grlsvi", 40, 160, 50, 20),
                (bootstrap, "grlsvi_N", 60, 20, 100, 50), ("deepsea_linear_scaling", "grlsvi", 80, 40, 50, 20),
                (bootstrap, "brlsvi_M", 10, 5, 1000, 300), (bootstrap, "brlsvi_M", 30, 20, 1000, 100),
                (bootstrap, "brlsvi_M", 30, 120, 300, 50), ("deepsea_tuning", "brlsvi", 20, 10, 2000, 200),
                (bootstrap, "brlsvi_N", 60, 5, 300, 30), (bootstrap, "brlsvi_N", 60, 20, 300, 30),
                (bootstrap, "brlsvi_N", 40, 10, 500, 50))]


def main() -> dict:
    out = {"grlsvi": incremental(), "bootstrap": bootstrap(), "solves": solves()}
    out["model"] = check("linear agents (deep sea; the linear specs' settings and histories)", model_cases())
    return out


if __name__ == "__main__":
    main()

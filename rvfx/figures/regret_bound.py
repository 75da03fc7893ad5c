"""Theorem 1 (thm: regret), checked empirically.

`regret_bound` reads results/regret_bound/{episodes,runs}.csv: tabular `learn_grlsvi` with
Theorem 1's parameters (v = 3H^2, theta-bar = H 1, v/lambda = beta) on time-inhomogeneous
MDPs drawn from the Dirichlet prior of Assumption 2 (`random_mdp`, one MDP per seed). The
Bayesian regret is the mean over sampled MDPs of the cumulative regret, with a 95% normal
interval, plotted over L against eq. 6.1 (`eq: first regret bound`) and eq. 6.2
(`eq: second regret bound`).

`regret_bound_optimism` checks the optimism step of the proof (Corollary "optimism of
RLSVI" and eq. "optimism in expectation") by simulation, with no experiment behind it:
  (a) under the prior: E[max_a Q_{l,0}(x0, a)] - E[max_a Q*_{M,0}(x0, a)] >= 0 for episodes
      l = 1, 2, ..., where M is drawn from the prior and the history from RLSVI acting on M;
  (b) given a history: E[max_a Q_{l,0}(x0, a) | H] >= E[V*_{M,0}(x0) | H], with M drawn from
      the Dirichlet posterior of that history (exactly what the corollary conditions on).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rvfx.agents.tabular.rlsvi import RLSVIParams, TabularRLSVI
from rvfx.core.backward_induction import backward_induction
from rvfx.core.live import live
from rvfx.envs.random_mdp import RandomMDP, RandomMDPParams
from rvfx.experiment.results import load_table
from rvfx.figures.common import plt, save, write_table

ENV_KEYS = ["env.horizon", "env.states", "env.actions", "env.beta"]


def log_plus(x):
    return np.maximum(1.0, np.log(x))


def first_bound(L, H, X, A, beta):
    """Eq. 6.1: 6 H^2 sqrt(beta X A L log+(1 + X A H L)) log+(1 + L / (X A))."""
    L = np.asarray(L, float)
    return 6 * H ** 2 * np.sqrt(beta * X * A * L * log_plus(1 + X * A * H * L)) * log_plus(1 + L / (X * A))


def second_bound(L, H, X, A, beta):
    """Eq. 6.2: 5 beta H^3 X A sqrt(log+(1 + X A H L)) log+(1 + L/(X A)) + 2 H^2 sqrt(6 X A L log(X A))."""
    L = np.asarray(L, float)
    return (5 * beta * H ** 3 * X * A * np.sqrt(log_plus(1 + X * A * H * L)) * log_plus(1 + L / (X * A))
            + 2 * H ** 2 * np.sqrt(6 * X * A * L * math.log(X * A)))


def theorem_agent(env: RandomMDP, rng: np.random.Generator) -> TabularRLSVI:
    """Tabular learn_grlsvi with Theorem 1's parameters for this environment's beta."""
    params = RLSVIParams(v="3*H**2", lam=f"v/{env.params.beta!r}", prior_mean="H")
    return TabularRLSVI(env.shape, rng, params, "gaussian")


def bayes_regret(episodes: pd.DataFrame) -> pd.DataFrame:
    """Mean cumulative regret over MDPs (seeds) per L, with a 95% normal interval."""
    keys = [k for k in ENV_KEYS if k in episodes.columns]
    g = episodes.groupby(keys + ["episode"])["cum_regret"]
    s = g.agg(["mean", "std", "count"]).reset_index()
    half = 1.96 * s["std"].fillna(0.0) / np.sqrt(s["count"])
    return s.assign(lo=s["mean"] - half, hi=s["mean"] + half)


def draw(results, out):
    eps = load_table(results, "regret_bound", "episodes")
    missing = [k for k in ENV_KEYS if k not in eps.columns]
    if missing:
        raise ValueError(f"regret_bound needs {missing} as (single-valued) grid axes so the CSV records them")
    s = bayes_regret(eps)
    groups = list(s.groupby(ENV_KEYS, sort=False))
    fig, axes = plt.subplots(1, len(groups), figsize=(6 * len(groups), 4.5), squeeze=False)
    rows = []
    for ax, (key, g) in zip(axes[0], groups):
        H, X, A, beta = (float(k) for k in key)
        L = g["episode"].to_numpy(float)
        b1, b2 = first_bound(L, H, X, A, beta), second_bound(L, H, X, A, beta)
        n = int(g["count"].max())
        ax.plot(L, g["mean"], color="C0", label=f"RLSVI: Bayes regret (mean of {n} MDPs)")
        ax.fill_between(L, g["lo"].clip(lower=1e-9), g["hi"], color="C0", alpha=0.3, label="95% CI")
        ax.plot(L, b1, color="C3", label="eq. 6.1 (eq: first regret bound)")
        ax.plot(L, b2, color="C1", label="eq. 6.2 (eq: second regret bound)")
        ax.plot(L, H * L, "k:", lw=1, label="H L (regret of any policy)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("episodes L")
        ax.set_ylabel("cumulative regret")
        ax.set_title(f"H={H:g}, |X|={X:g}, |A|={A:g}, beta={beta:g}", fontsize=9)
        ax.legend(fontsize=7)
        last = g.iloc[-1]
        Lmax = float(last["episode"])
        rows.append({"H": int(H), "|X|": int(X), "|A|": int(A), "beta": beta, "MDPs": int(last["count"]),
                     "L": int(Lmax), "Bayes regret": round(float(last["mean"]), 1),
                     "95% CI": f"[{last['lo']:.1f}, {last['hi']:.1f}]",
                     "eq. 6.1": f"{float(first_bound(Lmax, H, X, A, beta)):.4g}",
                     "eq. 6.2": f"{float(second_bound(Lmax, H, X, A, beta)):.4g}",
                     "regret / eq. 6.1": f"{float(last['mean'] / first_bound(Lmax, H, X, A, beta)):.3g}",
                     "regret / eq. 6.2": f"{float(last['mean'] / second_bound(Lmax, H, X, A, beta)):.3g}",
                     "regret / (H L)": f"{float(last['mean'] / (H * Lmax)):.3g}"})
    fig.suptitle("Theorem 1: empirical Bayesian regret of tabular RLSVI vs the bounds", fontsize=10)
    fig.tight_layout()
    return save(fig, out, "regret_bound") + write_table(pd.DataFrame(rows), out, "regret_bound")


# --------------------------------------------------------------------------- optimism check

def unconditional_gaps(params: RandomMDPParams, n_mdps: int, episodes: list[int], seed: int = 0) -> np.ndarray:
    """max_a Q_{l,0}(x0, a) - V*_{M,0}(x0) for each sampled MDP (rows) and episode l (columns).

    M ~ prior (one RandomMDP per MDP), RLSVI acts on M with Theorem 1's parameters; Q_{l,0} is
    the value function it samples at the start of episode l. The mean of a column estimates
    E[max_a Q_{l,0}(x0,a)] - E[max_a Q*_{M,0}(x0,a)], which the proof needs >= 0.
    """
    root = np.random.SeedSequence(seed)
    rows = [optimism_gaps(params, ss, episodes) for ss in root.spawn(n_mdps)]
    return np.array(rows, dtype=float).reshape(n_mdps, len(episodes))


def optimism_gaps(params: RandomMDPParams, ss: np.random.SeedSequence, episodes: list[int]) -> list[float]:
    """One row of `unconditional_gaps`: the MDP and the agent's generators spawned from `ss`."""
    env_rng, agent_rng = (np.random.default_rng(s) for s in ss.spawn(2))
    env = RandomMDP(params, env_rng)
    agent = theorem_agent(env, agent_rng)
    gap = {}

    def record(ell):
        if ell in episodes:
            gap[ell] = agent.q[0, params.start_state].max() - env.optimal_return

    live(agent, env, max(episodes), on_episode_start=record)
    return [gap[ell] for ell in episodes]


class OutcomeCounts:
    """Counts of outcomes (r, x') per (h, x, a): the sufficient statistic of the Dirichlet posterior."""

    def __init__(self, shape):
        H, X, A = shape
        self.shape = shape
        self.trans = np.zeros((max(H - 1, 0), X, A, 2 * X))
        self.last = np.zeros((X, A, 2))

    def add(self, tr) -> None:
        if tr.old_state is None:            # the reset: no outcome yet
            return
        (h, x), a, r = tr.old_state, tr.action, int(tr.reward)
        if tr.new_state is None:
            self.last[x, a, r] += 1
        else:
            self.trans[h, x, a, r * self.shape[1] + tr.new_state[1]] += 1


def posterior_optimal_values(counts: OutcomeCounts, params: RandomMDPParams, samples: int,
                             rng: np.random.Generator) -> np.ndarray:
    """V*_{M,0}(x0) for `samples` MDPs M drawn from the Dirichlet posterior given `counts`."""
    H, X, A = counts.shape
    beta = params.beta
    alpha = beta / (2 * X) + counts.trans                                  # eq. p_rlsvi
    g = rng.standard_gamma(np.broadcast_to(alpha, (samples,) + alpha.shape))
    P = (g / g.sum(axis=-1, keepdims=True)).reshape(samples, H - 1, X, A, 2, X)
    a1 = beta / 2 + counts.last[..., 1]
    a0 = beta / 2 + counts.last[..., 0]
    q_last = rng.beta(np.broadcast_to(a1, (samples, X, A)), np.broadcast_to(a0, (samples, X, A)))

    def backup(h, v):                                                      # v: (samples, X)
        if h == H - 1:
            return q_last
        return P[:, h, :, :, 1, :].sum(axis=-1) + np.einsum("ksat,kt->ksa", P[:, h].sum(axis=3), v)

    q = backward_induction(backup, H, np.zeros((samples, X)))
    return q[0].max(axis=-1)[:, params.start_state]


def conditional_gap(params: RandomMDPParams, history_episodes: int, samples: int, seed: int = 0):
    """(E[max_a Q_{l,0}(x0,a) | H], E[V*_{M,0}(x0) | H], their standard errors) for one history.

    The history comes from RLSVI acting for `history_episodes` episodes on an MDP drawn from
    the prior; the first expectation is over RLSVI's randomness (resampling learn_grlsvi on
    the same buffer), the second over the posterior of M given the history.
    """
    env_ss, agent_ss, post_ss = np.random.SeedSequence(seed).spawn(3)
    env = RandomMDP(params, np.random.default_rng(env_ss))
    agent = theorem_agent(env, np.random.default_rng(agent_ss))
    counts = OutcomeCounts(env.shape)
    live(agent, env, history_episodes, on_transition=counts.add)
    q = np.empty(samples)
    for k in range(samples):
        agent.learn_from_buffer()
        q[k] = agent.q[0, params.start_state].max()
    v = posterior_optimal_values(counts, params, samples, np.random.default_rng(post_ss))
    return q.mean(), v.mean(), q.std() / math.sqrt(samples), v.std() / math.sqrt(samples)


OPTIMISM_PARAMS = RandomMDPParams(horizon=4, states=3, actions=2, beta=3.0)
OPTIMISM_EPISODES = [1, 2, 3, 5, 10, 20, 30, 50, 80]


def draw_optimism(results, out):
    p = OPTIMISM_PARAMS
    gaps = unconditional_gaps(p, n_mdps=120, episodes=OPTIMISM_EPISODES, seed=0)
    mean = gaps.mean(axis=0)
    half = 1.96 * gaps.std(axis=0, ddof=1) / math.sqrt(len(gaps))
    cond = [conditional_gap(p, n, samples=1000, seed=s) for s, n in enumerate([0, 2, 5, 10, 20, 50, 100, 200])]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    ax = axes[0]
    ax.errorbar(OPTIMISM_EPISODES, mean, yerr=half, fmt="o-", ms=3, capsize=2,
                label=r"mean of $\max_a Q_{\ell,0}(x_0,a) - V^*_{M,0}(x_0)$")
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel(r"episode $\ell$")
    ax.set_ylabel("optimism gap")
    ax.set_title(f"(a) under the prior: {len(gaps)} MDPs, 95% CI", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[1]
    qm = np.array([c[0] for c in cond])
    vm = np.array([c[1] for c in cond])
    ax.scatter(vm, qm, s=14)
    lim = [min(vm.min(), qm.min()) * 0.95, max(vm.max(), qm.max()) * 1.05]
    ax.plot(lim, lim, "k--", lw=0.8, label="equality")
    ax.set_xlabel(r"$E[V^*_{M,0}(x_0) \mid \mathcal{H}]$ (Dirichlet posterior)")
    ax.set_ylabel(r"$E[\max_a Q_{\ell,0}(x_0,a) \mid \mathcal{H}]$ (RLSVI)")
    ax.set_title(f"(b) given {len(cond)} histories of 0-200 episodes; above the line = optimistic", fontsize=9)
    ax.legend(fontsize=7)
    fig.suptitle(f"Optimism of RLSVI with Theorem 1's parameters (H={p.horizon}, |X|={p.states}, "
                 f"|A|={p.actions}, beta={p.beta:g})", fontsize=10)
    fig.tight_layout()
    tab = pd.DataFrame({"episode": OPTIMISM_EPISODES, "mean gap": mean.round(3), "95% CI half-width": half.round(3)})
    return save(fig, out, "regret_bound_optimism") + write_table(tab, out, "regret_bound_optimism")

"""Theorem 1 (thm: regret), checked empirically.

`regret_bound` reads results/regret_bound/{episodes,runs}.csv: tabular `learn_grlsvi` with
Theorem 1's parameters (v = 3H^2, theta-bar = H 1, v/lambda = beta) on time-inhomogeneous
MDPs drawn from the Dirichlet prior of Assumption 2 (`random_mdp`, one MDP per seed). The
Bayesian regret is the mean over sampled MDPs of the cumulative regret, with a 95% normal
interval, plotted over L against eq. 6.1 (`eq: first regret bound`) and eq. 6.2
(`eq: second regret bound`).

`regret_bound_optimism` reads results/regret_bound_optimism/{optimism,posterior}.csv, the
tables of `rvfx.agents.tabular.optimism.OptimismProbe` (runs with a posterior row make (b), the
others (a)), and checks the optimism step of the proof (Corollary "optimism of RLSVI" and
eq. "optimism in expectation"):
  (a) under the prior: E[max_a Q_{l,0}(x0, a)] - E[max_a Q*_{M,0}(x0, a)] >= 0 for episodes
      l = 1, 2, ..., where M is drawn from the prior and the history from RLSVI acting on M;
  (b) given a history: E[max_a Q_{l,0}(x0, a) | H] >= E[V*_{M,0}(x0) | H], with M drawn from
      the Dirichlet posterior of that history (exactly what the corollary conditions on).
"""
from __future__ import annotations

import pandas as pd

from rvfx.analysis.bounds import ENV_KEYS, bayes_regret, bound_summary, first_bound, optimism_gaps, second_bound
from rvfx.experiment.results import env_params, load_table
from rvfx.figures.common import plt, save, write_table


def draw(results, out):
    eps = load_table(results, "regret_bound", "episodes")
    missing = [k for k in ENV_KEYS if k not in eps.columns]
    if missing:
        raise ValueError(f"regret_bound needs {missing} as (single-valued) grid axes so the CSV records them")
    s = bayes_regret(eps)
    groups = list(s.groupby(ENV_KEYS, sort=False))
    fig, axes = plt.subplots(1, len(groups), figsize=(6 * len(groups), 4.5), squeeze=False)
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
        ax.set_title(f"H={H:g}, |X|={X:g}, |A|={A:g}, beta={beta:g}")
        ax.legend()
    fig.suptitle("Theorem 1: empirical Bayesian regret of tabular RLSVI vs the bounds")
    fig.tight_layout()
    rows = [{"H": int(r["H"]), "|X|": int(r["X"]), "|A|": int(r["A"]), "beta": r["beta"], "MDPs": r["MDPs"],
             "L": int(r["L"]), "Bayes regret": round(r["regret"], 1), "95% CI": f"[{r['lo']:.1f}, {r['hi']:.1f}]",
             "eq. 6.1": f"{r['eq_6_1']:.4g}", "eq. 6.2": f"{r['eq_6_2']:.4g}",
             "regret / eq. 6.1": f"{r['over_eq_6_1']:.3g}", "regret / eq. 6.2": f"{r['over_eq_6_2']:.3g}",
             "regret / (H L)": f"{r['over_HL']:.3g}"} for r in bound_summary(s).to_dict("records")]
    return save(fig, out, "regret_bound") + write_table(pd.DataFrame(rows), out, "regret_bound")


# --------------------------------------------------------------------------- optimism check

def draw_optimism(results, out):
    exp = "regret_bound_optimism"
    post = load_table(results, exp, "posterior").sort_values("history")
    gaps = optimism_gaps(load_table(results, exp, "optimism"), post)     # (a): the runs without a history check
    p = env_params(results, exp)
    half = gaps["half"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    ax = axes[0]
    ax.errorbar(gaps["episode"], gaps["mean"], yerr=half, fmt="o-", ms=3, capsize=2,
                label=r"mean of $\max_a Q_{\ell,0}(x_0,a) - V^*_{M,0}(x_0)$")
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel(r"episode $\ell$")
    ax.set_ylabel("optimism gap")
    ax.set_title(f"(a) under the prior: {int(gaps['count'].max())} MDPs, 95% CI")
    ax.legend()
    ax = axes[1]
    qm, vm = post["q_mean"].to_numpy(), post["v_mean"].to_numpy()
    ax.scatter(vm, qm, s=14)
    lim = [min(vm.min(), qm.min()) * 0.95, max(vm.max(), qm.max()) * 1.05]
    ax.plot(lim, lim, "k--", lw=0.8, label="equality")
    ax.set_xlabel(r"$E[V^*_{M,0}(x_0) \mid \mathcal{H}]$ (Dirichlet posterior)")
    ax.set_ylabel(r"$E[\max_a Q_{\ell,0}(x_0,a) \mid \mathcal{H}]$ (RLSVI)")
    ax.set_title(f"(b) given {len(post)} histories of {post['history'].min()}-{post['history'].max()} episodes; "
                 "above the line = optimistic")
    ax.legend()
    fig.suptitle(f"Optimism of RLSVI with Theorem 1's parameters (H={p.horizon}, |X|={p.states}, "
                 f"|A|={p.actions}, beta={p.beta:g})")
    fig.tight_layout()
    tab = pd.DataFrame({"episode": gaps["episode"], "MDPs": gaps["count"], "mean gap": gaps["mean"].round(3),
                        "95% CI half-width": half.round(3)})
    return save(fig, out, "regret_bound_optimism") + write_table(tab, out, "regret_bound_optimism")

"""Summaries of linear RLSVI's deep-sea experiments (Figs. 6-13) as numeric frames, for the figures'
tables to format and the claims to read: regret per chest, the bend of learning time in M at 2N,
robustness to misspecification per number of features M, and the (lambda, v) tuning sweep."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.stats import (
    breakdown,
    censored_median,
    censored_medians,
    fit_loglog,
    learning_times,
    mean_sem,
    mean_sem_all,
    two_piece_breakpoint,
)


def misspecification_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per M of Fig. 9's runs, in run order: the most seeds of any psi; the final cumulative regret's
    mean and s.e.m. at the smallest psi and at the largest; the largest psi at which at least half the
    runs learn (NaN: none) and the breakdown psi (`breakdown`: the smallest at which fewer than half
    do, +inf when none in the grid, as the claims read it); the runs learnt, and run, at the largest psi."""
    rows = []
    for m, g in runs.groupby("agent.M", sort=False):
        regret = mean_sem(g, ["agent.psi"], "final_cum_regret").sort_values("agent.psi")
        psis = regret["agent.psi"].to_numpy()
        learnt = [~g.loc[g["agent.psi"] == psi, "censored"].astype(bool).to_numpy() for psi in psis]
        first, last = regret.iloc[0], regret.iloc[-1]
        rows.append({"M": m, "seeds": max(len(f) for f in learnt),
                     "psi_first": first["agent.psi"], "regret_first": first["mean"], "regret_first_sem": first["sem"],
                     "psi_last": last["agent.psi"], "regret_last": last["mean"], "regret_last_sem": last["sem"],
                     "largest_psi_learnt": max((psi for psi, f in zip(psis, learnt) if f.mean() >= 0.5),
                                               default=np.nan),
                     "breakdown_psi": breakdown(psis, learnt),
                     "learnt_at_last": int(learnt[-1].sum()), "runs_at_last": len(learnt[-1])})
    return pd.DataFrame(rows)


def regret_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Fig. 6 per agent and chest (env.treasure), in run order: seeds, episodes, the final cumulative
    regret's mean and s.e.m., the censored median learning time (NaN: censored) and the runs never
    learnt (NaN learning time)."""
    rows = []
    for (agent, treasure), g in runs.groupby(["agent", "env.treasure"], sort=False):
        m = mean_sem_all(g, "final_cum_regret")
        lt = learning_times(g)
        rows.append({"agent": agent, "treasure": bool(treasure), "seeds": len(g),
                     "episodes": int(g["episodes_run"].max()), "regret": m["mean"], "regret_sem": m["sem"],
                     "median_learning_time": censored_median(lt), "never_learnt": int(np.isnan(lt).sum())})
    return pd.DataFrame(rows)


def bend_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Figs. 8 and 13b per N (ascending): the log-log slope of the median learning time in M below
    and at or above M = 2N (`fit_loglog`: slope, lo, hi, NaN when unfitted), the M of the best kink of
    a two-piece log-log line through the uncensored medians (NaN with fewer than 4), the censored
    median at M = 2N (NaN: censored or not in the grid) and at the largest M, and the runs censored."""
    rows = []
    for n, g in runs.groupby("env.size"):
        m, lt = g["agent.M"].to_numpy(float), learning_times(g)
        below, above = m < 2 * n, m >= 2 * n
        med = censored_medians(g, "agent.M")
        known = med.dropna()
        fits = {"below": fit_loglog(m[below], lt[below]), "above": fit_loglog(m[above], lt[above])}
        rows.append({"N": int(n), **{f"{side}_{k}": getattr(f, k) for side, f in fits.items()
                                     for k in ("slope", "lo", "hi")},
                     "kink": two_piece_breakpoint(known.index.to_numpy(float), known.to_numpy()),
                     "median_at_2N": med.get(2 * n, np.nan), "median_at_largest": med.iloc[-1],
                     "censored": int(np.isnan(lt).sum()), "runs": len(g)})
    return pd.DataFrame(rows)


def regret_by_lambda(runs: pd.DataFrame) -> pd.DataFrame:
    """Fig. 10 per reward noise (ascending), noise variance v (ascending; NaN, the bootstrap, last)
    and prior variance lambda (ascending): the mean final cumulative regret over seeds."""
    rows = []
    for noise in np.sort(runs["env.reward_noise"].unique()):
        for v, g in runs[runs["env.reward_noise"] == noise].groupby("agent.v", dropna=False, sort=True):
            rows += [{"reward_noise": noise, "v": v, "lam": lam, "regret": float(s["final_cum_regret"].mean())}
                     for lam, s in g.groupby("agent.lam")]
    return pd.DataFrame(rows)


def bootstrap_vs_best_v(gauss: pd.DataFrame, boot: pd.DataFrame, lam: float) -> pd.DataFrame:
    """Fig. 11 per reward noise (ascending) at prior variance `lam`, where both the Gaussian runs
    (`gauss`) and the bootstrap's (`boot`) have some: the v with the least mean final regret and that
    mean with its s.e.m.; the bootstrap's mean and s.e.m.; their difference with the s.e. of a
    difference of independent means; how many of the v values have a larger mean regret than the
    bootstrap, of how many; and whether the bootstrap is within 2 s.e. of the best v."""
    rows = []
    for noise in np.sort(pd.concat([gauss, boot])["env.reward_noise"].unique()):
        g = gauss[(gauss["env.reward_noise"] == noise) & (gauss["agent.lam"] == lam)]
        b = boot[(boot["env.reward_noise"] == noise) & (boot["agent.lam"] == lam)]
        if g.empty or b.empty:
            continue
        s = mean_sem(g, ["agent.v"], "final_cum_regret").sort_values("agent.v")
        bm = mean_sem_all(b, "final_cum_regret")
        best = s.loc[s["mean"].idxmin()]
        diff = bm["mean"] - best["mean"]
        se = float(np.hypot(bm["sem"], best["sem"]))
        rows.append({"reward_noise": noise, "lam": lam, "best_v": best["agent.v"], "best_regret": best["mean"],
                     "best_regret_sem": best["sem"], "bootstrap_regret": bm["mean"],
                     "bootstrap_regret_sem": bm["sem"], "difference": diff, "difference_se": se,
                     "v_beaten": int((s["mean"] > bm["mean"]).sum()), "v_count": len(s),
                     "within_2se": bool(diff <= 2 * se)})
    return pd.DataFrame(rows)


def seed_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Fig. 12 per reward noise (ascending) and noise variance v (ascending; NaN, the bootstrap,
    last): the runs, those that learnt (eq. 7.1, not censored), the censored median learning time
    (NaN: censored), and the final cumulative regret's minimum, median and maximum over seeds."""
    rows = []
    settings = sorted(runs["agent.v"].dropna().unique()) + ([np.nan] if runs["agent.v"].isna().any() else [])
    for noise in np.sort(runs["env.reward_noise"].unique()):
        for v in settings:
            r = runs[(runs["env.reward_noise"] == noise)
                     & (runs["agent.v"].isna() if pd.isna(v) else runs["agent.v"] == v)]
            lo, mid, hi = np.quantile(r["final_cum_regret"], [0, 0.5, 1])
            rows.append({"reward_noise": noise, "v": v, "runs": len(r),
                         "learnt": int((~r["censored"].astype(bool)).sum()),
                         "median_learning_time": censored_median(learning_times(r)),
                         "regret_min": lo, "regret_median": mid, "regret_max": hi})
    return pd.DataFrame(rows)


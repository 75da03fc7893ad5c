"""Summaries of linear RLSVI's deep-sea experiments as numbers, for the figures' tables to format:
Fig. 9's robustness to misspecification per number of features M."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.stats import breakdown, mean_sem


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

"""Fig. 14's summary of ensemble RLSVI on deep sea per ensemble size K as numbers: the median learning
time with its CI, the final regret, and the K where the median plateaus (`plateau_k`)."""
from __future__ import annotations

import pandas as pd

from rvfx.analysis.stats import learning_times, mean_sem_all, median_ci, plateau_k


def ensemble_summary(runs: pd.DataFrame, k: str = "agent.K") -> pd.DataFrame:
    """Per K (ascending): seeds; the censored median learning time with its 95% bootstrap CI
    (`median_ci`); censored runs; episodes; the final cumulative regret's mean and s.e.m.; and
    whether K is the plateau (`plateau_k` of the medians)."""
    rows = []
    for K in sorted(runs[k].unique()):
        r = runs[runs[k] == K]
        med, lo, hi = median_ci(learning_times(r))
        final = mean_sem_all(r, "final_cum_regret")
        rows.append({"K": int(K), "seeds": len(r), "median": med, "lo": lo, "hi": hi,
                     "censored": int(r["censored"].sum()), "episodes": int(r["episodes_run"].max()),
                     "regret": final["mean"], "regret_sem": final["sem"]})
    table = pd.DataFrame(rows)
    return table.assign(plateau=table["K"] == plateau_k(table["K"].tolist(), table["median"].tolist()))

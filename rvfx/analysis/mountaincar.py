"""Gymnasium's MountainCar-v0 (configs/mountaincar.yaml) as numbers: the first episode each run
reaches the flag, and per agent its median with a bootstrap CI and the final return."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.final_return import final_returns
from rvfx.analysis.stats import mean_sem_all, median_ci


def first_success(eps: pd.DataFrame) -> pd.DataFrame:
    """Per run: the first episode that reached the goal (`terminated`), NaN if none, and the episodes run."""
    hit = eps[eps["terminated"] == 1].groupby("run_id")["episode"].min()
    runs = eps.groupby(["run_id", "agent"], sort=False)["episode"].max().rename("episodes").reset_index()
    return runs.assign(first=runs["run_id"].map(hit).astype(float))


def summary(eps: pd.DataFrame) -> pd.DataFrame:
    """Per agent, in run order: seeds, the median first success with its 95% bootstrap CI
    (`median_ci`, a run never reaching the flag counted as +inf), the runs never reaching it, the
    return over the last 10% of episodes (mean and s.e.m. over runs) and the episodes run."""
    first = first_success(eps)
    rows = []
    for agent, g in eps.groupby("agent", sort=False):
        f = first[first["agent"] == agent]
        times = f["first"].to_numpy(float)
        med, lo, hi = median_ci(times)
        final = mean_sem_all(final_returns(g).to_frame(), "return")
        rows.append({"agent": agent, "seeds": len(f), "median": med, "lo": lo, "hi": hi,
                     "never": int((~np.isfinite(times)).sum()), "return": final["mean"],
                     "return_sem": final["sem"], "episodes": int(f["episodes"].max())})
    return pd.DataFrame(rows)

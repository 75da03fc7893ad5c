"""Table 1 (tab:grid) measured, as numbers: per exploration method and deep sea size N the censored
median learning time (eq. 7.1), and per method the growth of those medians fitted as a power law
and as an exponential (`fit_growth`)."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from rvfx.analysis.stats import censored_median, fit_growth, learning_times


def size_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (agent, N), in run order: runs, censored runs, the cap (episodes run), the censored
    median learning time (NaN: censored) and the mean over the uncensored runs (NaN: none)."""
    rows = []
    for (agent, n), g in runs.groupby(["agent", "env.size"], sort=False):
        lt = learning_times(g)
        rows.append({"agent": agent, "N": int(n), "runs": len(g), "censored": int(np.isnan(lt).sum()),
                     "cap": int(g["episodes_run"].max()), "median": censored_median(lt),
                     "mean_uncensored": float(np.nanmean(lt)) if (~np.isnan(lt)).any() else math.nan})
    return pd.DataFrame(rows)


def growth_fits(per_size: pd.DataFrame) -> pd.DataFrame:
    """Per agent of `size_summary`, in its order: `fit_growth` of its medians against N (kind,
    power, base, rss_power, rss_exp, sizes)."""
    return pd.DataFrame([{"agent": agent, **dataclasses.asdict(fit_growth(g["N"], g["median"]))}
                         for agent, g in per_size.groupby("agent", sort=False)])

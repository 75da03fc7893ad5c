"""Learning-time scaling in a size (Figs. 5, 7, 13 and 15), as numbers: per group of runs the log-log
slope of the censored median learning time on the size with its bootstrap CI (`fit_loglog`), and per
group and size the censored median with its bootstrap CI (`median_ci`)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from rvfx.analysis.stats import fit_loglog, learning_times, median_ci


def slope_fits(runs: pd.DataFrame, size: str, group: str) -> pd.DataFrame:
    """Per value of `group` (in order of appearance): `fit_loglog` of its runs' learning times on
    `size` (slope, lo, hi, intercept; sizes_used and sizes_censored as lists), its runs and its
    censored runs."""
    rows = []
    for name, g in runs.groupby(group, sort=False):
        fit = fit_loglog(g[size].to_numpy(float), learning_times(g))
        rows.append({group: name, **dataclasses.asdict(fit), "runs": len(g), "censored": int(g["censored"].sum())})
    return pd.DataFrame(rows)


def size_medians(runs: pd.DataFrame, group: str, size: str = "env.size") -> pd.DataFrame:
    """Per value of `group` (in order of appearance) and of `size` (ascending): its runs, the censored
    median learning time with its 95% bootstrap CI (`median_ci`: NaN median and inf ends where
    censored) and its censored runs."""
    rows = []
    for name, g in runs.groupby(group, sort=False):
        for n, r in g.groupby(size):
            med, lo, hi = median_ci(learning_times(r))
            rows.append({group: name, size: n, "runs": len(r), "median": med, "lo": lo, "hi": hi,
                         "censored": int(r["censored"].sum())})
    return pd.DataFrame(rows)


def cis_overlap(a: dict, b: dict) -> bool | None:
    """Whether two fits' (rows of `slope_fits`) 95% CIs overlap; None when either slope is unfitted."""
    if not (np.isfinite(a["slope"]) and np.isfinite(b["slope"])):
        return None
    return bool(a["lo"] <= b["hi"] and b["lo"] <= a["hi"])

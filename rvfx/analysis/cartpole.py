"""Figs. 16-17's summary of cartpole runs per agent and swept setting, as numbers: counted from the
per-run table `cartpole_runs` (rvfx.analysis.curves), for the figures' summary tables to format."""
from __future__ import annotations

import pandas as pd

from rvfx.analysis.curves import swept
from rvfx.analysis.final_return import LEARNT_RETURN, final_window_start
from rvfx.analysis.stats import mean_sem_all


def cartpole_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per agent and swept setting of `runs` (rows of cartpole_runs), in run order: its keys;
    seeds; the last episode and the final window's first; how many runs ever reach the upright reward
    (upright steps > 0) and how many in the final window, and the median first episode reaching it
    (NaN: none); the final return's mean and s.e.m.; how many runs learnt (final return >=
    LEARNT_RETURN) and how many have some 10% window at it (post hoc), the best window's median
    return; how many final greedy episodes swing the pole up and collect upright reward, and the
    median |θ̇| while up over those that swing up (NaN: none)."""
    keys = ["agent", *swept(runs)]
    rows = []
    for values, g in runs.groupby(keys, sort=False, dropna=False):   # an agent without a swept key too
        last = int(g["episodes"].max())
        m = mean_sem_all(g, "final_return")
        best = g["best_window_return"]
        rows.append({**dict(zip(keys, values if isinstance(values, tuple) else (values,))),
                     "seeds": len(g), "episodes": last, "final_window_start": final_window_start(last),
                     "ever_reached": int(g["ever_reached"].sum()),
                     "reached_in_final_window": int(g["reached_in_final_window"].sum()),
                     "first_reached_median": g["first_reached"].median(),
                     "final_return_mean": m["mean"], "final_return_sem": m["sem"],
                     "learnt": int((g["final_return"] >= LEARNT_RETURN).sum()),
                     "learnt_in_some_window": int((best >= LEARNT_RETURN).sum()),
                     "best_window_median": best.median(),
                     "swings_up": int((g["up_steps"] > 0).sum()),
                     "collects_reward": int((g["rewarded_steps"] > 0).sum()),
                     "up_speed_median": g["up_speed"].median()})
    return pd.DataFrame(rows)

"""Fig. 4's summary of tabular agents on deep sea as numbers: per agent the final cumulative regret
over all runs and per chest, and the treasure runs' median learning time."""
from __future__ import annotations

import pandas as pd

from rvfx.analysis.stats import censored_median, learning_times, mean_sem_all


def chest_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per agent, in run order: the final cumulative regret's mean, s.e.m. and runs over all its runs
    (all_*), its treasure runs (treasure_*) and its bomb runs (bomb_*); the episodes run; and the
    censored median learning time of its treasure runs (NaN: censored)."""
    rows = []
    for agent, g in runs.groupby("agent", sort=False):
        row = {"agent": agent}
        for name, sub in (("all", g), ("treasure", g[g["env.treasure"]]), ("bomb", g[~g["env.treasure"]])):
            m = mean_sem_all(sub, "final_cum_regret")
            row.update({f"{name}_regret": m["mean"], f"{name}_regret_sem": m["sem"], f"{name}_runs": int(m["count"])})
        row["episodes"] = int(g["episodes_run"].max())
        row["treasure_median_learning_time"] = censored_median(learning_times(g[g["env.treasure"]]))
        rows.append(row)
    return pd.DataFrame(rows)

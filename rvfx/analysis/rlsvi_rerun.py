"""Fig. 17's contrast rerun (configs/cartpole_rlsvi_rerun.yaml): per run, Fig. 17's learnt criterion and
the first episode returning more than 100; per cell (setting x agent), the fraction learnt with its exact
CI, the median first success with its 95% CI and the episodes > 100. Agents are named CLASS_SETTING."""
from __future__ import annotations

import pandas as pd

from rvfx.analysis.final_return import LEARNT_RETURN, final_returns, success_readouts
from rvfx.analysis.stats import clopper_pearson, median_ci, sem

CLASSES = {   # Fig. 17's value-function classes, in the figure's order
    "rlsvi": "ensemble RLSVI, 50-50 MLP",
    "one_layer": "ensemble RLSVI, one hidden layer of 50",
    "linear": "ensemble RLSVI, linear Q",
    "dqn": "DQN, 50-50 MLP",
}


def split_agent(agent: str) -> tuple[str, str]:
    """(class, setting) of an agent named CLASS_SETTING; a ValueError names any other."""
    for cls in sorted(CLASSES, key=len, reverse=True):
        if agent.startswith(cls + "_") and len(agent) > len(cls) + 1:
            return cls, agent[len(cls) + 1:]
    raise ValueError(f"cartpole_rlsvi_rerun: agent {agent!r} is not CLASS_SETTING with CLASS one of "
                     f"{', '.join(CLASSES)}")


def run_readouts(episodes: pd.DataFrame) -> pd.DataFrame:
    """One row per run: setting, class, seed, final return (mean over the last 10% of episodes), learnt
    (final return >= 100) and `success_readouts`."""
    final = final_returns(episodes)
    rows = []
    for run_id, g in episodes.groupby("run_id", sort=False):
        g = g.sort_values("episode")
        cls, setting = split_agent(g["agent"].iloc[0])
        rows.append({"setting": setting, "class": cls, "seed": int(g["seed"].iloc[0]), "run_id": run_id,
                     "final_return": float(final[run_id]), "learnt": bool(final[run_id] >= LEARNT_RETURN),
                     **success_readouts(g["return"].to_numpy())})
    order = {c: i for i, c in enumerate(CLASSES)}
    return (pd.DataFrame(rows).assign(_c=lambda d: d["class"].map(order))
            .sort_values(["setting", "_c", "seed"], ignore_index=True).drop(columns="_c"))


def cell_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per setting and class: runs learnt (k, n, Clopper-Pearson 95% CI), the median first episode > 100
    with its 95% CI (never = +inf), the runs that never passed 100, and the episodes > 100 and the
    final return as mean and s.e. over seeds."""
    rows = []
    for (setting, cls), g in runs.groupby(["setting", "class"], sort=False):
        k, n = int(g["learnt"].sum()), len(g)
        med, lo, hi = median_ci(g["first_success"].to_numpy(float))
        rows.append({"setting": setting, "class": cls, "agent": CLASSES[cls], "seeds": n,
                     "episodes": int(g["episodes"].max()), "learnt": k,
                     **dict(zip(("learnt_lo", "learnt_hi"), clopper_pearson(k, n))),
                     "median": med, "lo": lo, "hi": hi, "never": int(g["first_success"].isna().sum()),
                     "successes": float(g["successes"].mean()), "successes_sem": sem(g["successes"]),
                     "final_return": float(g["final_return"].mean()), "final_return_sem": sem(g["final_return"])})
    return pd.DataFrame(rows)

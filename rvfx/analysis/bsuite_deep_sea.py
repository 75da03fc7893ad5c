"""bsuite's deep_sea sweep (configs/bsuite_deep_sea.yaml) as numbers: the episode each run solves
each size at (bsuite's `find_solution`) and its bsuite score, for rvfx's runs and, where its logs are
present, bsuite's own boot_dqn; summarised per agent and per agent and size."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.bsuite import find_solution, load_runs, read_bsuite_logs, score
from rvfx.analysis.stats import censored_median, learning_times
from rvfx.experiment.results import experiment_dir, load_table

EXPERIMENT = "bsuite_deep_sea"
BOOT_DQN = "boot_dqn"      # RESULTS/bsuite_deep_sea/boot_dqn/[seed_*/]: bsuite's own logs of its boot_dqn


def boot_dqn_logs(results) -> pd.DataFrame:
    """bsuite logs of bsuite's boot_dqn under RESULTS/bsuite_deep_sea/boot_dqn: the folder itself
    or each seed_* folder in it is one seed; empty when it was not run."""
    root = experiment_dir(results, EXPERIMENT) / BOOT_DQN
    folders = [root, *sorted(p for p in root.glob("*") if p.is_dir())] if root.is_dir() else []
    frames = [read_bsuite_logs(f).assign(agent=f"{BOOT_DQN} (bsuite)", seed=i, run_id="")
              for i, f in enumerate(f for f in folders if any(f.glob("*.csv")))]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def solutions(results) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per agent, seed, run and size: `find_solution`'s episode, solved and finished, and the run's
    eq. 7.1 learning time (NaN for boot_dqn, whose logs hold no regret, run_id ""); per agent, in
    order of appearance, and seed: bsuite's `score`)."""
    logs = pd.concat([load_runs(results, EXPERIMENT), boot_dqn_logs(results)], ignore_index=True)
    runs = load_table(results, EXPERIMENT, "runs")
    solved = find_solution(logs, ["agent", "seed", "run_id"])
    solved["learning_time"] = solved["run_id"].map(dict(zip(runs["run_id"], learning_times(runs))))
    scores = pd.DataFrame([{"agent": a, "seed": seed, "score": score(g)} for a in dict.fromkeys(logs["agent"])
                           for seed, g in logs[logs["agent"] == a].groupby("seed")])
    return solved, scores


def agent_summary(solved: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Per agent of `scores`, in its order: seeds, sizes, the mean score and each seed's (a list), the
    largest size solved in every seed (NaN: none) and the sizes solved in no seed (a list)."""
    rows = []
    for agent, sc in scores.groupby("agent", sort=False):
        s = solved[solved["agent"] == agent]
        every, some = s.groupby("size")["solved"].all(), s.groupby("size")["solved"].any()
        rows.append({"agent": agent, "seeds": s["seed"].nunique(), "sizes": int(s["size"].nunique()),
                     "score": float(np.mean(sc["score"].tolist())), "scores": sc["score"].tolist(),
                     "largest_solved_every_seed": float(every[every].index.max()) if every.any() else np.nan,
                     "never_solved": [int(n) for n in some[~some].index]})
    return pd.DataFrame(rows)


def size_summary(solved: pd.DataFrame, agents) -> pd.DataFrame:
    """Per agent of `agents` and size (ascending): runs, runs solved, the median episode solved over
    those (NaN: none), whether the runs logged regret (boot_dqn's do not) and then their censored
    median learning time (NaN: censored)."""
    rows = []
    for agent in agents:
        for size, g in solved[solved["agent"] == agent].groupby("size"):
            episodes = g.loc[g["solved"], "episode"]
            logged = bool(g["run_id"].all())
            rows.append({"agent": agent, "size": int(size), "runs": len(g), "solved": len(episodes),
                         "median_episode": float(np.median(episodes)) if len(episodes) else np.nan,
                         "regret_logged": logged,
                         "median_learning_time": censored_median(g["learning_time"].to_numpy(float))
                         if logged else np.nan})
    return pd.DataFrame(rows)

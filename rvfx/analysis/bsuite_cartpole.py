"""bsuite's cartpole_swingup positive control (configs/bsuite_cartpole_swingup.yaml) as numbers: per
run, rvfx's and bsuite's own boot_dqn's, the first episode returning more than 100, how many did and
bsuite's score; per level and agent their medians and means with 95% CIs and the stated verdict
(rvfx "matches" boot_dqn when its median first-success episode lies in the 95% CI of boot_dqn's,
else "lags", or "ahead" below it)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.bsuite import episode_log, load_runs, read_bsuite_logs, swingup_readouts
from rvfx.analysis.stats import bootstrap_ci, median_ci, sem
from rvfx.experiment.results import experiment_dir, load_table

EXPERIMENT = "bsuite_cartpole_swingup"
BOOT_DQN = "boot_dqn (bsuite)"   # RESULTS/<experiment>/boot_dqn/<bsuite_id folder>/seed_<s>/: its CSV logs


def boot_dqn_runs(results) -> list[tuple[str, int, pd.DataFrame]]:
    """(bsuite_id, seed, every-episode bsuite log) of each boot_dqn run under
    RESULTS/bsuite_cartpole_swingup/boot_dqn/seed_<s>/ (bsuite's CSV logger's files, one per bsuite_id)."""
    root = experiment_dir(results, EXPERIMENT) / "boot_dqn"
    runs = []
    for folder in sorted(root.glob("seed_*")) if root.is_dir() else []:
        seed = folder.name[len("seed_"):]
        if not seed.isdigit():
            raise ValueError(f"{folder}: a boot_dqn folder is named seed_<number>")
        logs = read_bsuite_logs(folder)
        for bsuite_id, log in logs.groupby("bsuite_id", sort=True) if len(logs) else []:
            runs.append((bsuite_id, int(seed), episode_log(log, f"{folder} ({bsuite_id})")))
    return runs


def readouts(results) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-run readouts, per-episode returns) of every arm: rvfx's runs from their episode rows and
    rebuilt bsuite logs, boot_dqn's from its own logs."""
    eps = load_table(results, EXPERIMENT, "episodes")
    logs = load_runs(results, EXPERIMENT)
    diagnosed = (experiment_dir(results, EXPERIMENT) / "diagnostics.csv").exists()
    diag = load_table(results, EXPERIMENT, "diagnostics") if diagnosed else None
    spread = ({} if diag is None else
              diag[diag["metric"] == "prior_spread"].groupby("run_id")["value"].mean().to_dict())
    rows, returns = [], [eps[["agent", "env.id", "seed", "run_id", "episode", "return"]]]
    for run_id, g in eps.groupby("run_id", sort=False):
        g = g.sort_values("episode")
        rows.append({"agent": g["agent"].iloc[0], "level": g["env.id"].iloc[0], "seed": int(g["seed"].iloc[0]),
                     "run_id": run_id, **swingup_readouts(g["return"].to_numpy(), logs[logs["run_id"] == run_id]),
                     "prior_spread": spread.get(run_id, np.nan)})
    for bsuite_id, seed, log in boot_dqn_runs(results):
        run_id = f"boot_dqn/{bsuite_id}/{seed}"
        rows.append({"agent": BOOT_DQN, "level": bsuite_id, "seed": seed, "run_id": run_id,
                     **swingup_readouts(log["episode_return"].to_numpy(), log)})
        returns.append(pd.DataFrame({"agent": BOOT_DQN, "env.id": bsuite_id, "seed": seed, "run_id": run_id,
                                     "episode": log["episode"], "return": log["episode_return"]}))
    return pd.DataFrame(rows), pd.concat(returns, ignore_index=True)


def verdict(median: float, reference: tuple[float, float, float] | None) -> str:
    """The stated rule: "matches" if `median` lies in boot_dqn's 95% CI, "lags" above it, "ahead" below."""
    if reference is None:
        return "no boot_dqn runs"
    _, lo, hi = reference
    m = np.inf if np.isnan(median) else median
    return "matches" if lo <= m <= hi else ("lags" if m > hi else "ahead")


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per level (ascending) and agent of `readouts`' runs: seeds, episodes, the median first success
    with its 95% bootstrap CI (`median_ci`), the runs never above 100, the episodes above 100 (mean
    and s.e.m., NaN for one seed), bsuite's score (mean and 95% bootstrap CI, NaN for one seed), the
    mean prior spread (NaN where not measured) and the verdict against boot_dqn ("reference" for it)."""
    rows = []
    for level, at in runs.groupby("level", sort=True):
        boot = at[at["agent"] == BOOT_DQN]
        reference = median_ci(boot["first_success"].to_numpy(float)) if len(boot) else None
        for agent, g in at.groupby("agent", sort=False):
            med, lo, hi = median_ci(g["first_success"].to_numpy(float))
            score = g["score"].to_numpy(float)
            _, s_lo, s_hi = (bootstrap_ci([score], lambda s: float(np.mean(s[0]))) if len(score) > 1
                             else (0.0, np.nan, np.nan))
            rows.append({"level": level, "agent": agent, "seeds": len(g), "episodes": int(g["episodes"].max()),
                         "median": med, "lo": lo, "hi": hi, "never": int(g["first_success"].isna().sum()),
                         "successes": g["successes"].mean(),
                         "successes_sem": sem(g["successes"]),
                         "score": score.mean(), "score_lo": s_lo, "score_hi": s_hi,
                         "prior_spread": g["prior_spread"].mean() if g["prior_spread"].notna().any() else np.nan,
                         "verdict": "reference" if agent == BOOT_DQN else verdict(med, reference)})
    return pd.DataFrame(rows)

"""Beyond the paper: rvfx's ensemble and DQN against bsuite's own boot_dqn on bsuite's cartpole_swingup
(configs/bsuite_cartpole_swingup.yaml): returns over episodes, the first episode returning more than
100 per run, and the table of readouts with the stated verdict (rvfx "matches" boot_dqn when its median
first-success episode lies in the 95% CI of boot_dqn's, else "lags", or "ahead" below it)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.stats import bootstrap_ci, median_ci
from rvfx.experiment.results import experiment_dir, load_table
from rvfx.figures.common import band, ci_cell, first_success_dots, plt, save, write_table

EXPERIMENT = "bsuite_cartpole_swingup"
BOOT_DQN = "boot_dqn (bsuite)"   # RESULTS/<experiment>/boot_dqn/<bsuite_id folder>/seed_<s>/: its CSV logs
SMOOTH = 10                      # returns: running mean over this many episodes per run


def boot_dqn_runs(results) -> list[tuple[str, int, pd.DataFrame]]:
    """(bsuite_id, seed, every-episode bsuite log) of each boot_dqn run under
    RESULTS/bsuite_cartpole_swingup/boot_dqn/seed_<s>/ (bsuite's CSV logger's files, one per bsuite_id)."""
    from rvfx.analysis.bsuite import episode_log, read_bsuite_logs
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
    from rvfx.analysis.bsuite import load_runs, swingup_readouts
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
                         "first episode > 100: median [95% CI]": ci_cell(med, lo, hi),
                         "never > 100": f"{int(g['first_success'].isna().sum())}/{len(g)}",
                         "episodes > 100 (mean ± s.e.)":
                             f"{g['successes'].mean():.1f} ± {g['successes'].std(ddof=1) / np.sqrt(len(g)):.1f}"
                             if len(g) > 1 else f"{g['successes'].mean():.1f}",
                         "bsuite score: mean [95% CI]": f"{score.mean():.3f} [{s_lo:.3f}, {s_hi:.3f}]",
                         "prior spread on the probe states (mean)": f"{g['prior_spread'].mean():.2f}"
                         if g["prior_spread"].notna().any() else "",
                         "verdict vs boot_dqn": "reference" if agent == BOOT_DQN else verdict(med, reference)})
    return pd.DataFrame(rows)


def draw(results, out):
    runs, returns = readouts(results)
    returns = returns.sort_values(["run_id", "episode"]).assign(smoothed=lambda d: d.groupby("run_id")["return"]
                                                                 .transform(lambda r: r.rolling(SMOOTH, 1).mean()))
    levels = sorted(runs["level"].unique())
    agents = list(dict.fromkeys([BOOT_DQN, *runs["agent"]]))
    fig, axes = plt.subplots(2, len(levels), figsize=(5.5 * len(levels), 7.5), squeeze=False)
    for j, level in enumerate(levels):
        ax, ax2 = axes[0, j], axes[1, j]
        for i, agent in enumerate(agents):
            g = returns[(returns["agent"] == agent) & (returns["env.id"] == level)]
            r = runs[(runs["agent"] == agent) & (runs["level"] == level)]
            if not len(r):
                continue
            band(ax, g, "episode", "smoothed", f"{agent} ({len(r)} seeds)", color=f"C{i}")
            first_success_dots(ax2, i, r["first_success"].to_numpy(float), r["episodes"].to_numpy(), f"C{i}")
        ax.axhline(100, color="k", ls=":", lw=0.8)
        ax.set_xlabel("episode")
        ax.set_ylabel(f"return (running mean of {SMOOTH})")
        ax.set_title(f"bsuite {level}")
        ax.legend(title="mean ± 1 s.e.")
        ax2.set_xticks(range(len(agents)))
        ax2.set_xticklabels(agents, rotation=15, fontsize=7)
        ax2.set_ylabel("first episode with return > 100")
        ax2.set_title("median, 95% CI (\u25b3: never, at the budget)")
    fig.tight_layout()
    return (save(fig, out, EXPERIMENT) + write_table(summary(runs), out, f"{EXPERIMENT}_summary")
            + write_table(runs, out, f"{EXPERIMENT}_runs"))

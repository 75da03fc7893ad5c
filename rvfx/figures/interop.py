"""Beyond the paper: rvfx's agents on bsuite's deep_sea sweep (scored by bsuite's definition, beside
bsuite's own boot_dqn where its logs are present) and on Gymnasium's MountainCar-v0."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.final_return import final_returns
from rvfx.analysis.stats import censored_median, learning_times, mean_sem_all, median_ci
from rvfx.experiment.results import experiment_dir, load_table
from rvfx.figures.common import band, ci_cell, first_success_dots, fmt_episodes, plt, save, write_table

BOOT_DQN = "boot_dqn"      # RESULTS/bsuite_deep_sea/boot_dqn/[seed_*/]: bsuite's own logs of its boot_dqn
SMOOTH = 10                # MountainCar returns: running mean over this many episodes per run


def boot_dqn_logs(results) -> pd.DataFrame:
    """bsuite logs of bsuite's boot_dqn under RESULTS/bsuite_deep_sea/boot_dqn: the folder itself
    or each seed_* folder in it is one seed; empty when it was not run."""
    from rvfx.analysis.bsuite import read_bsuite_logs
    root = experiment_dir(results, "bsuite_deep_sea") / BOOT_DQN
    folders = [root, *sorted(p for p in root.glob("*") if p.is_dir())] if root.is_dir() else []
    frames = [read_bsuite_logs(f).assign(agent=f"{BOOT_DQN} (bsuite)", seed=i, run_id="")
              for i, f in enumerate(f for f in folders if any(f.glob("*.csv")))]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def fig_bsuite_deep_sea(results, out):
    from rvfx.analysis.bsuite import NUM_EPISODES, find_solution, load_runs, score
    logs = pd.concat([load_runs(results, "bsuite_deep_sea"), boot_dqn_logs(results)], ignore_index=True)
    runs = load_table(results, "bsuite_deep_sea", "runs")
    lt = dict(zip(runs["run_id"], learning_times(runs)))
    solutions = find_solution(logs, ["agent", "seed", "run_id"])
    solutions["learning_time"] = solutions["run_id"].map(lt)
    agents = list(dict.fromkeys(logs["agent"]))
    scores = {a: [score(g) for _, g in logs[logs["agent"] == a].groupby("seed")] for a in agents}

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.6, 1]})
    sizes = np.array(sorted(solutions["size"].unique()), float)
    for i, agent in enumerate(agents):
        s = solutions[solutions["agent"] == agent]
        x = s["size"].to_numpy(float) + 0.5 * (i - (len(agents) - 1) / 2)
        ok = s["solved"].to_numpy()
        ax.scatter(x[ok], s["episode"][ok], s=14, color=f"C{i}", alpha=0.7, label=agent)
        ax.scatter(x[~ok], s["episode"][~ok], marker="^", s=30, facecolors="none", edgecolors=f"C{i}")
        ax2.bar(i, np.mean(scores[agent]), color=f"C{i}", alpha=0.5)
        ax2.scatter(np.full(len(scores[agent]), i), scores[agent], color=f"C{i}", s=12, zorder=3)
    ax.plot(sizes, np.minimum(2.0 ** sizes, NUM_EPISODES), "k--", alpha=0.4, label="2^N (dithering), capped")
    ax.set_yscale("log")
    ax.set_xticks(sizes[::2] if len(sizes) > 11 else sizes)
    ax.set_xlabel("deep sea size N")
    ax.set_ylabel("episode solved (< 90% bad episodes so far)")
    ax.set_title("bsuite deep_sea (\u25b3: not solved, at the last logged episode)")
    ax.legend()
    ax2.set_xticks(range(len(agents)))
    ax2.set_xticklabels(agents, rotation=20, fontsize=8)
    ax2.set_ylim(0, 1.05)
    ax2.set_ylabel("bsuite deep_sea score")
    ax2.set_title("score per agent (dots: seeds)")
    fig.tight_layout()

    rows, per_size = [], []
    for agent in agents:
        s = solutions[solutions["agent"] == agent]
        in_every_seed, in_any_seed = s.groupby("size")["solved"].all(), s.groupby("size")["solved"].any()
        rows.append({"agent": agent, "seeds": s["seed"].nunique(), "sizes": int(s["size"].nunique()),
                     "score (mean)": round(float(np.mean(scores[agent])), 3),
                     "score per seed": " ".join(f"{v:.2f}" for v in scores[agent]),
                     "largest N solved in every seed":
                         int(in_every_seed[in_every_seed].index.max()) if in_every_seed.any() else "none",
                     "N never solved": " ".join(str(int(n)) for n in in_any_seed[~in_any_seed].index) or "none"})
        for size, g in s.groupby("size"):
            solved = g.loc[g["solved"], "episode"]
            per_size.append({
                "agent": agent, "N": int(size), "solved": f"{len(solved)}/{len(g)}",
                "median episode solved": fmt_episodes(np.median(solved)) if len(solved) else "none",
                # boot_dqn's bsuite logs have no regret, so no learning time (run_id "")
                "median learning time (eq. 7.1)": (fmt_episodes(censored_median(g["learning_time"].to_numpy(float)))
                                                   if g["run_id"].all() else "no regret logged")})
    return (save(fig, out, "bsuite_deep_sea") + write_table(pd.DataFrame(rows), out, "bsuite_deep_sea_summary")
            + write_table(pd.DataFrame(per_size), out, "bsuite_deep_sea_sizes"))


def first_success(eps: pd.DataFrame) -> pd.DataFrame:
    """Per run: the first episode that reached the goal (`terminated`), NaN if none, and the episodes run."""
    hit = eps[eps["terminated"] == 1].groupby("run_id")["episode"].min()
    runs = eps.groupby(["run_id", "agent"], sort=False)["episode"].max().rename("episodes").reset_index()
    return runs.assign(first=runs["run_id"].map(hit).astype(float))


def fig_mountaincar(results, out):
    eps = load_table(results, "mountaincar", "episodes")
    eps = eps.assign(smoothed=eps.groupby("run_id")["return"].transform(
        lambda r: r.rolling(SMOOTH, min_periods=1).mean()))
    first = first_success(eps)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.6, 1]})
    rows = []
    for i, (agent, g) in enumerate(eps.groupby("agent", sort=False)):
        f = first[first["agent"] == agent]
        band(ax, g, "episode", "smoothed", f"{agent} ({g['run_id'].nunique()} seeds)", color=f"C{i}")
        times = f["first"].to_numpy(float)
        ok = np.isfinite(times)
        first_success_dots(ax2, i, times, f["episodes"].to_numpy(), f"C{i}")
        med, lo, hi = median_ci(times)
        final = mean_sem_all(final_returns(g).to_frame(), "return")
        rows.append({"agent": agent, "seeds": len(f),
                     "first success: median [95% CI]": ci_cell(med, lo, hi),
                     "never reached": f"{int((~ok).sum())}/{len(f)}",
                     "return, last 10% of episodes (mean ± s.e.)": f"{final['mean']:.1f} ± {final['sem']:.1f}",
                     "episodes": int(f["episodes"].max())})
    ax.set_xlabel("episode")
    ax.set_ylabel(f"return (running mean of {SMOOTH})")
    ax.set_title("MountainCar-v0, at most 200 steps")
    ax.legend(title="mean ± 1 s.e.")
    ax2.set_xticks(range(len(rows)))
    ax2.set_xticklabels([r["agent"] for r in rows])
    ax2.set_ylabel("first episode reaching the flag")
    ax2.set_yscale("log")                    # the agents' first successes differ by orders of magnitude
    ax2.set_title("median, 95% CI (\u25b3: never, at the budget)")
    fig.tight_layout()
    return save(fig, out, "mountaincar") + write_table(pd.DataFrame(rows), out, "mountaincar_summary")


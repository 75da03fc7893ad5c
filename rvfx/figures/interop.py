"""Beyond the paper: rvfx's agents on bsuite's deep_sea sweep (scored by bsuite's definition, beside
bsuite's own boot_dqn where its logs are present) and on Gymnasium's MountainCar-v0."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.mountaincar import first_success, summary
from rvfx.experiment.results import load_table
from rvfx.figures.common import band, ci_cell, first_success_dots, fmt_episodes, plt, save, write_table

SMOOTH = 10                # MountainCar returns: running mean over this many episodes per run


def fig_bsuite_deep_sea(results, out):
    from rvfx.analysis.bsuite import NUM_EPISODES
    from rvfx.analysis.bsuite_deep_sea import agent_summary, size_summary, solutions
    solved, scores = solutions(results)
    agents = list(dict.fromkeys(scores["agent"]))

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.6, 1]})
    sizes = np.array(sorted(solved["size"].unique()), float)
    for i, agent in enumerate(agents):
        s = solved[solved["agent"] == agent]
        per_seed = scores.loc[scores["agent"] == agent, "score"].tolist()
        x = s["size"].to_numpy(float) + 0.5 * (i - (len(agents) - 1) / 2)
        ok = s["solved"].to_numpy()
        ax.scatter(x[ok], s["episode"][ok], s=14, color=f"C{i}", alpha=0.7, label=agent)
        ax.scatter(x[~ok], s["episode"][~ok], marker="^", s=30, facecolors="none", edgecolors=f"C{i}")
        ax2.bar(i, np.mean(per_seed), color=f"C{i}", alpha=0.5)
        ax2.scatter(np.full(len(per_seed), i), per_seed, color=f"C{i}", s=12, zorder=3)
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

    rows = [{"agent": r["agent"], "seeds": r["seeds"], "sizes": r["sizes"], "score (mean)": round(r["score"], 3),
             "score per seed": " ".join(f"{v:.2f}" for v in r["scores"]),
             "largest N solved in every seed": ("none" if np.isnan(r["largest_solved_every_seed"])
                                                else int(r["largest_solved_every_seed"])),
             "N never solved": " ".join(str(n) for n in r["never_solved"]) or "none"}
            for r in agent_summary(solved, scores).to_dict("records")]
    # boot_dqn's bsuite logs have no regret, so no learning time
    per_size = [{"agent": r["agent"], "N": r["size"], "solved": f"{r['solved']}/{r['runs']}",
                 "median episode solved": fmt_episodes(r["median_episode"]) if r["solved"] else "none",
                 "median learning time (eq. 7.1)": (fmt_episodes(r["median_learning_time"]) if r["regret_logged"]
                                                    else "no regret logged")}
                for r in size_summary(solved, agents).to_dict("records")]
    return (save(fig, out, "bsuite_deep_sea") + write_table(pd.DataFrame(rows), out, "bsuite_deep_sea_summary")
            + write_table(pd.DataFrame(per_size), out, "bsuite_deep_sea_sizes"))


def fig_mountaincar(results, out):
    eps = load_table(results, "mountaincar", "episodes")
    eps = eps.assign(smoothed=eps.groupby("run_id")["return"].transform(
        lambda r: r.rolling(SMOOTH, min_periods=1).mean()))
    first = first_success(eps)
    table = summary(eps)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.6, 1]})
    for i, (agent, g) in enumerate(eps.groupby("agent", sort=False)):
        f = first[first["agent"] == agent]
        band(ax, g, "episode", "smoothed", f"{agent} ({g['run_id'].nunique()} seeds)", color=f"C{i}")
        first_success_dots(ax2, i, f["first"].to_numpy(float), f["episodes"].to_numpy(), f"C{i}")
    ax.set_xlabel("episode")
    ax.set_ylabel(f"return (running mean of {SMOOTH})")
    ax.set_title("MountainCar-v0, at most 200 steps")
    ax.legend(title="mean ± 1 s.e.")
    ax2.set_xticks(range(len(table)))
    ax2.set_xticklabels(table["agent"])
    ax2.set_ylabel("first episode reaching the flag")
    ax2.set_yscale("log")                    # the agents' first successes differ by orders of magnitude
    ax2.set_title("median, 95% CI (\u25b3: never, at the budget)")
    fig.tight_layout()
    rows = [{"agent": r["agent"], "seeds": r["seeds"], "first success: median [95% CI]": ci_cell(r["median"], r["lo"],
                                                                                                r["hi"]),
             "never reached": f"{r['never']}/{r['seeds']}",
             "return, last 10% of episodes (mean ± s.e.)": f"{r['return']:.1f} ± {r['return_sem']:.1f}",
             "episodes": r["episodes"]} for r in table.to_dict("records")]
    return save(fig, out, "mountaincar") + write_table(pd.DataFrame(rows), out, "mountaincar_summary")

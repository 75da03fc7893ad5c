"""Figs. 4-5: tabular RLSVI vs PSRL vs UCRL2 on deep sea (cumulative regret; learning-time scaling)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.figures import register
from rvfx.figures.common import band, plt, save, scaling_panel, write_table
from rvfx.results import load_table
from rvfx.stats import mean_sem


@register("deepsea_tabular", ["deepsea_tabular"],
          "Fig. 4: cumulative regret on deep sea N=10, mean +- 1 s.e. over seeds (treasure and bomb pooled)")
def fig_regret(results, out):
    eps = load_table(results, "deepsea_tabular", "episodes")
    runs = load_table(results, "deepsea_tabular", "runs")
    n_seeds = runs.groupby("agent").size()
    fig, ax = plt.subplots(figsize=(6, 4))
    for agent, g in eps.groupby("agent", sort=False):
        band(ax, g, "episode", "cum_regret", f"{agent} ({n_seeds[agent]} runs)")
    ax.set_xlabel("episode")
    ax.set_ylabel("cumulative regret")
    size = ", ".join(str(s) for s in sorted(runs["env.size"].unique())) if "env.size" in runs else ""
    ax.set_title(f"Deep sea {('N=' + size) if size else ''}: mean $\\pm$1 s.e. over seeds")
    ax.legend()
    final = mean_sem(runs, ["agent"], "final_cum_regret")
    table = pd.DataFrame({"agent": final["agent"], "runs": final["count"],
                          "final cum regret (mean)": final["mean"].round(1),
                          "s.e.": final["sem"].round(1)})
    return save(fig, out, "deepsea_tabular") + write_table(table, out, "deepsea_tabular_summary")


@register("deepsea_tabular_scaling", ["deepsea_tabular_scaling"],
          "Fig. 5: learning time vs N (log-log) with fitted slopes; censored runs as open triangles")
def fig_scaling(results, out):
    runs = load_table(results, "deepsea_tabular_scaling", "runs")
    fig, ax = plt.subplots(figsize=(6, 4.5))
    fits = scaling_panel(ax, runs, "env.size", "agent")
    ax.set_xlabel("deep sea size N")
    ax.set_title("Tabular learning time vs N (theory: RLSVI ~N^5, UCRL2 ~N^7)")
    rows = []
    for agent, fit in fits.items():
        g = runs[runs["agent"] == agent]
        rows.append({"agent": agent, "slope": round(fit.slope, 2), "95% CI": f"[{fit.lo:.2f}, {fit.hi:.2f}]",
                     "sizes fitted": " ".join(str(int(s)) for s in fit.sizes_used),
                     "sizes with censored median": " ".join(str(int(s)) for s in fit.sizes_censored),
                     "censored runs": f"{int(g['censored'].sum())}/{len(g)}"})
    return save(fig, out, "deepsea_tabular_scaling") + write_table(pd.DataFrame(rows), out,
                                                                   "deepsea_tabular_scaling_slopes")

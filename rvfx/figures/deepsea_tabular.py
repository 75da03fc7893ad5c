"""Figs. 4-5: tabular RLSVI vs PSRL vs UCRL2 on deep sea (cumulative regret; learning-time scaling)."""
from __future__ import annotations

import pandas as pd

from rvfx.analysis.deepsea_tabular import chest_summary
from rvfx.experiment.results import load_spec_value, load_table
from rvfx.figures.common import band, fmt_episodes, plt, save, size_scaling_figure, write_table


def fig_regret(results, out):
    eps = load_table(results, "deepsea_tabular", "episodes")
    runs = load_table(results, "deepsea_tabular", "runs")
    size = load_spec_value(results, "deepsea_tabular", ("env", "size"))
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for i, (agent, g) in enumerate(eps.groupby("agent", sort=False)):
        band(ax, g, "episode", "cum_regret", f"{agent} ({g['run_id'].nunique()} runs)", color=f"C{i}")
        for chest, style in ((True, "-"), (False, ":")):
            sub = g[g["env.treasure"] == chest]
            line = band(ax2, sub, "episode", "cum_regret",
                        f"{agent}, {'treasure' if chest else 'bomb'} ({sub['run_id'].nunique()})", color=f"C{i}")
            line.set_linestyle(style)
    for a in (ax, ax2):
        a.set_xlabel("episode")
        a.set_ylabel("cumulative regret")
    ax.set_title(f"Deep sea N={size}: treasure and bomb pooled")
    ax2.set_title("split by chest (log y)")
    ax2.set_yscale("symlog", linthresh=10)
    ax.legend()
    ax2.legend(ncol=2)
    rows = [{"agent": r["agent"],
             **{f"{name}: regret": f"{r[name + '_regret']:.1f} ± {r[name + '_regret_sem']:.1f} (n={r[name + '_runs']})"
                for name in ("all", "treasure", "bomb")},
             "episodes": r["episodes"],
             "treasure learning time (median)": fmt_episodes(r["treasure_median_learning_time"])}
            for r in chest_summary(runs).to_dict("records")]
    return save(fig, out, "deepsea_tabular") + write_table(pd.DataFrame(rows), out, "deepsea_tabular_summary")


def fig_scaling(results, out):
    runs = load_table(results, "deepsea_tabular_scaling", "runs")
    return size_scaling_figure(runs, "Tabular learning time vs N (theory: RLSVI ~N^5, UCRL2 ~N^7)", out,
                               "deepsea_tabular_scaling")

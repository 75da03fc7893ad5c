"""Table 1 (tab:grid), measured: learning time on deep sea vs N for each exploration method.

Reads results/exploration_table/runs.csv. Per method and N: the median learning time
(eq. 7.1) with censored runs counted as +inf, so a median is reported only while fewer than
half the runs at that N are censored. The growth of the medians is fitted two ways, as a
power law (log T = a + p log N) and as an exponential (log T = a + N log b); the table says
which fits better (smaller residual sum of squares in log T) and gives both.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.exploration import growth_fits, size_summary
from rvfx.analysis.stats import learning_times
from rvfx.experiment.results import load_table
from rvfx.figures.common import plt, run_dots, save, write_table

# Spec agent label -> (Table 1 row, the paper's entry).
METHODS = {
    "optimal": ("optimal", "Θ(N)"),
    "pure_exploitation": ("pure exploitation", "∞"),
    "myopic": ("myopic", "∞"),
    "dithering_boltzmann": ("dithering (Boltzmann)", "Θ(2^N)"),
    "dithering_egreedy": ("dithering (ε-greedy)", "Θ(2^N)"),
    "optimistic_ucrl2": ("optimistic (UCRL2)", "Θ(N)"),
    "randomized_rlsvi": ("randomized (RLSVI)", "Θ(N)"),
    "randomized_thompson": ("randomized (Thompson, §4 prior)", "Θ(N)"),
}


def _cell(r) -> str:
    if np.isfinite(r["median"]):
        text = f"{r['median']:.0f}"
        return text + (f" ({r['censored']}/{r['runs']} cens.)" if r["censored"] else "")
    return f"> {r['cap']} ({r['censored']}/{r['runs']} cens.)"


def _growth_text(fit: dict) -> str:
    """A row of `growth_fits` as the table says it."""
    if fit["kind"] in ("polynomial", "exponential", "ambiguous"):
        return (f"{fit['kind']}: N^{fit['power']:.2f} (RSS {fit['rss_power']:.2g}) vs {fit['base']:.2f}^N "
                f"(RSS {fit['rss_exp']:.2g})")
    if fit["kind"] == "none within budget":
        return "∞ within budget (censored at every N)"
    if len(fit["sizes"]) == 2:
        return f"too few sizes to tell: N^{fit['power']:.2f} or {fit['base']:.2f}^N through 2 sizes"
    return "too few uncensored sizes to fit"


def table(per_size: pd.DataFrame, fits: pd.DataFrame) -> pd.DataFrame:
    """Table 1's rows from `size_summary` and `growth_fits`: per method, its cell per N and its growth."""
    sizes = sorted(per_size["N"].unique())
    out = []
    for agent, g in per_size.groupby("agent", sort=False):
        row, claim = METHODS.get(agent, (agent, ""))
        rec = {"method": row, "agent": agent, "paper": claim}
        cells = {int(r["N"]): _cell(r) for _, r in g.iterrows()}
        for n in sizes:
            rec[f"N={n}"] = cells.get(n, "")
        rec["fitted growth (median learning time)"] = _growth_text(fits.loc[agent])
        out.append(rec)
    return pd.DataFrame(out)


def draw(results, out):
    runs = load_table(results, "exploration_table", "runs")
    per_size = size_summary(runs)
    fits = growth_fits(per_size).set_index("agent")
    fig, ax = plt.subplots(figsize=(7, 4.8))
    for i, (agent, g) in enumerate(runs.groupby("agent", sort=False)):
        color = f"C{i % 10}"
        label = METHODS.get(agent, (agent, ""))[0]
        lt = learning_times(g)
        n = g["env.size"].to_numpy(float)
        run_dots(ax, n, lt, g["episodes_run"].to_numpy(float), color, i, triangle=28)
        s = per_size[per_size["agent"] == agent]
        fin = np.isfinite(s["median"])
        claim = METHODS.get(agent, (agent, "?"))[1]
        fit = fits.loc[agent]
        shape = {"polynomial": f"~N^{fit['power']:.1f}", "exponential": f"~{fit['base']:.2f}^N"}.get(fit["kind"],
                                                                                                  fit["kind"])
        if fin.any():
            ax.plot(s["N"][fin], s["median"][fin], "-o", ms=3, color=color,
                    label=f"{label} [paper {claim}]: {shape}")
        else:                  # never learnt: mark the cap
            ax.plot(s["N"], s["cap"], "^", ms=7, mfc="none", color=color,
                    label=f"{label} [paper {claim}]: censored at every N")
    n_all = np.arange(2, per_size["N"].max() + 1)
    top = float(np.nanmax([per_size["cap"].max(), per_size["median"].max()])) * 3
    ax.plot(n_all, 2.0 ** n_all, "k--", lw=1, label="$2^N$")
    ax.plot(n_all, n_all, "k:", lw=1, label="$N$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1, top)
    ax.set_xlim(per_size["N"].min() * 0.9, per_size["N"].max() * 1.1)
    ticks = sorted(per_size["N"].unique())
    ax.set_xticks(ticks, [str(t) for t in ticks], fontsize=7)
    ax.minorticks_off()
    ax.set_xlabel("deep sea size N")
    ax.set_ylabel("learning time (episodes, eq. 7.1)")
    ax.set_title("Table 1 by simulation: median learning time; open triangles = censored runs at their cap")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    tab = table(per_size, fits)
    detail = per_size.assign(median=per_size["median"].round(1),
                             mean_uncensored=per_size["mean_uncensored"].round(1))
    return (save(fig, out, "exploration_table") + write_table(tab, out, "exploration_table")
            + write_table(detail, out, "exploration_table_by_size"))

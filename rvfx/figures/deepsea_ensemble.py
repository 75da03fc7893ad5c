"""Figs. 14-15: learn_ensemble_rlsvi on deep sea (regret vs ensemble size K; learning-time scaling per input)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.curves import regret_curves
from rvfx.analysis.deepsea_ensemble import ensemble_summary
from rvfx.analysis.stats import learning_times
from rvfx.experiment.results import load_or_derive, load_spec_value, load_table
from rvfx.figures.common import (
    agent_params,
    band,
    ci_cell,
    plt,
    run_dots,
    save,
    size_scaling_figure,
    write_table,
)

INPUTS = {"observation": "one-hot pixels", "linear_basis": "linear basis input"}


def fig_ensemble(results, out):
    eps = load_or_derive(results, "deepsea_ensemble", "regret_curves", regret_curves)
    runs = load_table(results, "deepsea_ensemble", "runs")
    size = load_spec_value(results, "deepsea_ensemble", ("env", "size"))
    kcol = "agent.K"
    ks = sorted(runs[kcol].unique())
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.4, 1]})
    for i, k in enumerate(ks):
        g = eps[eps[kcol] == k]
        r = runs[runs[kcol] == k]
        band(ax, g, "episode", "cum_regret", f"K={k} ({r['run_id'].nunique()} seeds)", color=f"C{i}")
        lt = learning_times(r)
        # learning time vs K: one dot per seed, censored seeds as open triangles at the cap
        run_dots(ax2, np.full(len(lt), float(k)), lt, r["episodes_run"].to_numpy(float), f"C{i}", i,
                 spread=0.06, size=10, alpha=0.4)
    ax.set_xlabel("episode")
    ax.set_ylabel("cumulative regret")
    representation = {agent_params(results, "deepsea_ensemble", a).representation for a in runs["agent"].unique()}
    inputs = ", ".join(INPUTS[r] for r in sorted(representation))
    ax.set_title(f"learn_ensemble_rlsvi, deep sea N={size}, {inputs}")
    ax.legend(title="mean ± 1 s.e.")

    table = ensemble_summary(runs, kcol)
    # learning time vs K: the median with its bootstrap CI over the dots
    fin = table[np.isfinite(table["median"])]
    if len(fin):
        err = np.vstack([fin["median"] - fin["lo"], np.where(np.isfinite(fin["hi"]), fin["hi"], fin["median"])
                         - fin["median"]])
        ax2.errorbar(fin["K"], fin["median"], yerr=err, fmt="-o", ms=4, color="k",
                     capsize=3, label="median, 95% bootstrap CI")
    for best_k in table.loc[table["plateau"], "K"]:
        ax2.axvline(best_k, ls=":", color="grey", label=f"plateau: K={best_k}")
    ax2.set_xscale("log")
    ax2.set_xticks(ks)
    ax2.set_xticklabels([str(k) for k in ks])
    ax2.set_yscale("log")
    ax2.set_xlabel("ensemble size K")
    ax2.set_ylabel("learning time (episodes, eq. 7.1)")
    ax2.set_title("learning time vs K (\u25b3: censored at cap)")
    if ax2.get_legend_handles_labels()[0]:
        ax2.legend()
    fig.tight_layout()

    summary = pd.DataFrame({
        "K": table["K"], "seeds": table["seeds"],
        "median learning time [95% CI]": [ci_cell(m, lo, hi) for m, lo, hi in
                                          zip(table["median"], table["lo"], table["hi"])],
        "censored": [f"{c}/{s}" for c, s in zip(table["censored"], table["seeds"])],
        "final cumulative regret (mean ± s.e.)": [f"{m:.1f} ± {s:.1f}" for m, s in
                                                  zip(table["regret"], table["regret_sem"])],
        "episodes": table["episodes"],
        "plateau": np.where(table["plateau"], "<- plateau", ""),
    })
    return save(fig, out, "deepsea_ensemble") + write_table(summary, out, "deepsea_ensemble_summary")


def fig_ensemble_scaling(results, out):
    runs = load_table(results, "deepsea_ensemble_scaling", "runs")
    return size_scaling_figure(runs, "learn_ensemble_rlsvi K=20: learning time vs N", out,
                               "deepsea_ensemble_scaling", label="representation", figsize=(6.5, 4.8),
                               extra=lambda g: {"seeds per size": int(g.groupby("env.size").size().min())})

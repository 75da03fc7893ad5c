"""Fig. 17's contrast rerun (configs/cartpole_rlsvi_rerun.yaml): per setting, the returns over episodes
of the 50-50 ensemble, one hidden layer, linear Q and DQN, and the table of Fig. 17's criterion (runs
learnt, with their exact CI) and the first episode returning more than 100 (median, 95% CI)."""
from __future__ import annotations

import pandas as pd

from rvfx.analysis.rlsvi_rerun import CLASSES, cell_summary, run_readouts, split_agent
from rvfx.experiment.results import load_table
from rvfx.figures.common import SMOOTH, band, mean_sem_cell, plt, save, smoothed_returns, success_cells, write_table

EXPERIMENT = "cartpole_rlsvi_rerun"


def table(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary formatted for the README: one row per setting and agent."""
    return summary.assign(**{
        "learnt (final return >= 100) [95% CI]": [f"{k}/{n} [{lo:.2f}, {hi:.2f}]" for k, n, lo, hi in zip(
            summary["learnt"], summary["seeds"], summary["learnt_lo"], summary["learnt_hi"])],
        **success_cells(summary),
        "final return (mean ± s.e.)": [mean_sem_cell(m, s, 1) for m, s in
                                       zip(summary["final_return"], summary["final_return_sem"])],
    })[["setting", "agent", "seeds", "episodes", "learnt (final return >= 100) [95% CI]",
        "first episode > 100: median [95% CI]", "never > 100", "episodes > 100 (mean ± s.e.)",
        "final return (mean ± s.e.)"]]


def draw(results, out):
    eps = load_table(results, EXPERIMENT, "episodes")
    runs = run_readouts(eps)
    returns = smoothed_returns(eps)
    returns["setting"] = [split_agent(a)[1] for a in returns["agent"]]
    settings = list(dict.fromkeys(runs["setting"]))
    fig, axes = plt.subplots(1, len(settings), figsize=(6.5 * len(settings), 4.8), sharey=True, squeeze=False)
    for ax, setting in zip(axes[0], settings):
        for i, cls in enumerate(CLASSES):
            agent = f"{cls}_{setting}"
            n = int(((runs["setting"] == setting) & (runs["class"] == cls)).sum())
            if n:
                band(ax, returns[returns["agent"] == agent], "episode", "smoothed", f"{cls} ({n} seeds)",
                     color=f"C{i}")
        ax.axhline(100, color="k", ls=":", lw=0.8)
        ax.set_xlabel("episode")
        ax.set_title(f"setting: {setting} (mean ± 1 s.e. over seeds)")
        ax.legend()
    axes[0][0].set_ylabel(f"return (running mean of {SMOOTH})")
    fig.tight_layout()
    return (save(fig, out, EXPERIMENT) + write_table(table(cell_summary(runs)), out, f"{EXPERIMENT}_summary")
            + write_table(runs, out, f"{EXPERIMENT}_runs"))

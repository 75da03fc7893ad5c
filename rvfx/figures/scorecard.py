"""The scorecard's figure (`rvfx scorecard`): the scored agent's learning time against deep sea's size,
Fig. 5's log-log panel (each run, censored runs as open triangles, the median per N and the fitted
slope with its 95% bootstrap CI), and each paper agent's fitted line at paper scale, dashed."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from rvfx.analysis.scaling import slope_fits
from rvfx.figures.common import plt, save, scaling_panel


def draw(runs: pd.DataFrame, lines: list, title: str, out: Path, name: str) -> list[Path]:
    """`runs` of the battery per agent and the baselines' `lines` (label, sizes, fitted learning time)."""
    fig, ax = plt.subplots(figsize=(6.4, 5.0))
    for label, sizes, fitted in lines:
        ax.plot(sizes, fitted, "--", lw=1, color="0.5", alpha=0.9)
        ax.annotate(label.split(":")[0], (sizes[-1], fitted[-1]), fontsize="x-small", color="0.35",
                    xytext=(3, 0), textcoords="offset points", va="center")
    scaling_panel(ax, runs, slope_fits(runs, "env.size", "agent"), "env.size", "agent")
    top = max([runs["env.size"].max(), *(s.max() for _, s, _ in lines)])
    sizes = sorted({*runs["env.size"].unique(), *(n for n in (10, 20, 40) if n <= top)})
    ax.set_xticks(sizes, [str(int(n)) for n in sizes])
    ax.set_xlabel("deep sea size N")
    ax.set_title(title)
    return save(fig, out, name)

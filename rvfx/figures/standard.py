"""The standard panels of any experiment (`rvfx plot EXPERIMENT` where no figure is registered for it),
stacked one above the other so that each is read at full width: the per-episode curves per agent and
setting with 95% bands, and the learning time against each swept axis, censored runs as open
triangles at their cap, with the log-log fit and its 95% CI where the axis is the environment's size
(Fig. 5's panel, `scaling_panel`). The numbers are `rvfx.analysis.standard`'s; the summary table
is written beside the figure as `<experiment>_summary.csv` and `.md`."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from rvfx.analysis.curves import swept
from rvfx.analysis.standard import (
    GROUP,
    curve_bands,
    curve_value,
    learning_time_by,
    summary,
    summary_text,
    swept_axes,
    with_setting,
)
from rvfx.analysis.stats import learning_times
from rvfx.experiment.results import load_spec_value, load_table
from rvfx.figures import CI_STAMP, Output
from rvfx.figures.common import first_success_dots, plt, run_dots, save, scaling_panel, write_table

CURVE_LABEL = {"cum_regret": "cumulative regret", "return": "return per episode"}
PANEL_HEIGHT = 4.0     # inches per panel, 6.4 wide: each panel is read at the docs' full width


def _curves(ax, episodes) -> None:
    value = curve_value(episodes)
    bands = curve_bands(episodes, value)
    lasts = bands.groupby(GROUP)["episode"].max()
    if value == "cum_regret" and lasts.max() > 10 * lasts.min():      # settings of very different lengths
        ax.set_xscale("log")
        ax.set_yscale("log")
    for i, (name, g) in enumerate(bands.groupby(GROUP, sort=False)):
        line, = ax.plot(g["episode"], g["mean"], label=f"{name} (n={int(g['count'].iloc[0])})", color=f"C{i % 10}")
        ax.fill_between(g["episode"], g["lo"], g["hi"], alpha=0.2, color=line.get_color())
    ax.set_xlabel("episode")
    ax.set_ylabel(CURVE_LABEL[value])
    ax.set_title(f"{CURVE_LABEL[value]}: mean over seeds, 95% t-interval"
                 + (" (to the last episode every run logged)" if value == "cum_regret" else ""))
    ax.legend(fontsize="small")


def _by_axis(ax, runs, axis: str) -> None:
    """Learning time against `axis` per setting: Fig. 5's log-log panel where it is the size, else the
    runs' dots and each value's median with its 95% bootstrap CI."""
    medians, fits = learning_time_by(runs, axis)
    labelled = with_setting(runs, axis)
    if fits is not None:
        scaling_panel(ax, labelled, fits, axis, GROUP)
        ax.set_title(f"learning time vs {axis}: log-log fit per setting, slope [95% bootstrap CI]")
        return
    for i, (name, g) in enumerate(labelled.groupby(GROUP, sort=False)):
        color = f"C{i % 10}"
        run_dots(ax, g[axis].to_numpy(float), learning_times(g), g["episodes_run"].to_numpy(float), color, i)
        m = medians[medians[GROUP] == name]
        hi = np.where(np.isfinite(m["hi"]), m["hi"], m["median"])
        ax.errorbar(m[axis], m["median"], yerr=[m["median"] - m["lo"], hi - m["median"]], fmt="-o", ms=3,
                    capsize=3, color=color, label=name)
    ax.set_yscale("log")
    ax.set_xlabel(axis)
    ax.set_ylabel("learning time (episodes, eq. 7.1)")
    ax.set_title(f"learning time vs {axis}: median [95% bootstrap CI]; open triangles: censored at the cap")
    ax.legend(fontsize="small")


def _by_setting(ax, runs) -> None:
    """Learning time per setting when nothing is swept: each run, and the median with its 95% CI."""
    labelled = with_setting(runs)
    names = list(labelled[GROUP].unique())
    for i, name in enumerate(names):
        g = labelled[labelled[GROUP] == name]
        first_success_dots(ax, i, learning_times(g), g["episodes_run"].to_numpy(float), f"C{i % 10}")
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("learning time (episodes, eq. 7.1)")
    ax.set_title("learning time per setting: median [95% bootstrap CI]; open triangles: censored at the cap")


def draw(results: Path, out: Path, experiment: str) -> list[Path]:
    """The standard panels of `experiment` from its tables under `results`, and its summary table."""
    runs = load_table(results, experiment, "runs")
    path = Path(results) / experiment / "episodes.csv"
    episodes = load_table(results, experiment, "episodes") if path.is_file() else None
    regret = runs["final_cum_regret"].notna().any()
    axes = swept_axes(runs) if regret else []
    panels = ([lambda ax: _curves(ax, episodes)] if episodes is not None else []) + \
        [lambda ax, a=a: _by_axis(ax, runs, a) for a in axes]
    if regret and not axes:
        panels.append(lambda ax: _by_setting(ax, runs))
    stamp = CI_STAMP if load_spec_value(results, experiment, ("scale",)) == "ci" else ""
    fig, grid = plt.subplots(len(panels), 1, figsize=(6.4, PANEL_HEIGHT * len(panels)), squeeze=False)
    for panel, ax in zip(panels, grid[:, 0]):
        panel(ax)
    cells = runs.groupby(["agent", *swept(runs)], dropna=False).size()
    seeds = f"{cells.min()}" if cells.min() == cells.max() else f"{cells.min()}-{cells.max()}"
    fig.suptitle(f"{experiment}: {seeds} seeds per agent and setting", y=1.0)
    fig.tight_layout()
    paths = save(fig, Output(Path(out), stamp), f"{experiment}_standard")
    table = summary(runs, episodes)
    return paths + write_table(summary_text(table), Path(out), f"{experiment}_summary")

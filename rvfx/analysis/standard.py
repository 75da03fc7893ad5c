"""The standard analysis of any experiment's tables, as numbers: per agent and setting, the per-episode
curve (cumulative regret, or return where the environment knows no optimum) with a 95% interval over
seeds, the learning time (eq. 7.1) against each swept axis (censored medians with bootstrap CIs;
`rvfx.analysis.scaling`, as Figs. 5, 7, 13 and 15), its log-log slope where the axis is the
environment's size, and a summary row per setting. `rvfx plot EXPERIMENT` draws these and
`rvfx summary EXPERIMENT` prints the summary, for an experiment with no figure of its own."""
from __future__ import annotations

import pandas as pd

from rvfx.analysis.curves import swept
from rvfx.analysis.final_return import final_returns
from rvfx.analysis.scaling import size_medians, slope_fits
from rvfx.analysis.stats import learning_times, mean_t_ci, median_ci
from rvfx.envs import ENVS

GROUP = "setting"             # the column naming a run's agent and its swept settings but the axis


def curve_value(episodes: pd.DataFrame) -> str:
    """The per-episode value the curves show: cum_regret where the environment knows its optimum, else return."""
    return "cum_regret" if episodes["cum_regret"].notna().any() else "return"


def with_setting(table: pd.DataFrame, axis: str | None = None) -> pd.DataFrame:
    """`table` with GROUP: its agent label and its swept settings other than `axis`, e.g.
    "rlsvi, env.size=8"."""
    others = [c for c in swept(table) if c != axis and table[c].nunique(dropna=False) > 1]
    label = table["agent"].astype(str)
    for c in others:
        label = label + f", {c}=" + table[c].astype(str)
    return table.assign(**{GROUP: label})


def curve_bands(episodes: pd.DataFrame, value: str, level: float = 0.95) -> pd.DataFrame:
    """Per setting (in order of appearance) and logged episode: the mean of `value` over its runs with
    the Student-t `level` interval (`mean_t_ci`), at the episodes every run of the setting logged (a
    run stopped at its learning time logs none after it, so later means would be over fewer runs)."""
    eps = with_setting(episodes)
    n_runs = eps.groupby(GROUP, sort=False)["run_id"].nunique()
    out = mean_t_ci(eps, [GROUP, "episode"], value, level)
    out = out[out["count"] == out[GROUP].map(n_runs)]
    order = out[GROUP].map({g: i for i, g in enumerate(n_runs.index)})
    return out.assign(_order=order).sort_values(["_order", "episode"]).drop(columns="_order").reset_index(drop=True)


def swept_axes(runs: pd.DataFrame) -> list[str]:
    """The swept numeric parameters (agent.*, env.*) that take more than one value."""
    numeric = pd.api.types.is_numeric_dtype
    return [c for c in swept(runs) if numeric(runs[c]) and not pd.api.types.is_bool_dtype(runs[c])
            and runs[c].nunique() > 1]


def size_axis(runs: pd.DataFrame) -> str | None:
    """The environment's size key (its parameters' `size_key`, e.g. env.size) when it is a swept axis."""
    names = runs["env"].unique()
    keys = {getattr(ENVS[n][1], "size_key", None) for n in names if n in ENVS}
    key = keys.pop() if len(keys) == 1 else None
    return key if key in swept_axes(runs) else None


def learning_time_by(runs: pd.DataFrame, axis: str) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(medians, fits) of the learning time against `axis` per setting: `size_medians` (runs, median
    with its 95% bootstrap CI, censored runs per value) and, where `axis` is the environment's size,
    `slope_fits` (the log-log slope with its 95% bootstrap CI); fits None otherwise."""
    runs = with_setting(runs, axis)
    fits = slope_fits(runs, axis, GROUP) if axis == size_axis(runs) else None
    return size_medians(runs, GROUP, axis), fits


def summary(runs: pd.DataFrame, episodes: pd.DataFrame | None = None, level: float = 0.95) -> pd.DataFrame:
    """One row per setting (agent and swept settings, in order of appearance, each also in its own
    column): its runs, the final
    cumulative regret's mean with its Student-t interval, the median learning time with its bootstrap
    CI and the censored runs; where the environment knows no optimum, the final return (mean over a
    run's last 10% of episodes, `final_returns`) with its interval instead of regret and learning time."""
    runs = with_setting(runs)
    regret = runs["final_cum_regret"].notna().any()
    if not regret and episodes is not None:
        runs = runs.assign(final_return=runs["run_id"].map(final_returns(episodes)))
    value = "final_cum_regret" if regret else "final_return"
    rows = []
    for name, g in runs.groupby(GROUP, sort=False):
        row = {GROUP: name, "agent": g["agent"].iloc[0], **{c: g[c].iloc[0] for c in swept(g)}, "runs": len(g)}
        if value in g:
            m = mean_t_ci(g.assign(_all=0), ["_all"], value, level).iloc[0]
            row.update({f"{value}_mean": m["mean"], f"{value}_lo": m["lo"], f"{value}_hi": m["hi"]})
        if regret:
            med, lo, hi = median_ci(learning_times(g), level=level)
            row.update({"learning_time_median": med, "learning_time_lo": lo, "learning_time_hi": hi,
                        "censored": int(g["censored"].sum())})
        rows.append(row)
    return pd.DataFrame(rows)


def interval_text(mean: float, lo: float, hi: float, digits: int = 1, missing: str = "n/a") -> str:
    """"mean [lo, hi]", `missing` for a NaN (a median censored) and "∞" for an infinite (censored) end."""
    def one(x):
        return missing if pd.isna(x) else "∞" if x == float("inf") else f"{x:,.{digits}f}"
    return f"{one(mean)} [{one(lo)}, {one(hi)}]"


def summary_text(table: pd.DataFrame) -> pd.DataFrame:
    """`summary` for reading: each estimate and its interval in one cell; censored as k/n."""
    out = table[[GROUP, "runs"]].copy()
    names = {"final_cum_regret": "final cumulative regret: mean [95% CI]",
             "final_return": "final return (last 10% of episodes): mean [95% CI]"}
    for value, name in names.items():
        if f"{value}_mean" in table:
            out[name] = [interval_text(*r) for r in table[[f"{value}_mean", f"{value}_lo", f"{value}_hi"]].to_numpy()]
    if "learning_time_median" in table:
        cols = ["learning_time_median", "learning_time_lo", "learning_time_hi"]
        out["learning time (eq. 7.1): median [95% CI]"] = [interval_text(*r, 0, "censored")
                                                           for r in table[cols].to_numpy()]
        out["censored"] = [f"{k}/{n}" for k, n in zip(table["censored"], table["runs"])]
    return out


def markdown(table: pd.DataFrame) -> str:
    """A table as Markdown, one row per line."""
    lines = ["| " + " | ".join(map(str, table.columns)) + " |", "|" + "---|" * len(table.columns)]
    return "\n".join(lines + ["| " + " | ".join(map(str, row)) + " |" for row in table.itertuples(index=False)])

"""The statistics a claim may estimate (STATISTICS: estimator, parameters, scale), each an Estimate with
its 95% interval; and `num` and `level`, how the report prints a number and a group's level, here
because the estimators' details are the first text that prints them."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rvfx.analysis.stats import (
    bootstrap_ci,
    breakdown,
    censored_median,
    censored_row_medians,
    clopper_pearson,
    fit_exponential,
    fit_loglog,
    learning_times,
    median_bootstrap,
    plateau_k,
    rank_correlation,
)
from rvfx.report.grammar import evaluate
from rvfx.report.tables import select, where_text


@dataclass(frozen=True)
class Estimate:
    value: float          # on the statistic's scale: log2 for ratios and ensemble sizes
    lo: float
    hi: float
    n: int                # runs (or samples) behind it
    detail: str = ""
    runs: int | None = None   # independent runs in its smallest resampled group (n when one group)
    sizes: int | None = None  # the sizes a fitted slope rests on (None: no fit)

    @property
    def fewest(self) -> int:
        """The independent runs in the smallest group the interval resamples."""
        return self.n if self.runs is None else self.runs


def num(x) -> str:
    """About three significant figures, thousands separated; n/a for NaN."""
    x = float(x)
    if np.isnan(x):
        return "n/a"
    if np.isinf(x):
        return "∞" if x > 0 else "-∞"
    if abs(x) < 1e-12:         # rounding noise of an exact zero
        return "0"
    if abs(x) < 1e-3:
        return f"{x:.2e}"
    return f"{x:,.{max(0, 2 - math.floor(math.log10(abs(x))))}f}"


def level(v) -> str:
    if isinstance(v, (float, np.floating)):
        return "–" if np.isnan(v) else f"{v:g}"
    return str(v)


def _levels(values) -> str:
    return " ".join(level(float(v)) for v in values)


def _mean(df, p, boot) -> Estimate:
    col = p["column"]
    strata = ([g[col].to_numpy(float) for _, g in df.groupby(p["strata"])] if "strata" in p
              else [df[col].to_numpy(float)])
    return Estimate(*bootstrap_ci(strata, lambda s: float(np.concatenate(s).mean()), **boot,
                                  rows=lambda r: np.concatenate(r, axis=1).mean(axis=1)), len(df),
                    runs=min(len(s) for s in strata))


def _minimum(df, p, boot) -> Estimate:
    v = float(df[p["column"]].min())
    return Estimate(v, v, v, len(df), "computed exactly")


def _fraction(df, p, boot) -> Estimate:
    ok = evaluate(p["criterion"], df)          # a missing value does not meet it
    k, n = int(ok.sum()), len(ok)
    return Estimate(k / n, *clopper_pearson(k, n, boot["level"]), n, f"{k}/{n}")


def _slope(df, p, boot) -> Estimate:
    fitter = fit_exponential if p.get("growth") == "exponential" else fit_loglog
    fit = fitter(df[p["x"]].to_numpy(float), learning_times(df), boot["n_boot"], boot["seed"], boot["level"])
    detail = f"{p['x']} fitted: {_levels(fit.sizes_used)}"
    if fit.sizes_censored:
        detail += f"; censored median at {_levels(fit.sizes_censored)}"
    return Estimate(fit.slope, fit.lo, fit.hi, len(df), detail, _fewest(df, p["x"], fit.sizes_used),
                    len(fit.sizes_used))


def _fewest(df, x: str, used) -> int:
    """The runs at the size with the fewest among the sizes `used` (0 when none)."""
    counts = df[x].value_counts()
    return int(min((counts[u] for u in used), default=0))


def _log_slope(xs: np.ndarray, meds: np.ndarray) -> float:
    """The least-squares slope of log median on log x; NaN if a median is censored."""
    return float(np.polyfit(np.log(xs), np.log(meds), 1)[0]) if np.all(np.isfinite(meds)) else np.nan


def _slope_difference(df, p, boot) -> Estimate:
    """Slope of a's log median learning time on log x minus b's, over the sizes whose median each
    side has uncensored (fit_loglog's choice), bootstrapped together."""
    x, sides = p["x"], [df[df[p["compare"]] == p[k]] for k in ("a", "b")]
    xs, samples = [], []
    for side in sides:
        used = np.array(fit_loglog(side[x].to_numpy(float), learning_times(side), n_boot=0).sizes_used)
        xs.append(used)
        samples += [learning_times(side[side[x] == u]) for u in used]
    runs = min(_fewest(side, x, used) for side, used in zip(sides, xs))
    sizes = min(len(used) for used in xs)
    if sizes < 2:
        return Estimate(np.nan, np.nan, np.nan, len(df), "fewer than 2 uncensored sizes on a side", runs, sizes)
    k = len(xs[0])

    def diff(meds):
        return _log_slope(xs[0], meds[:k]) - _log_slope(xs[1], meds[k:])

    def diffs(r):                 # every replicate's medians at once, the slopes replicate by replicate
        return [diff(meds) for meds in np.column_stack([censored_row_medians(a) for a in r])]
    detail = f"{p['x']} fitted: {_levels(xs[0])} ({p['a']}), {_levels(xs[1])} ({p['b']})"
    return Estimate(*bootstrap_ci(samples, lambda s: diff(np.array([censored_median(t) for t in s])), **boot,
                                  rows=diffs), len(df), detail, runs, sizes)


def _ratio(df, p, boot) -> Estimate:
    col = p["column"]
    numerator, ref = select(df, p["numerator"]), select(df, p["reference"])
    if numerator.empty or ref.empty or numerator.index.intersection(ref.index).size:
        return Estimate(np.nan, np.nan, np.nan, len(df), "numerator and reference are not two distinct sets of runs")
    detail = f"{num(numerator[col].mean())} ({where_text(p['numerator'])}) / {num(ref[col].mean())} ({p['reference']})"
    return Estimate(*bootstrap_ci([numerator[col], ref[col]], lambda s: math.log2(s[0].mean() / s[1].mean()), **boot),
                    len(numerator) + len(ref), detail, min(len(numerator), len(ref)))


def _rank(value: float, means: dict, over: str) -> str:
    """Where `value` sits among the groups' means: its rank (1 the lowest) and its neighbours."""
    lower = sorted((m, k) for k, m in means.items() if m < value)
    higher = sorted((m, k) for k, m in means.items() if m >= value)
    near = [f"{level(k)} ({num(m)})" for m, k in lower[-1:] + higher[:1]]
    where = ("between" if lower and higher else "above" if lower else "below") + f" {over} = " + " and ".join(near)
    return f"rank {len(lower) + 1} of {len(means) + 1} by mean: {where}"


def _ratio_to_best(df, p, boot) -> Estimate:
    col = p["column"]
    numerator, cand = select(df, p["numerator"]), select(df, p["candidates"])
    if numerator.empty or cand.empty:
        return Estimate(np.nan, np.nan, np.nan, len(df), "no runs for the numerator or the candidates")
    groups = {k: g[col].to_numpy(float) for k, g in cand.groupby(p["over"])}
    best = min(groups, key=lambda k: groups[k].mean())
    detail = (f"{num(numerator[col].mean())} / {num(groups[best].mean())} (best {p['over']} = {level(best)}); "
              + _rank(numerator[col].mean(), {k: g.mean() for k, g in groups.items()}, p["over"]))
    return Estimate(*bootstrap_ci([numerator[col].to_numpy(float), *groups.values()],
                                  lambda s: math.log2(s[0].mean() / min(g.mean() for g in s[1:])), **boot),
                    len(numerator) + len(cand), detail, min(len(numerator), *(len(g) for g in groups.values())))


def _median_learning_time(df, p, boot) -> Estimate:
    """Median of eq. 7.1's learning time over the runs, a censored run counted as +inf."""
    times = learning_times(df)
    detail = f"{int(np.isnan(times).sum())} of {len(times)} runs censored"
    return Estimate(*median_bootstrap(times, **boot), len(df), detail)


def _breakdown_flags(df, p) -> tuple[np.ndarray, list]:
    """The grid of x and, at each x, whether each run meets the criterion (1.0 or 0.0)."""
    xs = np.sort(df[p["x"]].unique())
    return xs, [evaluate(p["criterion"], df.loc[df[p["x"]] == x]).to_numpy(float) for x in xs]


def _breakdown(df, p, boot) -> Estimate:
    """Smallest x at which fewer than half the runs meet the criterion (+inf when none in the grid)."""
    xs, flags = _breakdown_flags(df, p)
    return Estimate(*bootstrap_ci(flags, lambda s: breakdown(xs, s), **boot), len(df),
                    f"{p['x']} grid: {_levels(xs)}", min(len(f) for f in flags))


def _breakdown_trend(df, p, boot) -> Estimate:
    """Spearman's rank correlation between the levels of `over` and their breakdown x, runs resampled
    within each (over, x) cell: +1 when the breakdown x rises with `over`, whatever the steps."""
    levels, grids, flags = [], [], []
    for lv, g in df.groupby(p["over"], sort=True):
        xs, f = _breakdown_flags(g, p)
        levels.append(lv)
        grids.append(xs)
        flags += f
    if len(levels) < 2:
        return Estimate(np.nan, np.nan, np.nan, len(df), f"fewer than 2 levels of {p['over']}")
    ends = np.cumsum([len(xs) for xs in grids])

    def points(s):
        return [breakdown(xs, s[end - len(xs):end]) for xs, end in zip(grids, ends)]
    detail = f"breakdown {p['x']} per {p['over']}: " + ", ".join(
        f"{level(lv)}: {num(b)}" for lv, b in zip(levels, points(flags)))
    return Estimate(*bootstrap_ci(flags, lambda s: rank_correlation(range(len(levels)), points(s)), **boot),
                    len(df), detail, min(len(f) for f in flags))


def _plateau(df, p, boot) -> Estimate:
    """log2 of Fig. 14's plateau K: the smallest K whose median learning time (or mean `column`) is
    within 1.2x of the best K's."""
    ks = np.sort(df[p["x"]].unique())
    if "column" in p:
        samples, summary = [df.loc[df[p["x"]] == k, p["column"]].to_numpy(float) for k in ks], np.mean
        row_summary = lambda r: r.mean(axis=1)          # noqa: E731
    else:
        samples, summary = [learning_times(df[df[p["x"]] == k]) for k in ks], censored_median
        row_summary = censored_row_medians

    def log2_plateau(summaries):
        k = plateau_k(list(ks), summaries)
        return math.log2(k) if k is not None else np.nan

    def rows(r):                  # every replicate's summaries at once, the plateau replicate by replicate
        return [log2_plateau(row) for row in np.column_stack([row_summary(a) for a in r])]
    return Estimate(*bootstrap_ci(samples, lambda s: log2_plateau([summary(t) for t in s]), **boot, rows=rows),
                    len(df), f"{p['x']} grid: {_levels(ks)}", min(len(t) for t in samples))


# kind -> (estimator, required parameters, optional parameters, scale)
STATISTICS = {
    "mean": (_mean, {"column"}, {"strata"}, "linear"),
    "min": (_minimum, {"column"}, set(), "linear"),
    "fraction": (_fraction, {"criterion"}, set(), "linear"),
    "slope": (_slope, {"x"}, {"growth"}, "linear"),
    "slope_difference": (_slope_difference, {"x", "compare", "a", "b"}, set(), "linear"),
    "ratio": (_ratio, {"column", "numerator", "reference"}, set(), "log2"),
    "ratio_to_best": (_ratio_to_best, {"column", "numerator", "candidates", "over"}, set(), "log2"),
    "breakdown": (_breakdown, {"x", "criterion"}, set(), "linear"),
    "breakdown_trend": (_breakdown_trend, {"x", "over", "criterion"}, set(), "linear"),
    "plateau": (_plateau, {"x"}, {"column"}, "log2"),
    "median_learning_time": (_median_learning_time, set(), set(), "linear"),
}


def describe_statistic(p: dict) -> str:
    kind = p["kind"]
    if kind == "mean":
        return f"mean {p['column']} over runs" + (f" (resampled within each {p['strata']})" if "strata" in p else "")
    if kind == "min":
        return f"minimum of {p['column']}"
    if kind == "fraction":
        return f"fraction of runs with {p['criterion']}"
    if kind == "slope":
        if p.get("growth") == "exponential":
            return f"log2 of the growth factor per unit of {p['x']} of the median learning time (1 for 2^N)"
        return f"slope of log median learning time on log {p['x']}"
    if kind == "slope_difference":
        return (f"slope of log median learning time on log {p['x']}: {p['compare']} = {p['a']} "
                f"minus {p['compare']} = {p['b']}")
    if kind == "ratio":
        return f"mean {p['column']} at {where_text(p['numerator'])} over at {p['reference']}"
    if kind == "ratio_to_best":
        return (f"mean {p['column']} of {p['numerator']} over that of the best {p['over']} "
                f"among {p['candidates']}")
    if kind == "breakdown":
        return f"smallest {p['x']} at which fewer than half the runs have {p['criterion']}"
    if kind == "breakdown_trend":
        return (f"Spearman's rank correlation between {p['over']} and its breakdown {p['x']} (the smallest "
                f"at which fewer than half the runs have {p['criterion']})")
    if kind == "median_learning_time":
        return "median learning time (eq. 7.1) over runs, a censored run counted as infinite"
    if "column" in p:
        return f"the plateau {p['x']}: the smallest whose mean {p['column']} is within 1.2x of the best"
    return f"the plateau {p['x']}: the smallest whose median learning time is within 1.2x of the best"

"""Summaries of learning times: censored medians and their CIs, log-log slopes with a bootstrap CI,
growth fits; means with standard errors; factorial effects.

A run that never learns within its budget is censored at its cap (learning time
> cap). Medians treat it as +inf, so a size's median is known while fewer than
half its runs are censored; sizes whose median is censored are left out of the
fit and reported, not dropped silently.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

# Fig. 14's plateau: the smallest K whose median learning time is within this factor of the best K's
# (the paper reads "the marginal benefits seem to plateau around K=20" off its regret curves).
PLATEAU_TOLERANCE = 1.2


def censored_median(times: np.ndarray) -> float:
    """Median with NaN meaning censored (+inf); NaN if the median itself is censored."""
    t = np.where(np.isnan(times), np.inf, times)
    m = float(np.median(t))
    return m if np.isfinite(m) else np.nan


def inf_row_medians(rows: np.ndarray) -> np.ndarray:
    """The median of each row of a 2-D array, a censored run (NaN) counted as +inf."""
    return np.median(np.where(np.isnan(rows), np.inf, rows), axis=1)


def censored_row_medians(rows: np.ndarray) -> np.ndarray:
    """`censored_median` of each row of a 2-D array, bit for bit, in one call (bootstrap replicates)."""
    m = inf_row_medians(rows)
    return np.where(np.isfinite(m), m, np.nan)


def learning_times(runs: pd.DataFrame) -> np.ndarray:
    """The runs' eq. 7.1 learning times as floats, NaN for a censored run."""
    return pd.to_numeric(runs["learning_time"], errors="coerce").to_numpy(float)


def censored_medians(runs: pd.DataFrame, by: str) -> pd.Series:
    """`censored_median` of the runs' learning times per value of `by`, ascending (NaN where censored)."""
    return runs.assign(_lt=learning_times(runs)).groupby(by)["_lt"].apply(lambda t: censored_median(t.to_numpy()))


@dataclass
class SlopeFit:
    slope: float
    lo: float
    hi: float
    intercept: float
    sizes_used: list
    sizes_censored: list


def fit_loglog(sizes: np.ndarray, times: np.ndarray, n_boot: int = 2000, seed: int = 0,
               level: float = 0.95) -> SlopeFit:
    """Least-squares slope of log(median learning time) on log(size), with a bootstrap
    percentile CI that resamples runs within each size."""
    sizes = np.asarray(sizes, float)
    times = np.asarray(times, float)
    uniq = np.unique(sizes)
    groups = [times[sizes == n] for n in uniq]
    med = np.array([censored_median(g) for g in groups])
    ok = ~np.isnan(med)
    if ok.sum() < 2:
        return SlopeFit(np.nan, np.nan, np.nan, np.nan, uniq[ok].tolist(), uniq[~ok].tolist())
    x = np.log(uniq[ok])
    slope, intercept = np.polyfit(x, np.log(med[ok]), 1)
    rng = np.random.default_rng(seed)
    # resampled medians per size, all bootstrap replicates at once: (n_boot, sizes)
    meds = np.stack([resampled_medians(g, rng, n_boot) for g, keep in zip(groups, ok) if keep], axis=1)
    finite = np.all(np.isfinite(meds), axis=1)
    boots = np.polyfit(x, np.log(meds[finite]).T, 1)[0] if finite.any() else []
    a = (1 - level) / 2
    lo, hi = (np.quantile(boots, [a, 1 - a]) if len(boots) else (np.nan, np.nan))
    return SlopeFit(float(slope), float(lo), float(hi), float(intercept),
                    uniq[ok].tolist(), uniq[~ok].tolist())


def mean_sem(df: pd.DataFrame, by: list[str], value: str) -> pd.DataFrame:
    """Mean and standard error over seeds of `value` per group."""
    g = df.groupby(by, sort=False)[value]
    out = g.agg(["mean", "std", "count"]).reset_index()
    out["sem"] = out["std"].fillna(0.0) / np.sqrt(out["count"])
    return out


def mean_t_ci(df: pd.DataFrame, by: list[str], value: str, level: float = 0.95) -> pd.DataFrame:
    """`mean_sem` plus the Student-t CI of each group's mean (n - 1 d.f.; NaN for one seed):
    with 3 seeds the half-width is 4.3 s.e.m., which a bare ± s.e.m. hides."""
    from scipy.stats import t
    out = mean_sem(df, by, value)
    half = t.ppf(0.5 + level / 2, out["count"] - 1) * out["sem"]
    return out.assign(lo=out["mean"] - half, hi=out["mean"] + half)


def mean_sem_all(df: pd.DataFrame, value: str) -> pd.Series:
    """`mean_sem` of `value` over all rows of `df` as one group: mean, std, count, sem."""
    return mean_sem(df.assign(_all=0), ["_all"], value).iloc[0]


def median_or_inf(times: np.ndarray) -> float:
    """The censored median, +inf (slower than any finite one) when the median itself is censored."""
    m = censored_median(times)
    return np.inf if np.isnan(m) else m


def sem(values: pd.Series) -> float:
    """The standard error of the mean over seeds (sample s.d. / sqrt(n)); NaN for one seed."""
    return float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else np.nan


def median_ci(times: np.ndarray, n_boot: int = 2000, seed: int = 0, level: float = 0.95):
    """Censored median of learning times (NaN = censored, i.e. +inf) and its bootstrap percentile CI,
    for the figures' tables: the median NaN where censored (printed "censored"), an interval end that
    is censored (> the cap) inf. It is `bootstrap_ci` of `median_or_inf`, the claims' estimate, whose
    own point estimate is +inf where censored (printed "∞"), so that both print the same interval."""
    times = np.asarray(times, float)
    if not len(times):
        return np.nan, np.nan, np.nan
    _, lo, hi = median_bootstrap(times, n_boot, seed, level)
    return censored_median(times), lo, hi


AMBIGUOUS = 2.0
"""A fit wins only with a residual sum of squares this many times smaller than the other's,
over sizes spanning at least a factor of 2; otherwise the growth is called ambiguous."""


@dataclass
class Growth:
    kind: str            # polynomial | exponential | ambiguous | none within budget | too few sizes
    power: float         # p of N^p
    base: float          # b of b^N
    rss_power: float
    rss_exp: float
    sizes: list


def fit_growth(sizes, medians) -> Growth:
    """Fit log(median) against log N and against N over the sizes with a finite median."""
    sizes = np.asarray(sizes, float)
    med = np.asarray(medians, float)
    ok = np.isfinite(med)
    if ok.sum() == 0:
        return Growth("none within budget", math.nan, math.nan, math.nan, math.nan, [])
    if ok.sum() < 2:
        return Growth("too few sizes", math.nan, math.nan, math.nan, math.nan, sizes[ok].tolist())
    x, y = sizes[ok], np.log(med[ok])
    cp = np.polyfit(np.log(x), y, 1)
    ce = np.polyfit(x, y, 1)
    rss_p = float(np.sum((np.polyval(cp, np.log(x)) - y) ** 2))
    rss_e = float(np.sum((np.polyval(ce, x) - y) ** 2))
    if len(x) < 3:
        kind = "too few sizes"                 # two points fit both exactly
    elif max(rss_p, rss_e) < AMBIGUOUS * min(rss_p, rss_e) or x.max() < 2 * x.min():
        kind = "ambiguous"
    else:
        kind = "polynomial" if rss_p < rss_e else "exponential"
    return Growth(kind, float(cp[0]), float(math.exp(ce[0])), rss_p, rss_e, x.tolist())


def factorial_effects(runs: pd.DataFrame, factors: list[str], cell: str, response: str) -> pd.DataFrame:
    """Main effects of two-level `factors` (columns of -1/+1) on `response` in a replicated two-level
    design: the mean of the + cells' means minus that of the - cells' (with equal runs per cell, the
    + runs' mean minus the - runs'), so a cell with more seeds so far weighs no more than the others.

    Its s.e. is (2 s / C) sqrt(sum_c 1 / n_c), s the pooled within-cell standard deviation, over C
    cells of n_c runs (2 s / sqrt(n) for n runs in equal cells), on `dof` = runs - cells degrees of
    freedom (NaN with none); an effect is flagged where |effect| > 2 s.e.
    """
    by = runs.groupby(cell)[response]
    means, counts = by.mean(), by.count()
    signs = runs.groupby(cell)[factors].first()
    dof = len(runs) - len(means)
    s = float(np.sqrt(((runs[response] - by.transform("mean")) ** 2).sum() / dof)) if dof > 0 else float("nan")
    se = 2.0 * s / len(means) * float(np.sqrt((1.0 / counts).sum()))
    rows = []
    for f in factors:
        effect = float(means[signs[f] > 0].mean() - means[signs[f] < 0].mean())
        rows.append({"factor": f, "effect": effect, "se": se, "dof": dof,
                     "effect > 2 s.e.": bool(abs(effect) > 2 * se)})
    return pd.DataFrame(rows)


def bootstrap_ci(samples: list, statistic, n_boot: int = 2000, seed: int = 0,
                 level: float = 0.95, rows=None) -> tuple[float, float, float]:
    """statistic(samples) and its bootstrap percentile CI, resampling each array of `samples` (the runs
    of one size or setting) with replacement on its own: the claims' CIs, and `median_ci`'s.
    Replicates where the statistic is NaN (a censored median) are dropped, as in fit_loglog; the CI
    ends are replicate values (inverted CDF), so a statistic taking few values (a grid point, +inf)
    keeps them. `rows`, where given, is the statistic of every replicate at once, from the resampled
    samples as (n_boot, n) arrays: it must give `statistic`'s values bit for bit (tests)."""
    samples = [np.asarray(s) for s in samples]
    resampled = [s[i] for s, i in zip(samples, resample_indices(samples, np.random.default_rng(seed), n_boot))]
    if rows is not None:
        boots = np.asarray(rows(resampled), float)
    else:
        boots = np.array([statistic([r[b] for r in resampled]) for b in range(n_boot)], float)
    return (float(statistic(samples)), *percentile_ci(boots, level))


def resample_indices(samples: list, rng: np.random.Generator, n_boot: int) -> list[np.ndarray]:
    """Per sample an (n_boot, n) array of indices drawn with replacement, replicate by replicate and
    sample by sample within it: the integers of `rng.integers(0, n, n)` called in that order, drawn in
    one call (an array of bounds takes NumPy's per-integer draw from the same stream; tests)."""
    sizes = [len(s) for s in samples]
    bounds = np.repeat(np.asarray(sizes, np.int64), sizes)
    draws = rng.integers(0, np.broadcast_to(bounds, (n_boot, len(bounds))))
    return np.split(draws, np.cumsum(sizes)[:-1], axis=1)


def percentile_ci(boots: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile CI of bootstrap replicates, NaN replicates dropped; the ends are replicate
    values (inverted CDF)."""
    boots = boots[~np.isnan(boots)]
    a = (1 - level) / 2
    lo, hi = np.quantile(boots, [a, 1 - a], method="inverted_cdf") if len(boots) else (np.nan, np.nan)
    return float(lo), float(hi)


def median_bootstrap(times, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """`bootstrap_ci([times], median_or_inf)`, bit for bit, in one array: the same draws (one
    generator call of n_boot x n gives the n_boot calls' integers) and the replicates' medians
    taken along it, with censored runs as +inf. The figures and the claims take many such CIs."""
    t = np.asarray(times, float)
    boots = resampled_medians(t, np.random.default_rng(seed), n_boot)
    return (float(median_or_inf(t)), *percentile_ci(boots, level))


def resampled_medians(times: np.ndarray, rng: np.random.Generator, n_boot: int) -> np.ndarray:
    """n_boot bootstrap replicates of the median of `times`, a censored run (NaN) as +inf, drawn as
    one (n_boot, n) array of indices: the integers of n_boot draws of n, in order."""
    return inf_row_medians(times[resample_indices([times], rng, n_boot)[0]])


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) CI of a binomial fraction k/n: SciPy's binomtest(k, n).proportion_ci,
    method "exact"; its coverage is at least `level` at every n."""
    from scipy.stats import binomtest
    ci = binomtest(k, n).proportion_ci(level, method="exact")
    return float(ci.low), float(ci.high)


def fit_exponential(sizes: np.ndarray, times: np.ndarray, n_boot: int = 2000, seed: int = 0,
                    level: float = 0.95) -> SlopeFit:
    """log2 of the per-step growth factor b of median learning time ~ b^N (1 for Θ(2^N)), with
    fit_loglog's censoring and bootstrap CI: fit_loglog on e^N regresses log(median) on N, and
    dividing by log 2 turns log b into log2 b."""
    fit = fit_loglog(np.exp(np.asarray(sizes, float)), times, n_boot, seed, level)
    ln2 = np.log(2.0)
    return SlopeFit(float(fit.slope / ln2), float(fit.lo / ln2), float(fit.hi / ln2), fit.intercept,
                    np.log(fit.sizes_used).tolist(), np.log(fit.sizes_censored).tolist())


def plateau_k(ks, medians, tolerance: float = PLATEAU_TOLERANCE):
    """Smallest K with median learning time <= tolerance x the smallest median over all K (censored = inf);
    None when every median is censored."""
    med = np.where(np.isnan(np.asarray(medians, float)), np.inf, np.asarray(medians, float))
    if not np.isfinite(med).any():
        return None
    best = med.min()
    for k, m in sorted(zip(ks, med)):
        if m <= tolerance * best:
            return k
    return None  # pragma: no cover - the best K always qualifies


def breakdown(xs, flags) -> float:
    """The breakdown x of a grid `xs` (ascending), `flags` holding each x's runs as 1 (meets a criterion)
    or 0: the smallest x at which fewer than half the runs meet it (+inf when none in the grid)."""
    return next((float(x) for x, f in zip(xs, flags) if f.mean() < 0.5), np.inf)


def rank_correlation(x, y) -> float:
    """Spearman's rank correlation of x and y (SciPy's spearmanr: ties given their average rank, +inf
    above every finite value and tied with +inf); 0 when x or y is constant (no monotone trend), where
    spearmanr has none."""
    from scipy.stats import spearmanr
    x, y = np.asarray(list(x), float), np.asarray(list(y), float)
    if np.all(x == x[0]) or np.all(y == y[0]):
        return 0.0
    return float(spearmanr(x, y).statistic)


def two_piece_breakpoint(x: np.ndarray, y: np.ndarray) -> float:
    """Where a continuous two-piece line in (log x, log y) fits the medians best: the grid value
    of x at the kink (NaN with fewer than 4 points)."""
    if len(x) < 4:
        return np.nan
    lx, ly = np.log(x), np.log(y)
    best, where = np.inf, np.nan
    for b in lx[1:-1]:
        design = np.column_stack([np.ones_like(lx), lx, np.maximum(lx - b, 0.0)])
        resid = ly - design @ np.linalg.lstsq(design, ly, rcond=None)[0]
        if resid @ resid < best:
            best, where = resid @ resid, float(np.exp(b))
    return where

"""The coverage of the report's 95% percentile-bootstrap intervals at the sample sizes the specs use:
the evidence behind each statistic's minimum number of runs per group (claims.yaml's
rules.minimum_runs; docs/report.md prints this table).

Each family draws `sims` data sets of n runs per group from a known distribution, forms the interval
exactly as `rvfx report` does (rvfx.analysis.stats.bootstrap_ci: 2,000 resamples, runs resampled
within each group, replicate values as the ends) and counts how often it contains the true value.
A statistic's minimum is the smallest n from which the coverage stays at 90% or more (within five
points of 95%) at every larger n in the table. Fixed seeds: the same numbers on every machine.

    .venv/bin/python benchmarks/bootstrap_coverage.py            # the table (about 5 CPU-minutes)
"""
from __future__ import annotations

import sys

import numpy as np
from scipy.stats import binom

from rvfx.analysis.stats import bootstrap_ci, censored_row_medians, inf_row_medians

SIZES = (3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 30)
"""Runs per group: the specs' paper scales use 3 to 20 (deep sea's tabular scaling 3 and 10, Table 1
5 to 100, most sweeps 10 or 20)."""
ENOUGH = 0.90
"""Coverage within five points of 95%: the percentile interval of a median cannot do better at every n
(its exact coverage swings between 0.91 and 0.96 up to n = 41, with the discrete order statistics)."""
X3 = np.log([10.0, 20.0, 40.0])


def _slope3(meds: np.ndarray) -> np.ndarray:
    """Least-squares slope of log median on log size at three sizes, per row of medians."""
    return np.polyfit(X3, np.log(meds).T, 1)[0]


# family: (what it is, the statistic the report uses it for, draw(rng, n) -> samples, truth,
#          rows(resampled) -> every replicate's statistic)
FAMILIES = {
    "mean": ("mean of normal runs", "mean, plateau of a mean, breakdown (a fraction per cell)",
             lambda rng, n: [rng.normal(0.0, 1.0, n)], 0.0, lambda r: r[0].mean(axis=1)),
    "mean_skewed": ("mean of lognormal runs (sigma 1): skewed", "(for the record)",
                    lambda rng, n: [rng.lognormal(0.0, 1.0, n)], float(np.exp(0.5)), lambda r: r[0].mean(axis=1)),
    "mean_strata": ("mean over two strata of n/2 runs each (Fig. 4's treasure and bomb)", "mean with strata",
                    lambda rng, n: [rng.normal(0.0, 1.0, n // 2), rng.normal(3.0, 1.0, n - n // 2)],
                    1.5, lambda r: np.concatenate(r, axis=1).mean(axis=1)),
    "ratio": ("log2 ratio of two means (lognormal runs, sigma 0.3)", "ratio, ratio_to_best",
              lambda rng, n: [rng.lognormal(0.0, 0.3, n), 2.0 * rng.lognormal(0.0, 0.3, n)], 1.0,
              lambda r: np.log2(r[1].mean(axis=1) / r[0].mean(axis=1))),
    "median": ("median of continuous runs", "median_learning_time, plateau of a median",
               lambda rng, n: [rng.lognormal(0.0, 1.0, n)], 1.0, lambda r: inf_row_medians(r[0])),
    "slope": ("log-log slope of medians at three sizes (lognormal runs, sigma 0.5)", "slope, slope_difference",
              lambda rng, n: [s ** 2 * rng.lognormal(0.0, 0.5, n) for s in (10.0, 20.0, 40.0)], 2.0,
              lambda r: _slope3(np.column_stack([censored_row_medians(a) for a in r]))),
}


def coverage(family: str, n: int, sims: int = 2000, seed: int = 0, n_boot: int = 2000) -> float:
    """The fraction of `sims` data sets of n runs per group whose 95% percentile-bootstrap interval
    (as the report forms it) contains the family's true value."""
    _, _, draw, truth, rows = FAMILIES[family]
    rng = np.random.default_rng(seed)
    hits = 0
    for i in range(sims):
        samples = draw(rng, n)
        _, lo, hi = bootstrap_ci(samples, lambda s: np.nan, n_boot, seed=i,
                                 rows=lambda r: rows([np.asarray(a, float) for a in r]))
        hits += lo <= truth <= hi
    return hits / sims


def clopper_pearson_coverage(n: int, level: float = 0.95) -> float:
    """The smallest exact coverage of the Clopper-Pearson interval of k/n over true fractions p on a
    fine grid: at least `level` at every n, by construction."""
    from rvfx.analysis.stats import clopper_pearson
    ends = [clopper_pearson(k, n, level) for k in range(n + 1)]
    grid = np.linspace(0.001, 0.999, 999)
    return float(min(sum(binom.pmf(k, n, p) for k, (lo, hi) in enumerate(ends) if lo <= p <= hi) for p in grid))


def median_exact_coverage(n: int, level: float = 0.95) -> float:
    """The coverage of the percentile interval of the median of an odd number n of continuous runs, in
    the limit of infinitely many resamples: its ends are the order statistics x(l) and x(n + 1 - l),
    l the smallest with P(a resampled median <= x(l)) = P(Bin(n, l/n) >= (n + 1)/2) >= (1 - level)/2,
    and it contains the true median unless fewer than l runs lie on one side of it."""
    half = (n + 1) // 2
    low = min(k for k in range(1, n + 1) if binom.sf(half - 1, n, k / n) >= (1 - level) / 2)
    return float(binom.cdf(n - low, n, 0.5) - binom.cdf(low - 1, n, 0.5))


def minimum(row: dict) -> int | None:
    """The smallest n of the table from which the coverage stays at ENOUGH or more."""
    ok = [n for n in SIZES if all(row[m] >= ENOUGH for m in SIZES if m >= n)]
    return ok[0] if ok else None


def main(sims: int = 2000) -> None:
    print(f"Coverage of the report's 95% intervals ({sims} data sets per cell, 2,000 resamples each)\n")
    print("| family | used for | " + " | ".join(f"n = {n}" for n in SIZES)
          + " | smallest n with >= 90% from there on |")
    print("|---|---|" + "---|" * (len(SIZES) + 1))
    for family, (what, used, *_) in FAMILIES.items():
        row = {n: coverage(family, n, sims) for n in SIZES}
        print(f"| {what} | {used} | " + " | ".join(f"{row[n]:.3f}" for n in SIZES) + f" | {minimum(row)} |",
              flush=True)
    row = {n: clopper_pearson_coverage(n) for n in SIZES}
    print("| Clopper-Pearson, fraction k/n (exact, smallest over p) | fraction | "
          + " | ".join(f"{row[n]:.3f}" for n in SIZES) + f" | {minimum(row)} |")
    odd = range(3, 42, 2)
    print("\nThe median's percentile interval at odd n, exactly (infinitely many resamples): "
          + ", ".join(f"{n}: {median_exact_coverage(n):.3f}" for n in odd)
          + f"; lowest from n = 9 on: {min(median_exact_coverage(n) for n in odd if n >= 9):.3f}.")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)

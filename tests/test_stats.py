"""Learning-time summaries: eq. 7.1, censored medians, log-log slopes."""
import numpy as np
import pandas as pd
import pytest

from rvfx.analysis.stats import (
    bootstrap_ci,
    censored_median,
    censored_medians,
    fit_growth,
    fit_loglog,
    mean_t_ci,
    median_bootstrap,
    median_ci,
    median_or_inf,
    resample_indices,
)
from rvfx.core.live import LearningTime, log_grid


def test_learning_time_is_first_L_above_one_with_average_regret_at_most_half():
    lt = LearningTime()
    for regret in [0.0, 1.0, 1.0, 0.0, 0.0, 0.0]:
        lt.update(regret)
    # cumulative regret 0, 1, 2, 2, 2, 2 -> ratios (L=2) 0.5 -> learning time 2
    assert lt.value == 2
    lt = LearningTime()
    for regret in [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]:
        lt.update(regret)
    # cumulative 1, 2, 3, 3, 3, 3: 3/6 = 0.5 first at L=6
    assert lt.value == 6


def test_log_grid_has_the_first_ten_and_the_last_episode():
    g = log_grid(12345)
    assert list(g[:10]) == list(range(1, 11)) and g[-1] == 12345
    assert np.all(np.diff(g) > 0) and len(g) < 200


def test_censored_median_counts_censored_runs_as_infinite():
    assert censored_median(np.array([1.0, 2.0, np.nan])) == 2.0
    assert np.isnan(censored_median(np.array([1.0, np.nan, np.nan])))


def test_censored_medians_per_size_count_a_censored_run_as_infinite():
    """A censored run's learning_time (written empty, read as NaN) counts as +inf; per size, ascending."""
    runs = pd.DataFrame({"env.size": [8, 4, 4, 4, 8, 8], "learning_time": [3, 1, 2, np.nan, np.nan, np.nan]})
    med = censored_medians(runs, "env.size")
    assert med.index.tolist() == [4, 8] and med[4] == 2.0 and np.isnan(med[8])


def test_fit_recovers_a_known_power_law_with_a_ci_that_covers_it():
    rng = np.random.default_rng(0)
    sizes = np.repeat([4, 6, 8, 12, 16], 20)
    times = 3.0 * sizes ** 2.5 * np.exp(rng.normal(0, 0.2, sizes.size))
    fit = fit_loglog(sizes, times)
    assert abs(fit.slope - 2.5) < 0.1
    assert fit.lo < 2.5 < fit.hi and fit.hi - fit.lo < 0.3


def test_sizes_with_a_censored_median_are_reported_not_fitted():
    sizes = np.repeat([4, 8, 16], 3)
    times = np.array([16, 16, 16, 64, 64, 64, np.nan, np.nan, 256.0])
    fit = fit_loglog(sizes, times)
    assert fit.sizes_used == [4.0, 8.0] and fit.sizes_censored == [16.0]
    assert abs(fit.slope - 2.0) < 1e-9


def test_factorial_effects_recover_known_main_effects_and_pooled_error():
    """A 2^3 full factorial, 4 runs per cell: response = 3*A - 1*C + noise of known s.d. 0.5.
    The effects (twice the coefficients) come back within 3 true s.e. (2 * 0.5 / sqrt(32)), A and C
    are flagged, and the pooled s.d. is near 0.5 (24 degrees of freedom: relative s.e. ~ 1/sqrt(48)
    ~ 0.14)."""
    import itertools

    from rvfx.analysis.stats import factorial_effects
    rng = np.random.default_rng(0)
    rows = []
    for i, (a, b, c) in enumerate(itertools.product((-1, 1), repeat=3)):
        for _ in range(4):
            rows.append({"cell": i, "A": a, "B": b, "C": c, "y": 3 * a - c + 0.5 * rng.standard_normal()})
    df = pd.DataFrame(rows)
    eff = factorial_effects(df, ["A", "B", "C"], "cell", "y").set_index("factor")
    true_se = 2 * 0.5 / np.sqrt(32)
    assert abs(eff["se"].iloc[0] / true_se - 1) < 3 * 0.14
    for f, true in (("A", 6.0), ("B", 0.0), ("C", -2.0)):
        assert abs(eff.loc[f, "effect"] - true) < 3 * true_se
    assert eff.loc["A", "effect > 2 s.e."] and eff.loc["C", "effect > 2 s.e."]


def test_factorial_effects_weigh_cells_not_runs_when_seeds_are_unequal():
    """A 2^2 design mid-sweep: cell (-, -) has 3 runs (0, 2, 4), the others one (5, 1, 3). A's effect
    is over cell means, (5 + 3)/2 - (2 + 1)/2 = 2.5 (over runs it would be 2.25); s = 2 from the one
    replicated cell (SS 8, 2 d.f.), s.e. = (2 * 2 / 4) sqrt(1/3 + 1 + 1 + 1)."""
    from rvfx.analysis.stats import factorial_effects
    df = pd.DataFrame({"cell": [1, 1, 1, 2, 3, 4], "A": [-1, -1, -1, 1, -1, 1], "B": [-1, -1, -1, -1, 1, 1],
                       "y": [0.0, 2.0, 4.0, 5.0, 1.0, 3.0]})
    eff = factorial_effects(df, ["A", "B"], "cell", "y").set_index("factor")
    assert eff.loc["A", "effect"] == pytest.approx(2.5) and eff.loc["B", "effect"] == pytest.approx(-1.5)
    assert eff.loc["A", "se"] == pytest.approx(np.sqrt(10 / 3))


def test_growth_fit_tells_linear_from_exponential():
    n = np.array([4, 8, 16, 32])
    lin = fit_growth(n, 3 * n)
    assert lin.kind == "polynomial" and lin.power == pytest.approx(1.0)
    m = np.array([3, 5, 7, 9, 11])
    exp = fit_growth(m, 5 * 2.0 ** m)
    assert exp.kind == "exponential" and exp.base == pytest.approx(2.0)
    assert fit_growth(n, [np.nan] * 4).kind == "none within budget"
    assert fit_growth([3, 4], [10, 40]).kind == "too few sizes"


def test_median_ci_treats_censored_runs_as_infinite():
    med, lo, hi = median_ci(np.array([100.0, 120, 140, np.nan, np.nan]))
    assert med == 140 and lo <= med and hi == np.inf
    med, lo, hi = median_ci(np.array([np.nan, np.nan, 5.0]))
    assert np.isnan(med)


def test_mean_t_ci_known_value_and_coverage_at_three_seeds():
    one = mean_t_ci(pd.DataFrame({"g": ["a"] * 3 + ["b"], "x": [1.0, 2.0, 3.0, 7.0]}), ["g"], "x").set_index("g")
    # mean 2, s.e.m. 1/sqrt(3), t(0.975, 2 d.f.) = 4.3027
    assert one.loc["a", ["lo", "hi"]].tolist() == pytest.approx([2 - 2.4841, 2 + 2.4841], abs=1e-4)
    assert np.isnan(one.loc["b", "lo"])                                   # one seed: no interval
    rng = np.random.default_rng(0)
    n = 4000
    df = pd.DataFrame({"g": np.repeat(np.arange(n), 3), "x": rng.normal(5.0, 2.0, 3 * n)})
    ci = mean_t_ci(df, ["g"], "x")
    cover = float(((ci["lo"] <= 5.0) & (5.0 <= ci["hi"])).mean())
    assert abs(cover - 0.95) < 3 * np.sqrt(0.95 * 0.05 / n)               # exact for normal data


# ------------------------------------------------------------------ the claims report's statistics

BOOT = {"n_boot": 2000, "seed": 0, "level": 0.95}


def estimate(df: pd.DataFrame, **params):
    from rvfx.report.statistics import STATISTICS
    return STATISTICS[params["kind"]][0](df, params, BOOT)


def test_median_learning_time_ci_covers_the_known_median_of_censored_runs():
    """Exponential learning times of mean 1000 (median 1000 ln 2 = 693), censored at a cap of 2000
    (e^-2 = 13.5% of runs). On 400 runs the estimate is the sample's median, censored runs counted as
    +inf, within 3 s.e. of 693 (s.e. 1 / (2 f(m) sqrt n) = 1000 / sqrt n), and its CI about 2 x 1.96 s.e.
    wide; over 200 samples of 60 runs (500 resamples each) the CI covers 693 in 95% of them, up to 3
    binomial s.e. (0.046)."""
    from rvfx.report.statistics import STATISTICS
    n, true = 400, 1000 * np.log(2)
    rng = np.random.default_rng(0)
    t = rng.exponential(1000, n)
    df = pd.DataFrame({"learning_time": np.where(t > 2000, np.nan, t)})
    e = estimate(df, kind="median_learning_time")
    se = 1000 / np.sqrt(n)
    assert e.value == np.median(np.where(t > 2000, np.inf, t)) and abs(e.value - true) < 3 * se
    assert e.lo <= e.value <= e.hi and 1.96 * se < e.hi - e.lo < 4 * 1.96 * se
    assert e.n == n and e.detail == f"{int((t > 2000).sum())} of {n} runs censored"
    assert STATISTICS["median_learning_time"][3] == "linear"
    median, covered = STATISTICS["median_learning_time"][0], 0
    for _ in range(200):
        t = rng.exponential(1000, 60)
        e = median(pd.DataFrame({"learning_time": np.where(t > 2000, np.nan, t)}), {}, {**BOOT, "n_boot": 500})
        covered += e.lo <= true <= e.hi
    assert abs(covered / 200 - 0.95) < 3 * np.sqrt(0.95 * 0.05 / 200)


def test_median_learning_time_is_infinite_when_most_runs_are_censored():
    e = estimate(pd.DataFrame({"learning_time": [10.0, np.nan, np.nan]}), kind="median_learning_time")
    assert e.value == np.inf and e.hi == np.inf and e.detail == "2 of 3 runs censored"


def grid(breakdown: dict, p_before: float = 1.0, p_after: float = 0.0, runs: int = 10, seed: int = 0):
    """Runs over M x psi in 1..6: each learns with p_before below its M's breakdown psi, p_after from it on."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"M": m, "psi": x, "learnt": rng.random() < (p_before if x < b else p_after)}
                         for m, b in breakdown.items() for x in range(1, 7) for _ in range(runs)])


TREND = {"kind": "breakdown_trend", "x": "psi", "over": "M", "criterion": "learnt"}


@pytest.mark.parametrize("order, rho", [((2, 3, 4, 5, 7), 1.0), ((7, 5, 4, 3, 2), -1.0)])
def test_breakdown_trend_is_plus_or_minus_one_on_a_monotone_grid(order, rho):
    """Breakdown psi rising (falling) with M, the last M never breaking down in the grid (+inf):
    Spearman's rho is +1 (-1); with 9 runs in 10 learning before and 1 in 10 after, the CI keeps the sign."""
    ms = (5, 10, 20, 30, 40)
    e = estimate(grid(dict(zip(ms, order))), **TREND)
    assert [e.value, e.lo, e.hi] == pytest.approx([rho] * 3)
    assert e.detail.endswith(f"{ms[-1]}: ∞") == (order[-1] == 7) and e.n == 5 * 6 * 10
    noisy = estimate(grid(dict(zip(ms, order)), p_before=0.9, p_after=0.1), **TREND)
    assert noisy.value == pytest.approx(rho) and np.sign(noisy.lo) == np.sign(noisy.hi) == np.sign(rho)


def test_breakdown_trend_is_inconclusive_on_a_flat_grid():
    """Every M breaks down at psi = 4: rho is 0 exactly (ties, no trend); with each cell's learning
    at 0.7 below and 0.3 from it, the breakdown points vary by chance and the CI reaches both signs."""
    from rvfx.report.rules import rule_verdict
    flat = {m: 4 for m in (5, 10, 20, 30, 40)}
    e = estimate(grid(flat), **TREND)
    assert (e.value, e.lo, e.hi) == (0.0, 0.0, 0.0)
    noisy = estimate(grid(flat, p_before=0.7, p_after=0.3), **TREND)
    assert noisy.lo < 0 < noisy.hi
    for est in (e, noisy):
        assert rule_verdict({"kind": "sign", "op": ">"}, {}, est, "linear")[0] == "inconclusive"


def test_rank_correlation_is_spearmans_with_ties_and_infinity():
    from scipy.stats import spearmanr

    from rvfx.analysis.stats import rank_correlation
    y = [0.01, 0.01, 0.003, 1.0, np.inf]
    assert rank_correlation(range(5), y) == pytest.approx(spearmanr(range(5), [0.01, 0.01, 0.003, 1.0, 9e9])[0])
    assert rank_correlation(range(5), y) == pytest.approx(6.5 / np.sqrt(95))      # ranks 2.5 2.5 1 4 5
    assert rank_correlation(range(3), [np.inf] * 3) == 0.0


def test_plateau_of_a_column_is_the_smallest_k_within_1_2_of_the_best_mean():
    """Mean regret 5000, 3000, 1500, 1050, 1000 at K = 1, 5, 10, 20, 40 (two runs each, +-50): K = 20 is
    the smallest within 1.2 x 1000, and in every resample (1100 <= 1.2 x 950 < 1450); the median
    learning times, best at K = 10, put it at 10."""
    ks, regret, lt = [1, 5, 10, 20, 40], [5000, 3000, 1500, 1050, 1000], [np.nan, 900, 500, 550, 560]
    df = pd.DataFrame([{"agent.K": k, "final_cum_regret": r + d, "learning_time": t}
                       for k, r, t in zip(ks, regret, lt) for d in (-50, 50)])
    e = estimate(df, kind="plateau", x="agent.K", column="final_cum_regret")
    assert (e.value, e.lo, e.hi) == (np.log2(20), np.log2(20), np.log2(20))
    assert estimate(df, kind="plateau", x="agent.K").value == np.log2(10)


def test_ratio_to_best_states_the_numerators_rank_among_the_candidates():
    df = pd.DataFrame({"agent": ["b"] * 2 + ["g"] * 6, "v": [0.0] * 2 + [0.01, 0.01, 0.1, 0.1, 1.0, 1.0],
                       "regret": [90.0, 100, 40, 50, 180, 190, 500, 520]})
    params = {"kind": "ratio_to_best", "column": "regret", "candidates": "agent == 'g'", "over": "v"}
    e = estimate(df, numerator="agent == 'b'", **params)
    assert e.detail.endswith("rank 2 of 4 by mean: between v = 0.01 (45.0) and 0.1 (185)")
    assert e.value == pytest.approx(np.log2(95 / 45))
    best = estimate(df.assign(regret=df["regret"].where(df["agent"] == "g", 1.0)), numerator="agent == 'b'", **params)
    assert best.detail.endswith("rank 1 of 4 by mean: below v = 0.01 (45.0)")
    worst = estimate(df.assign(regret=df["regret"].where(df["agent"] == "g", 999.0)), numerator="agent == 'b'",
                     **params)
    assert worst.detail.endswith("rank 4 of 4 by mean: above v = 1 (510)")


def loop_ci(samples, statistic, n_boot, seed, level):
    """The bootstrap by its definition: per replicate, each sample resampled by its own generator call."""
    rng = np.random.default_rng(seed)
    boots = np.array([statistic([s[rng.integers(0, len(s), len(s))] for s in samples]) for _ in range(n_boot)])
    boots = boots[~np.isnan(boots)]
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf")
    return float(statistic(samples)), float(lo), float(hi)


def test_median_bootstrap_is_the_bootstrap_of_median_or_inf_bit_for_bit():
    """The one-array bootstrap of the censored median gives the per-replicate loop's bytes: the same
    draws and the same replicate medians, on ties, censored runs (none to all) and sizes 1-30."""
    rng = np.random.default_rng(11)
    for n in (1, 2, 3, 8, 15, 30):
        for censored in (0.0, 0.3, 0.6, 1.0):
            t = np.round(rng.exponential(40.0, n))                  # ties
            t[rng.random(n) < censored] = np.nan
            for seed in (0, 5):
                loop = loop_ci([t], lambda s: median_or_inf(s[0]), 300, seed, 0.9)
                assert np.array(median_bootstrap(t, 300, seed, 0.9)).tobytes() == np.array(loop).tobytes(), (n, t, seed)


def test_bootstrap_ci_gives_the_loops_bytes_with_and_without_rows_for_a_mean_over_strata():
    """bootstrap_ci, replicate by replicate or with `rows` (every replicate at once), gives the loop's CI
    bit for bit for the claims' mean over strata: the same draws, replicate by replicate and stratum by
    stratum."""
    rng = np.random.default_rng(4)
    mean = lambda s: float(np.concatenate(s).mean())                             # noqa: E731
    means = lambda r: np.concatenate(r, axis=1).mean(axis=1)                    # noqa: E731
    for k in (1, 2, 4):
        for size in (1, 7, 40):
            strata = [rng.normal(rng.uniform(-50, 50), 10.0, size + j) for j in range(k)]
            for seed in (0, 9):
                loop = np.array(loop_ci(strata, mean, 300, seed, 0.9)).tobytes()
                assert np.array(bootstrap_ci(strata, mean, 300, seed, 0.9)).tobytes() == loop, (k, size, seed)
                assert np.array(bootstrap_ci(strata, mean, 300, seed, 0.9, rows=means)).tobytes() == loop, (k, size)


def test_resample_indices_are_the_per_replicate_per_sample_draws_and_leave_the_generator_alike():
    """One call gives the integers of rng.integers(0, n, n) per replicate and sample, in that order, for
    samples of sizes 1-40 (a sample of one draws nothing), and leaves the generator where the loop does."""
    pick = np.random.default_rng(8)
    for _ in range(60):
        sizes = [int(n) for n in pick.integers(1, 41, pick.integers(1, 6))]
        seed, n_boot = int(pick.integers(2**31)), int(pick.integers(1, 200))
        loop_rng, rng = np.random.default_rng(seed), np.random.default_rng(seed)
        loop = [np.empty((n_boot, n), np.int64) for n in sizes]
        for b in range(n_boot):
            for j, n in enumerate(sizes):
                loop[j][b] = loop_rng.integers(0, n, n)
        got = resample_indices([np.zeros(n) for n in sizes], rng, n_boot)
        assert [g.tolist() for g in got] == [w.tolist() for w in loop], (sizes, seed)
        assert rng.integers(2**62) == loop_rng.integers(2**62)


@pytest.mark.parametrize("params", [
    {"kind": "slope_difference", "x": "env.size", "compare": "algorithm", "a": "a", "b": "b"},
    {"kind": "plateau", "x": "env.size"},
    {"kind": "plateau", "x": "env.size", "column": "regret"}])
def test_estimators_taking_every_replicate_at_once_give_the_replicate_loops_bytes(params, monkeypatch):
    """The slope difference and the plateau pass bootstrap_ci `rows` (every replicate's medians or means in
    one call); with `rows` dropped, replicate by replicate, the estimate is the same bit for bit, on
    learning times with ties and censored runs (a side's size censored in some replicates)."""
    import rvfx.report.statistics as statistics
    rng = np.random.default_rng(2)
    df = pd.DataFrame([{"algorithm": a, "env.size": n, "regret": rng.normal(100 * n, 30),
                        "learning_time": np.nan if rng.random() < 0.25 else 2.0 + np.round(rng.exponential(n ** s))}
                       for a, s in (("a", 2.0), ("b", 1.5)) for n in (4, 8, 16, 32) for _ in range(7)])
    fast = estimate(df, **params)
    loop = statistics.bootstrap_ci
    monkeypatch.setattr(statistics, "bootstrap_ci", lambda *a, rows=None, **k: loop(*a, **k))
    slow = estimate(df, **params)
    assert np.array([fast.value, fast.lo, fast.hi]).tobytes() == np.array([slow.value, slow.lo, slow.hi]).tobytes()
    assert np.isfinite([fast.value, fast.lo, fast.hi]).all()

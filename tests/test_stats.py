"""Learning-time summaries: eq. 7.1, censored medians, log-log slopes."""
import numpy as np
import pandas as pd
import pytest

from rvfx.analysis.stats import censored_median, fit_growth, fit_loglog, mean_t_ci, median_ci
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

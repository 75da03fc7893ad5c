"""The analysis layer's summary frames on hand-built runs whose medians, slopes and means are known,
and the figures' tables formatted from them."""
import numpy as np
import pandas as pd
import pytest

from rvfx.analysis.deepsea_ensemble import ensemble_summary
from rvfx.analysis.deepsea_linear import (
    bend_summary,
    bootstrap_vs_best_v,
    regret_by_lambda,
    regret_summary,
    seed_summary,
)
from rvfx.analysis.deepsea_tabular import chest_summary
from rvfx.analysis.exploration import growth_fits, size_summary
from rvfx.analysis.scaling import cis_overlap, size_medians, slope_fits
from rvfx.analysis.stats import bootstrap_ci, censored_median, median_ci, median_or_inf


def scaling_runs(times: dict, group: str = "a") -> pd.DataFrame:
    """Runs of one group: `times` maps a size to its runs' learning times (None = censored, cap 1000)."""
    return pd.DataFrame([{"agent": group, "env.size": n, "learning_time": t, "censored": t is None,
                          "episodes_run": 1000 if t is None else t}
                         for n, ts in times.items() for t in ts])


def test_slope_fits_recover_an_exact_power_law_and_leave_censored_sizes_out():
    # learning time 2 N^2 at every run of N = 4, 8, 16: slope 2, every bootstrap replicate too;
    # N = 32 has 2 of 3 runs censored, so its median is censored and it is not fitted
    runs = pd.concat([scaling_runs({4: [32] * 3, 8: [128] * 3, 16: [512] * 3, 32: [None, None, 2048]}),
                      scaling_runs({4: [10, 20, 30], 8: [None] * 3}, group="b")], ignore_index=True)
    fits = slope_fits(runs, "env.size", "agent").set_index("agent")
    a = fits.loc["a"]
    assert a["slope"] == pytest.approx(2.0) and a["lo"] == pytest.approx(2.0) and a["hi"] == pytest.approx(2.0)
    assert np.exp(a["intercept"]) == pytest.approx(2.0)
    assert a["sizes_used"] == [4, 8, 16] and a["sizes_censored"] == [32]
    assert (a["runs"], a["censored"]) == (12, 2)
    assert np.isnan(fits.loc["b", "slope"]) and fits.loc["b", "sizes_used"] == [4]
    assert cis_overlap(a, {"slope": 1.0, "lo": 0.5, "hi": 1.99}) is False
    assert cis_overlap(a, {"slope": 3.0, "lo": 2.0, "hi": 4.0}) is True
    assert cis_overlap(a, fits.loc["b"]) is None


def test_size_medians_are_censored_medians_with_their_bootstrap_ci():
    runs = scaling_runs({4: [30, 10, 20], 8: [None, None, 50]})
    s = size_medians(runs, "agent").set_index("env.size")
    assert s.loc[4, ["runs", "median", "censored"]].tolist() == [3, 20.0, 0]
    assert 10 <= s.loc[4, "lo"] <= 20 <= s.loc[4, "hi"] <= 30
    assert np.isnan(s.loc[8, "median"]) and s.loc[8, "hi"] == np.inf and s.loc[8, "censored"] == 2


def test_median_ci_is_the_claims_bootstrap_of_the_median_with_nan_for_a_censored_median():
    """The figures' median CI and the claims' median_learning_time estimate print one interval."""
    for times in ([100.0, 120, 140, np.nan, np.nan], [np.nan, np.nan, 5.0], [7.0]):
        t = np.array(times)
        _, lo, hi = bootstrap_ci([t], lambda s: median_or_inf(s[0]))
        med = censored_median(t)
        assert median_ci(t)[1:] == (lo, hi)
        assert median_ci(t)[0] == med or (np.isnan(med) and np.isnan(median_ci(t)[0]))
    assert median_ci([7.0]) == (7.0, 7.0, 7.0)
    assert all(np.isnan(median_ci([])))


def test_regret_summary_per_agent_and_chest():
    runs = pd.DataFrame({"agent": "g", "env.treasure": [True, True, True, False, False],
                         "final_cum_regret": [1.0, 2.0, 3.0, 10.0, 10.0], "learning_time": [5, 7, None, None, None],
                         "episodes_run": [50, 50, 60, 60, 60]})
    s = regret_summary(runs).set_index("treasure")
    assert s.loc[True, ["seeds", "episodes", "regret", "median_learning_time", "never_learnt"]].tolist() == \
        [3, 60, 2.0, 7.0, 1]
    assert s.loc[True, "regret_sem"] == pytest.approx(1 / np.sqrt(3))
    assert np.isnan(s.loc[False, "median_learning_time"]) and s.loc[False, "regret_sem"] == 0.0


def test_bend_summary_fits_the_slope_in_m_on_each_side_of_2n():
    # N = 5: learning time 1000 / M below M = 10 (slope -1), 100 from there (slope 0); 2 runs per M
    ms = [2, 4, 8, 10, 20, 40]
    runs = pd.DataFrame([{"env.size": 5, "agent.M": m, "learning_time": 1000 / m if m < 10 else 100.0}
                         for m in ms for _ in range(2)])
    r = bend_summary(runs).iloc[0]
    assert r["below_slope"] == pytest.approx(-1.0) and r["above_slope"] == pytest.approx(0.0, abs=1e-12)
    assert r["below_lo"] == pytest.approx(-1.0) and r["above_hi"] == pytest.approx(0.0, abs=1e-12)
    assert r["kink"] == pytest.approx(10.0)          # 1000 / M runs through M = 10 itself
    assert (r["median_at_2N"], r["median_at_largest"], r["censored"], r["runs"]) == (100.0, 100.0, 0, 12)


def tuning_runs() -> pd.DataFrame:
    """Deterministic rewards only; v = 1 and 10 at lambda 1 and 100, and the bootstrap (v NaN)."""
    rows = []
    for v, lam, regrets in [(1.0, 1.0, [10, 20]), (1.0, 100.0, [30, 50]), (10.0, 1.0, [5, 7]),
                            (10.0, 100.0, [60, 80]), (np.nan, 1.0, [1, 3]), (np.nan, 100.0, [40, 44])]:
        rows += [{"env.reward_noise": 0.0, "agent.v": v, "agent.lam": lam, "final_cum_regret": float(r),
                  "censored": r > 40, "learning_time": None if r > 40 else r} for r in regrets]
    return pd.DataFrame(rows)


def test_tuning_summaries_lambda_best_v_and_seeds():
    runs = tuning_runs()
    by_lam = regret_by_lambda(runs)
    assert by_lam[["v", "lam", "regret"]].fillna(-1).values.tolist() == [
        [1.0, 1.0, 15.0], [1.0, 100.0, 40.0], [10.0, 1.0, 6.0], [10.0, 100.0, 70.0], [-1, 1.0, 2.0], [-1, 100.0, 42.0]]
    gauss, boot = runs[runs["agent.v"].notna()], runs[runs["agent.v"].isna()]
    b = bootstrap_vs_best_v(gauss, boot, 100.0).iloc[0]
    # best v at lambda 100 is v = 1 (mean 40, s.e.m. 10); the bootstrap's 42 (s.e.m. 2)
    assert (b["best_v"], b["best_regret"], b["best_regret_sem"], b["bootstrap_regret"]) == (1.0, 40.0, 10.0, 42.0)
    assert b["difference"] == 2.0 and b["difference_se"] == pytest.approx(np.hypot(10, 2))
    assert (b["v_beaten"], b["v_count"], b["within_2se"]) == (1, 2, True)
    seeds = seed_summary(runs[runs["agent.lam"] == 100.0])
    assert seeds["v"].fillna(-1).tolist() == [1.0, 10.0, -1]
    assert seeds[["runs", "learnt"]].values.tolist() == [[2, 1], [2, 0], [2, 1]]     # censored: regret > 40
    assert seeds.iloc[0][["regret_min", "regret_median", "regret_max"]].tolist() == [30.0, 40.0, 50.0]
    assert seeds["median_learning_time"].isna().all()               # (30 + inf) / 2: a censored median
    assert seed_summary(runs[runs["agent.lam"] == 1.0])["median_learning_time"].tolist() == [15.0, 6.0, 2.0]


def test_chest_and_ensemble_summaries():
    runs = pd.DataFrame({"agent": "r", "env.treasure": [True, True, False], "final_cum_regret": [2.0, 4.0, 9.0],
                         "learning_time": [3, 5, None], "episodes_run": [10, 10, 12]})
    c = chest_summary(runs).iloc[0]
    assert (c["all_regret"], c["all_runs"], c["treasure_regret"], c["bomb_regret"], c["bomb_runs"]) == \
        (5.0, 3, 3.0, 9.0, 1)
    assert (c["episodes"], c["treasure_median_learning_time"]) == (12, 4.0)
    ens = pd.DataFrame([{"agent.K": k, "learning_time": t, "censored": t is None, "episodes_run": 100,
                         "final_cum_regret": float(k)} for k, ts in {1: [None] * 3, 5: [60] * 3, 10: [45] * 3,
                                                                     20: [40] * 3}.items() for t in ts])
    e = ensemble_summary(ens)
    assert e["K"].tolist() == [1, 5, 10, 20] and e["censored"].tolist() == [3, 0, 0, 0]
    assert np.isnan(e["median"].iloc[0]) and e["median"].iloc[1:].tolist() == [60.0, 45.0, 40.0]
    assert e["plateau"].tolist() == [False, False, True, False]      # 45 <= 1.2 x 40 < 60


def test_exploration_growth_is_exponential_for_2_to_the_n_and_polynomial_for_n():
    runs = pd.DataFrame([{"agent": a, "env.size": n, "learning_time": t(n), "episodes_run": 5000}
                         for a, t in (("dither", lambda n: 2.0 ** n), ("optimal", float)) for n in (2, 4, 8, 12)
                         for _ in range(3)])
    per_size = size_summary(runs)
    assert per_size[per_size["agent"] == "dither"]["median"].tolist() == [4.0, 16.0, 256.0, 4096.0]
    fits = growth_fits(per_size).set_index("agent")
    assert fits.loc["dither", "kind"] == "exponential" and fits.loc["dither", "base"] == pytest.approx(2.0)
    assert fits.loc["optimal", "kind"] == "polynomial" and fits.loc["optimal", "power"] == pytest.approx(1.0)


def test_the_scaling_tables_print_the_fitted_slope_and_medians(tmp_path):
    """Figs. 5 and 15's tables on runs of an exact N^2 law: slope 2.00 [2.00, 2.00], medians 2 N^2."""
    from rvfx.figures.common import size_scaling_figure
    runs = scaling_runs({4: [32] * 2, 8: [128] * 2, 16: [512, 512, None]})
    size_scaling_figure(runs, "t", tmp_path, "s")
    slopes = pd.read_csv(tmp_path / "s_slopes.csv", dtype=str).iloc[0]
    assert slopes.to_dict() == {"agent": "a", "slope": "2.0", "95% CI": "[2.00, 2.00]", "sizes fitted": "4 8 16",
                                "sizes with censored median": np.nan, "censored runs": "1/7"}
    sizes = pd.read_csv(tmp_path / "s_sizes.csv", dtype=str)
    assert sizes["median learning time [95% CI]"].tolist() == ["32 [32, 32]", "128 [128, 128]", "512 [512, censored]"]
    assert sizes["censored"].tolist() == ["0/2", "0/2", "1/3"]    # 2 of 3 resampled censored: p = 7/27


def test_the_bend_table_prints_bend_summary():
    from rvfx.figures.deepsea_linear import _vs_m_rows
    runs = pd.DataFrame([{"env.size": 5, "agent.M": m, "learning_time": 1000 / m if m < 10 else 100.0}
                         for m in (2, 4, 8, 10, 20, 40)])
    row = _vs_m_rows(runs, "x")[0]
    assert row["slope for M < 2N [95% CI]"] == "-1.00 [-1.00, -1.00]"
    assert row["slope for M >= 2N [95% CI]"] in ("0.00 [0.00, 0.00]", "-0.00 [-0.00, -0.00]")
    assert (row["median at M=2N"], row["median at largest M"], row["censored runs"]) == (100, 100, "0/6")


def test_optimism_gaps_average_the_runs_without_a_history_check():
    from rvfx.analysis.bounds import optimism_gaps
    optimism = pd.DataFrame([{"run_id": r, "episode": e, "gap": g}
                             for r, gaps in (("a", [1.0, 2.0, 3.0]), ("b", [3.0, 2.0, 5.0]), ("c", [99.0] * 3))
                             for e, g in zip((1, 2, 3), gaps)])
    gaps = optimism_gaps(optimism, pd.DataFrame({"run_id": ["c"]}))      # c has a history check: left out
    assert gaps["episode"].tolist() == [1, 2, 3] and gaps["count"].tolist() == [2, 2, 2]
    assert gaps["mean"].tolist() == [2.0, 2.0, 4.0] and gaps["sem"].tolist() == [1.0, 0.0, 1.0]
    assert gaps["half"].tolist() == [1.96, 0.0, 1.96]

"""Every rule kind and aggregate of claims.yaml can hold, can differ and can be inconclusive, and its
boundaries fall where claims.yaml says, floating-point rounding aside: each case is a claim tested
by `rvfx report` on a hand-built results folder.

The statistics are chosen so that their intervals are known exactly: `min` gives the point [x, x];
the bootstrap mean of two runs x < y gives [x, y] (each end is a replicate value, and both runs
alike come up in a quarter of the 2,000 resamples); a ratio's numerator of two runs 10 and 20 over a
reference of one run 1 gives [log2 10, log2 20]; the median learning time of runs all alike is the
point [t, t], and +inf when every run is censored. The rules are tested apart from the runs each
statistic needs (claims.yaml's rules.minimum_runs, set to 1 here; tests/test_minimum_runs.py tests
those)."""
import math
import re

import pandas as pd
import pytest
import yaml
from cli_helpers import CONFIGS, invoke

from rvfx.report.claims import GROUP_JUDGES
from rvfx.report.registry import RegistryError, load_registry
from rvfx.report.rules import GROUP_RULES, ONE_ESTIMATE_RULES, RULES, TOLERANCE

CLAIMS = CONFIGS.parent / "claims.yaml"
EXPERIMENT = "deepsea_tabular_scaling"      # any experiment of a registered figure would do
ULP_BELOW_4_5, ULP_ABOVE_1_5, ULP_ABOVE_1 = 4.499999999999999, 1.5000000000000002, 1.0000000000000002
ROUNDED_ZERO = 0.1 + 0.2 - 0.3 - 1.1e-16          # -5.4e-17
POINT, PAIR = {"kind": "min", "column": "value"}, {"kind": "mean", "column": "value"}
FRACTION = {"kind": "fraction", "criterion": "learnt"}
RATIO = {"kind": "ratio", "column": "value", "numerator": "side == 'num'", "reference": "side == 'ref'"}
ABOUT2, BELOW5 = {"kind": "about", "target": 2}, {"kind": "below", "target": 5}
NEAREST2, SQRT_200 = {"kind": "nearest", "target": 2}, math.sqrt(200)   # log2 sqrt 200 +- 1/2: log2 10, log2 20
ABOVE0, BELOW0 = {"kind": "sign", "op": ">"}, {"kind": "sign", "op": "<"}
WITHIN_1E_12 = 1e-12
MEDIAN = {"kind": "median_learning_time"}
TREND = {"kind": "breakdown_trend", "x": "psi", "over": "M", "criterion": "learnt"}
AT_MOST1, AT_LEAST1 = {"kind": "at_most", "target": 1}, {"kind": "at_least", "target": 1}
LE1, GE0 = {"kind": "inequality", "op": "<=", "target": 1}, {"kind": "inequality", "op": ">=", "target": 0}
ORDER = {"kind": "order", "tiers": ["a", "b", "c"]}
BEST_IN = {"kind": "best_in", "set": "agent in ['a', 'b']"}


def learnt(k: int, n: int = 20, **columns) -> list:
    return [{"censored": i >= k, **columns} for i in range(n)]


def per_agent(**values) -> list:
    return [{"agent": a, "value": v} for a, vs in values.items() for v in (vs if isinstance(vs, tuple) else (vs,))]


def times(**runs) -> list:
    """Runs per agent with these learning times (None: censored)."""
    return [{"agent": a, "learning_time": t, "censored": t is None} for a, ts in runs.items() for t in ts]


def breaking(points: dict, psis=(1, 2, 3)) -> list:
    """Two runs per (M, psi) cell, both learning below M's breakdown psi and neither from it on."""
    return [{"M": m, "psi": x, "censored": x >= b} for m, b in points.items() for x in psis for _ in range(2)]


# case: (runs, statistic, rule, extra claim keys, verdict, words of the row's why)
CASES = {
    # about 2: the band [1.5, 2.5]; the CI at most 1 wide
    "about_holds": ([{"value": 2.2}], POINT, ABOUT2, {}, "holds", "overlaps [1.5, 2.5]"),
    "about_differs": ([{"value": 3.0}], POINT, ABOUT2, {}, "differs", "misses [1.5, 2.5]"),
    "about_inconclusive": ([{"value": 1.0}, {"value": 3.0}], PAIR, ABOUT2, {}, "inconclusive", "wider than it"),
    "about_touches_the_upper_edge": ([{"value": 2.5}], POINT, ABOUT2, {}, "holds", "CI [2.50, 2.50] overlaps"),
    "about_beyond_the_upper_edge": ([{"value": 2.500001}], POINT, ABOUT2, {}, "differs", "misses"),
    "about_touches_the_lower_edge": ([{"value": 1.5}], POINT, ABOUT2, {}, "holds", "overlaps"),
    "about_beyond_the_lower_edge": ([{"value": 1.499999}], POINT, ABOUT2, {}, "differs", "misses"),
    "about_ci_exactly_as_wide_as_the_band": ([{"value": 1.5}, {"value": 2.5}], PAIR, ABOUT2, {}, "holds",
                                             "CI [1.50, 2.50] overlaps"),
    "about_ci_wider_than_the_band": ([{"value": 1.5}, {"value": 2.6}], PAIR, ABOUT2, {}, "inconclusive", "wider"),
    # log2(20) - log2(10) = 1.0000000000000004: a width of one unit, not more (Fig. 14's plateau CI)
    "about_log2_width_10_to_20": ([{"side": "num", "value": 10.0}, {"side": "num", "value": 20.0},
                                   {"side": "ref", "value": 1.0}], RATIO, {"kind": "about", "target": 14}, {},
                                  "holds", "CI [10.00, 20.0] overlaps [9.90, 19.8]"),
    "about_within_1e12_beyond_the_upper_edge": ([{"value": 2.5 + WITHIN_1E_12}], POINT, ABOUT2, {}, "holds",
                                                 "overlaps"),
    # nearest 2: the CI inside the band [1.5, 2.5]
    "nearest_holds": ([{"value": 2.2}], POINT, NEAREST2, {}, "holds", "CI [2.20, 2.20] lies inside [1.5, 2.5]"),
    "nearest_differs": ([{"value": 3.0}], POINT, NEAREST2, {}, "differs", "misses [1.5, 2.5]"),
    "nearest_inconclusive": ([{"value": 2.0}, {"value": 3.0}], PAIR, NEAREST2, {}, "inconclusive",
                             "straddles an end of [1.5, 2.5]"),
    "nearest_ci_exactly_the_band": ([{"value": 1.5}, {"value": 2.5}], PAIR, NEAREST2, {}, "holds", "lies inside"),
    "nearest_on_the_upper_edge": ([{"value": 2.5}], POINT, NEAREST2, {}, "holds", "lies inside"),
    "nearest_touching_the_band_from_outside": ([{"value": 2.5}, {"value": 3.0}], PAIR, NEAREST2, {},
                                               "inconclusive", "straddles"),
    "nearest_within_1e12_beyond_the_upper_edge": ([{"value": 2.0}, {"value": 2.5 + WITHIN_1E_12}], PAIR, NEAREST2,
                                                   {}, "holds", "lies inside"),
    "nearest_within_1e12_beyond_the_lower_edge": ([{"value": 1.5 - WITHIN_1E_12}], POINT, NEAREST2, {}, "holds",
                                                   "lies inside"),
    "nearest_just_beyond_the_upper_edge": ([{"value": 2.0}, {"value": 2.500001}], PAIR, NEAREST2, {},
                                           "inconclusive", "straddles"),
    "nearest_just_beyond_the_lower_edge": ([{"value": 1.499999}], POINT, NEAREST2, {}, "differs", "misses"),
    # a CI [log2 10, log2 20] inside the band [log2 10, log2 20] (their ends 1 ulp apart): holds; and
    # across the upper end of the band [log2 14 - 1/2, log2 14 + 1/2], where about holds
    "nearest_log2_width_10_to_20": ([{"side": "num", "value": 10.0}, {"side": "num", "value": 20.0},
                                     {"side": "ref", "value": 1.0}], RATIO, {"kind": "nearest", "target": SQRT_200},
                                    {}, "holds", "CI [10.00, 20.0] lies inside [10.00, 20.0]"),
    "nearest_log2_width_across_the_band": ([{"side": "num", "value": 10.0}, {"side": "num", "value": 20.0},
                                            {"side": "ref", "value": 1.0}], RATIO, {"kind": "nearest", "target": 14},
                                           {}, "inconclusive", "CI [10.00, 20.0] straddles an end of [9.90, 19.8]"),
    # sign > 0 and < 0: the CI strictly on that side of 0
    "sign_above_holds": ([{"value": 0.5}], POINT, ABOVE0, {}, "holds", "lies above 0"),
    "sign_above_differs": ([{"value": -0.5}], POINT, ABOVE0, {}, "differs", "lies below 0"),
    "sign_above_inconclusive": ([{"value": -1.0}, {"value": 1.0}], PAIR, ABOVE0, {}, "inconclusive", "reaches 0"),
    "sign_above_at_zero": ([{"value": 0.0}], POINT, ABOVE0, {}, "inconclusive", "reaches 0"),
    "sign_above_ci_ending_at_zero": ([{"value": 0.0}, {"value": 1.0}], PAIR, ABOVE0, {}, "inconclusive", "reaches 0"),
    "sign_above_within_1e12_of_zero": ([{"value": WITHIN_1E_12}], POINT, ABOVE0, {}, "inconclusive", "reaches 0"),
    "sign_above_just_above_zero": ([{"value": 1e-6}], POINT, ABOVE0, {}, "holds", "lies above 0"),
    "sign_below_holds": ([{"value": -0.5}], POINT, BELOW0, {}, "holds", "lies below 0"),
    "sign_below_differs": ([{"value": 0.5}], POINT, BELOW0, {}, "differs", "lies above 0"),
    "sign_below_inconclusive": ([{"value": -1.0}, {"value": 1.0}], PAIR, BELOW0, {}, "inconclusive", "reaches 0"),
    "sign_below_rounding_under_zero": ([{"value": ROUNDED_ZERO}], POINT, BELOW0, {}, "inconclusive", "reaches 0"),
    "sign_of_a_ratio": ([{"side": "num", "value": 2.0}, {"side": "num", "value": 3.0}, {"side": "ref", "value": 1.0}],
                        RATIO, ABOVE0, {}, "holds", "CI [2.00, 3.00] lies above 1.00"),
    "sign_of_a_breakdown_trend": (breaking({10: 2, 20: 3, 40: 4}), TREND, ABOVE0, {}, "holds",
                                  "breakdown psi per M: 10: 2.00, 20: 3.00, 40: ∞"),
    # below 5: the CI below 4.5
    "below_holds": ([{"value": 3.0}], POINT, BELOW5, {}, "holds", "lies below 4.5"),
    "below_differs": ([{"value": 6.0}], POINT, BELOW5, {}, "differs", "at or above 4.5"),
    "below_inconclusive": ([{"value": 4.0}, {"value": 5.0}], PAIR, BELOW5, {}, "inconclusive", "straddles 4.5"),
    "below_at_the_edge": ([{"value": 4.5}], POINT, BELOW5, {}, "differs", "at or above 4.5"),
    "below_one_ulp_under_the_edge": ([{"value": ULP_BELOW_4_5}], POINT, BELOW5, {}, "differs", "at or above"),
    "below_just_under_the_edge": ([{"value": 4.499999}], POINT, BELOW5, {}, "holds", "lies below"),
    # at most 1: the CI at or below 1.5
    "at_most_holds": ([{"value": 1.2}], POINT, AT_MOST1, {}, "holds", "at or below 1.5"),
    "at_most_differs": ([{"value": 2.0}], POINT, AT_MOST1, {}, "differs", "lies above 1.5"),
    "at_most_inconclusive": ([{"value": 1.0}, {"value": 2.0}], PAIR, AT_MOST1, {}, "inconclusive", "straddles"),
    "at_most_at_the_edge": ([{"value": 1.5}], POINT, AT_MOST1, {}, "holds", "at or below 1.5"),
    "at_most_one_ulp_over_the_edge": ([{"value": ULP_ABOVE_1_5}], POINT, AT_MOST1, {}, "holds", "at or below"),
    "at_most_just_over_the_edge": ([{"value": 1.500001}], POINT, AT_MOST1, {}, "differs", "lies above"),
    # at least 1: the CI at or above 0.5
    "at_least_holds": ([{"value": 1.2}], POINT, AT_LEAST1, {}, "holds", "at or above 0.5"),
    "at_least_differs": ([{"value": 0.2}], POINT, AT_LEAST1, {}, "differs", "lies below 0.5"),
    "at_least_inconclusive": ([{"value": 0.0}, {"value": 1.0}], PAIR, AT_LEAST1, {}, "inconclusive", "straddles"),
    "at_least_at_the_edge": ([{"value": 0.5}], POINT, AT_LEAST1, {}, "holds", "at or above 0.5"),
    "at_least_rounding_under_the_edge": ([{"value": 0.1 + 0.2 + 0.2 - 1.1e-16}], POINT, AT_LEAST1, {}, "holds",
                                         "at or above 0.5"),
    "at_least_just_under_the_edge": ([{"value": 0.499999}], POINT, AT_LEAST1, {}, "differs", "lies below"),
    # inequality, exact: <= 1 and >= 0
    "le_holds": ([{"value": 0.5}], POINT, LE1, {}, "holds", "at or below 1"),
    "le_differs": ([{"value": 2.0}], POINT, LE1, {}, "differs", "beyond 1"),
    "le_inconclusive": ([{"value": 0.5}, {"value": 1.5}], PAIR, LE1, {}, "inconclusive", "straddles 1"),
    "le_at_the_target": ([{"value": 1.0}], POINT, LE1, {}, "holds", "at or below 1"),
    "le_one_ulp_over_the_target": ([{"value": ULP_ABOVE_1}], POINT, LE1, {}, "holds", "at or below 1"),
    "le_just_over_the_target": ([{"value": 1.000001}], POINT, LE1, {}, "differs", "beyond 1"),
    "ge_holds": ([{"value": 0.5}], POINT, GE0, {}, "holds", "at or above 0"),
    "ge_differs": ([{"value": -0.5}], POINT, GE0, {}, "differs", "beyond 0"),
    "ge_inconclusive": ([{"value": -1.0}, {"value": 1.0}], PAIR, GE0, {}, "inconclusive", "straddles 0"),
    "ge_at_the_target": ([{"value": 0.0}], POINT, GE0, {}, "holds", "at or above 0"),
    "ge_rounding_under_the_target": ([{"value": ROUNDED_ZERO}], POINT, GE0, {}, "holds", "at or above 0"),
    "ge_just_under_the_target": ([{"value": -1e-6}], POINT, GE0, {}, "differs", "beyond 0"),
    # most and few: fraction >= 1/2 with the CI above 0.1; fraction <= 0.1 with the CI below 1/2
    "most_holds": (learnt(20), FRACTION, {"kind": "most"}, {}, "holds", "fraction 1.00 (20/20)"),
    "most_differs": (learnt(0), FRACTION, {"kind": "most"}, {}, "differs", "fraction 0 (0/20)"),
    "most_inconclusive": (learnt(4), FRACTION, {"kind": "most"}, {}, "inconclusive", "fraction 0.200 (4/20)"),
    "most_at_one_half": (learnt(10), FRACTION, {"kind": "most"}, {}, "holds", "fraction 0.500 (10/20)"),
    "most_just_under_one_half": (learnt(9), FRACTION, {"kind": "most"}, {}, "inconclusive", "(9/20)"),
    "most_with_two_runs": (learnt(1, 2), FRACTION, {"kind": "most"}, {}, "inconclusive", "(1/2)"),
    "few_holds": (learnt(0), FRACTION, {"kind": "few"}, {}, "holds", "(0/20)"),
    "few_differs": (learnt(20), FRACTION, {"kind": "few"}, {}, "differs", "(20/20)"),
    "few_inconclusive": (learnt(4), FRACTION, {"kind": "few"}, {}, "inconclusive", "(4/20)"),
    "few_at_one_tenth": (learnt(2), FRACTION, {"kind": "few"}, {}, "holds", "fraction 0.100 (2/20)"),
    "few_just_over_one_tenth": (learnt(3), FRACTION, {"kind": "few"}, {}, "inconclusive", "(3/20)"),
    # order a < b < c: adjacent tiers with non-overlapping CIs
    "order_holds": (per_agent(a=1.0, b=2.0, c=3.0), POINT, ORDER, {"group": "agent"}, "holds", "not overlapping"),
    "order_differs": (per_agent(a=1.0, b=3.0, c=2.0), POINT, ORDER, {"group": "agent"}, "differs", "c < b"),
    "order_inconclusive": (per_agent(a=(1.0, 2.5), b=(2.0, 3.0), c=4.0), PAIR, ORDER, {"group": "agent"},
                           "inconclusive", "CIs overlap"),
    "order_cis_touching": (per_agent(a=(1.0, 2.0), b=(2.0, 3.0), c=(3.0, 4.0)), PAIR, ORDER, {"group": "agent"},
                           "inconclusive", "CIs overlap"),
    "order_reversed_by_rounding_only": (per_agent(a=0.1, b=0.1 + 0.2, c=0.3), POINT, ORDER, {"group": "agent"},
                                        "inconclusive", "CIs overlap"),
    "order_not_computable": (per_agent(a=1.0, b=2.0, c=float("nan")), POINT, ORDER, {"group": "agent"},
                             "inconclusive", "not computable for c"),
    # order of median learning times, a censored run counted as +inf
    "order_of_medians_holds": (times(a=(10, 10), b=(20, 20), c=(None, None)), MEDIAN, ORDER, {"group": "agent"},
                               "holds", "2 of 2 runs censored"),
    "order_of_medians_differs": (times(a=(10, 10), b=(None, None), c=(20, 20)), MEDIAN, ORDER, {"group": "agent"},
                                 "differs", "c < b"),
    "order_of_medians_both_censored": (times(a=(10, 10), b=(None, None), c=(None, None)), MEDIAN, ORDER,
                                       {"group": "agent"}, "inconclusive", "CIs overlap"),
    "order_absent_level": (per_agent(a=1.0, b=2.0), POINT, ORDER, {"group": "agent"}, "inconclusive",
                           "no runs with agent = c"),
    # best_in: the best of the set below the best outside it
    "best_in_holds": (per_agent(a=1.0, b=2.0, c=3.0), POINT, BEST_IN, {"group": "agent"}, "holds", "a < c"),
    "best_in_differs": (per_agent(a=3.0, b=4.0, c=1.0), POINT, BEST_IN, {"group": "agent"}, "differs", "c < a"),
    "best_in_inconclusive": (per_agent(a=2.0, b=3.0, c=2.0), POINT, BEST_IN, {"group": "agent"}, "inconclusive",
                             "CIs overlap"),
    "best_in_cis_touching": (per_agent(a=(1.0, 2.0), b=3.0, c=(2.0, 3.0)), PAIR, BEST_IN, {"group": "agent"},
                             "inconclusive", "CIs overlap"),
    "best_in_nothing_outside": (per_agent(a=2.0, b=3.0), POINT, BEST_IN, {"group": "agent"}, "inconclusive",
                                "no estimate outside the set"),
    # aggregates over groups (by:): all and any
    "all_holds": (learnt(20, grp="g1") + learnt(20, grp="g2"), FRACTION, {"kind": "most"}, {"by": ["grp"]},
                  "holds", ""),
    "all_differs": (learnt(20, grp="g1") + learnt(0, grp="g2"), FRACTION, {"kind": "most"}, {"by": ["grp"]},
                    "differs", ""),
    "all_differs_beside_inconclusive": (learnt(4, grp="g1") + learnt(0, grp="g2"), FRACTION, {"kind": "most"},
                                        {"by": ["grp"]}, "differs", ""),
    "all_inconclusive": (learnt(20, grp="g1") + learnt(4, grp="g2"), FRACTION, {"kind": "most"}, {"by": ["grp"]},
                         "inconclusive", ""),
    "any_holds": (learnt(0, grp="g1") + learnt(20, grp="g2"), FRACTION, {"kind": "most"},
                  {"by": ["grp"], "aggregate": "any"}, "holds", ""),
    "any_holds_beside_inconclusive": (learnt(4, grp="g1") + learnt(20, grp="g2"), FRACTION, {"kind": "most"},
                                      {"by": ["grp"], "aggregate": "any"}, "holds", ""),
    "any_differs": (learnt(0, grp="g1") + learnt(0, grp="g2"), FRACTION, {"kind": "most"},
                    {"by": ["grp"], "aggregate": "any"}, "differs", ""),
    "any_inconclusive": (learnt(0, grp="g1") + learnt(4, grp="g2"), FRACTION, {"kind": "most"},
                         {"by": ["grp"], "aggregate": "any"}, "inconclusive", ""),
}


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> str:
    """report.md of `rvfx report` on one results folder holding every case's runs (column `case`),
    with claims.yaml's claims and one claim per case."""
    root = tmp_path_factory.mktemp("rules")
    runs, claims = [], []
    for case, (rows, stat, rule, extra, _, _) in CASES.items():
        runs += [{"run_id": f"{case}-{i}", "case": case, **row} for i, row in enumerate(rows)]
        claims.append({"id": case, "figure": EXPERIMENT, "paper": "a test", "words": "a test", "experiment": EXPERIMENT,
                       "where": [f"case == '{case}'"], "statistic": stat, "rule": rule, **extra})
    exp = root / "results" / EXPERIMENT
    exp.mkdir(parents=True)
    table = pd.DataFrame(runs)
    table["censored"] = table["censored"].fillna(False).astype(bool)
    table.to_csv(exp / "runs.csv", index=False)
    (exp / "spec.yaml").write_text("env: {name: deep_sea, size: 20}\n")
    registry = yaml.safe_load(CLAIMS.read_text())
    registry["claims"] += claims
    registry["rules"]["minimum_runs"] = dict.fromkeys(registry["rules"]["minimum_runs"], 1)
    (root / "claims.yaml").write_text(yaml.safe_dump(registry, allow_unicode=True))
    result = invoke("report", "--claims", root / "claims.yaml", "--results", root / "results", "--out", root / "out")
    assert result.exit_code == 0, result.output
    return (root / "out" / "report.md").read_text()


@pytest.mark.parametrize("case", CASES)
def test_each_rule_and_aggregate_gives_the_verdict_its_definition_says(report, case):
    section = report.split(f"### {case}\n")[1].split("\n### ")[0]
    verdict = re.search(r"^\*\*(holds|differs|inconclusive)\*\*", section, re.M)
    _, _, _, _, expected, why = CASES[case]
    assert verdict and verdict[1] == expected, section
    assert why in section, section


def test_every_rule_kind_and_aggregate_is_seen_holding_differing_and_inconclusive():
    """The cases above cover each rule kind and each aggregate with all three verdicts."""
    seen = {}
    for _, _, rule, extra, verdict, _ in CASES.values():
        seen.setdefault(rule["kind"], set()).add(verdict)
        if "by" in extra:
            seen.setdefault(extra.get("aggregate", "all"), set()).add(verdict)
    assert set(RULES) | {"all", "any"} <= set(seen)
    assert all(v == {"holds", "differs", "inconclusive"} for v in seen.values()), seen


def test_the_cases_at_an_edge_are_within_rounding_of_it_or_clearly_beyond():
    """The 'ulp' and 'rounding' cases sit within TOLERANCE of their edge, the 'just' ones (1e-6 off) some
    thousand times TOLERANCE beyond it."""
    assert 0 < 4.5 - ULP_BELOW_4_5 < TOLERANCE and 0 < ULP_ABOVE_1_5 - 1.5 < TOLERANCE
    assert 0 < ULP_ABOVE_1 - 1 < TOLERANCE and -TOLERANCE < ROUNDED_ZERO < 0 and 0.1 + 0.2 > 0.3
    assert math.log2(20) - math.log2(10) > 1 and math.log2(20) - math.log2(10) - 1 < TOLERANCE
    assert min(abs(2.500001 - 2.5), abs(4.499999 - 4.5), abs(1.500001 - 1.5), 1e-6) > 900 * TOLERANCE
    assert WITHIN_1E_12 < TOLERANCE and 2.5 + WITHIN_1E_12 > 2.5 and 1.5 - WITHIN_1E_12 < 1.5
    band = (math.log2(SQRT_200) - 0.5, math.log2(SQRT_200) + 0.5)
    assert band[0] == math.log2(10) and 0 < math.log2(20) - band[1] < TOLERANCE


def _with_fig5(tmp_path, **keys):
    """claims.yaml with fig5_rlsvi_slope's keys replaced, written under tmp_path."""
    registry = yaml.safe_load(CLAIMS.read_text())
    next(c for c in registry["claims"] if c["id"] == "fig5_rlsvi_slope").update(keys)
    (tmp_path / "claims.yaml").write_text(yaml.safe_dump(registry, allow_unicode=True))
    return tmp_path / "claims.yaml"


@pytest.mark.parametrize("op", [">", "<", ">=", "<=", "="])
def test_a_sign_rule_states_gt_or_lt_and_nothing_else(tmp_path, op):
    path = _with_fig5(tmp_path, rule={"kind": "sign", "op": op})
    if op in (">", "<"):
        load_registry(path)
        return
    with pytest.raises(RegistryError, match=r"claim fig5_rlsvi_slope\.rule\.op: rule\.op must be > or <$"):
        load_registry(path)


def test_median_learning_time_takes_no_parameter(tmp_path):
    load_registry(_with_fig5(tmp_path, statistic=MEDIAN))
    with pytest.raises(RegistryError, match="statistic: statistic median_learning_time takes nothing$"):
        load_registry(_with_fig5(tmp_path, statistic={**MEDIAN, "column": "learning_time"}))


def test_every_rule_kind_is_judged_by_one_function():
    """A rule on one estimate (rules.ONE_ESTIMATE_RULES) or comparing levels (claims.GROUP_JUDGES), never both."""
    assert set(GROUP_JUDGES) == GROUP_RULES and not set(ONE_ESTIMATE_RULES) & GROUP_RULES
    assert set(ONE_ESTIMATE_RULES) | GROUP_RULES == set(RULES)

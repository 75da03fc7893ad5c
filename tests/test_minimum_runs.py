"""Every statistic states the runs it rests on and refuses too few: through `rvfx report` on hand-built
results folders, one claim per statistic kind whose minimum (claims.yaml's rules.minimum_runs) exceeds
1. With one run per group none holds or differs, each saying "too few runs (n = 1, needs ≥ k)"; with
20 runs per group each gives the verdict its data were built for. And a real one-seed run of Fig. 4's
spec (one seed, 50 episodes) gives no verdict on its bootstrap claims; the minimums themselves rest on
benchmarks/bootstrap_coverage.py, whose numbers tests/test_bootstrap_coverage.py checks."""
import re

import numpy as np
import pandas as pd
import pytest
import yaml
from cli_helpers import CONFIGS, invoke

from rvfx import api

CLAIMS = CONFIGS.parent / "claims.yaml"
MINIMUM = yaml.safe_load(CLAIMS.read_text())["rules"]["minimum_runs"]
EXPERIMENT = "deepsea_tabular_scaling"      # any experiment of a registered figure would do
SIZES = (5, 10, 20, 40)


def _mean(rng, n):
    return [{"value": 2.0 + 0.1 * rng.normal()} for _ in range(n)]


def _ratio(rng, n):
    return [{"side": side, "value": scale * (1 + 0.05 * rng.normal())} for side, scale in (("num", 4.0), ("ref", 1.0))
            for _ in range(n)]


def _ratio_to_best(rng, n):
    return [{"agent": a, "v": v, "value": m * (1 + 0.05 * rng.normal())}
            for a, v, m in (("boot", None, 1.0), ("g", 1, 1.1), ("g", 2, 3.0)) for _ in range(n)]


def _median(rng, n):
    return [{"agent": a, "learning_time": round(t * (1 + 0.1 * rng.uniform())), "censored": False}
            for a, t in (("a", 100), ("b", 1000)) for _ in range(n)]


def _slope(rng, n):
    return [{"env.size": s, "learning_time": round(s ** 2 * np.exp(0.1 * rng.normal())), "censored": False}
            for s in SIZES for _ in range(n)]


def _slope_difference(rng, n):
    return [{"algorithm": a, "env.size": s, "learning_time": round(s ** p * np.exp(0.1 * rng.normal())),
             "censored": False} for a, p in (("x", 2.0), ("y", 3.0)) for s in SIZES for _ in range(n)]


def _breakdown(rng, n):
    """Learns below its M's breakdown psi, not from it on, in every run (psi 1, 2, 3)."""
    return [{"M": m, "psi": x, "censored": bool(x >= b)} for m, b in ((10, 2), (20, 3)) for x in (1, 2, 3)
            for _ in range(n)]


def _plateau(rng, n):
    return [{"K": k, "value": m * (1 + 0.02 * rng.normal())} for k, m in ((5, 10.0), (10, 3.0), (20, 1.0), (40, 0.98))
            for _ in range(n)]


# kind: (statistic, rule, extra claim keys, runs per group -> rows, verdict with 20 runs per group)
KINDS = {
    "mean": ({"kind": "mean", "column": "value"}, {"kind": "nearest", "target": 2}, {}, _mean, "holds"),
    "ratio": ({"kind": "ratio", "column": "value", "numerator": "side == 'num'", "reference": "side == 'ref'"},
              {"kind": "nearest", "target": 1}, {}, _ratio, "differs"),
    "ratio_to_best": ({"kind": "ratio_to_best", "column": "value", "numerator": "agent == 'boot'",
                       "candidates": "agent == 'g'", "over": "v"}, {"kind": "at_most", "target": 1}, {},
                      _ratio_to_best, "holds"),
    "median_learning_time": ({"kind": "median_learning_time"}, {"kind": "order", "tiers": ["a", "b"]},
                             {"group": "agent"}, _median, "holds"),
    "slope": ({"kind": "slope", "x": "env.size"}, {"kind": "nearest", "target": 2}, {}, _slope, "holds"),
    "slope_difference": ({"kind": "slope_difference", "x": "env.size", "compare": "algorithm", "a": "x", "b": "y"},
                         {"kind": "nearest", "target": 0}, {}, _slope_difference, "differs"),
    "breakdown": ({"kind": "breakdown", "x": "psi", "criterion": "learnt"}, {"kind": "order", "tiers": "ascending"},
                  {"group": "M"}, _breakdown, "holds"),
    "breakdown_trend": ({"kind": "breakdown_trend", "x": "psi", "over": "M", "criterion": "learnt"},
                        {"kind": "sign", "op": ">"}, {}, _breakdown, "holds"),
    "plateau": ({"kind": "plateau", "x": "K", "column": "value"}, {"kind": "nearest", "target": 20}, {}, _plateau,
                "holds"),
}


def test_every_statistic_kind_needing_more_than_one_run_is_covered():
    assert {k for k, v in MINIMUM.items() if v > 1} == set(KINDS)
    assert MINIMUM["fraction"] == MINIMUM["min"] == 1            # exact: Clopper-Pearson, a computed minimum


def _folder(root, runs_per_group: int):
    """A results folder with every kind's runs (column `case`) and a claims.yaml testing each."""
    rng = np.random.default_rng(0)
    runs, claims = [], []
    for kind, (stat, rule, extra, rows, _) in KINDS.items():
        runs += [{"run_id": f"{kind}-{i}", "case": kind, **row} for i, row in enumerate(rows(rng, runs_per_group))]
        claims.append({"id": f"t_{kind}", "figure": EXPERIMENT, "paper": "a test", "words": "a test",
                       "experiment": EXPERIMENT, "where": [f"case == '{kind}'"], "statistic": stat, "rule": rule,
                       **extra})
    exp = root / "results" / EXPERIMENT
    exp.mkdir(parents=True)
    table = pd.DataFrame(runs)
    table["censored"] = table["censored"].astype("boolean").fillna(False).astype(bool)
    table.to_csv(exp / "runs.csv", index=False)
    (exp / "spec.yaml").write_text("env: {name: deep_sea, size: 20}\n")
    registry = yaml.safe_load(CLAIMS.read_text())
    registry["claims"] += claims
    (root / "claims.yaml").write_text(yaml.safe_dump(registry, allow_unicode=True))
    return root


def _sections(root) -> dict:
    result = invoke("report", "--claims", root / "claims.yaml", "--results", root / "results", "--out", root / "out")
    assert result.exit_code == 0, result.output
    md = (root / "out" / "report.md").read_text()
    return {kind: md.split(f"### t_{kind}\n")[1].split("\n### ")[0] for kind in KINDS}


def _verdict(section: str) -> str:
    return re.search(r"^\*\*(holds|differs|inconclusive)\*\*", section, re.M)[1]


@pytest.mark.parametrize("kind", KINDS)
def test_one_run_per_group_gives_no_verdict_and_says_how_many_runs_it_needs(tmp_path_factory, kind):
    sections = _one_run(tmp_path_factory)
    assert _verdict(sections[kind]) == "inconclusive", sections[kind]
    assert f"too few runs (n = 1, needs ≥ {MINIMUM[kind]})" in sections[kind], sections[kind]


@pytest.mark.parametrize("kind", KINDS)
def test_twenty_runs_per_group_give_the_verdict_the_data_were_built_for(tmp_path_factory, kind):
    sections = _twenty_runs(tmp_path_factory)
    assert _verdict(sections[kind]) == KINDS[kind][4], sections[kind]
    assert "too few" not in sections[kind]


_cache: dict = {}


def _one_run(factory) -> dict:
    if "one" not in _cache:
        _cache["one"] = _sections(_folder(factory.mktemp("one"), 1))
    return _cache["one"]


def _twenty_runs(factory) -> dict:
    if "twenty" not in _cache:
        _cache["twenty"] = _sections(_folder(factory.mktemp("twenty"), 20))
    return _cache["twenty"]


def test_a_slope_on_two_sizes_is_refused_whatever_its_runs(tmp_path):
    registry = yaml.safe_load(CLAIMS.read_text())
    rng = np.random.default_rng(1)
    runs = [{"run_id": f"r{i}", "case": "two", **row} for i, row in enumerate(_slope(rng, 20)) if row["env.size"] < 20]
    exp = tmp_path / "results" / EXPERIMENT
    exp.mkdir(parents=True)
    pd.DataFrame(runs).to_csv(exp / "runs.csv", index=False)
    (exp / "spec.yaml").write_text("env: {name: deep_sea, size: 20}\n")
    registry["claims"].append({"id": "t_two", "figure": EXPERIMENT, "paper": "a test", "words": "a test",
                               "experiment": EXPERIMENT, "statistic": KINDS["slope"][0], "rule": KINDS["slope"][1]})
    (tmp_path / "claims.yaml").write_text(yaml.safe_dump(registry, allow_unicode=True))
    table = api.claims(results=tmp_path / "results", registry=tmp_path / "claims.yaml").set_index("id")
    assert table.loc["t_two", "verdict"] == "inconclusive"
    assert table.loc["t_two", ["n", "runs_per_group"]].tolist() == [40, 20]
    assert 1.5 < table.loc["t_two", "estimate"] < 2.5         # estimated, and shown, but judged on 2 sizes: no
    md = invoke("report", "--claims", tmp_path / "claims.yaml", "--results", tmp_path / "results", "--out",
                tmp_path / "out")
    assert md.exit_code == 0
    assert "too few sizes fitted (2, needs ≥ 3)" in (tmp_path / "out" / "report.md").read_text()


def test_a_one_seed_run_of_fig4_gives_no_verdict_on_its_bootstrap_claims(tmp_path):
    """Fig. 4's spec run with one seed and 50 episodes; a percentile bootstrap over one
    run per chest is a zero-width interval, and no longer a verdict."""
    results = tmp_path / "results"
    assert invoke("run", CONFIGS / "deepsea_tabular.yaml", "--set", "seeds=1", "--set", "episodes=50",
                  "--out", results).exit_code == 0
    table = api.claims(results=results).set_index("id")
    for cid in ("fig4_order_ucrl2_all_states", "fig4_order_ucrl2_next_row"):
        assert table.loc[cid, "verdict"].unique().tolist() == ["inconclusive"]
        assert set(table.loc[cid, "runs_per_group"]) == {1}
    result = invoke("report", "--results", results, "--out", tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    section = md.split("### fig4_order_ucrl2_all_states\n")[1].split("\n### ")[0]
    assert f"too few runs (n = 1, needs ≥ {MINIMUM['mean']})" in section and result.exit_code == 0

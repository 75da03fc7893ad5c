"""`rvfx report`: each verdict rule on hand-made tables (holds, differs, inconclusive), the claims
registry against the figure registry, a report of a tiny run, and --check against hand edits."""
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from cli_helpers import CONFIGS, invoke
from click.testing import CliRunner

from rvfx.cli import main
from rvfx.core.live import log_grid
from rvfx.figures import FIGURES
from rvfx.report import render
from rvfx.report.claims import combine, evaluate_claim
from rvfx.report.readme import paper_numbers, readme_blocks, stray_numbers
from rvfx.report.registry import RegistryError, load_registry, versions
from rvfx.report.render import README_GROUPS, block_markdown
from rvfx.report.rules import RULES as RULE_KINDS
from rvfx.report.rules import order_verdict, rule_verdict
from rvfx.report.settings import results_scale
from rvfx.report.statistics import Estimate

pytestmark = pytest.mark.usefixtures("claims_read_once")     # for the many `rvfx report`s of the tiny run

CLAIMS = CONFIGS.parent / "claims.yaml"
RULES = yaml.safe_load(CLAIMS.read_text())["rules"]


def judge(tmp_path: Path, runs: pd.DataFrame, statistic: dict, rule: dict, **extra):
    """The outcome of a claim on `runs`, written as RESULTS/exp/runs.csv beside a minimal spec."""
    exp = tmp_path / "exp"
    exp.mkdir(exist_ok=True)
    runs.to_csv(exp / "runs.csv", index=False)
    (exp / "spec.yaml").write_text("env: {name: deep_sea, size: 20}\n")
    claim = {"id": "t", "figure": "f", "paper": "p", "words": "w", "experiment": "exp",
             "statistic": statistic, "rule": rule, **extra}
    return evaluate_claim(claim, RULES, tmp_path)


def scaling(growth, sizes=(5, 10, 20, 40), seeds=10, spread=0.05, seed=0, agent="a") -> pd.DataFrame:
    """Runs whose learning time is growth(N) times a log-normal factor of s.d. `spread`."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"run_id": f"{agent}{n}-{s}", "agent": agent, "seed": s, "env.size": n,
                          "learning_time": max(2, round(growth(n) * math.exp(rng.normal(0, spread)))),
                          "censored": False} for n in sizes for s in range(seeds)])


def learnt(k: int, n: int, **columns) -> pd.DataFrame:
    return pd.DataFrame({"run_id": [f"r{i}" for i in range(n)], "censored": [i >= k for i in range(n)],
                         **columns})


def values(groups: dict, spread: float, n: int = 10, column="final_cum_regret", key="agent") -> pd.DataFrame:
    """n runs per group with `column` = the group's value times 1 + `spread` x U(-1, 1)."""
    rng = np.random.default_rng(1)
    return pd.DataFrame([{"run_id": f"{g}-{i}", key: g, column: v * (1 + spread * rng.uniform(-1, 1))}
                         for g, v in groups.items() for i in range(n)])


# ----------------------------------------------------------------------------- each rule

SLOPE = {"kind": "slope", "x": "env.size"}


def test_about_holds_near_the_target_differs_away_from_it_and_is_inconclusive_when_the_ci_is_wide(tmp_path):
    rule = {"kind": "about", "target": 2}
    assert judge(tmp_path, scaling(lambda n: 3 * n ** 2.2), SLOPE, rule).verdict == "holds"
    assert judge(tmp_path, scaling(lambda n: 3 * n ** 3.5), SLOPE, rule).verdict == "differs"
    wide = judge(tmp_path, scaling(lambda n: 30 * n ** 2, sizes=(5, 6, 7), seeds=4, spread=1.0), SLOPE, rule)
    assert wide.verdict == "inconclusive" and "wider" in wide.rows[0].why


def test_about_on_exponential_growth_reads_log2_of_the_growth_factor(tmp_path):
    rule = {"kind": "about", "target": 1}
    exp_slope = {**SLOPE, "growth": "exponential"}
    assert judge(tmp_path, scaling(lambda n: 2.0 ** n, sizes=(3, 5, 7, 9)), exp_slope, rule).verdict == "holds"
    assert judge(tmp_path, scaling(lambda n: 10.0 ** n, sizes=(3, 4, 5)), exp_slope, rule).verdict == "differs"
    # polynomial growth N^1 is "about 1" as a slope, not as 2^N
    linear = scaling(lambda n: 2 * n, sizes=(5, 10, 20, 40, 80))
    assert judge(tmp_path, linear, SLOPE, rule).verdict == "holds"
    assert judge(tmp_path, linear, exp_slope, rule).verdict == "differs"


def test_below_needs_the_ci_below_target_minus_a_half(tmp_path):
    rule = {"kind": "below", "target": 5}
    assert judge(tmp_path, scaling(lambda n: n ** 3), SLOPE, rule).verdict == "holds"
    assert judge(tmp_path, scaling(lambda n: n ** 5), SLOPE, rule).verdict == "differs"
    wide = judge(tmp_path, scaling(lambda n: 30 * n ** 4.5, sizes=(5, 6, 7), seeds=4, spread=1.0, seed=1), SLOPE, rule)
    assert wide.verdict == "inconclusive" and "straddles" in wide.rows[0].why


def test_at_most_on_a_ratio_allows_a_factor_sqrt2(tmp_path):
    stat = {"kind": "ratio", "column": "final_cum_regret", "numerator": {"agent.lam": "max"},
            "reference": "`agent.lam` == 100"}
    rule = {"kind": "at_most", "target": 1}

    def runs(mean_at_max, spread):
        return pd.concat([values({100: 500}, 0.05, key="agent.lam"),
                          values({10000: mean_at_max}, spread, key="agent.lam")], ignore_index=True)
    assert judge(tmp_path, runs(600, 0.05), stat, rule).verdict == "holds"          # 1.2x: not degraded
    assert judge(tmp_path, runs(2000, 0.05), stat, rule).verdict == "differs"       # 4x
    assert judge(tmp_path, runs(700, 1.0), stat, rule).verdict == "inconclusive"    # straddles sqrt 2


def test_ratio_of_the_same_runs_is_not_computable(tmp_path):
    """At CI scale the largest lambda may be the reference itself: no verdict from a ratio of 1 by construction."""
    stat = {"kind": "ratio", "column": "final_cum_regret", "numerator": {"agent.lam": "max"},
            "reference": "`agent.lam` == 100"}
    out = judge(tmp_path, values({100: 500}, 0.05, key="agent.lam"), stat, {"kind": "at_most", "target": 1})
    assert out.verdict == "inconclusive" and "not computable" in out.rows[0].why


def test_order_holds_with_separate_cis_differs_when_reversed_and_is_inconclusive_when_they_overlap(tmp_path):
    stat = {"kind": "mean", "column": "final_cum_regret"}
    rule = {"kind": "order", "tiers": ["psrl", "rlsvi", "ucrl2"]}
    ordered = {"psrl": 100, "rlsvi": 1000, "ucrl2": 5000}
    assert judge(tmp_path, values(ordered, 0.1), stat, rule, group="agent").verdict == "holds"
    swapped = {"psrl": 100, "rlsvi": 5000, "ucrl2": 1000}
    out = judge(tmp_path, values(swapped, 0.1), stat, rule, group="agent")
    assert out.verdict == "differs" and "ucrl2 < rlsvi" in out.rows[0].why
    close = {"psrl": 100, "rlsvi": 1000, "ucrl2": 1050}
    assert judge(tmp_path, values(close, 0.5), stat, rule, group="agent").verdict == "inconclusive"


def test_order_with_a_tier_of_several_groups_and_an_absent_group():
    e = lambda v: Estimate(v, v - 1, v + 1, 10)   # noqa: E731
    assert order_verdict([[("a", e(0)), ("b", e(2))], [("c", e(10))]])[0] == "holds"
    assert order_verdict([[("a", e(0)), ("b", e(20))], [("c", e(10))]])[0] == "differs"


def test_order_on_an_absent_group_is_inconclusive_and_names_it(tmp_path):
    out = judge(tmp_path, values({"psrl": 100, "rlsvi": 1000}, 0.1), {"kind": "mean", "column": "final_cum_regret"},
                {"kind": "order", "tiers": ["psrl", "rlsvi", "ucrl2"]}, group="agent")
    assert out.verdict == "inconclusive" and "ucrl2" in out.rows[0].why


def test_best_in_compares_the_best_of_the_set_with_the_best_outside(tmp_path):
    stat = {"kind": "mean", "column": "final_cum_regret"}
    rule = {"kind": "best_in", "set": "`agent.v` <= 0.01"}

    def judge_v(means, spread):
        return judge(tmp_path, values(means, spread, key="agent.v"), stat, rule, group="agent.v").verdict
    assert judge_v({0.001: 40, 0.01: 45, 1.0: 1200, 10.0: 4900}, 0.1) == "holds"
    assert judge_v({0.001: 900, 0.01: 800, 1.0: 100, 10.0: 4900}, 0.1) == "differs"
    assert judge_v({0.001: 100, 0.01: 120, 1.0: 110, 10.0: 4900}, 0.5) == "inconclusive"


@pytest.mark.parametrize("k,n,most,few", [
    (20, 20, "holds", "differs"),
    (10, 20, "holds", "differs"),
    (0, 20, "differs", "holds"),
    (2, 20, "differs", "holds"),
    (4, 20, "inconclusive", "inconclusive"),    # 0.2: neither most nor few
    (0, 2, "inconclusive", "inconclusive"),     # CI [0, 0.84]: 2 seeds cannot exclude "most"
    (1, 2, "inconclusive", "inconclusive"),
])
def test_most_and_few_on_the_fraction_of_runs_that_learn(tmp_path, k, n, most, few):
    stat = {"kind": "fraction", "criterion": "learnt"}
    assert judge(tmp_path, learnt(k, n), stat, {"kind": "most"}).verdict == most
    assert judge(tmp_path, learnt(k, n), stat, {"kind": "few"}).verdict == few


def test_inequality_is_exact(tmp_path):
    stat = {"kind": "mean", "column": "over"}
    rule = {"kind": "inequality", "op": "<=", "target": 1}
    for mean, spread, verdict in ((0.5, 0.1, "holds"), (2.0, 0.1, "differs"), (1.0, 0.5, "inconclusive"),
                                  (1.2, 0.05, "differs")):     # no tolerance: 1.2 > 1 is a difference
        runs = values({"a": mean}, spread, n=40, column="over")
        assert judge(tmp_path, runs, stat, rule).verdict == verdict, (mean, spread)
    e = Estimate(0.1, 0.05, 0.15, 10)
    assert rule_verdict({"kind": "inequality", "op": ">=", "target": 0}, RULES, e, "linear")[0] == "holds"
    assert rule_verdict({"kind": "inequality", "op": ">=", "target": 0.2}, RULES, e, "linear")[0] == "differs"


def test_groups_combine_as_all_or_any():
    assert combine(["holds", "holds"], "all") == "holds"
    assert combine(["holds", "differs"], "all") == "differs"
    assert combine(["holds", "inconclusive"], "all") == "inconclusive"
    assert combine(["differs", "holds"], "any") == "holds"
    assert combine(["differs", "differs"], "any") == "differs"
    assert combine(["differs", "inconclusive"], "any") == "inconclusive"


def test_by_tests_each_group_and_where_filters(tmp_path):
    runs = pd.concat([scaling(lambda n: n ** 2, agent="m5").assign(**{"agent.M": 5}),
                      scaling(lambda n: n ** 4, agent="m10").assign(**{"agent.M": 10})], ignore_index=True)
    out = judge(tmp_path, runs, SLOPE, {"kind": "about", "target": 2}, by=["agent.M"])
    assert [r.label for r in out.rows] == ["agent.M = 5", "agent.M = 10"]
    assert [r.verdict for r in out.rows] == ["holds", "differs"] and out.verdict == "differs"
    assert judge(tmp_path, runs, SLOPE, {"kind": "about", "target": 2}, by=["agent.M"],
                 aggregate="any").verdict == "holds"


def test_a_readme_block_lists_the_groups_that_do_not_hold_and_the_last(tmp_path):
    """Theorem 1 has one group per logged L: its README block stays short, report.md lists them all."""
    runs = pd.concat([values({"a": 2.0 if L == 5 else 0.5}, 0.05, n=20, column="over").assign(episode=L)
                      for L in range(1, 21)], ignore_index=True)
    out = judge(tmp_path, runs, {"kind": "mean", "column": "over"},
                {"kind": "inequality", "op": "<=", "target": 1}, by=["episode"])
    assert out.verdict == "differs" and len(out.rows) == 20
    block = block_markdown(out, RULES, README_GROUPS)
    assert "2 of 20 groups listed" in block
    assert [ln.split(" | ")[0] for ln in block.splitlines()[4:]] == ["| episode = 5", "| episode = 20"]
    assert len(block_markdown(out, RULES).splitlines()) == 4 + 20


def test_unswept_env_parameters_of_the_spec_are_columns(tmp_path):
    """Fig. 9's M = 2N: N is not swept there, so it comes from the resolved spec (size 20)."""
    runs = pd.concat([learnt(10, 10, **{"agent.M": 40}), learnt(0, 10, **{"agent.M": 10})], ignore_index=True)
    out = judge(tmp_path, runs, {"kind": "fraction", "criterion": "learnt"}, {"kind": "most"},
                where=["`agent.M` == 2 * `env.size`"])
    assert out.verdict == "holds" and out.rows[0].estimates[0][1].n == 10


def test_missing_and_partial_results_are_inconclusive_and_named(tmp_path):
    claim = {"id": "t", "figure": "f", "paper": "p", "words": "w", "experiment": "nowhere",
             "statistic": {"kind": "fraction", "criterion": "learnt"}, "rule": {"kind": "most"}}
    out = evaluate_claim(claim, RULES, tmp_path)
    assert out.verdict == "inconclusive" and out.problem.startswith("missing")
    assert "nowhere" in out.problem and "rvfx run nowhere" in out.problem
    judge(tmp_path, learnt(20, 20), claim["statistic"], claim["rule"])
    pd.DataFrame([{"run_id": "x", "status": "failed"}, {"run_id": "y", "status": "missing"}]).to_csv(
        tmp_path / "exp" / "failures.csv", index=False)
    out = evaluate_claim({**claim, "experiment": "exp"}, RULES, tmp_path)
    assert out.verdict == "inconclusive"
    assert "partial" in out.problem and "1 failed, 1 missing of 22 runs" in out.problem
    assert out.problem.endswith("on the runs present: holds")
    out = judge(tmp_path, learnt(20, 20, agent="a"), claim["statistic"], claim["rule"], where=["agent == 'b'"])
    assert out.verdict == "inconclusive" and "no rows of exp/runs with agent == 'b'" in out.problem


# ------------------------------------------------------------------------------ registry

def test_registry_maps_every_registered_figure_and_claims_every_paper_figure():
    reg = load_registry(CLAIMS)
    assert set(reg["figures"]) == set(FIGURES)
    claimed = {c["figure"] for c in reg["claims"]}
    paper = {f for f, e in reg["figures"].items() if "paper" in e}
    assert paper <= claimed
    for fig in ("cartpole_ablation", "cartpole_diagnostics", "cartpole_balance", "cartpole_render"):
        assert "own" in reg["figures"][fig]
    current = {versions(c)[-1]["rule"]["kind"] for c in reg["claims"]}
    # every kind in use but two: each "about" amended to "nearest", each "sign" to a rule its contrast fails
    assert current == set(RULE_KINDS) - {"about", "sign"}


def _broken(tmp_path, edit) -> str:
    reg = yaml.safe_load(CLAIMS.read_text())
    edit(reg)
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(reg, allow_unicode=True))
    with pytest.raises(RegistryError) as err:
        load_registry(path)
    return str(err.value)


def test_a_paper_figure_without_a_claim_is_an_error(tmp_path):
    msg = _broken(tmp_path, lambda r: r.update(claims=[c for c in r["claims"] if c["figure"] != "deepsea_linear"]))
    assert "paper figures without a claim: deepsea_linear" in msg


def test_a_figure_names_its_record_tables_as_a_list(tmp_path):
    msg = _broken(tmp_path, lambda r: r["figures"]["cartpole_ablation"].update(tables="screen_runs"))
    assert "figures.cartpole_ablation.tables: a list of table names" in msg


def test_a_registered_figure_missing_from_the_registry_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setitem(FIGURES, "new_figure", FIGURES["deepsea_linear"])
    reg = yaml.safe_load(CLAIMS.read_text())
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(reg, allow_unicode=True))
    with pytest.raises(RegistryError, match="missing from figures: new_figure"):
        load_registry(path)


@pytest.mark.parametrize("edit,message", [
    (lambda c: c["rule"].update(kind="roughly"), "rule.kind must be one of"),
    (lambda c: c["rule"].pop("target"), "rule about takes target"),
    (lambda c: c["rule"].update(tolerance=0.7), "rule about takes target"),
    (lambda c: c["statistic"].update(kind="median"), "statistic.kind must be one of"),
    (lambda c: c.update(experiment="deepsea_linear"), "reads ['deepsea_tabular_scaling']"),
    (lambda c: c.update(figure="nope"), "figure 'nope' is not in figures"),
    (lambda c: c.update(verdict="holds"), "unknown keys verdict"),
    (lambda c: c.update(group="agent"), "group is needed by, and only by"),
])
def test_a_malformed_claim_is_named(tmp_path, edit, message):
    def change(reg):
        edit(next(c for c in reg["claims"] if c["id"] == "fig5_rlsvi_slope"))
    msg = _broken(tmp_path, change)
    assert "claim fig5_rlsvi_slope" in msg and message in msg


def test_tolerances_live_only_in_the_global_rules():
    """One rule per kind: no claim carries a tolerance of its own."""
    reg = yaml.safe_load(CLAIMS.read_text())
    for claim in reg["claims"]:
        assert set(claim["rule"]) <= {"kind", "target", "op", "tiers", "set"}, claim["id"]


# --------------------------------------------------------------- a tiny run, end to end

@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Figs. 4-5 at a tiny scale through the CLI: run, plot, report."""
    root = tmp_path_factory.mktemp("report")
    results, figs = root / "results", root / "figs"
    for spec, sets in (("deepsea_tabular", ["seeds=2", "episodes=300", "env.size=5"]),
                       ("deepsea_tabular_scaling", ["seeds=2", "episodes=3000", "grid={env.size: [3, 4, 5]}"])):
        args = ["run", CONFIGS / f"{spec}.yaml", "--out", results]
        for s in sets:
            args += ["--set", s]
        assert invoke(*args).exit_code == 0
        assert invoke("plot", spec, "--results", results, "--out", figs).exit_code == 0
    return root


@pytest.fixture(scope="module")
def tiny_report(tiny):
    """`rvfx report` of the tiny run, once for the tests that read it: (its output, report.md, report.html)."""
    result = invoke("report", "--results", tiny / "results", "--out", tiny / "figs")
    assert result.exit_code == 0, result.output
    return result.output, (tiny / "figs" / "report.md").read_text(), (tiny / "figs" / "report.html").read_text()


@pytest.fixture(scope="module")
def filled_readme(tiny):
    """README filled by `rvfx report --readme` from the tiny run, once for the tests that edit a copy."""
    readme = tiny / "filled" / "README.md"
    readme.parent.mkdir()
    readme.write_text(README)
    result = invoke("report", "--results", tiny / "results", "--out", tiny / "figs", "--readme", readme)
    assert result.exit_code == 0, result.output
    return readme.read_text()


def test_report_of_a_tiny_run_writes_both_files_and_exits_0(tiny_report):
    _, md, html_text = tiny_report
    reg = load_registry(CLAIMS)
    assert all(f"### {c['id']}" in md for c in reg["claims"])
    assert "![deepsea_tabular](deepsea_tabular.png)" in md
    assert html_text.count("data:image/png;base64,") == html_text.count("<img")
    assert "http://" not in html_text and "https://" not in html_text and "src=\"data:" in html_text
    # Figs. 4-5 are estimated; experiments never run are named as missing
    section = md.split("### fig5_rlsvi_slope")[1].split("###")[0]
    assert "slope of log median learning time on log env.size" in section and "missing" not in section
    assert "missing:" in md.split("### fig6_linear_rlsvi_learns")[1].split("###")[0]
    assert "rvfx run deepsea_linear" in md


def test_report_and_validate_load_no_plotting_library(tiny):
    """`rvfx report` reads its numbers from rvfx.analysis and `rvfx validate` the figure registry, never
    a figure's drawing module: in a fresh interpreter, matplotlib stays unloaded by either (one
    interpreter runs both in turn, and says after each whether matplotlib was loaded)."""
    commands = {"validate": ["validate", str(CONFIGS / "deepsea_tabular.yaml")],
                "report": ["report", "--results", str(tiny / "results"), "--out", str(tiny / "no_plots")]}
    code = "import sys\nfrom rvfx.cli import main\n"
    for command, args in commands.items():
        code += (f"sys.argv = ['rvfx', *{args!r}]\n"
                 "try:\n    main()\nexcept SystemExit as e:\n    assert e.code in (0, None), e.code\n"
                 f"print('after', {command!r}, 'matplotlib' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    said = [line for line in out.stdout.splitlines() if line.startswith("after ")]
    assert said == ["after validate False", "after report False"], out.stdout + out.stderr


def test_strict_fails_on_anything_but_holds(tiny):
    result = CliRunner().invoke(main, ["report", "--results", str(tiny / "results"), "--out",
                                       str(tiny / "strict"), "--strict"])
    assert result.exit_code == 1
    assert "fig6_linear_rlsvi_learns: inconclusive (missing" in result.output


README = """\
# results

Fig. 5: the slope is
<!-- report:begin fig5_rlsvi_slope -->
<!-- report:end -->
and Fig. 4:
<!-- report:begin fig4_order_ucrl2_next_row -->
stale text
<!-- report:end -->
"""


def test_check_catches_a_readme_number_edited_by_hand_and_a_stale_report(tiny, filled_readme, tmp_path):
    out, readme = tiny / "figs", tmp_path / "README.md"
    readme.write_text(filled_readme)
    args = ["report", "--results", str(tiny / "results"), "--out", str(out), "--readme", str(readme)]
    text = readme.read_text()
    blocks = dict(readme_blocks(text))
    assert blocks["fig5_rlsvi_slope"].startswith("**") and "stale text" not in text
    assert text.startswith("# results\n\nFig. 5: the slope is\n")
    ok = CliRunner().invoke(main, args + ["--check"])
    assert ok.exit_code == 0, ok.output
    # a number of the block edited by hand
    number = next(tok for tok in blocks["fig5_rlsvi_slope"].split() if tok[0].isdigit() and "." in tok)
    edited = text.replace(number, "9.99", 1)
    readme.write_text(edited)
    bad = CliRunner().invoke(main, args + ["--check"])
    assert bad.exit_code == 1
    lines = [ln for ln in bad.output.splitlines() if "differs" in ln]
    assert len(lines) == 1 and "block fig5_rlsvi_slope differs from the results" in lines[0]
    assert "9.99" in lines[0]
    # a stale report.md beside a correct README
    readme.write_text(text)
    md = out / "report.md"
    md.write_text(md.read_text().replace("claims:", "claims (edited):", 1))
    bad = CliRunner().invoke(main, args + ["--check"])
    assert bad.exit_code == 1 and "report.md:" in bad.output and "README" not in bad.output
    assert CliRunner().invoke(main, args).exit_code == 0


def test_export_keeps_what_the_claims_read_and_the_report_recomputes_from_it_alone(tiny, tmp_path):
    """`rvfx export` writes runs.csv and the claims' tables (Theorem 1's derived from its episodes,
    two L per decade and the last), no per-episode table; the report from the export equals the
    report from the results, and an exported table edited by hand is refused."""
    results, exported = tmp_path / "results", tmp_path / "paper"
    shutil.copytree(tiny / "results", results)       # grown by a run here; the other tests read tiny's
    assert invoke("run", CONFIGS / "regret_bound.yaml", "--out", results, "--set", "seeds=3",
                  "--set", "episodes=120").exit_code == 0
    refused = invoke("export", "--results", results, "--out", exported, "--scale", "paper")
    assert refused.exit_code == 2 and "run at scale ci, not paper; nothing exported" in refused.output
    assert not exported.exists()
    result = invoke("export", "--results", results, "--out", exported, "--scale", "ci")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (exported / "regret_bound").iterdir()) == [
        "provenance.json", "regret_over_bounds.csv", "runs.csv", "spec.yaml", "tables.json"]
    assert not list(exported.glob("*/episodes.csv"))
    assert sorted(p.name for p in exported.iterdir() if p.suffix != ".lock") == [
        "deepsea_tabular", "deepsea_tabular_scaling", "regret_bound"]
    bounds = pd.read_csv(exported / "regret_bound" / "regret_over_bounds.csv")
    grid = log_grid(120)                                 # the logged episodes
    expected = sorted({int(grid[grid >= t][0]) for t in (1, 10 ** 0.5, 10, 10 ** 1.5, 100)} | {120})
    assert sorted(bounds["episode"].unique()) == expected and len(expected) == 6
    assert len(bounds) == 3 * 6
    reports = []
    for source in (results, exported):
        out = tmp_path / f"report_{source.name}"
        assert invoke("report", "--results", source, "--out", out).exit_code == 0
        reports.append((out / "report.md").read_text())
    assert reports[0] == reports[1]
    runs = exported / "deepsea_tabular" / "runs.csv"
    runs.write_text(runs.read_text().replace("\n", "\n\n", 1))
    bad = invoke("report", "--results", exported, "--out", tmp_path / "bad")
    assert bad.exit_code != 0 and "deepsea_tabular/runs.csv: damaged" in bad.output


def test_check_names_a_number_of_the_tables_quoted_outside_the_blocks(tiny, filled_readme, tmp_path):
    """--check with --readme fails on a number the report or a summary table prints (3+ significant
    digits) written into the README's prose, and names its line; other numbers pass."""
    out, readme = tiny / "figs", tmp_path / "README.md"
    readme.write_text(filled_readme)
    args = ["report", "--results", str(tiny / "results"), "--out", str(out), "--readme", str(readme)]
    filled = readme.read_text()
    block = dict(readme_blocks(filled))["fig5_rlsvi_slope"]
    def three_digit_numbers(text):
        return [tok for tok in re.findall(r"\d[\d,]*\.\d+", text) if len(tok.replace(".", "").lstrip("0")) >= 3]
    estimate = three_digit_numbers(block)[0]
    table_number = three_digit_numbers((out / "deepsea_tabular_scaling_slopes.md").read_text())[0]
    assert CliRunner().invoke(main, args + ["--check"]).exit_code == 0
    prose = f"Python 3.10 and 12.5 s; the slope is {estimate}.\nThe table says {table_number}.\n"
    readme.write_text(filled + prose)
    bad = CliRunner().invoke(main, args + ["--check"])
    assert bad.exit_code == 1
    stray = [ln for ln in bad.output.splitlines() if "outside a report block" in ln]
    n = filled.count("\n")
    assert stray[0].startswith(f"{readme}:{n + 1}: {estimate} is a number")
    assert stray[-1].startswith(f"{readme}:{n + 2}: {table_number} is a number")
    assert not any("3.10" in ln or "12.5" in ln for ln in stray)
    readme.write_text(filled + f"## Speed\nbatch {estimate}, {table_number} s\n")   # no figure of it here
    assert CliRunner().invoke(main, args + ["--check"]).exit_code == 0


def test_a_table_is_its_own_figures_and_a_number_keeps_its_sign(tmp_path):
    """A summary table's numbers are its figure's, not those of a figure whose id prefixes its name
    (deepsea_tabular_scaling_slopes is Fig. 5's, not Fig. 4's); a README section is checked against
    the figures it is about (named by file, glob or claim block) only; "−3.78" is not the table's
    3.78, "−6.65" is its -6.65, and the hyphen of a range is no minus."""
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "deepsea_tabular_summary.md").write_text("| a | b | c |\n|---|---|---|\n| 111.1 | -6.65 | 3.78 |\n")
    (figures / "deepsea_tabular_scaling_slopes.md").write_text("| slope |\n|---|\n| 222.2 |\n")
    numbers = paper_numbers([], figures)
    assert {"111.1", "-6.65", "3.78"} <= numbers["deepsea_tabular"] and numbers["deepsea_tabular_scaling"] == {"222.2"}
    registry = {"claims": [{"id": "fig5_rlsvi_slope", "figure": "deepsea_tabular_scaling"}]}
    text = ("![Fig. 4](figures/paper/deepsea_tabular.png)\n"
            "regret 111.1, return −3.78 and −6.65; slope 222.2; runs of 1,100-3.78 s\n")
    assert stray_numbers(text, numbers, registry) == [(2, "111.1"), (2, "−6.65"), (2, "3.78")]
    elsewhere = ("## Speed\nbatch 111.1 and 222.2\n### Fig. 5\n<!-- report:begin fig5_rlsvi_slope -->\n"
                 "<!-- report:end -->\n111.1 and 222.2\n### Fig. 4\nsee `figures/paper/deepsea_tab*.md`: 111.1\n")
    assert stray_numbers(elsewhere, numbers, registry) == [(6, "222.2"), (8, "111.1")]


def test_a_readme_table_block_shows_the_committed_table_and_check_catches_an_edit(tiny, filled_readme, tmp_path):
    """A <!-- table:begin PATH --> block is filled with the file PATH (relative to the README) as it
    is; its numbers are not stray copies; a number edited inside it, or a block naming no file,
    fails --check with one line naming the block."""
    out, readme = tiny / "figs", tmp_path / "README.md"
    readme.write_text(filled_readme)
    args = ["report", "--results", str(tiny / "results"), "--out", str(out), "--readme", str(readme)]
    table = out / "deepsea_tabular_scaling_slopes.md"
    name = os.path.relpath(table, tmp_path)
    block = f"<!-- table:begin {name} -->\nstale\n<!-- table:end -->\n"
    readme.write_text(readme.read_text() + f"\n![Fig. 5]({name})\n{block}")
    assert CliRunner().invoke(main, args).exit_code == 0
    filled = readme.read_text()
    assert f"<!-- table:begin {name} -->\n{table.read_text()}<!-- table:end -->" in filled and "stale" not in filled
    ok = CliRunner().invoke(main, args + ["--check"])
    assert ok.exit_code == 0, ok.output
    number = re.findall(r"\d+\.\d{2,}", table.read_text())[0]
    block = f"<!-- table:begin {name} -->\n{table.read_text()}"
    readme.write_text(filled.replace(block, block.replace(number, "9.999", 1)))
    bad = CliRunner().invoke(main, args + ["--check"])
    assert bad.exit_code == 1
    assert [ln for ln in bad.output.splitlines() if "table block" in ln] == [
        f"{readme}: table block {name} differs from the file (run rvfx report --readme to copy it)"]
    readme.write_text(filled.replace(name, "figs/no_such_table.md"))
    missing = CliRunner().invoke(main, args + ["--check"])
    assert missing.exit_code != 0 and "README table block names no file" in missing.output


# ----------------------------------------------------------------------------- scale, aggregation, pages

ROOT = CONFIGS.parent


def test_a_ci_scale_report_says_so_in_its_title_and_first_line_and_the_paper_report_says_paper_scale(tiny_report):
    output, md, page = tiny_report
    assert output.splitlines()[0].startswith("CI scale: a smoke test of the pipeline, not the paper's results")
    md = md.splitlines()
    assert md[0] == "# The paper's claims, tested: CI scale"
    assert md[2].startswith("**CI scale: a smoke test of the pipeline, not the paper's results")
    assert "<title>rvfx: the paper's claims, tested: CI scale</title>" in page
    assert "<h1>The paper's claims, tested: CI scale</h1><p><b>CI scale: a smoke test of the pipeline" in page
    paper = (ROOT / "figures" / "paper" / "report.md").read_text().splitlines()
    assert paper[0] == "# The paper's claims, tested: paper scale" and paper[2].startswith("**Paper scale:")


def test_the_scale_is_read_from_each_experiments_resolved_spec(tmp_path):
    assert results_scale(tmp_path) == "no results"
    for exp, scale in (("a", "ci"), ("b", "paper"), ("c", "ci")):
        (tmp_path / exp).mkdir()
        (tmp_path / exp / "spec.yaml").write_text(f"scale: {scale}\nexperiment: {exp}\n")
        (tmp_path / exp / "runs.csv").write_text("run_id\n")
    (tmp_path / "d").mkdir()   # no runs.csv: not a collected experiment
    assert results_scale(tmp_path) == "mixed (ci: a, c; paper: b)"
    assert "only the paper-scale report" in render.scale_banner(results_scale(tmp_path))[1]


def test_report_html_renders_inline_code_and_leaves_no_backtick(tiny_report):
    _, md, page = tiny_report
    text = page.split("<script>")[0]
    assert "`" not in text
    assert "<code>env.treasure</code>" in text       # fig4's where clause, `env.treasure` in report.md
    assert "`env.treasure`" in md


def test_a_block_says_how_many_groups_hold_and_how_they_combine(tmp_path):
    runs = pd.concat([scaling(lambda n: n ** 2, agent="m5").assign(**{"agent.M": 5}),
                      scaling(lambda n: n ** 4, agent="m10").assign(**{"agent.M": 10}),
                      scaling(lambda n: n ** 5, agent="m20").assign(**{"agent.M": 20})], ignore_index=True)
    out = judge(tmp_path, runs, SLOPE, {"kind": "about", "target": 2}, by=["agent.M"], aggregate="any")
    assert out.verdict == "holds"
    assert block_markdown(out, RULES).splitlines()[0].endswith(
        '1 of 3 groups holds, 2 differ; aggregate "any": holds when some group holds, differs when every '
        'group differs.')
    every = judge(tmp_path, runs, SLOPE, {"kind": "about", "target": 2}, by=["agent.M"])
    assert 'aggregate "all": holds when every group holds' in block_markdown(every, RULES)
    single = judge(tmp_path, runs[runs["agent.M"] == 5], SLOPE, {"kind": "about", "target": 2})
    assert "aggregate" not in block_markdown(single, RULES)


def test_the_glance_table_has_a_row_per_paper_figure_named_by_its_pages_heading(tiny, tmp_path):
    readme, pages = tmp_path / "README.md", tmp_path / "docs" / "results"
    pages.mkdir(parents=True)
    readme.write_text("# r\n\n<!-- glance:begin -->\n<!-- glance:end -->\n")
    (pages / "tabular.md").write_text("# Tabular\n\n## Fig. 5: slopes like the bounds\n\n"
                                      "<!-- report:begin fig5_rlsvi_slope -->\n<!-- report:end -->\n")
    args = ["report", "--results", str(tiny / "results"), "--out", str(tiny / "figs"), "--readme", str(readme),
            "--docs", str(tmp_path / "docs")]
    assert CliRunner().invoke(main, args).exit_code == 0
    rows = [ln for ln in readme.read_text().splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    reg = load_registry(CLAIMS)
    paper = [f for f, e in reg["figures"].items() if "paper" in e]
    assert len(rows) == len(paper) + 1          # and rvfx's own figure of a claim of the paper, Theorem 1's optimism
    fig5 = next(r for r in rows if r.startswith("| Fig. 5 |"))
    assert fig5.startswith("| Fig. 5 | slopes like the bounds | ") and fig5.endswith(
        "| [tabular](docs/results/tabular.md) |")
    assert "rlsvi_slope" in fig5 and "ucrl2_slope" in fig5          # every claim of Fig. 5, by name
    fig4 = next(r for r in rows if r.startswith("| Fig. 4 |"))
    assert fig4.endswith("| – |") and "fig:tabular_regret" in fig4  # no page holds its blocks
    assert [r.split(" | ")[0] for r in rows][:2] == ["| Table 1", "| Theorem 1"]
    assert (pages / "tabular.md").read_text().count("**") >= 2       # the page's block filled too
    assert CliRunner().invoke(main, args + ["--check"]).exit_code == 0
    readme.write_text(readme.read_text().replace("slopes like the bounds", "slopes edited"))
    bad = CliRunner().invoke(main, args + ["--check"])
    assert bad.exit_code == 1 and "results-at-a-glance block differs" in bad.output

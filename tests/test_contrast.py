"""Every rule meets a negative control: a claim's `contrast` (the data the paper contrasts it with) is
judged by the same statistic and rule, shown in the report, and `rvfx report --check` fails on
paper-scale results where the rule holds there too; claims.yaml's contrasts are checked like its
claims; `also_experiment` compares two experiments' runs; a claim as first committed is judged by exact
comparisons, its amended versions with the rules' tolerance. Through the CLI on hand-built folders."""
import re

import pandas as pd
import pytest
import yaml
from cli_helpers import CONFIGS, invoke

from rvfx.report.registry import RegistryError, load_registry

CLAIMS = CONFIGS.parent / "claims.yaml"
A, B = "deepsea_tabular_scaling", "deepsea_tabular"   # two experiments of registered figures
MOST = {"kind": "fraction", "criterion": "learnt"}


def learnt(agent: str, k: int, n: int = 20) -> list:
    return [{"run_id": f"{agent}{i}", "agent": agent, "censored": i >= k} for i in range(n)]


def folder(root, claims: list, runs: dict, scale: str = "paper"):
    """RESULTS/<experiment>/runs.csv for each of `runs`, recorded at `scale`, and claims.yaml (the
    shipped one with `claims` added)."""
    for exp, rows in runs.items():
        d = root / "results" / exp
        d.mkdir(parents=True)
        pd.DataFrame(rows).to_csv(d / "runs.csv", index=False)
        (d / "spec.yaml").write_text(f"scale: {scale}\nenv: {{name: deep_sea, size: 20}}\n")
    registry = yaml.safe_load(CLAIMS.read_text())
    registry["claims"] += claims
    (root / "claims.yaml").write_text(yaml.safe_dump(registry, allow_unicode=True))
    return ["--claims", root / "claims.yaml", "--results", root / "results", "--out", root / "out"]


def claim(cid: str, **keys) -> dict:
    return {"id": cid, "figure": A, "paper": "a test", "words": "a test", "experiment": A, "statistic": MOST,
            "rule": {"kind": "most"}, **keys}


def section(root, cid: str) -> str:
    return (root / "out" / "report.md").read_text().split(f"### {cid}\n")[1].split("\n### ")[0]


def test_a_contrast_is_judged_by_the_claims_rule_and_shown_beside_it(tmp_path):
    why = "The paper sets a against b"
    args = folder(tmp_path, [claim("t_sep", where=["agent == 'a'"], contrast={"why": why, "where": ["agent == 'b'"]})],
                  {A: learnt("a", 18) + learnt("b", 1)})
    result = invoke("report", *args)
    assert result.exit_code == 0, result.output
    body = section(tmp_path, "t_sep")
    assert body.lstrip().startswith("a test:") and re.search(r"^\*\*holds\*\*", body, re.M)
    assert ("Negative control (where agent == 'b'): **differs** (0.0500 [0.00127, 0.249]); it must not hold, and "
            "does not. The paper sets a against b.") in body
    row = next(ln for ln in (tmp_path / "out" / "report.md").read_text().splitlines() if ln.startswith("| [t_sep]"))
    assert row.endswith("| **holds** | differs |")
    assert invoke("report", *args, "--check").exit_code == 0


def test_check_fails_where_the_rule_holds_on_its_contrast_too(tmp_path):
    args = folder(tmp_path, [claim("t_same", where=["agent == 'a'"],
                                   contrast={"why": "b should not learn", "where": ["agent == 'b'"]})],
                  {A: learnt("a", 18) + learnt("b", 17)})
    assert invoke("report", *args).exit_code == 0
    assert "it must not hold, and does: the rule cannot tell the claim from its contrast" in section(tmp_path, "t_same")
    assert "it holds there for t_same" in (tmp_path / "out" / "report.md").read_text()
    bad = invoke("report", *args, "--check")
    assert bad.exit_code == 1
    assert "claims.yaml: t_same: its rule holds on its negative control (b should not learn)" in bad.output


def test_a_ci_scale_report_does_not_fail_its_check_on_a_contrast(tmp_path):
    args = folder(tmp_path, [claim("t_same", where=["agent == 'a'"], contrast={"why": "w", "where": ["agent == 'b'"]})],
                  {A: learnt("a", 18) + learnt("b", 17)}, scale="ci")
    assert invoke("report", *args).exit_code == 0
    assert invoke("report", *args, "--check").exit_code == 0


def test_a_contrast_may_read_another_experiment_and_a_claim_may_append_its_rows(tmp_path):
    args = folder(tmp_path, [
        claim("t_other", where=["agent == 'a'"], contrast={"why": "w", "experiment": B, "where": ["agent == 'b'"]}),
        claim("t_both", also_experiment=B, where=["agent in ['b', 'a']"], group="agent",
              rule={"kind": "order", "tiers": ["b", "a"]})],
        {A: learnt("a", 18), B: learnt("b", 0)})
    assert invoke("report", *args).exit_code == 0
    assert "Negative control (experiment deepsea_tabular; where agent == 'b'): **differs** (0 [0, 0.168])" in \
        section(tmp_path, "t_other")
    both = section(tmp_path, "t_both")
    assert re.search(r"^\*\*holds\*\*", both, re.M) and "b < a, CIs not overlapping" in both


@pytest.mark.parametrize("contrast, message", [
    ({"where": ["agent == 'b'"]}, "contrast: a contrast gives why and some of"),
    ({"why": "w"}, "contrast: a contrast gives why and some of"),
    ({"why": "w", "rule": {"kind": "few"}}, "contrast: a contrast gives why and some of"),
    ({"why": "w", "experiment": "nowhere"}, "contrast.experiment: figure deepsea_tabular_scaling reads"),
    ({"why": "w", "statistic": {"kind": "mean", "column": "x"}},
     "contrast.statistic: a contrast is tested by the claim's own statistic kind and rule"),
    ([{"why": "w", "where": ["agent == 'b'"]}, {"why": "", "where": ["agent == 'c'"]}],
     "contrast[1].why: expected text"),
])
def test_a_malformed_contrast_is_one_line_naming_its_key(tmp_path, contrast, message):
    folder(tmp_path, [claim("t_bad", contrast=contrast)], {})
    with pytest.raises(RegistryError, match=re.escape(message)) as err:
        load_registry(tmp_path / "claims.yaml")
    assert str(err.value).startswith(f"{tmp_path / 'claims.yaml'}:") and "\n" not in str(err.value)


def test_a_claim_as_first_committed_is_judged_by_exact_comparisons(tmp_path):
    """A ratio whose CI is [10, 20] (log2: 1 + 4e-16 wide) against about's one unit: as first committed,
    before the tolerance, inconclusive; the same rule in an amended version, with it, holds."""
    ratio = {"kind": "ratio", "column": "value", "numerator": "side == 'num'", "reference": "side == 'ref'"}
    about = {"kind": "about", "target": 14}
    runs = [{"run_id": f"r{i}", "side": s, "value": v} for i, (s, v) in enumerate([("num", 10.0), ("num", 20.0),
                                                                                     ("ref", 1.0)])]
    args = folder(tmp_path, [claim("t_tol", statistic=ratio, rule=about, amendments=[
        {"date": "2026-12-02", "reason": "the tolerance", "after": "the runs", "rule": about}])], {A: runs})
    registry = yaml.safe_load((tmp_path / "claims.yaml").read_text())
    registry["rules"]["minimum_runs"]["ratio"] = 1
    (tmp_path / "claims.yaml").write_text(yaml.safe_dump(registry, allow_unicode=True))
    assert invoke("report", *args).exit_code == 0
    body = section(tmp_path, "t_tol")
    assert re.search(r"^\*\*holds\*\*", body, re.M)
    assert "As first committed: **inconclusive** (15.0 [10.00, 20.0])" in body

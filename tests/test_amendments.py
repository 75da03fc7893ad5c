"""`rvfx report` on amended claims, measurements beyond the paper, other readings and runs made
with `--set`, each through the CLI on a hand-built results folder and a small registry: an amended
claim shows its current verdict and its verdict as first committed, and What changed lists it once
when they differ; a claim beyond the paper and another reading are shown apart and not counted;
a malformed amendment or reading is refused at its file and line; and an experiment run with
settings other than its spec's is listed with the settings that differ.

The estimates are exact: the statistic `min` of one run with value x gives the point [x, x], so
"about 2" holds at 2.2 and differs at 3.0 (the band [1.5, 2.5])."""
import re

import pandas as pd
import pytest
import yaml
from cli_helpers import CONFIGS, invoke

from rvfx import api
from rvfx.figures import FIGURES

CLAIMS = CONFIGS.parent / "claims.yaml"
EXPERIMENT = "deepsea_tabular_scaling"      # any experiment of a registered figure would do
POINT = {"kind": "min", "column": "value"}


def claim(cid: str, value: float, target: float, **extra) -> dict:
    """A claim on the run of case `cid` (value `value`): "about `target`"."""
    return {"id": cid, "figure": EXPERIMENT, "paper": f"the test {cid}", "words": f"the words of {cid}",
            "experiment": EXPERIMENT, "where": [f"case == '{cid}'"], "statistic": POINT,
            "rule": {"kind": "about", "target": target}, **extra}


def registry_text(claims: list, claims_text: str = "") -> str:
    """A registry of claims.yaml's rules, every registered figure rvfx's own but EXPERIMENT's (the
    one paper figure, claimed by `claims`), and the claims, dumped (then `claims_text` as written)."""
    figures = {f: {"paper": "Fig. T (fig:test)"} if f == EXPERIMENT else {"own": "not tested here"} for f in FIGURES}
    head = yaml.safe_dump({"rules": yaml.safe_load(CLAIMS.read_text())["rules"], "figures": figures}, sort_keys=False)
    return head + yaml.safe_dump({"claims": claims}, sort_keys=False) + claims_text


def results(root, cases: dict):
    """RESULTS/EXPERIMENT/runs.csv with one run per case (its `value`), beside a minimal spec."""
    exp = root / "results" / EXPERIMENT
    exp.mkdir(parents=True)
    pd.DataFrame([{"run_id": f"r{i}", "case": c, "value": v, "censored": False}
                  for i, (c, v) in enumerate(cases.items())]).to_csv(exp / "runs.csv", index=False)
    (exp / "spec.yaml").write_text("env: {name: deep_sea, size: 20}\n")
    return root / "results"


def report(root, text: str, results_dir):
    """`rvfx report` with the registry `text`: (result, report.md, report.html)."""
    (root / "claims.yaml").write_text(text)
    result = invoke("report", "--claims", root / "claims.yaml", "--results", results_dir, "--out", root / "out")
    if result.exit_code != 0:
        return result, "", ""
    return result, (root / "out" / "report.md").read_text(), (root / "out" / "report.html").read_text()


def section(md: str, cid: str) -> str:
    return md.split(f"### {cid}\n")[1].split("\n### ")[0].split("\n## ")[0]


def amend(**keys) -> dict:
    return {"date": "2001-02-03", "reason": f"reason for {sorted(keys)}", "after": "the test's runs", **keys}


CLAIMS_OF_THE_REPORT = [
    # differs as first committed (3.0 is not about 2), holds once amended to "about 3"
    claim("changed", 3.0, 2, amendments=[amend(rule={"kind": "about", "target": 3})]),
    # holds as first committed and as amended (2.2 is about 2 and at most about 2.5)
    claim("unchanged", 2.2, 2, amendments=[amend(rule={"kind": "at_most", "target": 2.5})]),
    claim("main", 1.0, 1),
    claim("plain_differs", 4.0, 1),
    claim("measured", 1.0, 1, beyond="a measurement the paper does not make"),
    claim("other", 5.0, 1, reading={"of": "main", "why_main": "the paper's own setting"}),
]
VALUES = {"changed": 3.0, "unchanged": 2.2, "main": 1.0, "plain_differs": 4.0, "measured": 1.0, "other": 5.0}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("amendments")
    result, md, page = report(root, registry_text(CLAIMS_OF_THE_REPORT), results(root, VALUES))
    assert result.exit_code == 0, result.output
    return result, md, page, root


def test_an_amended_claim_whose_verdict_changed_shows_both_and_is_listed_once_in_what_changed(made):
    _, md, page, _ = made
    body = section(md, "changed")
    assert re.search(r"^\*\*holds\*\* \(about 3:", body, re.M), body
    assert "As first committed: **differs** (3.00 [3.00, 3.00])" in body and "Rule: about 2:" in body
    assert "- Version 2, 2001-02-03: reason for ['rule'] Made after seeing: the test's runs." in body
    row = next(ln for ln in md.splitlines() if ln.startswith("| [changed](#changed)"))
    assert row.endswith("| **holds** (as first committed: **differs**) | – |")
    changed = md.split("## What changed\n")[1].split("\n## ")[0]
    assert changed.count("- [changed](#changed): **differs** → **holds**; version 2, 2001-02-03: reason for") == 1
    assert changed.count("\n- ") == 1
    assert page.count('<li><a href="#changed">changed</a>: <b class="differs">differs</b> → '
                      '<b class="holds">holds</b>') == 1


def test_an_amended_claim_whose_verdict_did_not_change_shows_both_and_is_not_in_what_changed(made):
    _, md, _, _ = made
    body = section(md, "unchanged")
    assert re.search(r"^\*\*holds\*\* \(at most about 2.5:", body, re.M), body
    assert "As first committed: **holds** (2.20 [2.20, 2.20])" in body
    assert "unchanged" not in md.split("## What changed\n")[1].split("\n## ")[0]


def test_a_claim_beyond_the_paper_is_in_its_section_worded_as_a_measurement_and_not_counted(made):
    _, md, page, _ = made
    beyond = md.split("## Beyond the paper\n")[1].split("\n## ")[0]
    body = section(beyond, "measured")
    assert "Beyond the paper: a measurement the paper does not make." in body
    assert "Measured beyond the paper (rvfx's measurement, not a verdict on the paper): **met** (about 1:" in body
    assert "| rule finds |" in body and "| met: CI [1.00, 1.00] overlaps [0.5, 1.5] |" in body
    assert "**holds**" not in body
    assert md.count("\n### measured\n") == 1 and md.index("\n### measured\n") > md.index("## Beyond the paper\n")
    summary = md.split("## What changed")[0]
    assert "| [main](#main) |" in summary and "[measured](#measured)" not in summary
    assert '<h3 id="measured">measured: <span class="holds">met</span></h3>' in page


def test_another_reading_is_under_its_main_claim_and_not_counted(made):
    _, md, _, _ = made
    main = section(md, "main")
    assert ("Other reading, [other](#other): **differs** (5.00 [5.00, 5.00]). `main` is the main reading: "
            "the paper's own setting.") in main
    assert md.index("### main\n") < md.index("### other\n") < md.index("### plain_differs\n")
    assert "Another reading of the sentence of [main](#main)" in section(md, "other")
    rows = [ln.split(" | ")[0] for ln in md.splitlines() if ln.startswith("| ") and "](#" in ln]
    assert rows[rows.index("| [main](#main)") + 1] == "| ↳ [other](#other), other reading"


def test_the_counts_line_counts_the_papers_claims_only(made):
    result, md, page, _ = made
    line = "4 claims: 3 hold, 1 differ, 0 inconclusive (0 on missing or partial results); " \
           "plus 1 measurement beyond the paper and 1 other reading"
    assert f"**{line}.**" in md and f"<p><b>{line}.</b></p>" in page
    assert result.output.splitlines()[-1] == line


def test_the_glance_table_lists_the_papers_verdicts_and_the_measurements_beyond_it_apart(made):
    """The README's results at a glance: the paper figure's row holds its claims' verdicts and its
    other readings', marked; the measurement beyond the paper is on a line of its own. A README
    block of an amended claim shows its first verdict, without the amendment's date."""
    _, _, _, root = made
    readme = root / "README.md"
    readme.write_text("# r\n\n<!-- glance:begin -->\n<!-- glance:end -->\n\n## Fig. T: the test claims\n\n"
                      "<!-- report:begin changed -->\n<!-- report:end -->\n")
    args = ["report", "--claims", root / "claims.yaml", "--results", root / "results", "--out", root / "out",
            "--readme", readme]
    assert invoke(*args).exit_code == 0
    text = readme.read_text()
    assert ("| Fig. T | the test claims | **holds**: changed, unchanged, main; **differs**: plain_differs; "
            "other readings: **differs**: other | [README](README.md) |") in text
    assert ("\nBeyond the paper (rvfx's own measurements, not verdicts on the paper, not counted): Fig. T, "
            "**met**: measured.\n<!-- glance:end -->") in text
    block = text.split("<!-- report:begin changed -->")[1]
    assert "As first committed: **differs** (3.00 [3.00, 3.00])" in block and "2001" not in block
    assert invoke(*args, "--check").exit_code == 0


def test_the_api_names_each_claims_role_and_first_verdict(made):
    _, _, _, root = made
    table = api.claims(results=root / "results", registry=root / "claims.yaml").set_index("id")
    assert table["role"].to_dict() == {"changed": "paper", "unchanged": "paper", "main": "paper",
                                       "plain_differs": "paper", "measured": "beyond", "other": "reading"}
    assert table.loc["changed", ["verdict", "first_verdict"]].tolist() == ["holds", "differs"]
    assert table.loc["plain_differs", ["verdict", "first_verdict"]].tolist() == ["differs", "differs"]


def test_the_counts_line_says_nothing_more_without_beyond_claims_or_readings(tmp_path):
    result, md, _ = report(tmp_path, registry_text(CLAIMS_OF_THE_REPORT[:4]), results(tmp_path, VALUES))
    assert result.output.splitlines()[-1] == \
        "4 claims: 3 hold, 1 differ, 0 inconclusive (0 on missing or partial results)"
    assert "## Beyond the paper" not in md


def test_what_changed_says_none_without_a_changed_verdict(tmp_path):
    _, md, page = report(tmp_path, registry_text(CLAIMS_OF_THE_REPORT[1:4]), results(tmp_path, VALUES))
    assert "with the last amendment's reason: none." in md.split("## What changed\n")[1].split("\n## ")[0]
    assert "with the last amendment&#x27;s reason: none.</p>" in page


BAD_CLAIM = ("- id: bad\n  figure: deepsea_tabular_scaling\n  paper: p\n  words: w\n  experiment: "
             "deepsea_tabular_scaling\n  statistic: {kind: min, column: value}\n  rule: {kind: about, target: 2}\n")
AMENDED = "  amendments:\n  - date: '2001-02-03'\n    reason: r\n    after: a\n"
ABOUT3 = "    rule: {kind: about, target: 3}\n"
BAD = {
    "unknown key": (AMENDED + "    verdict: holds\n", "    verdict: holds",
                    "claim bad.amendments[0].verdict: unknown key"),
    "missing reason": (AMENDED.replace("    reason: r\n", "") + ABOUT3, "  - date: '2001-02-03'",
                       "claim bad.amendments[0].reason: missing"),
    "missing date": (AMENDED.replace("- date: '2001-02-03'\n    reason", "- reason") + ABOUT3, "  - reason: r",
                     "claim bad.amendments[0].date: missing"),
    "bad date": (AMENDED.replace("2001-02-03", "last week") + ABOUT3, "  - date: 'last week'",
                 "claim bad.amendments[0].date: a date YYYY-MM-DD"),
    "nothing replaced": (AMENDED, "  - date: '2001-02-03'", "claim bad.amendments[0]: replaces none of statistic"),
    "an invalid version": (AMENDED + ABOUT3 + AMENDED.split("\n", 1)[1] + "    rule: {kind: about}\n",
                           "    rule: {kind: about}", "claim bad.amendments[1].rule: rule about takes target"),
    "an order without its group": (AMENDED + "    rule: {kind: order, tiers: [a, b]}\n",
                                   "    rule: {kind: order, tiers: [a, b]}",
                                   "claim bad.amendments[0].rule: group is needed by"),
    "a reading of no claim": ("  reading: {of: nowhere, why_main: w}\n", "  reading: {of: nowhere, why_main: w}",
                              "claim bad.reading.of: names no other claim: 'nowhere'"),
    "a reading of a reading": ("  reading: {of: other, why_main: w}\n", "  reading: {of: other, why_main: w}",
                               "claim bad.reading.of: other is itself a reading (of main)"),
    "a reading without why_main": ("  reading: {of: main}\n", "  reading: {of: main}",
                                   "claim bad.reading: reading: {of: MAIN_ID, why_main:"),
}
"""case: (the keys the claim `bad` adds, as YAML; the line the error names; what it says)."""


@pytest.mark.parametrize("case", BAD)
def test_a_malformed_amendment_or_reading_is_refused_at_its_file_and_line(tmp_path, case):
    keys, at, message = BAD[case]
    text = registry_text(CLAIMS_OF_THE_REPORT, BAD_CLAIM + keys)
    lines = text.splitlines()
    line = lines.index(at, lines.index("- id: bad")) + 1
    result, _, _ = report(tmp_path, text, results(tmp_path, VALUES))
    assert result.exit_code == 2
    assert result.output.splitlines()[-1].startswith(f"error: {tmp_path / 'claims.yaml'}:{line}: {message}"), \
        (result.output, line)


def test_the_same_claim_without_the_bad_keys_is_accepted(tmp_path):
    """The refusals above come from the keys each case adds: the claim alone passes."""
    result, _, _ = report(tmp_path, registry_text(CLAIMS_OF_THE_REPORT, BAD_CLAIM), results(tmp_path, VALUES))
    assert result.exit_code == 0, result.output


# ---------------------------------------------------------------- runs with other settings

def test_a_folder_run_with_set_is_listed_with_the_key_that_differs(tmp_path):
    """Three experiments: one run as its spec says (not listed), one with `--set seeds=2` (listed,
    with the claim that reads it), one whose folder records no spec (listed as such)."""
    out = tmp_path / "results"
    assert invoke("run", "rlsvi_uncertainty", "--out", out).exit_code == 0
    assert invoke("run", "regret_bound_optimism", "--out", out, "--set", "seeds=2").exit_code == 0
    (out / "hand_built").mkdir()
    (out / "hand_built" / "runs.csv").write_text("run_id\nr0\n")
    reads = {"id": "reads_it", "figure": "regret_bound_optimism", "paper": "p", "words": "w",
             "experiment": "regret_bound_optimism", "statistic": {"kind": "fraction", "criterion": "seed >= 0"},
             "rule": {"kind": "most"}}
    text = registry_text([claim("main", 1.0, 1), reads])
    result, md, page = report(tmp_path, text, out)
    assert result.exit_code == 0, result.output
    listed = md.split("## Runs with settings other than the spec's\n")[1].split("\n## ")[0]
    items = [ln for ln in listed.splitlines() if ln.startswith("- ")]
    assert items == ["- `hand_built`: settings not recorded. Read by no claim.",
                     "- `regret_bound_optimism`: `seeds` = 2 (the spec's: 20). Read by [reads_it](#reads_it)."]
    assert "<li><code>regret_bound_optimism</code>: <code>seeds</code> = 2 (the spec's: 20). Read by " \
           '<a href="#reads_it">reads_it</a>.</li>' in page
    assert "rlsvi_uncertainty" not in listed


def test_a_paper_scale_report_with_a_modified_run_says_so_first(tmp_path):
    """A folder recording paper scale but another seed count: when a claim reads it, the report's
    title and first line (and the printed summary's) say that some runs are not the spec's; when
    none does, the title stays paper scale and the first line names the folder's count."""
    out = tmp_path / "results"
    assert invoke("run", "rlsvi_uncertainty", "--out", out, "--scale", "paper", "--set", "seeds=3").exit_code == 0
    result, md, _ = report(tmp_path, registry_text([claim("main", 1.0, 1)]), out)
    assert result.exit_code == 0, result.output
    assert md.splitlines()[0] == "# The paper's claims, tested: paper scale"
    assert "1 other folder ran with other settings" in md.splitlines()[2]
    assert "- `rlsvi_uncertainty`: `seeds` = 3 (the spec's: 20). Read by no claim." in md
    reads = {"id": "reads_it", "figure": "rlsvi_uncertainty", "paper": "p", "words": "w",
             "experiment": "rlsvi_uncertainty", "table": "q_variance", "statistic": POINT | {"column": "variance"},
             "rule": {"kind": "inequality", "op": ">=", "target": 0}}
    result, md, page = report(tmp_path, registry_text([claim("main", 1.0, 1), reads]), out)
    assert result.exit_code == 0, result.output
    first = ("Paper scale, except that 1 experiment ran with settings other than the spec's (listed under "
             "\"Runs with settings other than the spec's\"): the verdicts that read them are not the paper-scale "
             "results.")
    assert md.splitlines()[:3] == ["# The paper's claims, tested: paper scale, with modified runs", "", f"**{first}**"]
    assert "<title>rvfx: the paper's claims, tested: paper scale, with modified runs</title>" in page
    assert result.output.splitlines()[0] == first


def test_a_reading_of_another_figures_runs_is_in_its_main_claims_row():
    """Fig. 7's slopes with M growing with N are read from Fig. 8's sweep (their figure is Fig. 8's):
    in the glance table they are Fig. 7's other readings, Fig. 8's row does not list them, and their
    blocks under Fig. 7's heading on the results page do not label Fig. 8's row."""
    from rvfx.report.claims import evaluate
    from rvfx.report.readme import glance_markdown
    from rvfx.report.registry import load_registry
    registry = load_registry(CLAIMS)
    wanted = {"fig7_slope_about_two", "fig7_slope_m_2n", "fig8_slower_beyond_2n"}
    registry["claims"] = [c for c in registry["claims"] if c["id"] in wanted]
    page = CONFIGS.parent / "docs" / "results" / "linear.md"     # Fig. 7's readings under its heading
    lines = glance_markdown(registry, evaluate(registry, CONFIGS.parent / "figures" / "paper"),
                            {page: page.read_text()}, CONFIGS.parent / "README.md").splitlines()
    rows = {line.split(" | ")[0]: line for line in lines if line.startswith("| Fig.")}
    assert len(rows) == 2                                          # one row labelled each
    assert "other readings:" in rows["| Fig. 7"] and "slope_m_2n" in rows["| Fig. 7"]
    assert "slope_m_2n" not in rows["| Fig. 8"] and "slower_beyond_2n" in rows["| Fig. 8"]


def test_a_modified_folder_no_claim_reads_leaves_the_title_paper_scale_and_is_named_in_the_first_line():
    """A sweep still growing under --set (the bsuite control, read by no claim) does not make the
    claims' report "with modified runs"; one that a claim reads does."""
    from types import SimpleNamespace

    from rvfx.report.render import scale_banner
    from rvfx.report.settings import Modified
    mod = [Modified("unread", (("seeds", 1, 2),))]
    reader = SimpleNamespace(claim={"id": "c", "experiment": "unread"}, first=None)
    other = SimpleNamespace(claim={"id": "d", "experiment": "elsewhere"}, first=None)
    title, first = scale_banner("paper", mod, [other])
    assert title == "paper scale" and "1 other folder ran with other settings" in first
    assert scale_banner("paper", mod, [other, reader])[0] == "paper scale, with modified runs"
    assert scale_banner("paper", [], [other]) == ("paper scale", "Paper scale: every experiment was run at the "
                                                                 "budgets of its spec's paper scale.")

"""claims.yaml is checked by type as a spec is: every field of a claim, of its amendments, of its
figures and of the rules' constants, with bounds on the bootstrap's resamples and the confidence
level; a bad value is refused in one line, `FILE:LINE: key: message`, exit 2, through `rvfx report`
and `rvfx export`; a table or image it names is a file name inside the results folder; and no
mutation of the shipped file ends in a traceback (a fixed-seed fuzz)."""
import copy
import random
import re

import pytest
import yaml
from cli_helpers import CONFIGS, invoke

from rvfx.report.registry import PARAMETERS
from rvfx.report.rules import RULES
from rvfx.report.statistics import STATISTICS

CLAIMS = CONFIGS.parent / "claims.yaml"


def _claim_block(text: str, cid: str) -> tuple[int, int]:
    """(start, end) offsets of the claim `cid` in `text`: from its id line to the next claim or section."""
    start = text.index(f"  - id: {cid}\n")
    end = re.compile(r"^  - id: |^\S|^\s*\n\s*#", re.M).search(text, start + 1)
    return start, end.start() if end else len(text)


def _set_key(text: str, cid: str, key: str, value: str) -> str:
    """The claim's `key` set to the YAML `value`: its line replaced, or a line added after its id."""
    start, end = _claim_block(text, cid)
    found = re.compile(rf"^    {re.escape(key)}: .*\n", re.M).search(text, start, end)
    at = found or re.compile(r"^  - id: .*\n", re.M).match(text, start)
    new = f"    {key}: {value}\n"
    return text[:at.start()] + new + text[at.end():] if found else text[:at.end()] + new + text[at.end():]


def _set_amendment_key(text: str, cid: str, key: str, value: str) -> str:
    """A `key: value` line added to the claim's first amendment, after its date."""
    start, end = _claim_block(text, cid)
    date = re.compile(r"^      - date: .*\n", re.M).search(text, start, end)
    return text[:date.end()] + f"        {key}: {value}\n" + text[date.end():]


def _replace(pattern: str, new: str):
    return lambda text: re.compile(pattern, re.M).sub(new, text, count=1)


FIG5, FIG4 = "fig5_rlsvi_slope", "fig4_order_ucrl2_all_states"
OVERFLOW = '["env.treasure == 99999999999999999999"]'
MUTATIONS = {
    # case: (edit of the shipped text, the changed line's text, key, message)
    "where overflows": (lambda t: _set_key(t, FIG5, "where", OVERFLOW), f"    where: {OVERFLOW}",
                        f"claim {FIG5}.where[0]", "the number at column 17 is beyond a 64-bit column's range"),
    "figure: [a]": (lambda t: _set_key(t, FIG5, "figure", "[a]"), "    figure: [a]", f"claim {FIG5}.figure",
                    "expected text, got ['a']"),
    "statistic.kind: [slope]": (lambda t: _set_key(t, FIG5, "statistic", "{kind: [slope], x: env.size}"),
                                "    statistic: {kind: [slope], x: env.size}", f"claim {FIG5}.statistic.kind",
                                "statistic.kind must be one of"),
    "table: [runs]": (lambda t: _set_key(t, FIG5, "table", "[runs]"), "    table: [runs]", f"claim {FIG5}.table",
                      "a file name inside the results folder: expected a name, got ['runs']"),
    "by: 5": (lambda t: _set_key(t, FIG5, "by", "5"), "    by: 5", f"claim {FIG5}.by",
              "expected a list of column names, got 5"),
    "by: [[agent]]": (lambda t: _set_key(t, FIG5, "by", "[[agent]]"), "    by: [[agent]]", f"claim {FIG5}.by[0]",
                      "expected a column name, got ['agent']"),
    "group: [agent]": (lambda t: _set_key(t, FIG4, "group", "[agent]"), "    group: [agent]", f"claim {FIG4}.group",
                       "expected a column name, got ['agent']"),
    "note: [x]": (lambda t: _set_key(t, FIG5, "note", "[x]"), "    note: [x]", f"claim {FIG5}.note",
                  "expected text, got ['x']"),
    "words: 5": (lambda t: _set_key(t, FIG5, "words", "5"), "    words: 5", f"claim {FIG5}.words",
                 "expected text, got 5"),
    "rules: {}": (_replace(r"^rules:\n(?:  .*\n)+", "rules: {}\n"), "rules: {}", "rules.", "missing"),
    "bootstrap.resamples: 1e15": (_replace(r"resamples: \d+", "resamples: 1e15"), None, "rules.bootstrap.resamples",
                                  "expected an integer, got 1000000000000000.0"),
    "bootstrap.resamples: 20001": (_replace(r"resamples: \d+", "resamples: 20001"), None,
                                   "rules.bootstrap.resamples", "expected an integer in [100, 20000], got 20001"),
    "level: 5": (_replace(r"^  level: .*$", "  level: 5"), "  level: 5", "rules.level",
                 "expected a number in [0.5, 1), got 5"),
    "table: ../../leak": (lambda t: _set_key(t, FIG5, "table", "../../leak"), "    table: ../../leak",
                          f"claim {FIG5}.table", "a file name inside the results folder"),
    "image: /etc/passwd": (_replace(r"image: illustrations_deep_sea\.png", "image: /etc/passwd"), None,
                           "figures.illustrations.image", "a file name inside the results folder"),
    "tables: [../x]": (_replace(r"tables: \[regret_curves\]", "tables: [../x]"), None,
                       "figures.deepsea_ensemble.tables", "a file name inside the results folder"),
    **{f"amendment {key}: {value}": (
        lambda t, key=key, value=value: _set_amendment_key(t, FIG5, key, value), f"        {key}: {value}",
        f"claim {FIG5}.amendments[0].{key}{at}", message)
       for key, value, at, message in (
           ("where", OVERFLOW, "[0]", "the number at column 17 is beyond a 64-bit column's range"),
           ("statistic", "{kind: [slope], x: env.size}", ".kind", "statistic.kind must be one of"),
           ("table", "[runs]", "", "a file name inside the results folder"),
           ("by", "5", "", "expected a list of column names, got 5"),
           ("by", "[[agent]]", "[0]", "expected a column name, got ['agent']"),
           ("group", "[agent]", "", "expected a column name, got ['agent']"),
           ("aggregate", "[all]", "", "expected one of all, any, got ['all']"))},
}


def _line_of(text: str, changed: str | None, before: str) -> int:
    """The line of `changed` in `text` (else the first line that differs from `before`)."""
    lines = text.splitlines()
    if changed is not None:
        return lines.index(changed) + 1
    return next(i + 1 for i, (a, b) in enumerate(zip(lines, before.splitlines())) if a != b)


@pytest.mark.parametrize("case", MUTATIONS)
def test_a_bad_value_is_refused_in_one_line_naming_its_file_line_and_key(tmp_path, case):
    edit, changed, key, message = MUTATIONS[case]
    shipped = CLAIMS.read_text(encoding="utf-8")
    text = edit(shipped)
    assert text != shipped
    path = tmp_path / "claims.yaml"
    path.write_text(text, encoding="utf-8")
    (tmp_path / "results").mkdir()
    result = invoke("report", "--claims", path, "--results", tmp_path / "results", "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {path}:{_line_of(text, changed, shipped)}: {key}"), lines[0]
    assert message in lines[0], lines[0]
    assert not (tmp_path / "out").exists()


def test_a_table_outside_the_results_folder_is_refused_and_export_writes_nothing_outside_out(tmp_path):
    """`table: ../../leak` would read RESULTS/<experiment>/../../leak.csv and write OUT/../leak.csv."""
    text = _set_key(CLAIMS.read_text(encoding="utf-8"), FIG5, "table", "../../leak")
    path = tmp_path / "claims.yaml"
    path.write_text(text, encoding="utf-8")
    results = tmp_path / "work" / "results"
    (results / "deepsea_tabular_scaling").mkdir(parents=True)
    (results / "deepsea_tabular_scaling" / "runs.csv").write_text("run_id,agent\nr0,rlsvi\n")
    (tmp_path / "leak.csv").write_text("run_id,secret\nr0,1\n")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    result = invoke("export", "--claims", path, "--results", results, "--out", tmp_path / "work" / "out")
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"error: {path}:{_line_of(text, '    table: ../../leak', '')}: claim {FIG5}.table: a file name inside the "
        f"results folder: expected a name of letters, digits, '_', '.' and '-', not starting with '.' or '-', "
        f"got '../../leak'"]
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_every_parameter_of_a_statistic_or_rule_has_a_type():
    """A statistic or rule given a new parameter needs its type in registry.PARAMETERS (one line)."""
    named = {p for _, required, optional, _ in STATISTICS.values() for p in required | optional}
    assert named | {p for params in RULES.values() for p in params} <= set(PARAMETERS) - {"kind"}


# ------------------------------------------------------------------------------ the fuzz

VALUES = [0, -1, 1, 5, 0.5, 2000, 10**20, 2**63, 1e15, -1e-300, float("nan"), float("inf"), True, None, "", " ",
          "x", "agent", "runs", "mean", "order", "ascending", "../../leak", "/etc/passwd", "a == 1",
          "agent == 'psrl'", "env.treasure == 99999999999999999999", "final_cum_regret", "<img src=x>", "all",
          "2026-13-45", "2026-01-01", [], [1], ["a"], [[1]], ["agent"], [["agent"]], {}, {"a": 1}, {"kind": "mean"},
          {"agent": "max"}, {"agent": 10**20}, {"kind": "order", "tiers": "ascending"},
          {"kind": "slope", "x": "env.size"}, "exponential", "<=", ">"]
KEYS = ["extra", "kind", "x", "op", "target", "column", "group", "by", "table", "image", "where", "note"]


def _paths(node, prefix=()):
    yield prefix
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield from _paths(value, (*prefix, key))


def _mutated(registry: dict, rng: random.Random, focus: set) -> dict:
    """A copy of `registry` with one value replaced by one of VALUES, a key dropped, or a key added;
    anywhere, or (with `focus`) in the rules or in a claim whose id is in `focus`."""
    reg = copy.deepcopy(registry)
    paths = [p for p in _paths(reg) if len(p) >= 2
             and (not focus or p[0] == "rules" or p[0] == "claims" and reg["claims"][p[1]]["id"] in focus)]
    path = rng.choice(paths)
    parent = reg
    for key in path[:-1]:
        parent = parent[key]
    how = rng.random()
    if how < 0.1 and isinstance(parent, dict):
        del parent[path[-1]]
    elif how < 0.15 and isinstance(parent, dict):
        parent[rng.choice(KEYS)] = copy.deepcopy(rng.choice(VALUES))
    else:
        parent[path[-1]] = copy.deepcopy(rng.choice(VALUES))
    return reg


def test_no_mutation_of_the_shipped_claims_ends_in_a_traceback(tmp_path):
    """200 mutations (seed 0) of the shipped claims.yaml's fields, half of them in the claims that read
    a tiny deep sea run or a computed table (so that what loads is also evaluated on data): each one
    is reported (exit 0), or refused in one line `FILE:LINE: key: message` with exit 2."""
    results = tmp_path / "results"
    assert invoke("run", CONFIGS / "deepsea_tabular.yaml", "--set", "seeds=1", "--set", "episodes=20",
                  "--out", results).exit_code == 0
    shipped = yaml.safe_load(CLAIMS.read_text(encoding="utf-8"))
    focus = {c["id"] for c in shipped["claims"] if c.get("experiment", "deepsea_tabular") == "deepsea_tabular"}
    rng, path, refused = random.Random(0), tmp_path / "claims.yaml", 0
    for i in range(200):
        path.write_text(yaml.dump(_mutated(shipped, rng, focus if i % 2 else set()), Dumper=yaml.CSafeDumper,
                                  allow_unicode=True, sort_keys=False), encoding="utf-8")
        result = invoke("report", "--claims", path, "--results", results, "--out", tmp_path / "out")
        assert result.exit_code in (0, 2), (i, result.output)
        if result.exit_code == 2:
            refused += 1
            assert re.fullmatch(rf"error: {re.escape(str(path))}:\d+: \S.*\n", result.output), (i, result.output)
    assert 50 < refused < 180          # both outcomes are exercised

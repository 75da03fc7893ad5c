"""claims.yaml's conditions: parsed by rvfx.report.grammar and evaluated column by column, never run
as code; a condition that does not parse is refused with its file, line and key (exit 2); every
condition of the committed claims.yaml selects the rows pandas would."""
import re

import numpy as np
import pandas as pd
import pytest
import yaml
from cli_helpers import CONFIGS, invoke

from rvfx.report.grammar import MAX_DEPTH, MAX_LENGTH, ExpressionError, evaluate, parse
from rvfx.report.tables import select

CLAIMS = CONFIGS.parent / "claims.yaml"


def table() -> pd.DataFrame:
    return pd.DataFrame({"a": [True, True, False, False, True], "b": [False, True, True, False, False],
                         "c": [True, False, True, False, False], "x": [1, 2, 3, 4, 5],
                         "agent.M": [2.0, 10.0, 40.0, 0.5, 3.0], "name": ["o'brien", 'say "hi"', "(4, up)", "p", "q"]})


def rows(text: str) -> list:
    df = table()
    return df.index[evaluate(text, df)].tolist()


# ------------------------------------------------------------------------------ the grammar

def test_not_binds_tighter_than_and_which_binds_tighter_than_or():
    df = table()
    a, b, c = df["a"], df["b"], df["c"]
    assert rows("not a or b and c") == df.index[(~a) | (b & c)].tolist() == [2, 3]
    assert rows("(not a or b) and c") == df.index[((~a) | b) & c].tolist() == [2]
    assert rows("not (a or b)") == [3]
    assert rows("a or b and not c") == df.index[a | (b & ~c)].tolist()


def test_arithmetic_binds_tighter_than_comparison_with_the_usual_precedence():
    assert rows("1 + 2 * x == 7") == [2]                    # x = 3, not (1 + 2) * x
    assert rows("(1 + 2) * x == 6") == [1]
    assert rows("x - 2 - 1 == 0") == [2]                    # left to right: (x - 2) - 1
    assert rows("x / 2 / 2 == 1") == [3]
    assert rows("-x * 2 < -6") == [3, 4]
    assert rows("`agent.M` < 2 * x") == [3, 4]              # a backticked (dotted) name
    assert rows("agent.M >= 10") == [1, 2]                  # a dotted name needs no backticks
    assert rows("abs(log10(`agent.M`)) <= 0.5") == [0, 3, 4]   # log10 of 2, 0.5, 3: 0.30, -0.30, 0.48


def test_in_lists_of_strings_numbers_and_negatives():
    assert rows("name in ['p', 'q']") == [3, 4]
    assert rows("name not in ['p', 'q']") == [0, 1, 2]
    assert rows("not name in ['p', 'q',]") == [0, 1, 2]      # a trailing comma
    assert rows("x - 3 in [-2, 0, 2.0]") == [0, 2, 4]
    assert rows("a in [True]") == [0, 1, 4]


def test_strings_with_quotes_inside_them():
    assert rows("name == \"o'brien\"") == [0]
    assert rows("name == 'o\\'brien'") == [0]
    assert rows("name == 'say \"hi\"'") == [1]
    assert rows('name == "say \\"hi\\""') == [1]
    assert rows("name == '(4, up)'") == [2]
    assert rows("name == 'p' or name == \"q\"") == [3, 4]


def test_a_bare_true_false_column_and_literals_are_conditions():
    assert rows("a") == [0, 1, 4]
    assert rows("True") == [0, 1, 2, 3, 4] and rows("False") == []
    assert rows("x == 2.0") == [1]


def test_an_unknown_column_is_named():
    with pytest.raises(KeyError, match="'nope'"):
        evaluate("x > 1 and nope == 2", table())
    with pytest.raises(KeyError, match="'x.__class__'"):       # a dotted name is a column name, nothing more
        evaluate("x.__class__ == 1", table())


@pytest.mark.parametrize("text,message", [
    ("@np.lib._datasource.os.system('touch x')", "unexpected '@' at column 1"),
    ("__import__('os').system('x')", "unexpected '.' at column 17"),
    ("__import__('os')", "unknown function '__import__' at column 1"),
    ("name.upper() == 'P'", "unknown function 'name.upper' at column 1"),
    ("x[0] == 1", "unexpected '[' at column 2"),
    ("lambda: 1", "unexpected ':' at column 7"),
    ("x == 1; import os", "unexpected ';' at column 7"),
    ("x = 1", "unexpected '=' at column 3"),
    ("x == 'open", "unexpected \"'\" at column 6"),
    ("x == 1 ==", "a chained comparison at column 8"),
    ("1 < x < 3", "a chained comparison at column 7"),
    ("x in [y]", "a list holds strings, numbers, True or False; got 'y' at column 7"),
    ("x in ['a' 'b']", "expected ',' at column 11"),
    ("x not 3", "expected 'in' after 'not' at column 3"),
    ("(x == 1", "expected ')' at column 8"),
    ("x ==", "unexpected end of the condition"),
    ("x * 2", "not a condition"),
    ("'text'", "not a condition"),
    ("", "a condition is a non-empty string"),
    ("x == 1\nor x == 2", "a condition is one line of printable characters"),
])
def test_what_is_not_the_grammar_is_refused_and_says_where(text, message):
    with pytest.raises(ExpressionError, match="^" + re.escape(message)):
        parse(text)


def test_too_deep_and_too_long_are_refused():
    ok = "(" * MAX_DEPTH + "x == 1" + ")" * MAX_DEPTH
    assert rows(ok) == [0]
    for deep in ("(" * (MAX_DEPTH + 1) + "x == 1" + ")" * (MAX_DEPTH + 1), "not " * (MAX_DEPTH + 1) + "a",
                 "-" * (MAX_DEPTH + 1) + "x < 0", " + ".join(["x"] * (MAX_DEPTH + 1)) + " > 0",
                 "abs(" * MAX_DEPTH + "x" + ")" * MAX_DEPTH + " > 0"):
        with pytest.raises(ExpressionError, match=f"^nested more than {MAX_DEPTH} deep$"):
            parse(deep)
    for long in ("1+" * 1200 + "1 > 0", "-" * 100_000 + "x > 0", "x == '" + "y" * MAX_LENGTH + "'"):
        with pytest.raises(ExpressionError, match=f"^longer than {MAX_LENGTH} characters"):
            parse(long)


def test_operations_on_the_wrong_kind_of_column_are_refused_not_coerced():
    df = table()
    for text, message in (("name * 2 == 'pp'", "\\* needs numbers, got a column of"),
                          ("x and a", "and needs true/false values, got a column of int64"),
                          ("not x", "not needs true/false values"),
                          ("x", "a condition needs true/false values, got a column of int64"),
                          ("name < 3", "cannot compare with <")):
        with pytest.raises(ExpressionError, match=message):
            evaluate(text, df)


def test_every_condition_of_the_committed_claims_selects_the_rows_pandas_would():
    """The grammar reads claims.yaml as pandas did: on a table holding every column they name, each
    condition (trusted text here) picks the same rows as DataFrame.query / DataFrame.eval."""
    reg = yaml.safe_load(CLAIMS.read_text())
    texts = set()
    for c in reg["claims"]:
        texts |= {w for w in c.get("where", []) if isinstance(w, str)}
        texts |= {v for k, v in {**c["statistic"], **c["rule"]}.items()
                  if k in ("criterion", "numerator", "reference", "candidates", "set") and isinstance(v, str)}
    rng = np.random.default_rng(0)
    n = 400
    agents = sorted({q for text in texts for q in re.findall(r"'([^']*)'", text)})
    df = pd.DataFrame({
        "agent": rng.choice(agents, n), "h": rng.integers(0, 4, n), "learnt": rng.random(n) < 0.5,
        "final_return": rng.choice([-1.0, -0.5, -0.25, 0.0, 150.0], n),
        "env.treasure": rng.random(n) < 0.5, "env.reward_noise": rng.choice([0, 1, 0.5], n),
        "env.size": rng.choice([5, 10, 20], n), "agent.M": rng.choice([5, 10, 20, 40, 80], n),
        "agent.psi": rng.choice([0.0, 1e-6, 1e-3, 0.1], n), "agent.lam": rng.choice([0.01, 1, 100, 1e4], n),
        "agent.v": rng.choice([1e-3, 0.01, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0], n),
        "agent.K": rng.choice([1, 5, 10, 20, 40], n),
        "final_cum_regret": rng.choice([10.0, 98.0, 99.5], n), "episodes_run": 100})
    assert len(texts) >= 25
    for text in sorted(texts):
        expected = df.query(text) if text != "learnt" else df[df.eval(text).eq(True)]
        got = select(df, text)
        assert got.equals(expected), text
        assert 0 < len(got) < n or text.startswith("`agent.psi` > 0"), text   # the table can tell them apart


# ------------------------------------------------------------------------------ through the CLI

def _claims_with(tmp_path, old: str, new: str):
    """The committed claims.yaml with the first `old` replaced by `new`: (path, line of the change)."""
    text = CLAIMS.read_text()
    at = text.index(old)
    path = tmp_path / "claims.yaml"
    path.write_text(text[:at] + new + text[at + len(old):])
    return path, text[:at].count("\n") + 1


def _report(tmp_path, claims):
    """`rvfx report` with CLAIMS on results holding a small table for each experiment a payload is put
    in, so that a claims file read as code would reach it."""
    runs = pd.DataFrame([{"run_id": f"r{i}", "agent": a, "seed": i, "env.size": n, "agent.v": v, "agent.lam": 100,
                          "env.reward_noise": 0, "agent.psi": 0.0, "agent.M": 2 * n, "censored": False,
                          "learning_time": 10 * n, "final_cum_regret": 5.0 * n}
                         for i, (a, n, v) in enumerate((a, n, v) for a in ("rlsvi", "grlsvi", "pure_exploitation")
                                                       for n in (3, 4) for v in (0.01, 1.0))])
    for exp in ("deepsea_tabular_scaling", "exploration_table", "deepsea_tuning", "deepsea_misspecified"):
        (tmp_path / "results" / exp).mkdir(parents=True, exist_ok=True)
        runs.to_csv(tmp_path / "results" / exp / "runs.csv", index=False)
        (tmp_path / "results" / exp / "spec.yaml").write_text("env: {name: deep_sea}\n")
    return invoke("report", "--claims", claims, "--results", tmp_path / "results", "--out", tmp_path / "out")


@pytest.mark.parametrize("old,new,key", [
    ("""where: ["agent == 'rlsvi'"]""", """where: ["@np.lib._datasource.os.system('touch {marker}')"]""",
     "claim fig5_rlsvi_slope.where[0]: unexpected '@' at column 1"),
    ("criterion: learnt}", """criterion: "@np.lib._datasource.os.system('touch {marker}') == 0"}""",
     "claim table1_pure_exploitation.statistic.criterion: unexpected '@' at column 1"),
    ("criterion: learnt}", """criterion: "__import__('os').system('touch {marker}')"}""",
     "claim table1_pure_exploitation.statistic.criterion: unexpected '.' at column 17"),
    ("""set: "`agent.v` <= 0.01\"""", """set: "`agent.v` <= 0.01 or @pd.io.common.os.system('touch {marker}')\"""",
     "claim fig11_low_v_best_deterministic.rule.set: unexpected '@' at column 22"),
    ("""reference: "`agent.psi` == 0\"""",
     """reference: "`agent.psi`.__class__.__init__.__globals__['os'].system('touch {marker}')\"""",
     "claim fig9_m_2n_irrespective_of_psi.statistic.reference: unexpected '.' at column 12"),
])
def test_a_payload_in_claims_yaml_does_not_run_and_is_refused_at_its_line(tmp_path, old, new, key):
    marker = tmp_path / "payload_ran"
    claims, line = _claims_with(tmp_path, old, new.replace("{marker}", str(marker)))
    result = _report(tmp_path, claims)
    assert not marker.exists()
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {claims}:{line}: {key}"), result.output
    assert not (tmp_path / "out").exists()


def test_a_too_deep_too_long_or_non_text_condition_is_refused_in_one_line(tmp_path):
    for new, message in (('where: ["' + "(" * 30 + "agent == 'rlsvi'" + ")" * 30 + '"]', "nested more than 20 deep"),
                         ('where: ["' + "-" * 100_000 + '1 < 0"]', "longer than 300 characters (100,005)"),
                         ("where: [3]", "a condition is a non-empty string"),
                         ("where: [[agent, rlsvi]]", "a condition is a non-empty string")):
        claims, line = _claims_with(tmp_path, """where: ["agent == 'rlsvi'"]""", new)
        result = _report(tmp_path, claims)
        assert result.exit_code == 2
        lines = result.output.splitlines()
        assert len(lines) == 1 and len(lines[0]) < 500, result.output[:500]
        assert lines[0].startswith(f"error: {claims}:{line}: claim fig5_rlsvi_slope.where[0]: {message}"), lines


def test_a_malformed_claim_is_named_with_its_line(tmp_path):
    claims, line = _claims_with(tmp_path, "rule: {kind: about, target: 5}", "rule: {kind: roughly, target: 5}")
    result = _report(tmp_path, claims)
    assert result.exit_code == 2
    assert result.output.strip() == (f"error: {claims}:{line}: claim fig5_rlsvi_slope.rule.kind: rule.kind must be one "
                                     f"of about, nearest, below, at_most, at_least, inequality, sign, order, best_in, "
                                     f"most, few")
    claims, line = _claims_with(tmp_path, "  - id: fig5_rlsvi_slope\n",
                                "  - id: fig5_rlsvi_slope\n    verdict: holds\n")
    result = _report(tmp_path, claims)
    assert result.output.strip() == f"error: {claims}:{line + 1}: claim fig5_rlsvi_slope: unknown keys verdict"


def test_an_unknown_column_makes_the_claim_inconclusive_and_names_it(tmp_path):
    from rvfx.report.claims import evaluate_claim
    exp = tmp_path / "exp"
    exp.mkdir()
    pd.DataFrame({"run_id": ["r0", "r1"], "agent": ["a", "b"], "censored": [False, True]}).to_csv(
        exp / "runs.csv", index=False)
    (exp / "spec.yaml").write_text("env: {name: deep_sea, size: 20}\n")
    rules = yaml.safe_load(CLAIMS.read_text())["rules"]
    claim = {"id": "t", "figure": "f", "paper": "p", "words": "w", "experiment": "exp",
             "statistic": {"kind": "fraction", "criterion": "learnt"}, "rule": {"kind": "most"}}
    for where, problem in ((["agnet == 'a'"], "missing: exp/runs has no column 'agnet'"),
                           (["agent < 3"], "not computable on exp/runs: cannot compare with <")):
        out = evaluate_claim({**claim, "where": where}, rules, tmp_path)
        assert out.verdict == "inconclusive" and out.problem.startswith(problem), out.problem
    out = evaluate_claim({**claim, "statistic": {"kind": "fraction", "criterion": "lernt"}}, rules, tmp_path)
    assert out.verdict == "inconclusive" and out.problem == "missing: exp/runs has no column 'lernt'"

"""claims.yaml read and checked as a spec is (load_registry): every registered figure mapped, every
paper figure claimed, every claim complete, naming a table, statistic and rule that tables, statistics
and rules know, and every condition parsed by the grammar; every version of an amended claim (versions)
checked as a claim is, and every other reading naming its main claim; RegistryError says
`FILE:LINE: key: what`."""
from __future__ import annotations

import datetime
import re

from rvfx.experiment import yaml_lines
from rvfx.experiment.params import SpecError
from rvfx.figures import FIGURES
from rvfx.report.grammar import MAX_LENGTH, ExpressionError, parse
from rvfx.report.rules import GROUP_RULES, RULE_OPS, RULES
from rvfx.report.statistics import STATISTICS
from rvfx.report.tables import COMPUTED


class RegistryError(ValueError):
    """claims.yaml is malformed; the message names the claim or figure and the field."""


CLAIM_REQUIRED = {"id", "figure", "paper", "words", "statistic", "rule"}
CLAIM_OPTIONAL = {"experiment", "table", "where", "by", "group", "aggregate", "note", "amendments", "beyond",
                  "reading"}
EVALUATIVE = ("statistic", "rule", "where", "by", "group", "aggregate", "table", "experiment")
"""The keys of a claim that decide its verdict: those an amendment may replace."""
AMENDMENT_REQUIRED = ("date", "reason", "after")
CONDITIONS = {"statistic": ("criterion", "numerator", "reference", "candidates"), "rule": ("set",)}
"""Where a claim holds conditions besides `where`: a criterion, or a filter (a condition or {column: ...})."""


def _failer(path, lines: dict):
    """fail(key, message, at): raise RegistryError `path:LINE: key: message`, LINE that of the yaml
    key path `at` (or the nearest enclosing one)."""
    def fail(key: str, message: str, at: str = ""):
        while at and at not in lines:
            at = re.sub(r"(\.[^.\[\]]*|\[\d+\])$", "", at)
        raise RegistryError(str(SpecError(key, message, file=str(path), line=lines.get(at) or 1)))
    return fail


def load_registry(path) -> dict:
    """Read and check claims.yaml: every registered figure mapped, every paper figure claimed, every
    claim complete and consistent with its figure, statistic and rule."""
    try:
        reg, lines = yaml_lines.load(str(path))
    except SpecError as err:
        raise RegistryError(str(err)) from None
    fail = _failer(path, lines)
    if not isinstance(reg, dict) or set(reg) != {"rules", "figures", "claims"}:
        fail("", "needs exactly the keys rules, figures, claims")
    figures = reg["figures"]
    if not isinstance(figures, dict) or not isinstance(reg["claims"], list):
        fail("", "figures is a mapping and claims a list", "figures" if not isinstance(figures, dict) else "claims")
    for fig_id, entry in figures.items():
        key = f"figures.{fig_id}"
        if fig_id not in FIGURES:
            fail(key, "no registered figure of that id", key)
        if not isinstance(entry, dict) or len({"paper", "own", "diagram"} & set(entry)) != 1 \
                or set(entry) - {"paper", "own", "diagram", "image", "tables"}:
            fail(key, "give exactly one of paper (its label), diagram (the labels of paper figures that state "
                      "nothing to test) or own (why)", key)
        tables = entry.get("tables", [])
        if not isinstance(tables, list) or not all(isinstance(t, str) and t for t in tables):
            fail(f"{key}.tables", "a list of table names", f"{key}.tables")
    unmapped = sorted(set(FIGURES) - set(figures))
    if unmapped:
        fail("", f"registered figures missing from figures: {', '.join(unmapped)}", "figures")
    seen = set()
    for i, claim in enumerate(reg["claims"]):
        _check_claim(claim, figures, seen, _claim_failer(fail, i, claim))
        seen.add(claim["id"])
    _check_readings(reg["claims"], fail)
    claimed = {c["figure"] for c in reg["claims"]}
    unclaimed = [f for f, e in figures.items() if "paper" in e and f not in claimed]
    if unclaimed:
        fail("", f"paper figures without a claim: {', '.join(unclaimed)}", "claims")
    return reg


def _claim_failer(fail, i: int, claim):
    """fail(key, message, at) for the i-th claim: the key is written `claim ID.key`, its line that of
    claims[i].key (or `at`, a key of the claim)."""
    cid = claim.get("id", "?") if isinstance(claim, dict) else "?"

    def fail_claim(key: str, message: str, at: str = ""):
        fail(f"claim {cid}" + (f".{key}" if key else ""), message,
             f"claims[{i}]" + (f".{at or key}" if at or key else ""))
    return fail_claim


def versions(claim: dict) -> list:
    """The claim as first committed (version 1) and each amended version, in order: the version
    before it with the amendment's keys (its evaluative keys and the paper's words) replacing
    theirs, whole, a key given as null dropped. Every version keeps the claim's other keys."""
    found = [claim]
    for amendment in claim.get("amendments", []):
        changed = {k: v for k, v in amendment.items() if k in EVALUATIVE or k == "words"}
        found.append({k: v for k, v in {**found[-1], **changed}.items() if v is not None})
    return found


def _check_claim(claim: dict, figures: dict, seen: set, fail) -> None:
    """Check one claim and each of its versions; fail(key, message) names the key of the claim (its
    line from the yaml), and amendments[i].key for the version the i-th amendment makes."""
    if not isinstance(claim, dict) or CLAIM_REQUIRED - set(claim):
        fail("", f"needs {', '.join(sorted(CLAIM_REQUIRED))}")
    unknown = set(claim) - CLAIM_REQUIRED - CLAIM_OPTIONAL
    if unknown:
        fail("", f"unknown keys {', '.join(sorted(unknown))}", sorted(unknown)[0])
    cid = claim["id"]
    if not isinstance(cid, str) or not re.fullmatch(r"[a-z0-9_]+", cid) or cid in seen:
        fail("id", "ids are unique and made of a-z, 0-9 and _")
    if "beyond" in claim and not _text(claim["beyond"]):
        fail("beyond", "says in words what rvfx measures here that the paper does not claim")
    reading = claim.get("reading")
    if "reading" in claim and (not isinstance(reading, dict) or set(reading) != {"of", "why_main"}
                               or not all(map(_text, reading.values()))):
        fail("reading", "reading: {of: MAIN_ID, why_main: why MAIN_ID's reading is the main one}")
    _check_version(claim, figures, fail)
    amendments = claim.get("amendments")
    if "amendments" in claim and (not isinstance(amendments, list) or not amendments):
        fail("amendments", "a list of amendments (versions 2, 3, ...), each a mapping")
    for i, amendment in enumerate(claim.get("amendments", [])):
        _check_amendment(amendment, _amendment_failer(fail, i))
    for i, version in enumerate(versions(claim)[1:]):
        _check_version(version, figures, _amendment_failer(fail, i))


def _amendment_failer(fail, i: int):
    """fail(key, message, at) for the version the i-th amendment makes: keys written amendments[i].key."""
    def fail_amendment(key: str, message: str, at: str = ""):
        fail(f"amendments[{i}]" + (f".{key}" if key else ""), message,
             f"amendments[{i}]" + (f".{at or key}" if at or key else ""))
    return fail_amendment


def _text(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _check_amendment(amendment, fail) -> None:
    """An amendment gives its date, reason and the data it was made after, may re-quote the paper's
    words, and replaces one or more evaluative keys; fail(key, message) names its key."""
    if not isinstance(amendment, dict):
        fail("", "an amendment is a mapping of date, reason, after and the keys it replaces")
    missing = [k for k in AMENDMENT_REQUIRED if k not in amendment]
    if missing:
        fail(missing[0], f"missing: an amendment gives {', '.join(AMENDMENT_REQUIRED)}")
    unknown = sorted(set(amendment) - set(AMENDMENT_REQUIRED) - set(EVALUATIVE) - {"words"})
    if unknown:
        fail(unknown[0], f"unknown key; an amendment gives {', '.join(AMENDMENT_REQUIRED)}, optionally words, "
                         f"and replaces some of {', '.join(EVALUATIVE)}")
    date = amendment["date"]
    if not isinstance(date, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date) or not _is_date(date):
        fail("date", f"a date YYYY-MM-DD, got {date!r}")
    for key in ("reason", "after", "words"):
        if key in amendment and not _text(amendment[key]):
            fail(key, "text: " + {"reason": "why the claim changed", "after": "the data it was changed after seeing",
                                  "words": "the paper's sentence"}[key])
    if not set(EVALUATIVE) & set(amendment):
        fail("", f"replaces none of {', '.join(EVALUATIVE)}: an amendment changes how the claim is tested")


def _is_date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _check_version(claim: dict, figures: dict, fail) -> None:
    """The keys of one version that decide its verdict: a figure, an experiment of it (or a computed
    table), a statistic and rule that statistics and rules know, and conditions that parse."""
    if claim["figure"] not in figures:
        fail("figure", f"figure {claim['figure']!r} is not in figures")
    experiments = FIGURES[claim["figure"]].experiments
    if "experiment" in claim and claim["experiment"] not in experiments:
        fail("experiment", f"figure {claim['figure']} reads {list(experiments)}, not {claim['experiment']!r}")
    if "experiment" not in claim and claim.get("table") not in COMPUTED:
        fail("table", f"without an experiment, table must be one of {', '.join(COMPUTED)}")
    if "statistic" not in claim or "rule" not in claim:
        fail("statistic" if "statistic" not in claim else "rule", "every version has a statistic and a rule")
    stat, rule = claim["statistic"], claim["rule"]
    if not isinstance(stat, dict) or stat.get("kind") not in STATISTICS:
        fail("statistic.kind", f"statistic.kind must be one of {', '.join(STATISTICS)}")
    _, required, optional, _ = STATISTICS[stat["kind"]]
    if required - set(stat) or set(stat) - required - optional - {"kind"}:
        fail("statistic", f"statistic {stat['kind']} takes {', '.join(sorted(required)) or 'nothing'}"
                          + (f" and optionally {', '.join(sorted(optional))}" if optional else ""))
    if not isinstance(rule, dict) or rule.get("kind") not in RULES:
        fail("rule.kind", f"rule.kind must be one of {', '.join(RULES)}")
    if set(rule) - {"kind"} != RULES[rule["kind"]]:
        fail("rule", f"rule {rule['kind']} takes {', '.join(sorted(RULES[rule['kind']])) or 'nothing'}")
    if (rule["kind"] in GROUP_RULES) != ("group" in claim):
        fail("group" if "group" in claim else "rule",
             f"group is needed by, and only by, the rules {', '.join(sorted(GROUP_RULES))}")
    if rule["kind"] in RULE_OPS and rule["op"] not in RULE_OPS[rule["kind"]]:
        fail("rule.op", f"rule.op must be {' or '.join(RULE_OPS[rule['kind']])}")
    if claim.get("aggregate", "all") not in ("all", "any"):
        fail("aggregate", "aggregate must be all or any")
    _check_conditions(claim, fail)


def _check_readings(claims: list, fail) -> None:
    """An other reading names, by `of`, an existing claim that is not itself a reading (it may read
    another figure's runs: Fig. 7's slope with M growing with N, from Fig. 8's sweep); it is shown
    with that claim, so it does not say `beyond` itself."""
    by_id = {c["id"]: c for c in claims}
    for i, claim in enumerate(claims):
        if "reading" not in claim:
            continue
        fail_claim = _claim_failer(fail, i, claim)
        main = by_id.get(claim["reading"]["of"])
        if main is None or main is claim:
            fail_claim("reading.of", f"names no other claim: {claim['reading']['of']!r}")
        if "reading" in main:
            fail_claim("reading.of", f"{main['id']} is itself a reading (of {main['reading']['of']}); "
                                     f"name the main claim")
        if "beyond" in claim:
            fail_claim("beyond", "a reading is shown with its main claim: say beyond on the main claim")


def _check_conditions(claim: dict, fail) -> None:
    """Every condition of the claim parses (`where`'s entries, a criterion, a filter); a filter may
    also be {column: min | max | value}."""
    where = claim.get("where", [])
    found = [(f"where[{i}]", w) for i, w in enumerate(where)] if isinstance(where, list) else [("where", where)]
    for part, keys in CONDITIONS.items():
        found += [(f"{part}.{k}", claim[part][k]) for k in keys if k in claim[part]]
    for key, condition in found:
        if isinstance(condition, dict) and key != "statistic.criterion":
            if not condition or not all(isinstance(c, str) and (isinstance(v, (int, float, str)) or v is None)
                                        for c, v in condition.items()):
                fail(key, "a filter {column: min | max | value} names columns and gives plain values")
            continue
        try:
            parse(condition)
        except ExpressionError as err:
            shown = f": {condition!r}" if isinstance(condition, str) and len(condition) <= MAX_LENGTH else ""
            fail(key, f"{err}{shown}")

"""claims.yaml read and checked as a spec is (load_registry): every value of the right type and
within its bounds (the FIELDS tables below: a new field is one line there), every registered figure
mapped, every paper figure claimed, every claim complete, naming a table, statistic and rule that
tables, statistics and rules know, and every condition parsed by the grammar; every version of an
amended claim (versions) checked as a claim is, and every other reading naming its main claim;
RegistryError says `FILE:LINE: key: what`. A table or image claims.yaml names is a file name inside
the results folder, checked as a spec's labels are (no '/', no '..')."""
from __future__ import annotations

import datetime
import math
import re

from rvfx.experiment import yaml_lines
from rvfx.experiment.params import SpecError, did_you_mean, name_problem
from rvfx.figures import FIGURES
from rvfx.report.grammar import MAX_LENGTH, ExpressionError, parse
from rvfx.report.rules import GROUP_RULES, RULE_OPS, RULES
from rvfx.report.statistics import STATISTICS
from rvfx.report.tables import COMPUTED


class RegistryError(ValueError):
    """claims.yaml is malformed; the message names the claim or figure and the field."""


# ---- the types of claims.yaml's values: a check raises Invalid (what is wrong, and where below) ----

class Invalid(ValueError):
    """A value of the wrong type or out of bounds: `message`, at `at` below the checked key ("[2]")."""

    def __init__(self, message: str, at: str = ""):
        super().__init__(message)
        self.message, self.at = message, at


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _text(value) -> None:
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"expected text, got {_shown(value)}")


def _name(value) -> None:
    """A file name inside the results folder (a table, an image), checked as a spec's labels are."""
    problem = name_problem(value)
    if problem:
        raise Invalid(f"a file name inside the results folder: {problem}")


def _column(value) -> None:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_LENGTH or not value.isprintable():
        raise Invalid(f"expected a column name, got {_shown(value)}")


def _columns(value) -> None:
    if not isinstance(value, list):
        raise Invalid(f"expected a list of column names, got {_shown(value)}")
    for i, item in enumerate(value):
        try:
            _column(item)
        except Invalid as bad:
            raise Invalid(bad.message, f"[{i}]") from None


def _scalar(value) -> None:
    """A value a column is compared with: text, true/false, or a number a table's column can hold."""
    if isinstance(value, float) and not math.isfinite(value) or \
            isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**63:
        raise Invalid(f"a number beyond a 64-bit column's range, got {_shown(value)}")
    if not isinstance(value, (str, int, float)):
        raise Invalid(f"expected text, a number, true or false, got {_shown(value)}")


def _number(low=None, high=None, integer=False, above=False, below=False):
    """A finite number (an integer with `integer`) in [low, high]; `above`/`below` exclude the ends."""
    def check(value) -> None:
        kind = "an integer" if integer else "a number"
        if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)) or \
                not math.isfinite(value):
            raise Invalid(f"expected {kind}, got {_shown(value)}")
        if low is not None and (value <= low if above else value < low) or \
                high is not None and (value >= high if below else value > high):
            ends = f"{'(' if above else '['}{low if low is not None else '-inf'}, " \
                   f"{high if high is not None else 'inf'}{')' if below else ']'}"
            raise Invalid(f"expected {kind} in {ends}, got {_shown(value)}")
    return check


def _one_of(*options):
    def check(value) -> None:
        if not isinstance(value, str) or value not in options:
            raise Invalid(f"expected one of {', '.join(options)}, got {_shown(value)}")
    return check


def _condition(value) -> None:
    try:
        parse(value)
    except ExpressionError as err:
        shown = f": {value!r}" if isinstance(value, str) and len(value) <= MAX_LENGTH else ""
        raise Invalid(f"{err}{shown}") from None


def _filter(value) -> None:
    """A condition, or {column: min | max | value} (the rows where the column is that)."""
    if not isinstance(value, dict):
        return _condition(value)
    if not value or not all(isinstance(c, str) and c and (v is None or _is_scalar(v)) for c, v in value.items()):
        raise Invalid("a filter {column: min | max | value} names columns and gives plain values")


def _is_scalar(value) -> bool:
    try:
        _scalar(value)
    except Invalid:
        return False
    return True


def _filters(value) -> None:
    """`where`: a filter, or a list of them (all must hold)."""
    for i, item in enumerate(value if isinstance(value, list) else [value]):
        try:
            _filter(item)
        except Invalid as bad:
            raise Invalid(bad.message, f"[{i}]" if isinstance(value, list) else "") from None


def _tiers(value) -> None:
    """An order's tiers: ascending, or a list of levels, a tier of several levels as a list."""
    if value == "ascending":
        return
    if not isinstance(value, list) or not value:
        raise Invalid(f"expected ascending or a list of tiers, got {_shown(value)}")
    for i, tier in enumerate(value):
        for level in tier if isinstance(tier, list) and tier else [tier]:
            if not _is_scalar(level):
                raise Invalid(f"a tier is a level (text, a number, true or false) or a list of them, "
                              f"got {_shown(tier)}", f"[{i}]")


def _mapping(value) -> None:
    if not isinstance(value, dict):
        raise Invalid(f"expected a mapping, got {_shown(value)}")


CLAIM_ID = re.compile(r"[a-z0-9_]+")
FRACTION = _number(0, 1)
RULE_CONSTANTS = {
    "level": _number(0.5, 1, below=True),
    "bootstrap.resamples": _number(100, 20_000, integer=True),
    "bootstrap.seed": _number(0, 2**63 - 1, integer=True),
    "about.half_width": _number(0, 100, above=True),
    "about.max_ci_width": _number(0, 100, above=True),
    "nearest.half_width": _number(0, 100, above=True),
    "below.margin": _number(0, 100),
    "at_most.margin": _number(0, 100),
    "at_least.margin": _number(0, 100),
    "tolerance": _number(0, 1e-3),
    "minimum_sizes": _number(2, 100, integer=True),
    **{f"minimum_runs.{kind}": _number(1, 1000, integer=True) for kind in STATISTICS},
    "most.at_least": FRACTION,
    "most.excludes_few_above": FRACTION,
    "few.at_most": FRACTION,
    "few.excludes_most_below": FRACTION,
}
"""rules: the constants of the verdict rules, every one required: the confidence level of every
interval, the bootstrap's resamples (their indices take resamples x runs x 8 bytes) and seed, the
bands and margins on a statistic's scale (an exponent, or log2 of a ratio: at most 100), the
comparisons' tolerance, and the runs per group (and sizes of a fit) each statistic kind needs."""
FIGURE_FIELDS = {"paper": _text, "own": _text, "diagram": _text, "image": _name, "tables": None}
"""figures.<id>: one of paper, own or diagram; its PNG's name; the tables kept with it (names)."""
CLAIM_FIELDS = {
    "id": None, "figure": _text, "paper": _text, "words": _text, "experiment": _name, "table": _name,
    "where": _filters, "by": _columns, "group": _column, "aggregate": _one_of("all", "any"), "note": _text,
    "statistic": _mapping, "rule": _mapping, "amendments": None, "beyond": _text, "reading": None,
    "also_experiment": _name, "contrast": None,
}
"""A claim's keys and the type of each (None: checked on its own below)."""
CLAIM_REQUIRED = {"id", "figure", "paper", "words", "statistic", "rule"}
PARAMETERS = {
    "kind": None, "column": _column, "strata": _column, "criterion": _condition, "x": _column,
    "growth": _one_of("exponential"), "compare": _column, "a": _scalar, "b": _scalar, "numerator": _filter,
    "reference": _filter, "candidates": _filter, "over": _column,
    "target": _number(-1e9, 1e9), "op": _text, "tiers": _tiers, "set": _filter,
}
"""The type of each parameter of a statistic (STATISTICS) and of a rule (RULES)."""
EVALUATIVE = ("statistic", "rule", "where", "by", "group", "aggregate", "table", "experiment", "also_experiment")
"""The keys of a claim that decide its verdict: those an amendment may replace."""
AMENDMENT_REQUIRED = ("date", "reason", "after")
AMENDMENT_FIELDS = {"date": None, "reason": _text, "after": _text, "words": _text,
                    **{k: CLAIM_FIELDS[k] for k in EVALUATIVE}}
LOG2 = {kind for kind, (*_, scale) in STATISTICS.items() if scale == "log2"}
CONTRAST_FIELDS = {"why": _text, **{k: CLAIM_FIELDS[k] for k in ("where", "by", "aggregate", "table", "experiment",
                                                                  "also_experiment", "statistic")}}
"""A contrast (a negative control): why the paper contrasts the claim with it, and the keys that select
its data in place of the claim's (null drops one); `statistic` only to name other runs inside it."""
EXPERIMENTS = {e for figure in FIGURES.values() for e in figure.experiments}


def _check_fields(mapping: dict, types: dict, fail, prefix: str = "", nullable: bool = False) -> None:
    """Each key of `mapping` that `types` gives a type checked (null passes where `nullable`: an
    amendment's null drops a key); fail(key, message) names the first bad one, `prefix` before it."""
    for key, value in mapping.items():
        if types.get(key) is None or (nullable and value is None):
            continue
        try:
            types[key](value)
        except Invalid as bad:
            fail(f"{prefix}{key}{bad.at}", bad.message)


def _failer(path, lines: dict):
    """fail(key, message, at): raise RegistryError `path:LINE: key: message`, LINE that of the yaml
    key path `at` (or the nearest enclosing one)."""
    def fail(key: str, message: str, at: str = ""):
        while at and at not in lines:
            at = re.sub(r"(\.[^.\[\]]*|\[\d+\])$", "", at)
        raise RegistryError(str(SpecError(key, message, file=str(path), line=lines.get(at) or 1)))
    return fail


def load_registry(path) -> dict:
    """Read and check claims.yaml: its rules' constants, every registered figure mapped, every paper
    figure claimed, every claim complete and consistent with its figure, statistic and rule."""
    try:
        reg, lines = yaml_lines.load(str(path))
    except SpecError as err:
        raise RegistryError(str(err)) from None
    fail = _failer(path, lines)
    if not isinstance(reg, dict) or set(reg) != {"rules", "figures", "claims"}:
        fail("", "needs exactly the keys rules, figures, claims")
    _check_rules(reg["rules"], fail)
    figures = reg["figures"]
    if not isinstance(figures, dict) or not isinstance(reg["claims"], list):
        fail("", "figures is a mapping and claims a list", "figures" if not isinstance(figures, dict) else "claims")
    for fig_id, entry in figures.items():
        _check_figure(fig_id, entry, fail)
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


def _check_rules(rules, fail) -> None:
    """rules: exactly the constants of RULE_CONSTANTS, nested by their dots, each of its type."""
    known: dict = {}
    for key in RULE_CONSTANTS:
        group, _, sub = key.partition(".")
        known.setdefault(group, []).append(sub)
    if not isinstance(rules, dict):
        fail("rules", f"expected a mapping of {', '.join(known)}, got {_shown(rules)}", "rules")
    for group, value in rules.items():
        at = f"rules.{group}"
        if group not in known:
            fail(at, f"unknown key{did_you_mean(group, known)}; known: {', '.join(known)}", at)
        if known[group] != [""] and not isinstance(value, dict):
            fail(at, f"expected a mapping of {', '.join(known[group])}, got {_shown(value)}", at)
        unknown = sorted(set(value) - set(known[group])) if known[group] != [""] else []
        if unknown:
            fail(f"{at}.{unknown[0]}", f"unknown key; known: {', '.join(known[group])}", f"{at}.{unknown[0]}")
    for key, check in RULE_CONSTANTS.items():
        group, _, sub = key.partition(".")
        node = rules.get(group, {}) if sub else rules
        if (sub or group) not in node:
            fail(f"rules.{key}", "missing", f"rules.{group}")
        try:
            check(node[sub or group])
        except Invalid as bad:
            fail(f"rules.{key}", bad.message, f"rules.{key}")


def _check_figure(fig_id, entry, fail) -> None:
    """figures.<id>: a registered figure, exactly one of paper, diagram and own, and names."""
    key = f"figures.{fig_id}"
    if fig_id not in FIGURES:
        fail(key, "no registered figure of that id", key)
    if not isinstance(entry, dict) or len({"paper", "own", "diagram"} & set(entry)) != 1 \
            or set(entry) - set(FIGURE_FIELDS):
        fail(key, "give exactly one of paper (its label), diagram (the labels of paper figures that state "
                  "nothing to test) or own (why)", key)
    _check_fields(entry, FIGURE_FIELDS, lambda k, message: fail(f"{key}.{k}", message, f"{key}.{k}"))
    tables = entry.get("tables", [])
    if not isinstance(tables, list) or not all(name_problem(t) is None for t in tables):
        fail(f"{key}.tables", "a list of table names, each a file name inside the results folder", f"{key}.tables")


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


def contrast_entries(claim: dict) -> list:
    """The claim's contrasts: its `contrast`, one mapping or a list of them."""
    entries = claim.get("contrast", [])
    return entries if isinstance(entries, list) else [entries]


def contrast_version(claim: dict, entry: dict) -> dict:
    """The claim's version with a contrast's keys in place of its own (a key given as null dropped):
    the same statistic and rule, on the data the paper contrasts the claim with."""
    keys = {k: v for k, v in entry.items() if k != "why"}
    return {k: v for k, v in {**claim, **keys}.items() if v is not None}


def _check_contrasts(claim: dict, figures: dict, fail) -> None:
    """Each contrast a mapping of CONTRAST_FIELDS with its `why` and a key that selects other data; its
    version (on the claim's current one) a valid claim reading any registered experiment, with the
    claim's statistic kind."""
    current = versions(claim)[-1]
    for i, entry in enumerate(contrast_entries(claim)):
        fail_contrast = _keyed_failer(fail, f"contrast[{i}]" if isinstance(claim["contrast"], list) else "contrast")
        if not isinstance(entry, dict) or "why" not in entry or len(entry) < 2 or set(entry) - set(CONTRAST_FIELDS):
            fail_contrast("", f"a contrast gives why and some of {', '.join(k for k in CONTRAST_FIELDS if k != 'why')}")
        _check_fields(entry, CONTRAST_FIELDS, fail_contrast, nullable=True)
        version = contrast_version(current, entry)
        if version["statistic"].get("kind") != current["statistic"]["kind"]:
            fail_contrast("statistic", "a contrast is tested by the claim's own statistic kind and rule")
        _check_version(version, figures, fail_contrast, EXPERIMENTS)


def _check_claim(claim: dict, figures: dict, seen: set, fail) -> None:
    """Check one claim and each of its versions; fail(key, message) names the key of the claim (its
    line from the yaml), and amendments[i].key for the version the i-th amendment makes."""
    if not isinstance(claim, dict) or CLAIM_REQUIRED - set(claim):
        fail("", f"needs {', '.join(sorted(CLAIM_REQUIRED))}")
    unknown = set(claim) - set(CLAIM_FIELDS)
    if unknown:
        fail("", f"unknown keys {', '.join(sorted(unknown))}", sorted(unknown)[0])
    cid = claim["id"]
    if not isinstance(cid, str) or not CLAIM_ID.fullmatch(cid) or cid in seen:
        fail("id", "ids are unique and made of a-z, 0-9 and _")
    _check_fields(claim, CLAIM_FIELDS, fail)
    reading = claim.get("reading")
    if "reading" in claim and (not isinstance(reading, dict) or set(reading) != {"of", "why_main"}
                               or not all(map(_is_text, reading.values()))):
        fail("reading", "reading: {of: MAIN_ID, why_main: why MAIN_ID's reading is the main one}")
    _check_version(claim, figures, fail)
    amendments = claim.get("amendments")
    if "amendments" in claim and (not isinstance(amendments, list) or not amendments):
        fail("amendments", "a list of amendments (versions 2, 3, ...), each a mapping")
    for i, amendment in enumerate(claim.get("amendments", [])):
        _check_amendment(amendment, _amendment_failer(fail, i))
    for i, version in enumerate(versions(claim)[1:]):
        _check_version(version, figures, _amendment_failer(fail, i))
    _check_contrasts(claim, figures, fail)


def _keyed_failer(fail, prefix: str):
    """fail(key, message, at) for a part of a claim: keys written `prefix`.key, their lines those below it."""
    def fail_part(key: str, message: str, at: str = ""):
        fail(prefix + (f".{key}" if key else ""), message, prefix + (f".{at or key}" if at or key else ""))
    return fail_part


def _amendment_failer(fail, i: int):
    """fail(key, message, at) for the version the i-th amendment makes: keys written amendments[i].key."""
    def fail_amendment(key: str, message: str, at: str = ""):
        fail(f"amendments[{i}]" + (f".{key}" if key else ""), message,
             f"amendments[{i}]" + (f".{at or key}" if at or key else ""))
    return fail_amendment


def _is_text(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _check_amendment(amendment, fail) -> None:
    """An amendment gives its date, reason and the data it was made after, may re-quote the paper's
    words, and replaces one or more evaluative keys (null drops one); fail(key, message) names its key."""
    if not isinstance(amendment, dict):
        fail("", "an amendment is a mapping of date, reason, after and the keys it replaces")
    missing = [k for k in AMENDMENT_REQUIRED if k not in amendment]
    if missing:
        fail(missing[0], f"missing: an amendment gives {', '.join(AMENDMENT_REQUIRED)}")
    unknown = sorted(set(amendment) - set(AMENDMENT_FIELDS))
    if unknown:
        fail(unknown[0], f"unknown key; an amendment gives {', '.join(AMENDMENT_REQUIRED)}, optionally words, "
                         f"and replaces some of {', '.join(EVALUATIVE)}")
    date = amendment["date"]
    if not isinstance(date, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date) or not _is_date(date):
        fail("date", f"a date YYYY-MM-DD, got {_shown(date)}")
    for key in ("reason", "after", "words"):
        if key in amendment and not _is_text(amendment[key]):
            fail(key, "text: " + {"reason": "why the claim changed", "after": "the data it was changed after seeing",
                                  "words": "the paper's sentence"}[key])
    _check_fields(amendment, AMENDMENT_FIELDS, fail, nullable=True)
    if not set(EVALUATIVE) & set(amendment):
        fail("", f"replaces none of {', '.join(EVALUATIVE)}: an amendment changes how the claim is tested")


def _is_date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _check_version(claim: dict, figures: dict, fail, experiments=None) -> None:
    """The keys of one version that decide its verdict, their types already checked: a figure, an
    experiment of it (or of `experiments`, for a contrast; or a computed table), one more registered
    experiment whose rows it appends (also_experiment), a statistic and rule that statistics and rules
    know, each parameter of its type, and a target a log2 statistic can take."""
    _check_source(claim, figures, fail, experiments)
    if "statistic" not in claim or "rule" not in claim:
        fail("statistic" if "statistic" not in claim else "rule", "every version has a statistic and a rule")
    _check_statistic(claim["statistic"], fail)
    _check_rule(claim, fail)


def _check_source(claim: dict, figures: dict, fail, experiments=None) -> None:
    """The data a version reads: its figure registered, its experiment one of the figure's (or of
    `experiments`), also_experiment a registered one, or without an experiment a computed table."""
    if claim["figure"] not in figures:
        fail("figure", f"figure {claim['figure']!r} is not in figures")
    experiments = FIGURES[claim["figure"]].experiments if experiments is None else sorted(experiments)
    if "experiment" in claim and claim["experiment"] not in experiments:
        fail("experiment", f"figure {claim['figure']} reads {list(experiments)}, not {claim['experiment']!r}")
    if "also_experiment" in claim and claim["also_experiment"] not in EXPERIMENTS:
        fail("also_experiment", f"no registered experiment {claim['also_experiment']!r}")
    if "experiment" not in claim and claim.get("table") not in COMPUTED:
        fail("table", f"without an experiment, table must be one of {', '.join(COMPUTED)}")


def _check_statistic(stat: dict, fail) -> None:
    """A statistic kind that STATISTICS knows, with its required parameters, only those it takes, each
    of its type."""
    if not isinstance(stat.get("kind"), str) or stat["kind"] not in STATISTICS:
        fail("statistic.kind", f"statistic.kind must be one of {', '.join(STATISTICS)}")
    _, required, optional, _ = STATISTICS[stat["kind"]]
    if required - set(stat) or set(stat) - required - optional - {"kind"}:
        fail("statistic", f"statistic {stat['kind']} takes {', '.join(sorted(required)) or 'nothing'}"
                          + (f" and optionally {', '.join(sorted(optional))}" if optional else ""))
    _check_fields(stat, PARAMETERS, fail, "statistic.")


def _check_rule(claim: dict, fail) -> None:
    """A rule kind that RULES knows, with exactly its parameters, each of its type; a group column
    given for, and only for, a rule comparing levels; its op one the rule may state; and a target
    above 0 for a statistic read on a log2 scale."""
    stat, rule = claim["statistic"], claim["rule"]
    if not isinstance(rule.get("kind"), str) or rule["kind"] not in RULES:
        fail("rule.kind", f"rule.kind must be one of {', '.join(RULES)}")
    if set(rule) - {"kind"} != RULES[rule["kind"]]:
        fail("rule", f"rule {rule['kind']} takes {', '.join(sorted(RULES[rule['kind']])) or 'nothing'}")
    _check_fields(rule, PARAMETERS, fail, "rule.")
    if (rule["kind"] in GROUP_RULES) != ("group" in claim):
        fail("group" if "group" in claim else "rule",
             f"group is needed by, and only by, the rules {', '.join(sorted(GROUP_RULES))}")
    if rule["kind"] in RULE_OPS and rule["op"] not in RULE_OPS[rule["kind"]]:
        fail("rule.op", f"rule.op must be {' or '.join(RULE_OPS[rule['kind']])}")
    if "target" in rule and stat["kind"] in LOG2 and rule["target"] <= 0:
        fail("rule.target", f"statistic {stat['kind']} is a ratio (read on a log2 scale): its target must be > 0, "
                            f"got {_shown(rule['target'])}")


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

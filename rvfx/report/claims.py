"""A claim evaluated on the result tables: its rows selected and grouped, each group's statistic
estimated and judged by the claim's rule (a Row), never on fewer runs than the statistic needs, the
groups combined into the claim's verdict (an Outcome), inconclusive and naming what lacks when the
results are missing or partial. An amended claim is evaluated as it stands now and as first committed
(by the rules as they were then: exact comparisons); a claim with a `contrast` is also evaluated, by
the same statistic and rule, on its contrast's data, where the rule must not hold (its negative
control); its `role` says whether its verdict is one on the paper, a measurement beyond it, or another
reading of a claim."""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from rvfx.report.folder import ResultsFolder
from rvfx.report.grammar import ExpressionError
from rvfx.report.registry import contrast_entries, contrast_version, versions
from rvfx.report.rules import GROUP_RULES, order_verdict, rule_verdict, tolerance, too_few
from rvfx.report.statistics import STATISTICS, level
from rvfx.report.tables import claim_table, select, where_text


@dataclass
class Row:
    """One tested group of a claim (`by`): its estimates (one per compared level for order/best_in)."""
    label: str
    estimates: list       # [(level label, Estimate)]
    verdict: str
    why: str


@dataclass
class Outcome:
    claim: dict           # the claim's current version (registry.versions)
    verdict: str
    rows: list
    problem: str = ""     # what is missing or partial; empty when the results are complete
    first: Outcome | None = None    # an amended claim's version 1, evaluated
    beyond: bool = False  # worded as rvfx's measurement beyond the paper (its own, or its main claim's)
    contrasts: list = dataclasses.field(default_factory=list)  # (contrast entry, Outcome) per negative control


def role(claim: dict) -> str:
    """"reading" (another reading of the claim it names), "beyond" (what rvfx measures beyond the
    paper) or "paper" (a verdict on the paper, counted)."""
    return "reading" if "reading" in claim else "beyond" if "beyond" in claim else "paper"


def _boot(rules: dict) -> dict:
    b = rules["bootstrap"]
    return {"n_boot": b["resamples"], "seed": b["seed"], "level": rules["level"]}


def _matches(value, entry) -> bool:
    return value == entry or str(value) == str(entry)


def judge_group(claim: dict, rules: dict, label: str, df: pd.DataFrame) -> Row:
    """Estimate the claim's statistic on one group of rows and apply its rule; inconclusive when an
    estimate rests on fewer runs than its statistic needs (rules.too_few)."""
    if claim["rule"]["kind"] not in GROUP_RULES:
        return _judge_estimate(claim, rules, label, df)
    kind, col = claim["statistic"]["kind"], claim["group"]
    ests = _level_estimates(claim, rules, df)
    few = [f"{col} = {level(lv)}: {too_few(e, kind, rules)}" for lv, e in ests.items() if too_few(e, kind, rules)]
    if few:
        return Row(label, _shown(ests), "inconclusive", "; ".join(few))
    return GROUP_JUDGES[claim["rule"]["kind"]](claim, rules, label, df, ests)


def _judge_estimate(claim: dict, rules: dict, label: str, df: pd.DataFrame) -> Row:
    """A one-estimate rule: the statistic on all the group's rows, judged against the rule's target."""
    stat = claim["statistic"]
    estimate, scale = STATISTICS[stat["kind"]][0], STATISTICS[stat["kind"]][3]
    e = estimate(df, stat, _boot(rules))
    few = too_few(e, stat["kind"], rules)
    return Row(label, [("", e)], *(("inconclusive", few) if few else rule_verdict(claim["rule"], rules, e, scale)))


def _level_estimates(claim: dict, rules: dict, df: pd.DataFrame) -> dict:
    """{level: Estimate} of the statistic on the rows of each level of the claim's `group` column, in
    the levels' sorted order (rows without a level left out), for a rule comparing levels."""
    stat, col = claim["statistic"], claim["group"]
    estimate, boot = STATISTICS[stat["kind"]][0], _boot(rules)
    return {lv: estimate(df[df[col] == lv], stat, boot) for lv in sorted(df[col].dropna().unique())}


def _shown(ests: dict) -> list:
    """[(level label, Estimate)] of every level, as a Row shows them."""
    return [(level(lv), e) for lv, e in ests.items()]


def _judge_order(claim: dict, rules: dict, label: str, df: pd.DataFrame, ests: dict) -> Row:
    """order: the levels' estimates in the stated tiers (ascending: each level a tier, in sorted order),
    each tier's CIs below the next's; inconclusive when a stated level has no runs."""
    tiers_stated, col = claim["rule"]["tiers"], claim["group"]
    wanted = [[lv] for lv in ests] if tiers_stated == "ascending" else \
        [t if isinstance(t, list) else [t] for t in tiers_stated]
    tiers = []
    for tier in wanted:
        found = [next((lv for lv in ests if _matches(lv, entry)), None) for entry in tier]
        absent = [str(entry) for entry, lv in zip(tier, found) if lv is None]
        if absent:
            return Row(label, _shown(ests), "inconclusive", f"no runs with {col} = {', '.join(absent)}")
        tiers.append([(level(lv), ests[lv]) for lv in found])
    return Row(label, [pair for tier in tiers for pair in tier], *order_verdict(tiers, tolerance(rules)))


def _judge_best_in(claim: dict, rules: dict, label: str, df: pd.DataFrame, ests: dict) -> Row:
    """best_in: the lowest estimate among the levels in the rule's set, its CI below that of the lowest
    outside it; inconclusive when either side has no computable estimate."""
    in_set = set(select(df, claim["rule"]["set"])[claim["group"]])
    computable = [lv for lv, e in ests.items() if not np.isnan(e.value)]
    inside = [lv for lv in computable if lv in in_set]
    outside = [lv for lv in computable if lv not in in_set]
    if not inside or not outside:
        return Row(label, _shown(ests), "inconclusive", f"no estimate {'in' if not inside else 'outside'} the set")
    best_in, best_out = (min(side, key=lambda lv: ests[lv].value) for side in (inside, outside))
    return Row(label, _shown(ests), *order_verdict([[(level(best_in), ests[best_in])],
                                                    [(level(best_out), ests[best_out])]], tolerance(rules)))


GROUP_JUDGES = {"order": _judge_order, "best_in": _judge_best_in}
"""The verdict of each rule comparing levels (rules.GROUP_RULES) on one group's level estimates."""


def combine(verdicts: list, aggregate: str) -> str:
    """all: holds when every group holds, differs when any differs; any: holds when some group holds,
    differs when every group differs; otherwise inconclusive."""
    if aggregate == "any":
        return ("holds" if "holds" in verdicts else
                "differs" if all(v == "differs" for v in verdicts) else "inconclusive")
    return ("differs" if "differs" in verdicts else
            "holds" if all(v == "holds" for v in verdicts) else "inconclusive")


def evaluate_claim(claim: dict, rules: dict, results: Path | ResultsFolder) -> Outcome:
    """The claim's verdict from the tables under `results` (inconclusive, naming what lacks, when the
    results are missing or partial)."""
    source = f"{claim['experiment']}/{claim.get('table', 'runs')}" if "experiment" in claim else claim["table"]
    by, folder = claim.get("by", []), ResultsFolder.of(results)
    try:
        df = select(claim_table(claim, folder), claim.get("where", []))
        if df.empty:
            return Outcome(claim, "inconclusive", [],
                           f"missing: no rows of {source} with {where_text(claim.get('where', []))}")
        rows = _rows(claim, rules, by, df)
    except FileNotFoundError as err:
        return Outcome(claim, "inconclusive", [], f"missing: {_relative(err, folder.path)}")
    except KeyError as err:
        return Outcome(claim, "inconclusive", [], f"missing: {source} has no column {err}")
    except ExpressionError as err:
        return Outcome(claim, "inconclusive", [], f"not computable on {source}: {err}")
    verdict = combine([r.verdict for r in rows], claim.get("aggregate", "all"))
    lacking = "; ".join(filter(None, (folder.missing_runs(exp) for exp in read_experiments(claim))))
    if lacking:
        return Outcome(claim, "inconclusive", rows,
                       f"partial: the tables lack {_relative(lacking, folder.path)}; on the runs present: {verdict}")
    return Outcome(claim, verdict, rows)


def _rows(claim: dict, rules: dict, by: list, df: pd.DataFrame) -> list:
    """A Row per group of `df` (by); ExpressionError when the claim's statistic or groups cannot be
    computed on these rows (a mean of a column of text), which no check of claims.yaml can know."""
    try:
        groups = df.groupby(by, dropna=False, sort=True) if by else [((), df)]
        return [judge_group(claim, rules, ", ".join(f"{c} = {level(v)}" for c, v in zip(by, key)), g)
                for key, g in ((k if isinstance(k, tuple) else (k,), g) for k, g in groups)]
    except (ValueError, TypeError) as err:
        raise ExpressionError(" ".join(str(err).split())) from None


@functools.cache
def _evaluate_computed(claim_yaml: str, rules_yaml: str) -> Outcome:
    """A claim on a computed table reads no results: evaluated once per process (keyed by its text)."""
    return evaluate_claim(yaml.safe_load(claim_yaml), yaml.safe_load(rules_yaml), Path())


def _relative(text, results: Path) -> str:
    """`text` with the results folder written RESULTS, so the report reads the same wherever it lies."""
    return str(text).replace(str(results), "RESULTS")


def read_experiments(claim: dict) -> list:
    """The experiments whose tables a claim version reads: its experiment, and `also_experiment`
    whose rows its table appends."""
    return [claim[k] for k in ("experiment", "also_experiment") if k in claim]


def evaluate(registry: dict, results: Path | ResultsFolder) -> list:
    """One Outcome per claim: its current version's, with version 1's as `first` when it is amended
    (judged by exact comparisons, the rules as first committed), each contrast's in `contrasts`;
    `beyond` for a measurement beyond the paper and for another reading of one. Every version reads
    the one ResultsFolder, so that each table and spec is read once."""
    rules, folder = registry["rules"], ResultsFolder.of(results)
    exact = {**rules, "tolerance": 0.0}
    beyond = {c["id"] for c in registry["claims"] if role(c) == "beyond"}

    def outcome(version: dict, consts: dict = rules) -> Outcome:
        found = (evaluate_claim(version, consts, folder) if "experiment" in version
                 else _evaluate_computed(yaml.safe_dump(version), yaml.safe_dump(consts)))
        return dataclasses.replace(found, beyond=version["id"] in beyond
                                   or version.get("reading", {}).get("of") in beyond)
    found = []
    for claim in registry["claims"]:
        first, *amended = versions(claim)
        now = dataclasses.replace(outcome(amended[-1]), first=outcome(first, exact)) if amended else outcome(first)
        now.contrasts = [(entry, outcome(contrast_version(now.claim, entry))) for entry in contrast_entries(claim)]
        found.append(now)
    return found

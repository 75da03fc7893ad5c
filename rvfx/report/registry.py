"""claims.yaml read and checked (load_registry): every registered figure mapped, every paper figure
claimed, every claim complete and naming a table, statistic and rule that tables, statistics and rules
know; RegistryError names what is wrong."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from rvfx.figures import FIGURES
from rvfx.report.rules import GROUP_RULES, RULES
from rvfx.report.statistics import STATISTICS
from rvfx.report.tables import COMPUTED


class RegistryError(ValueError):
    """claims.yaml is malformed; the message names the claim or figure and the field."""


CLAIM_REQUIRED = {"id", "figure", "paper", "words", "statistic", "rule"}
CLAIM_OPTIONAL = {"experiment", "table", "where", "by", "group", "aggregate", "note"}


def load_registry(path) -> dict:
    """Read and check claims.yaml: every registered figure mapped, every paper figure claimed, every
    claim complete and consistent with its figure, statistic and rule."""
    try:
        reg = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise RegistryError(f"{path}: {err}") from err
    if not isinstance(reg, dict) or set(reg) != {"rules", "figures", "claims"}:
        raise RegistryError(f"{path}: needs exactly the keys rules, figures, claims")
    figures = reg["figures"]
    for fig_id, entry in figures.items():
        if fig_id not in FIGURES:
            raise RegistryError(f"{path}: figures.{fig_id}: no registered figure of that id")
        if not isinstance(entry, dict) or len({"paper", "own", "diagram"} & set(entry)) != 1 \
                or set(entry) - {"paper", "own", "diagram", "image", "tables"}:
            raise RegistryError(f"{path}: figures.{fig_id}: give exactly one of paper (its label), diagram (the "
                                f"labels of paper figures that state nothing to test) or own (why)")
        tables = entry.get("tables", [])
        if not isinstance(tables, list) or not all(isinstance(t, str) and t for t in tables):
            raise RegistryError(f"{path}: figures.{fig_id}.tables: a list of table names")
    unmapped = sorted(set(FIGURES) - set(figures))
    if unmapped:
        raise RegistryError(f"{path}: registered figures missing from figures: {', '.join(unmapped)}")
    seen = set()
    for claim in reg["claims"]:
        _check_claim(path, claim, figures, seen)
        seen.add(claim["id"])
    claimed = {c["figure"] for c in reg["claims"]}
    unclaimed = [f for f, e in figures.items() if "paper" in e and f not in claimed]
    if unclaimed:
        raise RegistryError(f"{path}: paper figures without a claim: {', '.join(unclaimed)}")
    return reg


def _check_claim(path, claim: dict, figures: dict, seen: set) -> None:
    cid = claim.get("id", "?") if isinstance(claim, dict) else "?"
    where = f"{path}: claim {cid}"
    if not isinstance(claim, dict) or CLAIM_REQUIRED - set(claim):
        raise RegistryError(f"{where}: needs {', '.join(sorted(CLAIM_REQUIRED))}")
    unknown = set(claim) - CLAIM_REQUIRED - CLAIM_OPTIONAL
    if unknown:
        raise RegistryError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
    if not re.fullmatch(r"[a-z0-9_]+", cid) or cid in seen:
        raise RegistryError(f"{where}: ids are unique and made of a-z, 0-9 and _")
    if claim["figure"] not in figures:
        raise RegistryError(f"{where}: figure {claim['figure']!r} is not in figures")
    experiments = FIGURES[claim["figure"]].experiments
    if "experiment" in claim and claim["experiment"] not in experiments:
        raise RegistryError(f"{where}: figure {claim['figure']} reads {list(experiments)}, "
                            f"not {claim['experiment']!r}")
    if "experiment" not in claim and claim.get("table") not in COMPUTED:
        raise RegistryError(f"{where}: without an experiment, table must be one of {', '.join(COMPUTED)}")
    stat, rule = claim["statistic"], claim["rule"]
    if not isinstance(stat, dict) or stat.get("kind") not in STATISTICS:
        raise RegistryError(f"{where}: statistic.kind must be one of {', '.join(STATISTICS)}")
    _, required, optional, _ = STATISTICS[stat["kind"]]
    if required - set(stat) or set(stat) - required - optional - {"kind"}:
        raise RegistryError(f"{where}: statistic {stat['kind']} takes {', '.join(sorted(required))}"
                            + (f" and optionally {', '.join(sorted(optional))}" if optional else ""))
    if not isinstance(rule, dict) or rule.get("kind") not in RULES:
        raise RegistryError(f"{where}: rule.kind must be one of {', '.join(RULES)}")
    if set(rule) - {"kind"} != RULES[rule["kind"]]:
        raise RegistryError(f"{where}: rule {rule['kind']} takes {', '.join(sorted(RULES[rule['kind']])) or 'nothing'}")
    if (rule["kind"] in GROUP_RULES) != ("group" in claim):
        raise RegistryError(f"{where}: group is needed by, and only by, the rules {', '.join(sorted(GROUP_RULES))}")
    if rule["kind"] == "inequality" and rule["op"] not in ("<=", ">="):
        raise RegistryError(f"{where}: rule.op must be <= or >=")
    if claim.get("aggregate", "all") not in ("all", "any"):
        raise RegistryError(f"{where}: aggregate must be all or any")

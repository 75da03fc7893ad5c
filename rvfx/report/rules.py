"""The verdict rules (RULES): an Estimate against a rule's target, or estimates in a stated order
(GROUP_RULES), judged with claims.yaml's constants as holds, differs or inconclusive, and never on
fewer runs than its statistic needs (too_few); `nat` and `ci` print an estimate in its statistic's
natural units. Every comparison of a rule treats two numbers within the rules' tolerance (TOLERANCE
unless the constants say otherwise: 0 for a claim as first committed, before the tolerance was
added) as equal, so that no verdict turns on floating-point rounding."""
from __future__ import annotations

import math

import numpy as np

from rvfx.report.statistics import STATISTICS, Estimate, num

TOLERANCE = 1e-9
"""Relative (and, near 0, absolute) difference below which a rule counts two numbers as equal: far
above rounding (log2(20) - log2(10) = 1 + 4e-16, a width of one unit), far below any resolution a
rule states (1/2 on an exponent, 0.1 on a fraction)."""


def _le(a: float, b: float, tol: float) -> bool:
    """a <= b, up to the tolerance `tol`."""
    return a <= b or math.isclose(a, b, rel_tol=tol, abs_tol=tol)


def _lt(a: float, b: float, tol: float) -> bool:
    """a < b by more than the tolerance `tol`."""
    return not _le(b, a, tol)


def tolerance(consts: dict) -> float:
    """The rules' comparison tolerance: consts' `tolerance`, TOLERANCE when they give none."""
    return float(consts.get("tolerance", TOLERANCE))


def too_few(e: Estimate, kind: str, consts: dict) -> str:
    """Why an estimate of the statistic `kind` rests on too few runs for its interval (claims.yaml's
    rules.minimum_runs per kind; a fitted slope also needs rules.minimum_sizes sizes), or ""."""
    need = consts.get("minimum_runs", {}).get(kind, 1)
    if e.fewest < need:
        return f"too few runs (n = {e.fewest}, needs ≥ {need})"
    sizes = consts.get("minimum_sizes", 1)
    if e.sizes is not None and e.sizes < sizes:
        return f"too few sizes fitted ({e.sizes}, needs ≥ {sizes})"
    return ""


def _scaled(t: float, scale: str) -> float:
    return math.log2(t) if scale == "log2" else float(t)


def nat(x: float, scale: str) -> float:
    return 2.0 ** x if scale == "log2" and not np.isnan(x) else x


def _edge(x: float, scale: str) -> str:
    """A rule's constant (target, band end) in the statistic's natural units."""
    return num(2.0 ** x) if scale == "log2" else f"{x:g}"


def _target(rule: dict) -> str:
    return f"{rule['target']:g}"


def _band(t: float, h: float, scale: str) -> str:
    """The band [t - h, t + h] of about and nearest, in the statistic's natural units."""
    return f"[{_edge(t - h, scale)}, {_edge(t + h, scale)}]"


def ci(e: Estimate, scale: str) -> str:
    return f"[{num(nat(e.lo, scale))}, {num(nat(e.hi, scale))}]"


def _most_few(rule: dict, consts: dict, e: Estimate, scale: str) -> tuple[str, str]:
    """most, few: a fraction at least (at most) the rules' bound, its CI clear of the other's range;
    the one rule holding is the other's differing."""
    tol = tolerance(consts)
    most = _le(consts["most"]["at_least"], e.value, tol) and _lt(consts["most"]["excludes_few_above"], e.lo, tol)
    few = _le(e.value, consts["few"]["at_most"], tol) and _lt(e.hi, consts["few"]["excludes_most_below"], tol)
    holds, differs = (most, few) if rule["kind"] == "most" else (few, most)
    why = f"fraction {num(e.value)} ({e.detail}), CI {ci(e, scale)}"
    return ("holds" if holds else "differs" if differs else "inconclusive"), why


def _sign(rule: dict, consts: dict, e: Estimate, scale: str) -> tuple[str, str]:
    """sign: the CI on the stated side of 0 (beyond the tolerance), or on the other side."""
    tol, interval = tolerance(consts), ci(e, scale)
    zero, above, below = _edge(0.0, scale), _lt(0.0, e.lo, tol), _lt(e.hi, 0.0, tol)
    if not (above or below):
        return "inconclusive", f"CI {interval} reaches {zero}"
    side = "above" if above else "below"
    wanted = "above" if rule["op"] == ">" else "below"
    return ("holds" if side == wanted else "differs"), f"CI {interval} lies {side} {zero}"


def _nearest(rule: dict, consts: dict, e: Estimate, scale: str) -> tuple[str, str]:
    """nearest (the paper's "approximately", read as the nearest whole unit): the CI inside the band
    target ± half_width, or clear of it."""
    tol, interval = tolerance(consts), ci(e, scale)
    t, h = _scaled(rule["target"], scale), consts["nearest"]["half_width"]
    band = _band(t, h, scale)
    if _le(t - h, e.lo, tol) and _le(e.hi, t + h, tol):
        return "holds", f"CI {interval} lies inside {band}"
    if _lt(e.hi, t - h, tol) or _lt(t + h, e.lo, tol):
        return "differs", f"CI {interval} misses {band}"
    return "inconclusive", f"CI {interval} straddles an end of {band}"


def _about(rule: dict, consts: dict, e: Estimate, scale: str) -> tuple[str, str]:
    """about: the CI overlapping the band target ± half_width, and no wider than max_ci_width (a wide
    CI overlaps any band and shows nothing)."""
    tol, interval = tolerance(consts), ci(e, scale)
    t, h = _scaled(rule["target"], scale), consts["about"]["half_width"]
    band = _band(t, h, scale)
    if _lt(e.hi, t - h, tol) or _lt(t + h, e.lo, tol):
        return "differs", f"CI {interval} misses {band}"
    if _lt(consts["about"]["max_ci_width"], e.hi - e.lo, tol):
        return "inconclusive", f"CI {interval} overlaps {band} but is wider than it"
    return "holds", f"CI {interval} overlaps {band}"


def _below(rule: dict, consts: dict, e: Estimate, scale: str) -> tuple[str, str]:
    """below: the CI below the target less the rules' margin."""
    tol, interval = tolerance(consts), ci(e, scale)
    edge = _scaled(rule["target"], scale) - consts["below"]["margin"]
    if _lt(e.hi, edge, tol):
        return "holds", f"CI {interval} lies below {_edge(edge, scale)}"
    if _le(edge, e.lo, tol):
        return "differs", f"CI {interval} lies at or above {_edge(edge, scale)}"
    return "inconclusive", f"CI {interval} straddles {_edge(edge, scale)}"


def _at_most(rule: dict, consts: dict, e: Estimate, scale: str) -> tuple[str, str]:
    """at_most ("at most about"): the CI at or below the target plus the rules' margin."""
    return _within(True, _scaled(rule["target"], scale) + consts["at_most"]["margin"], consts, e, scale)


def _at_least(rule: dict, consts: dict, e: Estimate, scale: str) -> tuple[str, str]:
    """at_least ("at least about"): the CI at or above the target less the rules' margin."""
    return _within(False, _scaled(rule["target"], scale) - consts["at_least"]["margin"], consts, e, scale)


def _within(upper: bool, edge: float, consts: dict, e: Estimate, scale: str) -> tuple[str, str]:
    """The CI at or below `edge` (upper) or at or above it: holds; wholly beyond it: differs."""
    tol, interval, shown = tolerance(consts), ci(e, scale), _edge(edge, scale)
    side, beyond = ("below", "above") if upper else ("above", "below")
    if _le(e.hi, edge, tol) if upper else _le(edge, e.lo, tol):
        return "holds", f"CI {interval} lies at or {side} {shown}"
    if _lt(edge, e.lo, tol) if upper else _lt(e.hi, edge, tol):
        return "differs", f"CI {interval} lies {beyond} {shown}"
    return "inconclusive", f"CI {interval} straddles {shown}"


def _inequality(rule: dict, consts: dict, e: Estimate, scale: str) -> tuple[str, str]:
    """inequality: the CI on the stated side (<= or >=) of the target, exact (no margin)."""
    tol, interval = tolerance(consts), ci(e, scale)
    t, upper = _scaled(rule["target"], scale), rule["op"] == "<="
    ok, bad = (_le(e.hi, t, tol), _lt(t, e.lo, tol)) if upper else (_le(t, e.lo, tol), _lt(e.hi, t, tol))
    side = "at or below" if upper else "at or above"
    if ok:
        return "holds", f"CI {interval} lies {side} {_target(rule)}"
    if bad:
        return "differs", f"CI {interval} lies beyond {_target(rule)}"
    return "inconclusive", f"CI {interval} straddles {_target(rule)}"


ONE_ESTIMATE_RULES = {"most": _most_few, "few": _most_few, "sign": _sign, "nearest": _nearest, "about": _about,
                      "below": _below, "at_most": _at_most, "at_least": _at_least, "inequality": _inequality}
"""The verdict of each rule on one estimate: rule(rule, consts, estimate, scale) -> (verdict, why)."""


def rule_verdict(rule: dict, consts: dict, e: Estimate, scale: str) -> tuple[str, str]:
    """(verdict, why) of a one-estimate rule (ONE_ESTIMATE_RULES), inconclusive when the estimate or
    its CI is not computable."""
    if np.isnan(e.value) or np.isnan(e.lo) or np.isnan(e.hi):
        return "inconclusive", f"not computable ({e.detail})" if e.detail else "not computable"
    return ONE_ESTIMATE_RULES[rule["kind"]](rule, consts, e, scale)


def order_verdict(tiers: list, tol: float = TOLERANCE) -> tuple[str, str]:
    """(verdict, why) of tiers [[(label, Estimate), ...], ...] stated in increasing order, comparisons up
    to the tolerance `tol`; inconclusive when some estimate is not computable (NaN compares as neither
    order)."""
    unknown = [label for tier in tiers for label, e in tier if np.isnan([e.value, e.lo, e.hi]).any()]
    if unknown:
        return "inconclusive", f"not computable for {', '.join(unknown)}"
    holds, reversed_ = True, []
    for lower, upper in zip(tiers, tiers[1:]):
        for a, ea in lower:
            for b, eb in upper:
                if _lt(ea.hi, eb.lo, tol):
                    continue
                holds = False
                if _lt(eb.hi, ea.lo, tol):
                    reversed_.append(f"{b} < {a}")
    stated = " < ".join(", ".join(label for label, _ in tier) for tier in tiers)
    if reversed_:
        return "differs", f"reversed with non-overlapping CIs: {'; '.join(reversed_)}"
    if holds:
        return "holds", f"{stated}, CIs not overlapping"
    return "inconclusive", f"CIs overlap: {stated} not established"


def describe_rule(claim: dict, consts: dict) -> str:
    rule, scale = claim["rule"], STATISTICS[claim["statistic"]["kind"]][3]
    kind = rule["kind"]
    if kind == "order":
        tiers = rule["tiers"]
        stated = ("increasing in " + claim["group"] if tiers == "ascending" else
                  " < ".join(", ".join(map(str, t)) if isinstance(t, list) else str(t) for t in tiers))
        return f"order: {stated}, with non-overlapping 95% CIs"
    if kind == "best_in":
        return f"best in set: the lowest group has {rule['set']}, its CI below the best other group's"
    if kind == "most":
        c = consts["most"]
        return f"most: fraction >= {c['at_least']:g} and CI lower end > {c['excludes_few_above']:g}"
    if kind == "few":
        c = consts["few"]
        return f"few: fraction <= {c['at_most']:g} and CI upper end < {c['excludes_most_below']:g}"
    if kind == "sign":
        return f"sign {rule['op']} 0: the 95% CI lies {'above' if rule['op'] == '>' else 'below'} {_edge(0.0, scale)}"
    t = _scaled(rule["target"], scale)
    if kind == "about":
        return f"about {_target(rule)}: the 95% CI overlaps {_band(t, consts['about']['half_width'], scale)}"
    if kind == "nearest":
        return (f"approximately {_target(rule)}, read as the nearest whole unit: the 95% CI lies inside "
                f"{_band(t, consts['nearest']['half_width'], scale)}")
    if kind == "below":
        return f"below {_target(rule)}: the 95% CI lies below {_edge(t - consts['below']['margin'], scale)}"
    if kind == "at_most":
        return (f"at most about {_target(rule)}: the 95% CI lies at or below "
                f"{_edge(t + consts['at_most']['margin'], scale)}")
    if kind == "at_least":
        return (f"at least about {_target(rule)}: the 95% CI lies at or above "
                f"{_edge(t - consts['at_least']['margin'], scale)}")
    return f"inequality {rule['op']} {_target(rule)}, exact: the 95% CI lies on that side"


RULES = {"about": {"target"}, "nearest": {"target"}, "below": {"target"}, "at_most": {"target"},
         "at_least": {"target"}, "inequality": {"op", "target"}, "sign": {"op"}, "order": {"tiers"}, "best_in": {"set"},
         "most": set(), "few": set()}
GROUP_RULES = {"order", "best_in"}
RULE_OPS = {"inequality": ("<=", ">="), "sign": (">", "<")}
"""The comparisons a rule with an `op` may state."""

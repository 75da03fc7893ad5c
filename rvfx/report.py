"""`rvfx report`: every claim of claims.yaml as a verdict computed from the result tables.

A claim names a table (a CSV under RESULTS/<experiment>/, a table derived from one, or one computed
without an experiment), filters and groups its rows, estimates one statistic with a 95% interval per
group, and applies the rule of its kind (constants in claims.yaml's `rules`): holds, differs or
inconclusive. The verdicts go to report.md and a self-contained report.html; a README may quote any
claim between `<!-- report:begin ID -->` and `<!-- report:end -->`, and `check` names every place
where those files or blocks differ from a recomputation.
"""
from __future__ import annotations

import base64
import functools
import hashlib
import html
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from rvfx.analysis.bounds import first_bound, second_bound
from rvfx.analysis.final_return import LEARNT_RETURN, final_returns
from rvfx.analysis.stats import (
    bootstrap_ci,
    censored_median,
    clopper_pearson,
    fit_exponential,
    fit_loglog,
    plateau_k,
)
from rvfx.experiment.results import TABLES, experiment_dir, load_spec_value, load_table, missing_runs, write_atomic_text
from rvfx.figures import FIGURES
from rvfx.figures.common import learning_times

MARKER = re.compile(r"<!-- report:begin (\S+) -->\n(.*?)<!-- report:end -->", re.S)


class RegistryError(ValueError):
    """claims.yaml is malformed; the message names the claim or figure and the field."""


@dataclass(frozen=True)
class Estimate:
    value: float          # on the statistic's scale: log2 for ratios and ensemble sizes
    lo: float
    hi: float
    n: int                # runs (or samples) behind it
    detail: str = ""


@dataclass
class Row:
    """One tested group of a claim (`by`): its estimates (one per compared level for order/best_in)."""
    label: str
    estimates: list       # [(level label, Estimate)]
    verdict: str
    why: str


@dataclass
class Outcome:
    claim: dict
    verdict: str
    rows: list
    problem: str = ""     # what is missing or partial; empty when the results are complete


# ------------------------------------------------------------------------------------ tables

def _final_returns(results: Path, experiment: str) -> pd.DataFrame:
    """Figs. 16-17's per-run summary: mean return over the last 10% of episodes, and learnt (>= 100)."""
    final = final_returns(load_table(results, experiment, "episodes")).rename("final_return")
    runs = load_table(results, experiment, "runs").join(final, on="run_id")
    return runs.assign(learnt=runs["final_return"] >= LEARNT_RETURN)


def _regret_over_bounds(results: Path, experiment: str) -> pd.DataFrame:
    """Theorem 1: each run's cumulative regret over eqs. 6.1 and 6.2 (whose mean over runs, the
    Bayesian regret over the bound, must stay <= 1) at two L per decade of the theorem's "for all
    L" (the first logged episode at or after 1, sqrt 10, 10, ...) and the last, so that the table
    stays small enough to commit at paper scale (`export`)."""
    from rvfx.figures.regret_bound import ENV_KEYS
    eps = load_table(results, experiment, "episodes")
    logged = np.sort(eps["episode"].unique())
    targets = 10.0 ** (np.arange(np.floor(2 * np.log10(logged[-1])) + 1) / 2)
    kept = set(logged[np.searchsorted(logged, targets)].tolist())
    eps = eps[eps["episode"].isin(kept) | (eps["episode"] == eps.groupby("run_id")["episode"].transform("max"))]
    parts = []
    for shape, g in eps.groupby(ENV_KEYS, sort=False):       # (H, |X|, |A|, beta) per environment
        shape = [float(v) for v in shape]
        parts.append(g.assign(regret_over_eq_6_1=g["cum_regret"] / first_bound(g["episode"], *shape),
                              regret_over_eq_6_2=g["cum_regret"] / second_bound(g["episode"], *shape)))
    return pd.concat(parts)


DERIVED = {"final_returns": _final_returns, "regret_over_bounds": _regret_over_bounds}


def _fig18_optimism_margin() -> pd.DataFrame:
    """int_a^inf (G - F) ds on Fig. 18's grid of a (condition 2 of the stochastic-optimism lemma)."""
    from rvfx.figures.beta_vs_normal import optimism_margin
    a = np.linspace(-1.5, 2.5, 81)
    return pd.DataFrame({"a": a, "margin": optimism_margin(a)})


COMPUTED = {"fig18_optimism_margin": _fig18_optimism_margin}


def claim_table(claim: dict, results: Path) -> pd.DataFrame:
    """The claim's table, with every unswept env parameter of the resolved spec as a column and
    `learnt` (eq. 7.1 within the budget) beside `censored`."""
    name = claim.get("table", "runs")
    if "experiment" not in claim:
        return COMPUTED[name]()
    exp = claim["experiment"]
    df = experiment_table(results, exp, name)
    env = load_spec_value(results, exp, ("env",)) or {}
    df = df.assign(**{f"env.{k}": v for k, v in env.items()
                      if k != "name" and f"env.{k}" not in df and not isinstance(v, (dict, list))})
    if "learnt" not in df and "censored" in df and df["censored"].dtype == bool:
        df = df.assign(learnt=~df["censored"])
    return df


def experiment_table(results: Path, experiment: str, name: str) -> pd.DataFrame:
    """A table of the experiment as written (collected, or exported), else derived (DERIVED) from
    its per-episode table."""
    if name in DERIVED and not (experiment_dir(results, experiment) / f"{name}.csv").exists():
        return DERIVED[name](results, experiment)
    return load_table(results, experiment, name)


def export(registry: dict, results: Path, out: Path, scale: str | None = None) -> list[Path]:
    """Copy what the claims read from `results` into `out`, laid out as a results folder, so that
    `rvfx report --results OUT` recomputes every verdict without the per-episode tables: per
    experiment a claim names, runs.csv and each claim table (DERIVED ones written out), then
    failures.csv, spec.yaml and provenance.json as collected, and tables.json with the sha256 of
    each table written. Experiments without collected tables in `results` are left as they are.
    With `scale`, every experiment to copy must have been run at that scale (its spec.yaml says),
    or nothing is copied (RegistryError naming the first that was not)."""
    needs: dict[str, set] = {}
    for claim in registry["claims"]:
        if "experiment" in claim:
            needs.setdefault(claim["experiment"], {"runs"}).add(claim.get("table", "runs"))
    present = {exp: names for exp, names in sorted(needs.items())
               if (experiment_dir(results, exp) / "runs.csv").exists()}
    for exp in present:
        ran_at = load_spec_value(results, exp, ("scale",))
        if scale is not None and ran_at != scale:
            raise RegistryError(f"{experiment_dir(results, exp) / 'spec.yaml'}: run at scale {ran_at}, not {scale}; "
                                f"nothing exported")
    written = []
    for exp, names in present.items():
        src, dst = experiment_dir(results, exp), experiment_dir(out, exp)
        dst.mkdir(parents=True, exist_ok=True)
        texts = {f"{name}.csv": experiment_table(results, exp, name).to_csv(index=False, lineterminator="\n")
                 for name in sorted(names)}
        texts.update({extra: (src / extra).read_text(encoding="utf-8")
                      for extra in ("failures.csv", "spec.yaml", "provenance.json") if (src / extra).exists()})
        for extra in {"failures.csv", "spec.yaml", "provenance.json"} - set(texts):
            (dst / extra).unlink(missing_ok=True)
        checksums = {}
        for name, text in texts.items():
            write_atomic_text(dst / name, text)
            if name.endswith(".csv"):
                checksums[name] = hashlib.sha256(text.encode()).hexdigest()
        for stale in set(dst.glob("*.csv")) - {dst / n for n in checksums}:
            stale.unlink()
        write_atomic_text(dst / TABLES, json.dumps(checksums, indent=1, sort_keys=True) + "\n")
        written.append(dst)
    return written


def select(df: pd.DataFrame, where) -> pd.DataFrame:
    """Rows passing every filter: a pandas query string, or {column: min | max | value}."""
    for f in where if isinstance(where, list) else [where]:
        if isinstance(f, str):
            df = df.query(f)
            continue
        for col, v in f.items():
            target = df[col].min() if v == "min" else df[col].max() if v == "max" else v
            df = df[df[col] == target]
    return df


def _where_text(where) -> str:
    parts = where if isinstance(where, list) else [where]
    return " and ".join(p if isinstance(p, str) else ", ".join(f"{c} = {v}" for c, v in p.items()) for p in parts)


# -------------------------------------------------------------------------------- statistics

def _mean(df, p, boot) -> Estimate:
    col = p["column"]
    strata = ([g[col].to_numpy(float) for _, g in df.groupby(p["strata"])] if "strata" in p
              else [df[col].to_numpy(float)])
    return Estimate(*bootstrap_ci(strata, lambda s: float(np.concatenate(s).mean()), **boot), len(df))


def _minimum(df, p, boot) -> Estimate:
    v = float(df[p["column"]].min())
    return Estimate(v, v, v, len(df), "computed exactly")


def _fraction(df, p, boot) -> Estimate:
    ok = df.eval(p["criterion"]).eq(True)          # a missing value does not meet it
    k, n = int(ok.sum()), len(ok)
    return Estimate(k / n, *clopper_pearson(k, n, boot["level"]), n, f"{k}/{n}")


def _slope(df, p, boot) -> Estimate:
    fitter = fit_exponential if p.get("growth") == "exponential" else fit_loglog
    fit = fitter(df[p["x"]].to_numpy(float), learning_times(df), boot["n_boot"], boot["seed"], boot["level"])
    detail = f"{p['x']} fitted: {_levels(fit.sizes_used)}"
    if fit.sizes_censored:
        detail += f"; censored median at {_levels(fit.sizes_censored)}"
    return Estimate(fit.slope, fit.lo, fit.hi, len(df), detail)


def _log_median_slope(xs: np.ndarray, samples) -> float:
    meds = np.array([censored_median(s) for s in samples])
    return float(np.polyfit(np.log(xs), np.log(meds), 1)[0]) if np.all(np.isfinite(meds)) else np.nan


def _slope_difference(df, p, boot) -> Estimate:
    """Slope of a's log median learning time on log x minus b's, over the sizes whose median each
    side has uncensored (fit_loglog's choice), bootstrapped together."""
    x, sides = p["x"], [df[df[p["compare"]] == p[k]] for k in ("a", "b")]
    xs, samples = [], []
    for side in sides:
        used = np.array(fit_loglog(side[x].to_numpy(float), learning_times(side), n_boot=0).sizes_used)
        xs.append(used)
        samples += [learning_times(side[side[x] == u]) for u in used]
    if min(len(u) for u in xs) < 2:
        return Estimate(np.nan, np.nan, np.nan, len(df), "fewer than 2 uncensored sizes on a side")
    k = len(xs[0])

    def diff(s):
        return _log_median_slope(xs[0], s[:k]) - _log_median_slope(xs[1], s[k:])
    detail = f"{p['x']} fitted: {_levels(xs[0])} ({p['a']}), {_levels(xs[1])} ({p['b']})"
    return Estimate(*bootstrap_ci(samples, diff, **boot), len(df), detail)


def _ratio(df, p, boot) -> Estimate:
    col = p["column"]
    num, ref = select(df, p["numerator"]), select(df, p["reference"])
    if num.empty or ref.empty or num.index.intersection(ref.index).size:
        return Estimate(np.nan, np.nan, np.nan, len(df), "numerator and reference are not two distinct sets of runs")
    detail = f"{_num(num[col].mean())} ({_where_text(p['numerator'])}) / {_num(ref[col].mean())} ({p['reference']})"
    return Estimate(*bootstrap_ci([num[col], ref[col]], lambda s: math.log2(s[0].mean() / s[1].mean()), **boot),
                    len(num) + len(ref), detail)


def _ratio_to_best(df, p, boot) -> Estimate:
    col = p["column"]
    num, cand = select(df, p["numerator"]), select(df, p["candidates"])
    if num.empty or cand.empty:
        return Estimate(np.nan, np.nan, np.nan, len(df), "no runs for the numerator or the candidates")
    groups = {k: g[col].to_numpy(float) for k, g in cand.groupby(p["over"])}
    best = min(groups, key=lambda k: groups[k].mean())
    detail = f"{_num(num[col].mean())} / {_num(groups[best].mean())} (best {p['over']} = {_level(best)})"
    return Estimate(*bootstrap_ci([num[col].to_numpy(float), *groups.values()],
                                  lambda s: math.log2(s[0].mean() / min(g.mean() for g in s[1:])), **boot),
                    len(num) + len(cand), detail)


def _breakdown(df, p, boot) -> Estimate:
    """Smallest x at which fewer than half the runs meet the criterion (+inf when none in the grid)."""
    xs = np.sort(df[p["x"]].unique())
    flags = [df.loc[df[p["x"]] == x].eval(p["criterion"]).eq(True).to_numpy(float) for x in xs]

    def first_failing(s):
        return next((float(x) for x, f in zip(xs, s) if f.mean() < 0.5), np.inf)
    return Estimate(*bootstrap_ci(flags, first_failing, **boot), len(df), f"{p['x']} grid: {_levels(xs)}")


def _plateau(df, p, boot) -> Estimate:
    """log2 of Fig. 14's plateau K: the smallest K whose median learning time is within 1.2x of the best."""
    ks = np.sort(df[p["x"]].unique())
    times = [learning_times(df[df[p["x"]] == k]) for k in ks]

    def log2_plateau(s):
        k = plateau_k(list(ks), [censored_median(t) for t in s])
        return math.log2(k) if k is not None else np.nan
    return Estimate(*bootstrap_ci(times, log2_plateau, **boot), len(df), f"{p['x']} grid: {_levels(ks)}")


# kind -> (estimator, required parameters, optional parameters, scale)
STATISTICS = {
    "mean": (_mean, {"column"}, {"strata"}, "linear"),
    "min": (_minimum, {"column"}, set(), "linear"),
    "fraction": (_fraction, {"criterion"}, set(), "linear"),
    "slope": (_slope, {"x"}, {"growth"}, "linear"),
    "slope_difference": (_slope_difference, {"x", "compare", "a", "b"}, set(), "linear"),
    "ratio": (_ratio, {"column", "numerator", "reference"}, set(), "log2"),
    "ratio_to_best": (_ratio_to_best, {"column", "numerator", "candidates", "over"}, set(), "log2"),
    "breakdown": (_breakdown, {"x", "criterion"}, set(), "linear"),
    "plateau": (_plateau, {"x"}, set(), "log2"),
}


def _describe_statistic(p: dict) -> str:
    kind = p["kind"]
    if kind == "mean":
        return f"mean {p['column']} over runs" + (f" (resampled within each {p['strata']})" if "strata" in p else "")
    if kind == "min":
        return f"minimum of {p['column']}"
    if kind == "fraction":
        return f"fraction of runs with {p['criterion']}"
    if kind == "slope":
        if p.get("growth") == "exponential":
            return f"log2 of the growth factor per unit of {p['x']} of the median learning time (1 for 2^N)"
        return f"slope of log median learning time on log {p['x']}"
    if kind == "slope_difference":
        return (f"slope of log median learning time on log {p['x']}: {p['compare']} = {p['a']} "
                f"minus {p['compare']} = {p['b']}")
    if kind == "ratio":
        return f"mean {p['column']} at {_where_text(p['numerator'])} over at {p['reference']}"
    if kind == "ratio_to_best":
        return (f"mean {p['column']} of {p['numerator']} over that of the best {p['over']} "
                f"among {p['candidates']}")
    if kind == "breakdown":
        return f"smallest {p['x']} at which fewer than half the runs have {p['criterion']}"
    return f"the plateau {p['x']}: the smallest whose median learning time is within 1.2x of the best"


# ----------------------------------------------------------------------------------- rules

def _scaled(t: float, scale: str) -> float:
    return math.log2(t) if scale == "log2" else float(t)


def _nat(x: float, scale: str) -> float:
    return 2.0 ** x if scale == "log2" and not np.isnan(x) else x


def _edge(x: float, scale: str) -> str:
    """A rule's constant (target, band end) in the statistic's natural units."""
    return _num(2.0 ** x) if scale == "log2" else f"{x:g}"


def _target(rule: dict) -> str:
    return f"{rule['target']:g}"


def _ci(e: Estimate, scale: str) -> str:
    return f"[{_num(_nat(e.lo, scale))}, {_num(_nat(e.hi, scale))}]"


def rule_verdict(rule: dict, consts: dict, e: Estimate, scale: str) -> tuple[str, str]:
    """(verdict, why) of a one-estimate rule (about, below, at_most, inequality, most, few)."""
    kind, ci = rule["kind"], _ci(e, scale)
    if np.isnan(e.value) or np.isnan(e.lo) or np.isnan(e.hi):
        return "inconclusive", f"not computable ({e.detail})" if e.detail else "not computable"
    if kind in ("most", "few"):
        most = e.value >= consts["most"]["at_least"] and e.lo > consts["most"]["excludes_few_above"]
        few = e.value <= consts["few"]["at_most"] and e.hi < consts["few"]["excludes_most_below"]
        holds, differs = (most, few) if kind == "most" else (few, most)
        why = f"fraction {_num(e.value)} ({e.detail}), CI {ci}"
        return ("holds" if holds else "differs" if differs else "inconclusive"), why
    t = _scaled(rule["target"], scale)
    if kind == "about":
        h = consts["about"]["half_width"]
        band = f"[{_edge(t - h, scale)}, {_edge(t + h, scale)}]"
        if e.hi < t - h or e.lo > t + h:
            return "differs", f"CI {ci} misses {band}"
        if e.hi - e.lo > consts["about"]["max_ci_width"]:
            return "inconclusive", f"CI {ci} overlaps {band} but is wider than it"
        return "holds", f"CI {ci} overlaps {band}"
    if kind == "below":
        edge = t - consts["below"]["margin"]
        if e.hi < edge:
            return "holds", f"CI {ci} lies below {_edge(edge, scale)}"
        if e.lo >= edge:
            return "differs", f"CI {ci} lies at or above {_edge(edge, scale)}"
        return "inconclusive", f"CI {ci} straddles {_edge(edge, scale)}"
    if kind == "at_most":
        edge = t + consts["at_most"]["margin"]
        if e.hi <= edge:
            return "holds", f"CI {ci} lies at or below {_edge(edge, scale)}"
        if e.lo > edge:
            return "differs", f"CI {ci} lies above {_edge(edge, scale)}"
        return "inconclusive", f"CI {ci} straddles {_edge(edge, scale)}"
    upper = rule["op"] == "<="           # inequality, exact
    ok, bad = (e.hi <= t, e.lo > t) if upper else (e.lo >= t, e.hi < t)
    side = "at or below" if upper else "at or above"
    if ok:
        return "holds", f"CI {ci} lies {side} {_target(rule)}"
    if bad:
        return "differs", f"CI {ci} lies beyond {_target(rule)}"
    return "inconclusive", f"CI {ci} straddles {_target(rule)}"


def order_verdict(tiers: list) -> tuple[str, str]:
    """(verdict, why) of tiers [[(label, Estimate), ...], ...] stated in increasing order."""
    holds, reversed_ = True, []
    for lower, upper in zip(tiers, tiers[1:]):
        for a, ea in lower:
            for b, eb in upper:
                if ea.hi < eb.lo:
                    continue
                holds = False
                if eb.hi < ea.lo:
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
    t = _scaled(rule["target"], scale)
    if kind == "about":
        h = consts["about"]["half_width"]
        return (f"about {_target(rule)}: the 95% CI overlaps "
                f"[{_edge(t - h, scale)}, {_edge(t + h, scale)}]")
    if kind == "below":
        return f"below {_target(rule)}: the 95% CI lies below {_edge(t - consts['below']['margin'], scale)}"
    if kind == "at_most":
        return (f"at most about {_target(rule)}: the 95% CI lies at or below "
                f"{_edge(t + consts['at_most']['margin'], scale)}")
    return f"inequality {rule['op']} {_target(rule)}, exact: the 95% CI lies on that side"


RULES = {"about": {"target"}, "below": {"target"}, "at_most": {"target"}, "inequality": {"op", "target"},
         "order": {"tiers"}, "best_in": {"set"}, "most": set(), "few": set()}
GROUP_RULES = {"order", "best_in"}


# ---------------------------------------------------------------------------------- claims

def _boot(rules: dict) -> dict:
    b = rules["bootstrap"]
    return {"n_boot": b["resamples"], "seed": b["seed"], "level": rules["level"]}


def _matches(level, entry) -> bool:
    return level == entry or str(level) == str(entry)


def judge_group(claim: dict, rules: dict, label: str, df: pd.DataFrame) -> Row:
    """Estimate the claim's statistic on one group of rows and apply its rule."""
    stat, rule = claim["statistic"], claim["rule"]
    estimate, scale = STATISTICS[stat["kind"]][0], STATISTICS[stat["kind"]][3]
    boot = _boot(rules)
    if rule["kind"] not in GROUP_RULES:
        e = estimate(df, stat, boot)
        return Row(label, [("", e)], *rule_verdict(rule, rules, e, scale))
    col = claim["group"]
    levels = sorted(df[col].dropna().unique())
    ests = {lv: estimate(df[df[col] == lv], stat, boot) for lv in levels}
    shown = [(_level(lv), ests[lv]) for lv in levels]
    if rule["kind"] == "order":
        wanted = [[lv] for lv in levels] if rule["tiers"] == "ascending" else \
            [t if isinstance(t, list) else [t] for t in rule["tiers"]]
        tiers = []
        for tier in wanted:
            found = [next((lv for lv in levels if _matches(lv, entry)), None) for entry in tier]
            absent = [str(entry) for entry, lv in zip(tier, found) if lv is None]
            if absent:
                return Row(label, shown, "inconclusive", f"no runs with {col} = {', '.join(absent)}")
            tiers.append([(_level(lv), ests[lv]) for lv in found])
        return Row(label, [pair for tier in tiers for pair in tier], *order_verdict(tiers))
    in_set = set(select(df, rule["set"])[col])
    inside = [lv for lv in levels if lv in in_set and not np.isnan(ests[lv].value)]
    outside = [lv for lv in levels if lv not in in_set and not np.isnan(ests[lv].value)]
    if not inside or not outside:
        return Row(label, shown, "inconclusive", f"no estimate {'in' if not inside else 'outside'} the set")
    best_in, best_out = (min(side, key=lambda lv: ests[lv].value) for side in (inside, outside))
    return Row(label, shown, *order_verdict([[(_level(best_in), ests[best_in])],
                                             [(_level(best_out), ests[best_out])]]))


def combine(verdicts: list, aggregate: str) -> str:
    """all: holds when every group holds, differs when any differs; any: holds when some group holds,
    differs when every group differs; otherwise inconclusive."""
    if aggregate == "any":
        return ("holds" if "holds" in verdicts else
                "differs" if all(v == "differs" for v in verdicts) else "inconclusive")
    return ("differs" if "differs" in verdicts else
            "holds" if all(v == "holds" for v in verdicts) else "inconclusive")


def evaluate_claim(claim: dict, rules: dict, results: Path) -> Outcome:
    """The claim's verdict from the tables under `results` (inconclusive, naming what lacks, when the
    results are missing or partial)."""
    source = f"{claim['experiment']}/{claim.get('table', 'runs')}" if "experiment" in claim else claim["table"]
    try:
        df = select(claim_table(claim, results), claim.get("where", []))
    except FileNotFoundError as err:
        return Outcome(claim, "inconclusive", [], f"missing: {_relative(err, results)}")
    except (KeyError, NameError) as err:
        return Outcome(claim, "inconclusive", [], f"missing: {source} has no column {err}")
    if df.empty:
        return Outcome(claim, "inconclusive", [],
                       f"missing: no rows of {source} with {_where_text(claim.get('where', []))}")
    by = claim.get("by", [])
    groups = df.groupby(by, dropna=False, sort=True) if by else [((), df)]
    rows = [judge_group(claim, rules, ", ".join(f"{c} = {_level(v)}" for c, v in zip(by, key)), g)
            for key, g in ((k if isinstance(k, tuple) else (k,), g) for k, g in groups)]
    verdict = combine([r.verdict for r in rows], claim.get("aggregate", "all"))
    lacking = missing_runs(results, claim["experiment"]) if "experiment" in claim else None
    if lacking:
        return Outcome(claim, "inconclusive", rows,
                       f"partial: the tables lack {_relative(lacking, results)}; on the runs present: {verdict}")
    return Outcome(claim, verdict, rows)


@functools.cache
def _evaluate_computed(claim_yaml: str, rules_yaml: str) -> Outcome:
    """A claim on a computed table reads no results: evaluated once per process (keyed by its text)."""
    return evaluate_claim(yaml.safe_load(claim_yaml), yaml.safe_load(rules_yaml), Path())


def _relative(text, results: Path) -> str:
    """`text` with the results folder written RESULTS, so the report reads the same wherever it lies."""
    return str(text).replace(str(results), "RESULTS")


def evaluate(registry: dict, results: Path) -> list:
    rules = registry["rules"]
    return [evaluate_claim(c, rules, Path(results)) if "experiment" in c
            else _evaluate_computed(yaml.safe_dump(c), yaml.safe_dump(rules)) for c in registry["claims"]]


# -------------------------------------------------------------------------------- registry

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
                or set(entry) - {"paper", "own", "diagram", "image"}:
            raise RegistryError(f"{path}: figures.{fig_id}: give exactly one of paper (its label), diagram (the "
                                f"labels of paper figures that state nothing to test) or own (why)")
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


# ----------------------------------------------------------------------------------- text

def _num(x) -> str:
    """About three significant figures, thousands separated; n/a for NaN."""
    x = float(x)
    if np.isnan(x):
        return "n/a"
    if np.isinf(x):
        return "∞" if x > 0 else "-∞"
    if abs(x) < 1e-12:         # rounding noise of an exact zero
        return "0"
    if abs(x) < 1e-3:
        return f"{x:.2e}"
    return f"{x:,.{max(0, 2 - math.floor(math.log10(abs(x))))}f}"


def _level(v) -> str:
    if isinstance(v, (float, np.floating)):
        return "–" if np.isnan(v) else f"{v:g}"
    return str(v)


def _levels(values) -> str:
    return " ".join(_level(float(v)) for v in values)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def counts(outcomes: list) -> dict:
    return {v: sum(o.verdict == v for o in outcomes) for v in ("holds", "differs", "inconclusive")}


def _figure_label(registry: dict, fig_id: str) -> str:
    entry = registry["figures"][fig_id]
    if "own" in entry:
        return f"rvfx's own: {entry['own']}"
    return entry.get("paper") or entry["diagram"]


def _image(registry: dict, fig_id: str) -> str:
    return registry["figures"][fig_id].get("image", f"{fig_id}.png")


def estimate_rows(o: Outcome, groups: list) -> list:
    """Table rows [group, level, estimate, 95% CI, n, detail, verdict] of some of an outcome's groups."""
    scale = STATISTICS[o.claim["statistic"]["kind"]][3]
    out = []
    for row in groups:
        for i, (level, e) in enumerate(row.estimates):
            last = i == len(row.estimates) - 1
            out.append([row.label if i == 0 else "", level, _num(_nat(e.value, scale)), _ci(e, scale), str(e.n),
                        e.detail, f"{row.verdict}: {row.why}" if last else ""])
    return out


def headline(o: Outcome) -> str:
    """The statistic in one line: the estimate with its CI, or how many groups hold."""
    if not o.rows:
        return "no estimate"
    if len(o.rows) > 1:
        c = {v: sum(r.verdict == v for r in o.rows) for v in ("holds", "differs", "inconclusive")}
        return ", ".join(f"{n} {v}" for v, n in c.items() if n) + f" of {len(o.rows)} groups"
    scale = STATISTICS[o.claim["statistic"]["kind"]][3]
    return "; ".join(f"{level + ' ' if level else ''}{_num(_nat(e.value, scale))} {_ci(e, scale)}"
                     for level, e in o.rows[0].estimates)


COLUMNS = ["group", "level", "estimate", "95% CI", "n", "detail", "verdict"]


def estimate_table(o: Outcome, groups: list) -> tuple[list, list]:
    """(header, rows) of the estimates of `groups`, without columns that are empty in every row."""
    rows = estimate_rows(o, groups)
    keep = [i for i in range(len(COLUMNS)) if any(r[i] for r in rows)]
    return [COLUMNS[i] for i in keep], [[r[i] for i in keep] for r in rows]


README_GROUPS = 8
"""A README block lists at most this many groups (Theorem 1 has one per logged L): those that do not
hold, then the last; report.md lists them all."""


def block_markdown(o: Outcome, rules: dict, limit: int | None = None) -> str:
    """A claim's verdict and statistics: its report section's body, and (with a `limit` on the groups
    listed) its README block."""
    groups = o.rows
    if limit is not None and len(groups) > limit:
        groups = [r for r in o.rows[:-1] if r.verdict != "holds"][:limit - 1] + [o.rows[-1]]
    lines = [f"**{o.verdict}** ({describe_rule(o.claim, rules)})." + (f" {o.problem}." if o.problem else "")]
    if len(groups) < len(o.rows):
        lines[0] += (f" {len(groups)} of {len(o.rows)} groups listed: those that do not hold, and the last; "
                     f"report.md lists all.")
    header, rows = estimate_table(o, groups)
    if rows:
        lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def statistic_sentence(claim: dict) -> str:
    return (f"Statistic: {_describe_statistic(claim['statistic'])}"
            + (f", where {_where_text(claim['where'])}" if claim.get("where") else "")
            + (f"; per {', '.join(claim['by'])} ({claim.get('aggregate', 'all')} must hold)" if claim.get("by") else "")
            + ".")


def _status(o: Outcome) -> str:
    return f" ({o.problem.split(':')[0]})" if o.problem else ""


def summary_line(outcomes: list) -> str:
    c = counts(outcomes)
    return (f"{len(outcomes)} claims: {c['holds']} hold, {c['differs']} differ, {c['inconclusive']} inconclusive "
            f"({sum(bool(o.problem) for o in outcomes)} on missing or partial results)")


def _md_text(text: str) -> str:
    """Prose for Markdown: * and _ (as in Q*_2) taken literally."""
    return re.sub(r"([*_])", r"\\\1", text)


def _by_figure(outcomes: list) -> dict:
    figs: dict = {}
    for o in outcomes:
        figs.setdefault(o.claim["figure"], []).append(o)
    return figs


def _own_figures(registry: dict, outcomes: list) -> list:
    """Figures that no claim tests, rvfx's own and the paper's diagrams: (id, why)."""
    claimed = _by_figure(outcomes)
    return [(f, e["own"] if "own" in e else f"{e['diagram']}, diagrams that state nothing to test")
            for f, e in registry["figures"].items() if "paper" not in e and f not in claimed]


GENERATED = ("Generated by `rvfx report` from claims.yaml (the claims, their statistics, and the verdict rules "
             "with their justification) and the result tables; do not edit.")


def render_markdown(registry: dict, outcomes: list, out: Path) -> str:
    rules = registry["rules"]
    lines = ["# The paper's claims, tested", "", GENERATED, "", f"**{summary_line(outcomes)}.**", "",
             "| claim | paper | statistic [95% CI] | verdict |", "|---|---|---|---|"]
    lines += [f"| [{o.claim['id']}](#{o.claim['id']}) | {_cell(o.claim['paper'])} | {_cell(headline(o))} | "
              f"**{o.verdict}**{_status(o)} |" for o in outcomes]
    for fig_id, group in _by_figure(outcomes).items():
        image = _image(registry, fig_id)
        lines += ["", f"## {_figure_label(registry, fig_id)}: `{fig_id}`", "",
                  f"![{fig_id}]({image})" if (out / image).exists() else f"(figure not drawn: `rvfx plot {fig_id}`)"]
        for o in group:
            cl = o.claim
            lines += ["", f"### {cl['id']}", "", f"{cl['paper']}:", "", f"> {_md_text(cl['words'])}", "",
                      _md_text(statistic_sentence(cl)), "", block_markdown(o, rules)]
            if cl.get("note"):
                lines += ["", f"Note: {_md_text(cl['note'])}"]
    own = _own_figures(registry, outcomes)
    if own:
        lines += ["", "## Figures with no claim: rvfx's own, and the paper's diagrams", ""]
        lines += [f"- `{f}`: {why}" for f, why in own]
    return "\n".join(lines) + "\n"


STYLE = """body{font-family:sans-serif;max-width:70em;margin:auto;padding:1em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:.2em .5em;font-size:90%;
vertical-align:top}img{max-width:100%}.holds{color:#176117}.differs{color:#a11}.inconclusive{color:#8a6d00}
blockquote{margin:.3em 1em;font-style:italic}"""

SCRIPT = """window.addEventListener('load', function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) {
    imgs[i].setAttribute('data-natural-width', imgs[i].naturalWidth);
    if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++;
  }
  document.body.setAttribute('data-images-loaded', ok);
  document.body.setAttribute('data-tables-found', document.querySelectorAll('table').length);
});"""


def _html_table(header: list, rows: list) -> str:
    """A table of already escaped cells."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render_html(registry: dict, outcomes: list, out: Path) -> str:
    """The report as one HTML file: figures embedded as base64 PNG, no external resources; an inline
    script records on <body> how many images loaded and how many tables exist (for a headless browser)."""
    rules, esc = registry["rules"], html.escape
    summary = [[f'<a href="#{o.claim["id"]}">{esc(o.claim["id"])}</a>', esc(o.claim["paper"]), esc(headline(o)),
                f'<b class="{o.verdict}">{o.verdict}</b>{esc(_status(o))}'] for o in outcomes]
    parts, images, tables = [_html_table(["claim", "paper", "statistic [95% CI]", "verdict"], summary)], 0, 1
    for fig_id, group in _by_figure(outcomes).items():
        image = out / _image(registry, fig_id)
        parts.append(f"<h2>{esc(_figure_label(registry, fig_id))}: <code>{esc(fig_id)}</code></h2>")
        if image.exists():
            data = base64.b64encode(image.read_bytes()).decode("ascii")
            parts.append(f'<img alt="{esc(fig_id)}" src="data:image/png;base64,{data}">')
            images += 1
        else:
            parts.append(f"<p>(figure not drawn: <code>rvfx plot {esc(fig_id)}</code>)</p>")
        for o in group:
            cl = o.claim
            parts.append(f'<h3 id="{cl["id"]}">{esc(cl["id"])}: <span class="{o.verdict}">{o.verdict}</span></h3>'
                         f"<p>{esc(cl['paper'])}:</p><blockquote>{esc(cl['words'])}</blockquote>"
                         f"<p>{esc(statistic_sentence(cl))}</p><p>Rule: {esc(describe_rule(cl, rules))}."
                         + (f" <b>{esc(o.problem)}</b>." if o.problem else "") + "</p>")
            header, rows = estimate_table(o, o.rows)
            if rows:
                parts.append(_html_table(header, [[esc(c) for c in r] for r in rows]))
                tables += 1
            if cl.get("note"):
                parts.append(f"<p>Note: {esc(cl['note'])}</p>")
    own = _own_figures(registry, outcomes)
    if own:
        parts.append("<h2>Figures with no claim: rvfx's own, and the paper's diagrams</h2><ul>"
                     + "".join(f"<li><code>{esc(f)}</code>: {esc(why)}</li>" for f, why in own) + "</ul>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>rvfx: the paper's claims, tested</title><style>{STYLE}</style></head>\n"
            f'<body data-images-expected="{images}" data-tables-expected="{tables}">'
            f"<h1>The paper's claims, tested</h1><p>{esc(GENERATED)}</p><p><b>{esc(summary_line(outcomes))}."
            f"</b></p>{''.join(parts)}<script>{SCRIPT}</script></body></html>\n")


# ---------------------------------------------------------------------- files and README

def readme_blocks(text: str) -> list:
    """(claim id, content) of every <!-- report:begin ID --> ... <!-- report:end --> block."""
    return [(m.group(1), m.group(2)) for m in MARKER.finditer(text)]


def _blocks(registry: dict, outcomes: list) -> dict:
    """What each claim's README block holds."""
    return {o.claim["id"]: block_markdown(o, registry["rules"], README_GROUPS) + "\n" for o in outcomes}


def fill_readme(text: str, registry: dict, outcomes: list) -> str:
    """`text` with every marked block replaced by its claim's block_markdown."""
    blocks = _blocks(registry, outcomes)
    unknown = [cid for cid, _ in readme_blocks(text) if cid not in blocks]
    if unknown:
        raise RegistryError(f"README blocks name no claim: {', '.join(unknown)}")
    return MARKER.sub(lambda m: f"<!-- report:begin {m.group(1)} -->\n{blocks[m.group(1)]}<!-- report:end -->", text)


# a number, with its sign when one stands before it ("−3.78", not the hyphen of "1,100-1,900")
NUMBER = re.compile(r"(?:(?<![\w.,])[-−+](?=\d))?(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w.]*\w)")


def _plain(token: str) -> str:
    """A printed number as compared: no thousands commas, ASCII minus, no plus."""
    return token.replace(",", "").replace("−", "-").lstrip("+")


def _significant_digits(token: str) -> int:
    digits = _plain(token).lstrip("-")
    if "." in digits:
        return len(digits.replace(".", "").lstrip("0"))
    return len(digits.lstrip("0").rstrip("0"))


def paper_numbers(outcomes: list, results: Path, figures: Path) -> set[str]:
    """The numbers the paper tables print (commas dropped): every estimate and CI end as the report
    prints them, and every number of the summary tables (`figures`/<figure id>*.md) of the figures
    whose experiments all have their tables in `results`."""
    values = {_num(x) for o in outcomes for r in o.rows for _, e in r.estimates for x in (e.value, e.lo, e.hi)}
    have = {p.name for p in results.glob("*") if (p / "runs.csv").exists()}
    for table in sorted(figures.glob("*.md")):
        fig = _figure_of_table(table.stem)
        if fig is not None and fig.experiments and set(fig.experiments) <= have:
            values.update(NUMBER.findall(table.read_text(encoding="utf-8")))
    return {_plain(v) for v in values}


def _figure_of_table(stem: str):
    """The figure whose table `stem` is: the longest figure id equal to it or followed by "_"
    (deepsea_tabular_scaling_slopes is deepsea_tabular_scaling's, not deepsea_tabular's)."""
    ids = [i for i in FIGURES if stem == i or stem.startswith(i + "_")]
    return FIGURES[max(ids, key=len)] if ids else None


def stray_numbers(text: str, numbers: set[str]) -> list[tuple[int, str]]:
    """(line, number) of each number outside the report blocks of `text` that is printed in
    `numbers`, as a copy of a table would be; only numbers of three significant digits or more
    ("2.35", "0.220", "1,364"): "0.5" or "20" are too common to tell."""
    outside = MARKER.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return [(i, token) for i, line in enumerate(outside.splitlines(), 1) for token in NUMBER.findall(line)
            if _significant_digits(token) >= 3 and _plain(token) in numbers]


def write_files(registry: dict, outcomes: list, out: Path, readme: Path | None = None) -> list:
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "report.md", out / "report.html"]
    write_atomic_text(written[0], render_markdown(registry, outcomes, out))
    write_atomic_text(written[1], render_html(registry, outcomes, out))
    if readme is not None:
        write_atomic_text(readme, fill_readme(readme.read_text(encoding="utf-8"), registry, outcomes))
        written.append(readme)
    return written


def check_files(registry: dict, outcomes: list, out: Path, readme: Path | None = None,
                results: Path | None = None) -> list:
    """One line per disagreement between the recomputed report and the files in `out` (and the
    README's blocks), and per number of the paper tables (those of `results`) that the README
    quotes outside its blocks; empty when they all agree."""
    problems = []
    for name, text in (("report.md", render_markdown(registry, outcomes, out)),
                       ("report.html", render_html(registry, outcomes, out))):
        path = out / name
        if not path.exists():
            problems.append(f"{path}: missing (run rvfx report without --check)")
        elif path.read_text(encoding="utf-8") != text:
            old = path.read_text(encoding="utf-8").splitlines()
            new = text.splitlines()
            i = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
            problems.append(f"{path}:{i + 1}: differs from the recomputed report")
    if readme is not None:
        blocks = _blocks(registry, outcomes)
        for cid, content in readme_blocks(readme.read_text(encoding="utf-8")):
            if cid not in blocks:
                problems.append(f"{readme}: block {cid} names no claim")
            elif content != blocks[cid]:
                problems.append(f"{readme}: block {cid} differs from the results: "
                                f"{_first_difference(content, blocks[cid])}")
        if results is not None:
            numbers = paper_numbers(outcomes, results, out)
            problems += [f"{readme}:{line}: {token} is a number of the result tables outside a report block "
                         f"(quote it through <!-- report:begin ID -->, or link the table)"
                         for line, token in stray_numbers(readme.read_text(encoding="utf-8"), numbers)]
    return problems


def _first_difference(old: str, new: str) -> str:
    for a, b in zip(old.splitlines(), new.splitlines()):
        if a != b:
            return f"{a.strip()!r} should be {b.strip()!r}"
    return "length differs"

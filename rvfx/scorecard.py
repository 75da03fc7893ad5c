"""`rvfx scorecard`: an agent through a fixed battery beside the paper's agents.

The battery is Fig. 5's deep-sea learning-time scaling (the shipped spec deepsea_tabular_scaling:
treasure instances, each run stopped at its learning time, eq. 7.1), its environment settings and
scales unchanged, with the agent in place of the paper's. Its score is the claims report's slope
statistic (the log-log slope of the median learning time on N, with its 95% bootstrap CI, censored
medians left out), the exponential reading beside it (log2 of the growth factor per unit of N), and
the paper's verdict (Table 1, Sec. 4): growth polynomial in N is deep exploration, exponential is
dithering, by `fit_growth` (the fit with half the residual sum of squares of the other, over sizes
spanning a factor of 2), never on fewer runs or sizes than the report's rules ask (`too_few`). Beside
it, each paper agent's own, from the committed paper-scale record (figures/paper), shipped in the
package as rvfx/data/scorecard_baseline.csv (`baseline`; `python -m rvfx.scorecard figures/paper`
rewrites it) so that a wheel scores without the clone; a baseline measured on other environment
settings is left out, saying so.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from rvfx import shipped
from rvfx.analysis.stats import censored_medians, fit_growth, fit_loglog, learning_times
from rvfx.experiment.results import env_params, load_table
from rvfx.report.registry import load_registry
from rvfx.report.rules import order_verdict, too_few
from rvfx.report.statistics import STATISTICS, Estimate, num

BATTERY = "deepsea_tabular_scaling"
SIZE = "env.size"
BASELINE = Path(__file__).resolve().parent / "data" / "scorecard_baseline.csv"
# (experiment of the paper record, agent label) -> the name the scorecard shows
PAPER_AGENTS = {
    ("deepsea_tabular_scaling", "rlsvi"): "RLSVI, tabular (Fig. 5)",
    ("deepsea_tabular_scaling", "psrl"): "PSRL (Fig. 5)",
    ("deepsea_tabular_scaling", "ucrl2"): "UCRL2 (Fig. 5)",
    ("deepsea_ensemble_scaling", "pixels"): "ensemble RLSVI, K=20 (Fig. 15)",
    ("exploration_table", "dithering_egreedy"): "epsilon-greedy LSVI (Table 1)",
    ("exploration_table", "dithering_boltzmann"): "Boltzmann LSVI (Table 1)",
}
VERDICTS = {"polynomial": "polynomial: deep exploration",
            "exponential": "exponential: dithering",
            "none within budget": "no learning within the budget at any size (Table 1's ∞)"}


class ScorecardError(Exception):
    """An agent or spec the battery cannot score, in one line."""


def battery_env(env: dict) -> str:
    """Deep sea's settings but its size, as one comparable string ("move_cost=diagonal ...")."""
    return " ".join(f"{k}={v}" for k, v in sorted(env.items()) if k != "size")


def _rules() -> dict:
    return load_registry(shipped.CLAIMS)["rules"]


def _boot(rules: dict) -> dict:
    """The report's bootstrap: claims.yaml's resamples, seed and level."""
    return {"n_boot": rules["bootstrap"]["resamples"], "seed": rules["bootstrap"]["seed"], "level": rules["level"]}


def score(runs: pd.DataFrame, rules: dict) -> dict:
    """One agent's runs of the battery scored: the log-log slope and the log2 growth factor per unit
    of N (the report's slope statistic, each an Estimate), the growth kind of its medians and the verdict."""
    slope_of = STATISTICS["slope"][0]
    slope = slope_of(runs, {"x": SIZE}, _boot(rules))
    rate = slope_of(runs, {"x": SIZE, "growth": "exponential"}, _boot(rules))
    medians = censored_medians(runs, SIZE)
    growth = fit_growth(medians.index.to_numpy(float), medians.to_numpy(float)).kind
    few = too_few(slope, "slope", rules)
    verdict = VERDICTS.get(growth, f"inconclusive ({growth})") if not few or growth == "none within budget" \
        else f"inconclusive ({few})"
    return {"slope": slope, "rate": rate, "growth": growth, "verdict": verdict}


def baseline(record: Path) -> pd.DataFrame:
    """The paper agents' rows of the scorecard from a paper record (figures/paper): per agent, its
    score, the intercept and sizes of its log-log fit (to draw it), its runs and environment settings."""
    rules, rows = _rules(), []
    for (experiment, agent), name in PAPER_AGENTS.items():
        runs = load_table(record, experiment, "runs")
        runs = runs[runs["agent"] == agent]
        s = score(runs, rules)
        fit = fit_loglog(runs[SIZE].to_numpy(float), learning_times(runs), n_boot=1)
        rows.append({"agent": name, "experiment": experiment, "label": agent,
                     "algorithm": runs["algorithm"].iloc[0], "slope": s["slope"].value, "slope_lo": s["slope"].lo,
                     "slope_hi": s["slope"].hi, "rate": s["rate"].value, "rate_lo": s["rate"].lo,
                     "rate_hi": s["rate"].hi, "growth": s["growth"], "verdict": s["verdict"],
                     "intercept": fit.intercept,
                     "sizes": " ".join(str(int(n)) for n in fit.sizes_used), "runs": len(runs),
                     "censored": int(runs["censored"].sum()),
                     "env": battery_env(dataclasses.asdict(env_params(record, experiment)))})
    return pd.DataFrame(rows)


def baseline_csv(record: Path) -> str:
    """`baseline` as the shipped CSV's text."""
    return baseline(record).to_csv(index=False, lineterminator="\n", float_format="%.6g")


def load_baseline() -> pd.DataFrame:
    return pd.read_csv(BASELINE, keep_default_na=False, na_values=[""])


def agents_of(target: str, registered) -> tuple[str, dict | None]:
    """(name, None) for a registered algorithm TARGET (run with its defaults), or (name, agents) for a
    spec file TARGET: the agents of its `agents:` mapping, run in the battery with their settings."""
    if target in registered:
        return target, None
    path = shipped.spec_path(target)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ScorecardError(f"{target}: neither a registered agent nor a readable spec ({err})") from None
    agents = data.get("agents") if isinstance(data, dict) else None
    if not isinstance(agents, dict) or not agents:
        raise ScorecardError(f"{target}: a spec needs an agents mapping")
    return str(data.get("experiment", path.stem)), agents


def battery_spec(name: str, agents: dict) -> str:
    """The battery's spec with `agents` in place of the paper's: the shipped deepsea_tabular_scaling,
    its environment, stopping rule, episodes and sizes at each scale unchanged, and at each scale at
    least the seeds the report's rules ask of a slope (claims.yaml's minimum_runs), so that a verdict
    can be reached."""
    spec = yaml.safe_load(shipped.shipped_spec(BATTERY).read_text(encoding="utf-8"))
    spec.update(experiment=f"scorecard_{name}", figures=[], agents=agents,
                description=f"rvfx scorecard: {name} on {BATTERY}'s battery")
    spec["scales"]["paper"].pop("agents", None)         # the paper agents' own overrides
    need = _rules().get("minimum_runs", {}).get("slope", 1)
    for scale in spec["scales"].values():
        scale["seeds"] = max(scale.get("seeds", spec["seeds"]), need)
    return yaml.safe_dump(spec, sort_keys=False)


def env_problem(spec_env: dict, battery: dict) -> str:
    """Why a spec's environment is not the battery's (the settings that differ), or ""."""
    if spec_env.get("name", "deep_sea") != "deep_sea":
        return f"env.name: {spec_env['name']}, the battery's is deep_sea"
    differ = [f"env.{k}: {spec_env[k]!r}, the battery's is {battery.get(k)!r}" for k in sorted(spec_env)
              if k not in ("name", "size") and spec_env[k] != battery.get(k)]
    return "; ".join(differ)


def card(runs: pd.DataFrame, base: pd.DataFrame, env: str) -> tuple[pd.DataFrame, list[str]]:
    """(table, notes): a row per agent of `runs` (the battery's) and per paper agent measured on the
    same environment settings `env`; notes name the baselines left out and, per scored agent, how
    its slope compares with each baseline's (the report's order rule: CIs not overlapping)."""
    rules, rows, notes = _rules(), [], []
    same = base[base["env"] == env]
    for name in base.loc[base["env"] != env, "agent"]:
        notes.append(f"{name} left out: measured on other deep sea settings")
    for agent, g in runs.groupby("agent", sort=False):
        s = score(g, rules)
        rows.append(_row(agent, s["slope"], s["rate"], s["growth"], s["verdict"], g, "this run"))
        for b in same.to_dict("records"):
            theirs = Estimate(b["slope"], b["slope_lo"], b["slope_hi"], b["runs"])
            verdict, _ = order_verdict([[(agent, s["slope"])], [(b["agent"], theirs)]])
            faster = {"holds": "grows more slowly than", "differs": "grows faster than"}.get(verdict, "is not told "
                                                                                             "apart from")
            notes.append(f"{agent} {faster} {b['agent']} (slope CIs "
                         f"{'not ' if verdict != 'inconclusive' else ''}overlapping)")
    for b in same.to_dict("records"):
        rows.append({"agent": b["agent"], "slope [95% CI]": _ci(b["slope"], b["slope_lo"], b["slope_hi"]),
                     "log2 growth per N [95% CI]": _ci(b["rate"], b["rate_lo"], b["rate_hi"]),
                     "sizes": b["sizes"], "runs": b["runs"], "censored": b["censored"],
                     "verdict": b["verdict"],
                     "source": f"figures/paper/{b['experiment']} (paper scale)"})
    return pd.DataFrame(rows), notes


def _ci(value: float, lo: float, hi: float) -> str:
    return f"{num(value)} [{num(lo)}, {num(hi)}]"


def _row(agent, slope: Estimate, rate: Estimate, growth: str, verdict: str, runs, source: str) -> dict:
    sizes = sorted(runs[SIZE].unique())
    return {"agent": agent, "slope [95% CI]": _ci(slope.value, slope.lo, slope.hi),
            "log2 growth per N [95% CI]": _ci(rate.value, rate.lo, rate.hi),
            "sizes": " ".join(str(int(n)) for n in sizes), "runs": len(runs), "censored": int(runs["censored"].sum()),
            "verdict": verdict, "source": source}


def fit_lines(base: pd.DataFrame, env: str) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(name, sizes, fitted median learning time) of each baseline on `env`, over its fitted sizes."""
    lines = []
    for b in base[base["env"] == env].to_dict("records"):
        if not np.isfinite(b["slope"]) or not b["sizes"]:
            continue
        n = np.array([float(x) for x in str(b["sizes"]).split()])
        lines.append((f"{b['agent']}: slope {_ci(b['slope'], b['slope_lo'], b['slope_hi'])}", n,
                      np.exp(b["intercept"]) * n ** b["slope"]))
    return lines


if __name__ == "__main__":       # python -m rvfx.scorecard figures/paper: rewrite the shipped baseline
    BASELINE.parent.mkdir(exist_ok=True)
    BASELINE.write_text(baseline_csv(Path(sys.argv[1])), encoding="utf-8")
    print(f"{BASELINE}: {len(load_baseline())} paper agents from {sys.argv[1]}")

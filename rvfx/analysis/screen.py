"""The Fig. 17 screen's per-run tables (configs/cartpole_ablation.yaml; the confirmation's too,
configs/cartpole_confirm.yaml, whose variants are its cells): `screen_runs`, one row per
run with its cell, factor levels and responses, and `diagnostics_summary`, the members' value
diagnostics reduced to one value per run, diagnostic episode and kind of probe state. Both are
small enough to commit as the screen's record (`rvfx run --record`), so its analysis survives the
loss of the per-episode and per-member tables they are computed from.

The responses are those the spec names: learnt (mean return >= LEARNT_RETURN over the last 10% of
episodes), rewarded episodes (upright steps > 0), the mean return over the last 10%, and the
over-estimation (Q minus the discounted return, mean over members) at the last diagnostic point.
One response is added after the spec, when seed 0 had run (so labelled post hoc): the
over-estimation on a signed log scale, sign(x) log10(1 + |x|), because one run whose Q diverged
(~6,900 against ~10 in most runs) sets the raw response's means and pooled spread alone.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.final_return import LEARNT_RETURN, final_returns, reached
from rvfx.experiment.results import load_spec_value, load_table

REFERENCE = "cartpole_reference"   # the reference controller's runs: an upper line, not a cell


def design(results, experiment: str) -> tuple[list[str], list[str], dict]:
    """(factors, controls, agents' resolved settings) from the spec saved beside the tables."""
    d = load_spec_value(results, experiment, ("design",)) or {}
    return list(d.get("factors", [])), list(d.get("controls", [])), load_spec_value(results, experiment, ("agents",))


def screen_runs(results, experiment: str) -> pd.DataFrame:
    """One row per run: its cell (agent), factor values, and the responses."""
    factors, controls, agents = design(results, experiment)
    eps = load_table(results, experiment, "episodes")
    by = eps.assign(_reached=reached(eps)).groupby("run_id", sort=False)
    runs = by.agg(agent=("agent", "first"), algorithm=("algorithm", "first"), seed=("seed", "first"),
                  rewarded_episodes=("_reached", "sum"))
    runs["final_return"] = final_returns(eps)
    runs["learnt"] = runs["final_return"] >= LEARNT_RETURN
    diag = load_table(results, experiment, "diagnostics")
    over = diag[diag["metric"] == "overestimation"]
    over = over[over["episode"] == over.groupby("run_id")["episode"].transform("max")]
    runs["overestimation"] = over.groupby("run_id")["value"].mean()
    runs["log_overestimation"] = np.sign(runs["overestimation"]) * np.log10(1.0 + runs["overestimation"].abs())
    runs["flip_rate"] = diag[diag["metric"] == "flip_rate"].groupby("run_id")["value"].mean()
    runs["reference"] = runs["algorithm"] == REFERENCE
    first = by.first()
    for key in factors:
        scope, _, name = key.partition(".")
        runs[key] = first[key] if key in first else [agents[a].get(name) for a in runs["agent"]]
    runs["control"] = runs["agent"].isin(controls)
    return runs.reset_index()


def diagnostics_summary(results, experiment: str) -> pd.DataFrame:
    """Per run, diagnostic episode and metric (long format, `kind` empty where there is none):
    overestimation and flip_rate, means over members; q_spread, the s.d. over members of max_a Q
    averaged over the probe states of a kind, and q_level, the mean of max_a Q over members and
    those states. Kinds: hanging, upright_still, upright_spinning, and the reference controller's
    swing-up states (reference_*) pooled."""
    diag = load_table(results, experiment, "diagnostics")
    run = ["run_id", "agent", "seed", "episode"]
    means = diag[diag["metric"].isin(["overestimation", "flip_rate"])].groupby(
        [*run, "metric"], sort=False)["value"].mean().reset_index().assign(kind="")
    q = diag[diag["metric"] == "q_max"]
    q = q.assign(kind=np.where(q["probe"].str.startswith("reference_"), "reference swing-up states", q["probe"]))
    spread = q.groupby([*run, "kind", "probe"], sort=False)["value"].std().groupby([*run, "kind"], sort=False).mean()
    level = q.groupby([*run, "kind"], sort=False)["value"].mean()
    parts = [means, spread.reset_index().assign(metric="q_spread"), level.reset_index().assign(metric="q_level")]
    out = pd.concat(parts, ignore_index=True)[[*run, "metric", "kind", "value"]]
    order = {r: i for i, r in enumerate(dict.fromkeys(diag["run_id"]))}
    return out.sort_values(["run_id", "episode"], key=lambda c: c.map(order) if c.name == "run_id" else c,
                           kind="stable").reset_index(drop=True)

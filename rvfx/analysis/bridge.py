"""The cartpole bridge's readouts and its stated rule (configs/cartpole_bridge.yaml): per run, the first
episode returning more than 100, the episodes that did and the fraction of episodes with any reward; per
arm, whether it learns; the gate against the head-to-head; and the step at which learning stops."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.final_return import success_readouts
from rvfx.analysis.stats import median_ci, sem
from rvfx.experiment.results import experiment_dir, load_table

ARMS = {   # the bridge's arms in its order, each adding one change to the arm before it (no "|": Markdown cells)
    "bsuite0": "bsuite's cartpole_swingup/0 on rvfx's cartpole",
    "xdot": "+ reward needs ẋ within ±1",
    "upright95": "+ the paper's box: cos θ > 0.95; θ̇, x, ẋ within ±1",
    "raw_obs": "+ the paper's observation (θ, θ̇, x, ẋ, t)",
    "rails": "+ rails at x = ±5, no end off the track",
    "cost": "+ the paper's action cost (0.01 a step)",
    "glorot": "+ Glorot initialisation: the paper's task",
}
HEAD_TO_HEAD = "bsuite_cartpole_swingup"
GATE_AGENT, GATE_LEVEL = "ensemble_haiku", "cartpole_swingup/0"   # the head-to-head arm arm 0 must match


def run_readouts(episodes: pd.DataFrame) -> pd.DataFrame:
    """One row per run: arm, step (its place in ARMS), seed, `success_readouts` and `rewarded` (the
    fraction of episodes with any rewarded step); a ValueError names an agent that is not an arm."""
    unknown = sorted(set(episodes["agent"]) - set(ARMS))
    if unknown:
        raise ValueError(f"cartpole_bridge: {', '.join(unknown)} not among the bridge's arms ({', '.join(ARMS)})")
    rows = []
    for run_id, g in episodes.groupby("run_id", sort=False):
        g = g.sort_values("episode")
        arm = g["agent"].iloc[0]
        rows.append({"arm": arm, "step": list(ARMS).index(arm), "seed": int(g["seed"].iloc[0]), "run_id": run_id,
                     **success_readouts(g["return"].to_numpy()),
                     "rewarded": float((g["upright_steps"] > 0).mean())})
    return pd.DataFrame(rows).sort_values(["step", "seed"], ignore_index=True)


def arm_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per arm, in the bridge's order: the median first-success episode with its 95% CI (`median_ci`;
    never = +inf), the runs that never passed 100, episodes > 100 and the rewarded fraction (mean and
    s.e. over seeds), and whether the arm learns: more than half its runs pass 100 (a finite median)."""
    rows = []
    for (step, arm), g in runs.groupby(["step", "arm"], sort=True):
        med, lo, hi = median_ci(g["first_success"].to_numpy(float))
        n = len(g)
        rows.append({"step": step, "arm": arm, "change": ARMS[arm], "seeds": n, "episodes": int(g["episodes"].max()),
                     "median": med, "lo": lo, "hi": hi, "never": int(g["first_success"].isna().sum()),
                     "successes": float(g["successes"].mean()), "successes_sem": sem(g["successes"]),
                     "rewarded": float(g["rewarded"].mean()), "rewarded_sem": sem(g["rewarded"]),
                     "learns": bool(np.isfinite(med))})
    return pd.DataFrame(rows)


def gate_reference(results) -> tuple[float, float, float] | None:
    """The median first-success episode of the head-to-head's ensemble_haiku at bsuite level 0 with its
    95% CI (`median_ci`), from the same results folder; None without those runs."""
    if not (experiment_dir(results, HEAD_TO_HEAD) / "episodes.csv").exists():
        return None
    eps = load_table(results, HEAD_TO_HEAD, "episodes")
    eps = eps[(eps["agent"] == GATE_AGENT) & (eps["env.id"] == GATE_LEVEL)]
    if not len(eps):
        return None
    times = [success_readouts(g.sort_values("episode")["return"].to_numpy())["first_success"]
             for _, g in eps.groupby("run_id", sort=True)]
    return median_ci(np.array(times, float))


def gate(summary: pd.DataFrame, reference: tuple[float, float, float] | None) -> str:
    """The rule's gate: arm 0 learns and its median lies in `reference`, the 95% CI (median, lo, hi) of
    the head-to-head's ensemble_haiku at bsuite level 0 (the same agent on bsuite's own code)."""
    first = summary[summary["step"] == 0]
    if not len(first):
        return "no runs of arm 0"
    if reference is None:
        return f"no head-to-head runs of {GATE_AGENT} at {GATE_LEVEL}"
    arm0 = first.iloc[0]
    _, lo, hi = reference
    inside = lo <= (arm0["median"] if arm0["learns"] else np.inf) <= hi
    return "passes" if arm0["learns"] and inside else "fails"


def stop(summary: pd.DataFrame) -> str | None:
    """The arm at which learning stops: the first arm k >= 1 that does not learn while arm k - 1 does
    (None if every arm learns, or no arm after a learning one fails)."""
    learns = dict(zip(summary["step"], summary["learns"]))
    for _, row in summary.iterrows():
        if row["step"] >= 1 and not row["learns"] and learns.get(row["step"] - 1, False):
            return row["arm"]
    return None

"""The Fig. 17 screen (configs/cartpole_ablation.yaml; the confirmation's too,
configs/cartpole_confirm.yaml, whose variants are its cells) as numbers: its per-run tables and its
design analysis. `screen_runs`, one row per run with its cell, factor levels and responses, and
`diagnostics_summary`, the members' value diagnostics reduced to one value per run, diagnostic
episode and kind of probe state, are small enough to commit as the screen's record (`rvfx run
--record`), so its analysis survives the loss of the per-episode and per-member tables they are
computed from. From them: the factors coded -1/+1 (`signs`), how far the design has run
(`progress`), the main effects (`main_effects`) and the cell sent to the confirmation
(`confirmation_cell`); a factor's "-" level is its value in the first cell of the spec.

The responses are those the spec names: learnt (mean return >= LEARNT_RETURN over the last 10% of
episodes), rewarded episodes (upright steps > 0), the mean return over the last 10%, and the
over-estimation (Q minus the discounted return, mean over members) at the last diagnostic point.
One response is added after the spec, when seed 0 had run (so labelled post hoc): the
over-estimation on a signed log scale, sign(x) log10(1 + |x|), because one run whose Q diverged
(~6,900 against ~10 in most runs) sets the raw response's means and pooled spread alone.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from rvfx.analysis.final_return import LEARNT_RETURN, final_returns, reached
from rvfx.analysis.stats import factorial_effects
from rvfx.experiment.results import load_spec_value, load_table

REFERENCE = "cartpole_reference"   # the reference controller's runs: an upper line, not a cell
RESPONSES = ("rewarded_episodes", "final_return", "overestimation", "log_overestimation")   # screen_runs' columns


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


def factor_value(agents: dict, cell: str, factor: str):
    """The level of `factor` ("agent.x" or "env.x") that the spec sets for `cell`, or None."""
    scope, _, name = factor.partition(".")
    if scope == "agent" and name in agents[cell]:
        return agents[cell][name]
    grid = (agents[cell].get("grid") or {}).get(factor)
    return grid[0] if grid else None


def signs(runs: pd.DataFrame, factors: list[str], agents: dict, controls: list[str]) -> tuple[pd.DataFrame, dict]:
    """The design cells' runs with factor columns coded -1/+1, and each factor's (-, +) levels: its
    value in the spec's first cell, then the other one (from the runs where the spec does not say)."""
    cells = runs[~runs["control"]]
    levels = {}
    for f in factors:
        spec = [factor_value(agents, a, f) for a in agents if a not in controls]
        seen = spec if None not in spec else list(cells[f])
        levels[f] = list(dict.fromkeys(seen))
    bad = [f for f, lv in levels.items() if len(lv) != 2]
    if bad:
        raise ValueError(f"factors without exactly two levels in the design cells: {bad}")
    coded = cells.assign(**{f: np.where(cells[f] == levels[f][0], -1, 1) for f in factors})
    return coded, levels


class Progress(NamedTuple):
    """How far the screen's design has run: cells with a run, of all; runs finished, of all."""
    cells_run: int
    cells: int
    runs: int
    planned: int

    @property
    def complete(self) -> bool:
        """Every design run has finished."""
        return self.runs == self.planned

    @property
    def dof(self) -> int:
        """Degrees of freedom of the complete screen's within-cell spread (runs minus cells), on
        which the spec's 2 s.e. rule rests."""
        return self.planned - self.cells

    @property
    def every_cell(self) -> bool:
        """Every design cell has run, so the cells' signs balance and main effects are estimable."""
        return self.cells_run == self.cells


def progress(coded: pd.DataFrame, agents: dict, controls: list[str], seeds: int) -> Progress:
    """The Progress of the design cells' runs (`coded`, from `signs`) with `seeds` planned per cell."""
    cells = [a for a in agents if a not in controls]
    return Progress(coded["agent"].nunique(), len(cells), len(coded), len(cells) * seeds)


def main_effects(coded: pd.DataFrame, factors: list[str], done: Progress) -> dict | None:
    """Per response (RESPONSES), the factors' main effects (`factorial_effects`, indexed by factor);
    None until every cell has run."""
    if not done.every_cell:
        return None
    return {col: factorial_effects(coded.dropna(subset=[col]), factors, "agent", col).set_index("factor")
            for col in RESPONSES}


def confirmation_cell(coded: pd.DataFrame, factors: list[str]) -> dict:
    """The design cell the spec's rule sends to configs/cartpole_confirm.yaml: its name, signs ("+-..."),
    seeds learnt of seeds, mean rewarded episodes and mean final return per run, and whether any
    cell learnt (`any_learnt`).

    Fixed before the screen was seen (spec comments): the cell learning in the most seeds, ties
    broken by the higher mean final return, then by fewer factors at +; if no cell learns in any
    seed, the cell with the most rewarded episodes per run (same ties), reported as no success.
    """
    g = coded.groupby("agent", sort=False)
    cells = pd.DataFrame({"learnt": g["learnt"].sum().astype(int), "seeds": g.size(),
                          "rewarded_episodes": g["rewarded_episodes"].mean(),
                          "final_return": g["final_return"].mean(),
                          "plus": (g[factors].first() > 0).sum(axis=1)})
    any_learnt = bool(cells["learnt"].max() > 0)
    first = "learnt" if any_learnt else "rewarded_episodes"
    best = cells.sort_values([first, "final_return", "plus"], ascending=[False, False, True], kind="stable").iloc[0]
    return {"cell": best.name, "signs": "".join("+" if v > 0 else "-" for v in g[factors].first().loc[best.name]),
            "learnt": int(best["learnt"]), "seeds": int(best["seeds"]),
            "rewarded_episodes": float(best["rewarded_episodes"]), "final_return": float(best["final_return"]),
            "any_learnt": any_learnt}

"""Why rvfx's ensemble RLSVI solves bsuite's deep_sea later than bsuite's boot_dqn
(configs/bsuite_deep_sea_settings.yaml), as numbers: a 2^k factorial of the settings in which the
two differ, per size, with the episode each run solves the size at (bsuite's criterion) as the
response, summarised per cell and size, and the factors' main effects on its log2.

A factor's "-" level is the first value of its grid in the spec (the paper's), "+" the other."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.bsuite import find_solution, load_runs
from rvfx.analysis.stats import factorial_effects
from rvfx.experiment.results import load_spec_value, load_table

EXPERIMENT = "bsuite_deep_sea_settings"


def solved_runs(results) -> tuple[pd.DataFrame, list[str], dict]:
    """(one row per run: seed, factors coded -1/+1, cell ("+-+"), size, episode solved or the last
    logged one, solved, its log2; the factors; each factor's (-, +) levels)."""
    factors = list(load_spec_value(results, EXPERIMENT, ("design", "factors")))
    levels = {f: list(load_spec_value(results, EXPERIMENT, ("grid", f))) for f in factors}
    bad = [f for f, lv in levels.items() if len(lv) != 2]
    if bad:
        raise ValueError(f"{EXPERIMENT}: factors without exactly two grid levels: {bad}")
    runs = load_table(results, EXPERIMENT, "runs")
    solved = find_solution(load_runs(results, EXPERIMENT), ["run_id"])
    runs = runs[["run_id", "seed", *factors]].merge(solved, on="run_id")
    coded = runs.assign(**{f: np.where(runs[f].astype(str) == str(levels[f][0]), -1, 1) for f in factors})
    coded["cell"] = ["".join("+" if v > 0 else "-" for v in r) for r in coded[factors].itertuples(index=False)]
    coded["log2_episode"] = np.log2(coded["episode"].astype(float))
    return coded, factors, levels


def paper_first(cells) -> list[str]:
    """Cells ordered from all "-" (the paper's settings) to all "+" (boot_dqn's)."""
    return sorted(set(cells), key=lambda c: c.replace("-", "0").replace("+", "1"))


def cell_summary(coded: pd.DataFrame) -> pd.DataFrame:
    """Per cell (`paper_first`) and size (ascending): runs, runs solved, the median episode solved (a
    censored run counted at its last logged episode, so the median is then a lower bound) and, in
    seed order, every run's episode and whether it solved the size (lists)."""
    rows = []
    for cell in paper_first(coded["cell"]):
        for size, g in coded[coded["cell"] == cell].sort_values("seed").groupby("size", sort=True):
            rows.append({"cell": cell, "N": int(size), "runs": len(g), "solved": int(g["solved"].sum()),
                         "median_episode": float(np.median(g["episode"])),
                         "episodes": g["episode"].tolist(), "solved_per_seed": g["solved"].tolist()})
    return pd.DataFrame(rows)


def main_effects(coded: pd.DataFrame, factors: list[str]) -> pd.DataFrame:
    """Per size (ascending) and factor: `factorial_effects` on log2(episode solved) over the cells
    (effect, se, dof, effect > 2 s.e.) and the runs censored at that size."""
    return pd.concat([factorial_effects(g, factors, "cell", "log2_episode").assign(N=int(size),
                                                                                 censored=int((~g["solved"]).sum()))
                      for size, g in coded.groupby("size", sort=True)], ignore_index=True)

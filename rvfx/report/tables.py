"""The tables a claim reads: a result CSV as written (or exported), one DERIVED from an experiment's
per-episode table when that is not written, or one COMPUTED without an experiment; and `select`, the
filter of a claim's `where`, with `where_text` to print it."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from rvfx.analysis.beta_vs_normal import margin_table
from rvfx.analysis.bounds import regret_over_bounds
from rvfx.analysis.curves import cartpole_runs, regret_curves, return_curves
from rvfx.analysis.final_return import LEARNT_RETURN, final_returns
from rvfx.analysis.screen import diagnostics_summary, screen_runs
from rvfx.report.folder import ResultsFolder
from rvfx.report.grammar import evaluate


def _final_returns(folder: ResultsFolder, experiment: str) -> pd.DataFrame:
    """Figs. 16-17's per-run summary: mean return over the last 10% of episodes, and learnt (>= 100)."""
    final = final_returns(folder.table(experiment, "episodes")).rename("final_return")
    runs = folder.table(experiment, "runs").join(final, on="run_id")
    return runs.assign(learnt=runs["final_return"] >= LEARNT_RETURN)


def _from_path(derive):
    """A derivation of the analysis layer, derive(results, experiment), which reads the tables it is
    computed from at the folder's path itself."""
    def derived(folder: ResultsFolder, experiment: str) -> pd.DataFrame:
        return derive(folder.path, experiment)
    return derived


DERIVED = {"final_returns": _final_returns, "regret_over_bounds": _from_path(regret_over_bounds),
           "screen_runs": _from_path(screen_runs), "diagnostics_summary": _from_path(diagnostics_summary),
           "return_curves": _from_path(return_curves), "cartpole_runs": _from_path(cartpole_runs),
           "regret_curves": _from_path(regret_curves)}
"""The tables derived from an experiment's per-episode table when not written: derive(folder, experiment)."""


COMPUTED = {"fig18_optimism_margin": margin_table}


def claim_table(claim: dict, results: Path | ResultsFolder) -> pd.DataFrame:
    """The claim's table, with every unswept env parameter of the resolved spec as a column and
    `learnt` (eq. 7.1 within the budget) beside `censored`; with `also_experiment`, that
    experiment's table of the same name appended (a claim comparing two experiments' agents)."""
    name = claim.get("table", "runs")
    if "experiment" not in claim:
        return COMPUTED[name]()
    folder = ResultsFolder.of(results)
    df = _experiment_rows(folder, claim["experiment"], name)
    if "also_experiment" in claim:
        df = pd.concat([df, _experiment_rows(folder, claim["also_experiment"], name)], ignore_index=True)
    return df


def _experiment_rows(folder: ResultsFolder, exp: str, name: str) -> pd.DataFrame:
    df = experiment_table(folder, exp, name)
    env = folder.spec_value(exp, ("env",)) or {}
    df = df.assign(**{f"env.{k}": v for k, v in env.items()
                      if k != "name" and f"env.{k}" not in df and not isinstance(v, (dict, list))})
    if "learnt" not in df and "censored" in df and df["censored"].dtype == bool:
        df = df.assign(learnt=~df["censored"])
    return df


def experiment_table(results: Path | ResultsFolder, experiment: str, name: str) -> pd.DataFrame:
    """A table of the experiment as written (collected, or exported), else derived (DERIVED) from
    its per-episode table."""
    return ResultsFolder.of(results).table(experiment, name, DERIVED.get(name))


def select(df: pd.DataFrame, where) -> pd.DataFrame:
    """Rows passing every filter: a condition (rvfx.report.grammar), or {column: min | max | value}."""
    for f in where if isinstance(where, list) else [where]:
        if isinstance(f, str):
            df = df[evaluate(f, df)]
            continue
        for col, v in f.items():
            target = df[col].min() if v == "min" else df[col].max() if v == "max" else v
            df = df[df[col] == target]
    return df


def where_text(where) -> str:
    parts = where if isinstance(where, list) else [where]
    return " and ".join(p if isinstance(p, str) else ", ".join(f"{c} = {v}" for c, v in p.items()) for p in parts)

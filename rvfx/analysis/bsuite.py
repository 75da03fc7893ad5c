"""bsuite's logs and deep_sea score of rvfx results (extra rvfx[bsuite]).

`bsuite_logs` rebuilds each run's bsuite log from the `bsuite_*` columns rvfx.envs.bsuite leaves
in its episode rows. `find_solution` and `score` implement bsuite's deep_sea analysis
(bsuite/experiments/deep_sea/analysis.py, bsuite 0.3.6) from its definition, without its plotting
stack: a size is solved at the first logged episode where the fraction of bad episodes so far
(`total_bad_episodes / episode`) is below 0.9, and the score is the fraction of sizes solved
before 2^size + 100 episodes — from bad episodes, not from regret.

`python -m rvfx.analysis.bsuite RESULTS EXPERIMENT OUT` writes one bsuite results folder per
(agent, seed) of an experiment, readable by bsuite's own `csv_load.load_bsuite`.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from bsuite import sweep

from rvfx.analysis.final_return import SWINGUP_GOOD_EPISODE, success_readouts
from rvfx.envs.bsuite import PREFIX, ROWS
from rvfx.experiment.params import name_problem
from rvfx.experiment.results import DamagedTable, load_spec_value, load_table, write_atomic_text

NUM_EPISODES = sweep.EPISODES["deep_sea/0"]     # bsuite's deep_sea budget: 10,000 episodes
FILE_PREFIX = "bsuite_id_-_"                     # bsuite's CSV logger: bsuite_id_-_deep_sea-3.csv


def bsuite_logs(episodes: pd.DataFrame) -> pd.DataFrame:
    """The bsuite log of one run, rebuilt from its rvfx episode rows (bsuite's columns, one row per
    row bsuite logged). A row logged by bsuite between two logged rvfx episodes would be lost:
    then this raises (rvfx's log grid, ~30 points a decade, is denser than bsuite's 13)."""
    rows = episodes.drop_duplicates(ROWS).sort_values(ROWS)
    if not rows[ROWS].tolist() == list(range(1, len(rows) + 1)):
        raise ValueError(f"run {episodes['run_id'].iloc[0]}: bsuite logged rows between two logged "
                         f"episodes (run it with log: all)")
    columns = [c for c in rows.columns if c.startswith(PREFIX) and c != ROWS]
    out = rows[columns].rename(columns=lambda c: c[len(PREFIX):])
    order = ["steps", "episode", "total_return", "episode_len", "episode_return"]   # bsuite's STANDARD_KEYS
    return out[order + [c for c in out.columns if c not in order]].reset_index(drop=True)


def run_logs(results, experiment: str):
    """(run_id, agent, seed, bsuite_id, bsuite log) of every run of an experiment; the bsuite_id is
    the swept `env.id`, else the spec's."""
    episodes = load_table(results, experiment, "episodes")
    ids = episodes["env.id"] if "env.id" in episodes.columns else load_spec_value(results, experiment, ("env", "id"))
    for (run_id, agent, seed, bsuite_id), g in episodes.assign(bsuite_id=ids).groupby(
            ["run_id", "agent", "seed", "bsuite_id"], sort=False):
        yield run_id, agent, seed, bsuite_id, bsuite_logs(g)


def load_runs(results, experiment: str) -> pd.DataFrame:
    """Every run's bsuite log, long: bsuite's columns, then run_id, agent, seed, bsuite_id and the
    bsuite_id's settings (e.g. size), as bsuite's csv_load.load_bsuite joins them."""
    return pd.concat([log.assign(run_id=run_id, agent=agent, seed=seed, bsuite_id=bsuite_id,
                                 **sweep.SETTINGS.get(bsuite_id, {}))
                      for run_id, agent, seed, bsuite_id, log in run_logs(results, experiment)], ignore_index=True)


def log_file(bsuite_id: str) -> str:
    """bsuite's CSV logger's file name for a bsuite_id."""
    return f"{FILE_PREFIX}{bsuite_id.replace(sweep.SEPARATOR, '-')}.csv"


def write_bsuite_logs(results, experiment: str, out) -> list[Path]:
    """bsuite results folders OUT/<agent>/seed_<seed>/, one CSV per bsuite_id as bsuite's CSV logger
    writes them (one bsuite run is one agent over the sweep). An agent label that is no name (say
    ../x, which would write outside OUT) raises ValueError before anything is written."""
    logs = list(run_logs(results, experiment))
    for _, agent, seed, _, _ in logs:          # labels read from a table: names, or nothing is written
        problem = name_problem(agent) or (None if isinstance(seed, (int, np.integer)) else f"seed {seed!r}")
        if problem:
            raise ValueError(f"{Path(results) / experiment}: agent {agent!r}: {problem}; nothing written to {out}")
    paths = []
    for _, agent, seed, bsuite_id, log in logs:
        path = Path(out) / agent / f"seed_{seed}" / log_file(bsuite_id)
        write_atomic_text(path, log.to_csv(index=False, lineterminator="\n"))
        paths.append(path)
    return paths


def read_bsuite_logs(folder) -> pd.DataFrame:
    """A bsuite results folder (bsuite's CSV logger's files, e.g. from bsuite's own boot_dqn) with
    bsuite_id and its settings joined, as bsuite's csv_load does; empty when there are none."""
    frames = []
    for path in sorted(Path(folder).glob(f"{FILE_PREFIX}*.csv")):
        bsuite_id = path.stem[len(FILE_PREFIX):].replace("-", sweep.SEPARATOR)
        frames.append(pd.read_csv(path).assign(bsuite_id=bsuite_id, **sweep.SETTINGS.get(bsuite_id, {})))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def find_solution(df: pd.DataFrame, sweep_vars=(), thresh: float = 0.9,
                  num_episodes: int = NUM_EPISODES) -> pd.DataFrame:
    """bsuite's deep_sea `find_solution`: per (sweep_vars, size), `episode` is the first logged
    episode with total_bad_episodes / episode < `thresh` (solved), else the last logged one;
    `finished` when solved or the log reaches `num_episodes`. Rows past num_episodes are ignored."""
    keys = list(sweep_vars) + ([] if "size" in sweep_vars else ["size"])
    df = df[df["episode"] <= num_episodes]
    below = df[df["total_bad_episodes"] / df["episode"] < thresh]
    out = df.groupby(keys)["episode"].max().rename("last").to_frame()
    out["solved_at"] = below.groupby(keys)["episode"].min()
    out["solved"] = out["solved_at"].notna()
    out["episode"] = out["solved_at"].where(out["solved"], out["last"]).astype(int)
    out["finished"] = out["solved"] | (out["last"] >= num_episodes)
    return out.reset_index()[keys + ["episode", "solved", "finished"]]


def score(df: pd.DataFrame, forgiveness: float = 100.0, num_episodes: int = NUM_EPISODES) -> float:
    """bsuite's deep_sea score of one bsuite run (one log per size): the fraction of sizes solved
    (`find_solution`) at an episode below 2^size + forgiveness, the dithering baseline's scale."""
    solutions = find_solution(df, num_episodes=num_episodes)
    beat_dither = solutions["solved"] & (solutions["episode"] < 2.0 ** solutions["size"] + forgiveness)
    return float(np.mean(beat_dither))


SWINGUP_EPISODES = sweep.EPISODES["cartpole_swingup/0"]   # bsuite's cartpole_swingup budget: 1,000 episodes
SWINGUP_BASE_REGRET = 700.0     # bsuite/experiments/cartpole_swingup/analysis.py: BASE_REGRET, GOOD_EPISODE


def swingup_score(log: pd.DataFrame) -> float:
    """bsuite's cartpole_swingup score of one run at one level (bsuite 0.3.6's analysis.score for one
    bsuite_id): 0.5 (regret score + swing-up score). The regret score is clip(1 - mean regret / 700) with
    regret 700 per episode minus the return, i.e. clip(total_return / (700 n)) at the last logged episode
    n <= 1,000; the swing-up score is 1 if some episode so far returned more than 100 (best_episode)."""
    log = log[log["episode"] <= SWINGUP_EPISODES]
    last = log.loc[log["episode"].idxmax()]
    regret = np.clip(float(last["total_return"]) / (SWINGUP_BASE_REGRET * float(last["episode"])), 0.0, 1.0)
    return 0.5 * (float(regret) + float(log["best_episode"].max() > SWINGUP_GOOD_EPISODE))


class IncompleteLog(DamagedTable):
    """A bsuite log that lacks the rows or columns a figure reads."""


SWINGUP_COLUMNS = ("episode", "episode_return", "total_return", "best_episode")


def episode_log(log: pd.DataFrame, where: str) -> pd.DataFrame:
    """A bsuite cartpole_swingup log that has a row for every episode 1..n (bsuite's `log_every`, as
    rvfx/interop/boot_dqn_every_episode.py runs boot_dqn), sorted by episode; else an IncompleteLog
    naming `where` (bsuite's default schedule logs ~10 rows a decade, too few to find the first success)."""
    lacking = [c for c in SWINGUP_COLUMNS if c not in log.columns]
    if lacking:
        raise IncompleteLog(f"{where}: not a bsuite cartpole_swingup log (no {', '.join(lacking)})")
    log = log.sort_values("episode")
    if not log["episode"].tolist() == list(range(1, len(log) + 1)):
        raise IncompleteLog(f"{where}: bsuite did not log every episode (run boot_dqn with "
                            f"rvfx/interop/boot_dqn_every_episode.py)")
    return log.reset_index(drop=True)


def swingup_readouts(returns: np.ndarray, log: pd.DataFrame) -> dict:
    """One run's readouts: `success_readouts` and bsuite's score (`swingup_score`) from its bsuite log."""
    return {**success_readouts(returns), "score": swingup_score(log)}


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: python -m rvfx.analysis.bsuite RESULTS EXPERIMENT OUT")
    try:
        written = write_bsuite_logs(*sys.argv[1:])
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    for path in written:
        print(path)

"""bsuite through dm_env (extra rvfx[bsuite]): its environments as rvfx environments, rvfx results
in bsuite's logging format, and bsuite's deep_sea score.

`BsuiteEnvironment` runs a bsuite environment inside bsuite's own `Logging` wrapper, so the rows
bsuite would log (its logarithmic schedule, its columns) are made by bsuite's code; each logged
rvfx episode carries the latest of them (`bsuite_*` columns) and `bsuite_logs` rebuilds the run's
bsuite log from those. `find_solution` and `score` implement bsuite's deep_sea analysis
(bsuite/experiments/deep_sea/analysis.py, bsuite 0.3.6) from its definition, without its plotting
stack: a size is solved at the first logged episode where the fraction of bad episodes so far
(`total_bad_episodes / episode`) is below 0.9, and the score is the fraction of sizes solved
before 2^size + 100 episodes — from bad episodes, not from regret.

`python -m rvfx.interop.bsuite RESULTS EXPERIMENT OUT` writes one bsuite results folder per
(agent, seed) of an experiment, readable by bsuite's own `csv_load.load_bsuite`.
"""
from __future__ import annotations

import inspect
import sys
from pathlib import Path

import dm_env
import numpy as np
import pandas as pd
from bsuite import sweep
from bsuite.bsuite import EXPERIMENT_NAME_TO_ENVIRONMENT
from bsuite.utils.wrappers import Logging

from rvfx.core.live import Transition
from rvfx.experiment.results import load_spec_value, load_table
from rvfx.interop.params import BsuiteParams, json_object

NUM_EPISODES = sweep.EPISODES["deep_sea/0"]     # bsuite's deep_sea budget: 10,000 episodes
PREFIX = "bsuite_"                               # rvfx episode columns holding bsuite's log row
ROWS = "bsuite_rows"                             # how many rows bsuite has logged so far
FILE_PREFIX = "bsuite_id_-_"                     # bsuite's CSV logger: bsuite_id_-_deep_sea-3.csv


class _Rows:
    """A bsuite logger that keeps the rows in memory."""

    def __init__(self):
        self.rows: list[dict] = []

    def write(self, data) -> None:
        self.rows.append(dict(data))


def settings(bsuite_id: str, kwargs: str = "{}") -> tuple[str, dict]:
    """(experiment name, constructor kwargs) of a bsuite_id or bare experiment name, `kwargs` over them."""
    name, _, index = bsuite_id.partition(sweep.SEPARATOR)
    if name not in EXPERIMENT_NAME_TO_ENVIRONMENT:
        raise ValueError(f"unknown bsuite experiment {name!r}")
    if index and bsuite_id not in sweep.SETTINGS:
        raise ValueError(f"{bsuite_id!r} is not in bsuite's sweep ({name} has "
                         f"{sum(i.startswith(name + sweep.SEPARATOR) for i in sweep.SETTINGS)} settings)")
    return name, {**(sweep.SETTINGS[bsuite_id] if index else {}), **json_object(kwargs, "kwargs")}


class BsuiteEnvironment:
    """A bsuite environment as an rvfx environment (the `bsuite` kind of a spec).

    dm_env semantics: a LAST step with discount 0 is a terminal state (new_state None); with a
    discount > 0 it is a truncation, Transition(truncated=True) with the real next observation.
    Seeds the constructor takes (`seed`, `mapping_seed`) and the bsuite_id does not fix are drawn
    from the run's environment generator. deep_sea: states are (row, column), decoded from the
    one-hot image, with the layered shape (N, N, 2) of the tabular agents and one-hot pixel inputs
    (`OneHotPixels`), i.e. exactly rvfx DeepSea's inputs; regret when deterministic (optimum
    1 - unscaled_move_cost). Other experiments: flat float observations, no regret.
    """

    def __init__(self, params: BsuiteParams, rng: np.random.Generator):
        name, kwargs = settings(params.id, params.kwargs)
        make = EXPERIMENT_NAME_TO_ENVIRONMENT[name]
        accepted = inspect.signature(make).parameters
        for seed in ("mapping_seed", "seed"):
            if seed in accepted and seed not in kwargs:
                kwargs[seed] = int(rng.integers(2**31))
        self.name, self.kwargs = name, kwargs
        self.raw = make(**kwargs)
        self.logger = _Rows()
        self.env = Logging(self.raw, self.logger)
        self.num_actions = int(self.env.action_spec().num_values)
        self.deep_sea = name == "deep_sea"
        self.optimal_return = None
        if self.deep_sea:
            n = self.size = int(kwargs["size"])
            self.shape = (n, n, 2)
            if kwargs.get("deterministic", True):
                self.optimal_return = float(self.raw._optimal_return)
        else:
            self.observation_size = int(np.prod(self.env.observation_spec().shape))
        self.expected_return = 0.0
        self.state = None
        self.t = 0

    def observe(self, obs):
        if self.deep_sea:
            return divmod(int(np.flatnonzero(obs)[0]), self.size)
        return np.asarray(obs, np.float64).ravel()

    def reset(self) -> Transition:
        timestep = self.env.reset()
        self.expected_return, self.t = 0.0, 0
        self.state = self.observe(timestep.observation)
        return Transition(None, None, 0.0, self.state, 0)

    def step(self, action: int) -> Transition:
        timestep = self.env.step(action)
        reward = float(timestep.reward)
        self.expected_return += reward
        self.t += 1
        old = self.state
        if timestep.step_type == dm_env.StepType.LAST and timestep.discount == 0:
            self.state = None
            return Transition(old, action, reward, None, self.t - 1)
        self.state = self.observe(timestep.observation)
        return Transition(old, action, reward, self.state, self.t - 1, truncated=timestep.last())

    def episode_metrics(self) -> dict:
        """bsuite's latest log row, its columns prefixed `bsuite_`, and how many rows it has logged."""
        rows = self.logger.rows          # bsuite logs every episode up to 10, so never empty here
        return {ROWS: len(rows), **{PREFIX + k: v for k, v in rows[-1].items()}}


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
    writes them (one bsuite run is one agent over the sweep)."""
    paths = []
    for _, agent, seed, bsuite_id, log in run_logs(results, experiment):
        path = Path(out) / str(agent) / f"seed_{seed}" / log_file(bsuite_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        log.to_csv(path, index=False, lineterminator="\n")
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


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: python -m rvfx.interop.bsuite RESULTS EXPERIMENT OUT")
    for written in write_bsuite_logs(*sys.argv[1:]):
        print(written)

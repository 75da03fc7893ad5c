"""Per-run tables that learning-curve figures are drawn from, small enough to record (`rvfx run
--record`): a sweep longer than a session loses its per-episode tables with the machine, and its
figures are then drawn from the committed record alone. `return_curves` holds each cartpole run's
return averaged over blocks of the figures' smoothing window, `cartpole_runs` each cartpole run's
summary (reaching the reward, final and best-window returns, and what its final greedy episode
does), `regret_curves` each deep-sea run's cumulative regret at its logged episodes."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.final_return import final_returns, final_window_start, reached, window_returns
from rvfx.envs.cartpole.dynamics import CartpoleSwingUpParams, upright
from rvfx.experiment.results import env_params, load_table

CURVE_BLOCKS = 50          # a cartpole curve is drawn as the mean return over each of 50 blocks of episodes


def swept(table: pd.DataFrame) -> list[str]:
    """The table's swept agent and environment parameters (columns agent.*, env.*)."""
    return [c for c in table.columns if c.startswith(("agent.", "env."))]


def smooth_window(episodes: int) -> int:
    """Episodes per block of a cartpole curve (1 for runs of under 75 episodes)."""
    return max(1, int(round(episodes / CURVE_BLOCKS)))


def _run_keys(eps: pd.DataFrame) -> list[str]:
    return ["run_id", "agent", "seed", *swept(eps)]


def return_curves(results, experiment: str) -> pd.DataFrame:
    """Per run and block of smooth_window(the run's episodes) episodes, counted from episode 1: the
    block's last episode and its mean return, the trailing moving average the figures draw, sampled
    once a block (a run's rows depend on that run alone, as a record needs)."""
    eps = load_table(results, experiment, "episodes")
    window = eps.groupby("run_id", sort=False)["episode"].transform("max").map(smooth_window)
    keys = _run_keys(eps)
    block = (eps["episode"] - 1) // window
    by = eps.assign(_block=block).groupby([*keys, "_block"], sort=False, dropna=False)
    return by.agg(episode=("episode", "max"), **{"return": ("return", "mean")}).reset_index().drop(columns="_block")


def rewarded(traj: pd.DataFrame, p: CartpoleSwingUpParams):
    """Which rollout rows collected the +1: the environment's reward box (`upright`) on the state
    arrived in; s_0 (step 0) was not arrived in by a step."""
    return upright(np.cos(traj["theta"]), traj["theta_dot"], traj["x"], traj["x_dot"], p) & (traj["step"] > 0)


def pole_up(theta, p: CartpoleSwingUpParams):
    """Which steps have the pole up: cos θ above the reward box's bound."""
    return np.cos(theta) > p.upright_cos


def final_rollouts(traj: pd.DataFrame, p: CartpoleSwingUpParams) -> pd.DataFrame:
    """Per run, what its final greedy policy does in one episode (rows of trajectory.csv): on how
    many steps the pole is up, on how many it collects the upright reward, and the median |θ̇|
    while up (NaN if never), which tells a pole held up from one spinning through the top."""
    up = pole_up(traj["theta"], p)
    by = traj.assign(_up=up, _rewarded=rewarded(traj, p)).groupby("run_id")
    speed = traj["theta_dot"].abs()[up].groupby(traj["run_id"][up]).median()
    return pd.DataFrame({"up_steps": by["_up"].sum(), "rewarded_steps": by["_rewarded"].sum(), "up_speed": speed})


def cartpole_runs(results, experiment: str) -> pd.DataFrame:
    """One row per cartpole run of the experiment (run_summaries of its episodes and trajectory tables)."""
    return run_summaries(load_table(results, experiment, "episodes"), load_table(results, experiment, "trajectory"),
                         env_params(results, experiment))


def run_summaries(eps: pd.DataFrame, traj: pd.DataFrame, p: CartpoleSwingUpParams) -> pd.DataFrame:
    """One row per cartpole run, in run order: its last episode; whether it ever reached the upright
    reward (upright steps > 0), first when, and in its final 10% of episodes; its final return (mean
    over the final 10%) and best 10% window's mean return (window_returns); and its final greedy
    episode's up_steps, rewarded_steps and up_speed (final_rollouts)."""
    eps = eps.assign(_reached=reached(eps))
    by = eps.groupby(_run_keys(eps), sort=False, dropna=False)
    runs = by.agg(episodes=("episode", "max"), ever_reached=("_reached", "any")).reset_index().set_index("run_id")
    last = eps["run_id"].map(runs["episodes"])
    runs["first_reached"] = eps[eps["_reached"]].groupby("run_id")["episode"].min()
    tail = eps[eps["episode"] >= last.map(final_window_start)]
    runs["reached_in_final_window"] = tail.groupby("run_id")["_reached"].any()
    runs["final_return"] = final_returns(eps)
    runs["best_window_return"] = window_returns(eps).max(axis=1)
    runs = runs.join(final_rollouts(traj, p))
    runs[["up_steps", "rewarded_steps"]] = runs[["up_steps", "rewarded_steps"]].fillna(0).astype(int)
    return runs.reset_index()


def regret_curves(results, experiment: str) -> pd.DataFrame:
    """Per run and logged episode: the cumulative regret (deep sea's per-episode table less its
    other columns)."""
    eps = load_table(results, experiment, "episodes")
    return eps[[*_run_keys(eps), "episode", "cum_regret"]]

"""Figs. 16-17's criterion of a learnt swing-up: a run's final return is its mean return over the
last 10% of its episodes (FINAL_FRACTION, at least one episode), and it learnt the swing-up when
that is at least LEARNT_RETURN = 100 (one second upright per episode; rvfx/figures/cartpole.py
says why)."""
from __future__ import annotations

import numpy as np
import pandas as pd

FINAL_FRACTION = 0.1           # "final performance" = the last 10% of episodes
LEARNT_RETURN = 100.0          # mean final return that counts as a learnt swing-up
SWINGUP_GOOD_EPISODE = 100.0    # bsuite/experiments/cartpole_swingup/analysis.py: GOOD_EPISODE


def success_readouts(returns: np.ndarray) -> dict:
    """The first episode (1-based) returning more than 100 (NaN if none), how many episodes did, and
    how many episodes there were: bsuite's cartpole_swingup "good episode" threshold (here, without
    the bsuite extra, for every swing-up figure)."""
    good = np.flatnonzero(np.asarray(returns, float) > SWINGUP_GOOD_EPISODE)
    return {"first_success": float(good[0] + 1) if len(good) else np.nan, "successes": int(len(good)),
            "episodes": int(len(returns))}


def final_window_start(last_episode: int) -> int:
    """The first episode of the final window of episodes 1..last_episode."""
    return last_episode - max(1, int(round(FINAL_FRACTION * last_episode))) + 1


def final_returns(episodes: pd.DataFrame) -> pd.Series:
    """Per run_id (in order of appearance): mean return over the run's own final window."""
    last = episodes.groupby("run_id", sort=False)["episode"].transform("max")
    start = last - (FINAL_FRACTION * last).round().clip(lower=1) + 1
    return episodes[episodes["episode"] >= start].groupby("run_id", sort=False)["return"].mean()


def window_returns(episodes: pd.DataFrame) -> pd.DataFrame:
    """Per run_id (rows, in order of appearance) and window (columns; 0 is the final window, 1 the one
    before, ...): the mean return over consecutive windows of the final window's length, counted
    back from the run's last episode, so that window 0 is final_returns' own (the mean over the
    logged episodes in it); the earliest window, when the length does not divide the episodes, is
    short and NaN. A run's best window tells a swing-up learnt and then lost from one never
    learnt, which the final window alone does not (added post hoc, after the confirmation's first
    ensemble run rose and fell)."""
    last = episodes.groupby("run_id", sort=False)["episode"].transform("max")
    length = (FINAL_FRACTION * last).round().clip(lower=1)
    window = ((last - episodes["episode"]) // length).astype(int).rename("window")
    full = window < last // length                  # the earliest window may be short: left out
    by = episodes["return"][full].groupby([episodes["run_id"][full], window[full]], sort=False)
    return by.mean().unstack("window")


def reached(episodes: pd.DataFrame) -> pd.Series:
    """Per logged episode: did it collect the upright reward at least once?"""
    return episodes["upright_steps"] > 0

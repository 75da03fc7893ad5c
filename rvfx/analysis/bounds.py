"""Theorem 1's regret bounds, eqs. 6.1 and 6.2, as functions of the episode count L, and the
empirical Bayesian regret that the figure and the claims set against them; and the proof's
optimism step as measured."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rvfx.analysis.stats import mean_sem
from rvfx.core.live import log_grid
from rvfx.experiment.results import load_table

ENV_KEYS = ["env.horizon", "env.states", "env.actions", "env.beta"]   # (H, |X|, |A|, beta) of an environment


def log_plus(x):
    return np.maximum(1.0, np.log(x))


def first_bound(L, H, X, A, beta):
    """Eq. 6.1: 6 H^2 sqrt(beta X A L log+(1 + X A H L)) log+(1 + L / (X A))."""
    L = np.asarray(L, float)
    return 6 * H ** 2 * np.sqrt(beta * X * A * L * log_plus(1 + X * A * H * L)) * log_plus(1 + L / (X * A))


def second_bound(L, H, X, A, beta):
    """Eq. 6.2: 5 beta H^3 X A sqrt(log+(1 + X A H L)) log+(1 + L/(X A)) + 2 H^2 sqrt(6 X A L log(X A))."""
    L = np.asarray(L, float)
    return (5 * beta * H ** 3 * X * A * np.sqrt(log_plus(1 + X * A * H * L)) * log_plus(1 + L / (X * A))
            + 2 * H ** 2 * np.sqrt(6 * X * A * L * math.log(X * A)))


def bayes_regret(episodes: pd.DataFrame) -> pd.DataFrame:
    """Mean cumulative regret over MDPs (seeds) per L, with a 95% normal interval."""
    keys = [k for k in ENV_KEYS if k in episodes.columns]
    g = episodes.groupby(keys + ["episode"])["cum_regret"]
    s = g.agg(["mean", "std", "count"]).reset_index()
    half = 1.96 * s["std"].fillna(0.0) / np.sqrt(s["count"])
    return s.assign(lo=s["mean"] - half, hi=s["mean"] + half)


def bound_summary(regret: pd.DataFrame) -> pd.DataFrame:
    """Per environment of `bayes_regret(episodes)`, at its last L: H, |X|, |A|, beta, the MDPs, L, the
    Bayesian regret with its 95% interval, eqs. 6.1 and 6.2, and the regret over each and over H L."""
    rows = []
    for key, g in regret.groupby(ENV_KEYS, sort=False):
        H, X, A, beta = (float(k) for k in key)
        last = g.iloc[-1]
        L = float(last["episode"])
        b1, b2 = float(first_bound(L, H, X, A, beta)), float(second_bound(L, H, X, A, beta))
        rows.append({"H": H, "X": X, "A": A, "beta": beta, "MDPs": int(last["count"]), "L": L,
                     "regret": float(last["mean"]), "lo": float(last["lo"]), "hi": float(last["hi"]),
                     "eq_6_1": b1, "eq_6_2": b2, "over_eq_6_1": float(last["mean"] / b1),
                     "over_eq_6_2": float(last["mean"] / b2), "over_HL": float(last["mean"] / (H * L))})
    return pd.DataFrame(rows)


def regret_over_bounds(results, experiment: str) -> pd.DataFrame:
    """Each run's cumulative regret over eqs. 6.1 and 6.2 (whose mean over runs, the Bayesian regret
    over the bound, must stay <= 1) at two L per decade of the theorem's "for all L" (the first
    logged episode at or after 1, sqrt 10, 10, ...) and the last, so that the table stays small
    enough to commit at paper scale (`rvfx export`)."""
    eps = load_table(results, experiment, "episodes")
    logged = np.sort(eps["episode"].unique())
    targets = 10.0 ** (np.arange(np.floor(2 * np.log10(logged[-1])) + 1) / 2)
    kept = set(logged[np.searchsorted(logged, targets)].tolist())
    eps = eps[eps["episode"].isin(kept) | (eps["episode"] == eps.groupby("run_id")["episode"].transform("max"))]
    parts = []
    for shape, g in eps.groupby(ENV_KEYS, sort=False):       # one environment's (H, |X|, |A|, beta)
        shape = [float(v) for v in shape]
        parts.append(g.assign(regret_over_eq_6_1=g["cum_regret"] / first_bound(g["episode"], *shape),
                              regret_over_eq_6_2=g["cum_regret"] / second_bound(g["episode"], *shape)))
    return pd.concat(parts)


def optimism_gaps(optimism: pd.DataFrame, posterior: pd.DataFrame) -> pd.DataFrame:
    """The optimism step under the prior: per episode l of a log grid (5 a decade), the mean over
    MDPs of max_a Q_l0(x0, a) - V*_M(x0) (`gap`) with its s.e.m. and the 95% normal half-width, over
    the runs of `optimism` that have no history check in `posterior`."""
    prior = optimism[~optimism["run_id"].isin(posterior["run_id"])]
    gaps = mean_sem(prior, ["episode"], "gap").sort_values("episode")
    gaps = gaps[gaps["episode"].isin(log_grid(int(gaps["episode"].max()), per_decade=5))]
    return gaps.assign(half=1.96 * gaps["sem"])

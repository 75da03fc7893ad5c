"""Theorem 1's regret bounds, eqs. 6.1 and 6.2, as functions of the episode count L."""
from __future__ import annotations

import math

import numpy as np


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

"""Finite-horizon backward induction over a layered model (Algorithm 2's recursion).

Q_h = backup(h, V_{h+1}) for h = H-1, ..., 0 with V_H = 0 and V_h(s) = max_a Q_h(s, a): every
tabular and linear solver in rvfx (exact Q*, PSRL's sampled MDP, UCRL2's optimistic MDP, RLSVI's
regressions) is this loop with its own one-layer `backup`.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np


def backward_induction(backup: Callable[[int, np.ndarray], np.ndarray], horizon: int,
                       v_terminal: np.ndarray) -> np.ndarray:
    """Q of shape (horizon, *backup's shape): Q_h = backup(h, V_{h+1}), V = max over the last axis.

    `v_terminal` is V_H (zeros of the shape of a layer's values, e.g. (S,), or (samples, S) for a
    batch of models); `backup` must not keep a reference to the V it is given beyond the call.
    """
    q = None
    v_next = v_terminal
    for h in range(horizon - 1, -1, -1):
        q_h = backup(h, v_next)
        if q is None:
            q = np.empty((horizon,) + q_h.shape)
        q[h] = q_h
        v_next = q_h.max(axis=-1)
    return q

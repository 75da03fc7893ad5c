"""Linear feature maps for deep sea (Sections 7.1.2-7.1.3).

A feature tensor ``phi`` has shape (N rows, N cols, 2 actions, M): ``phi[h, s, a]``
holds the M features of row h at (s, a). Feature m of row h is nonzero only on
row h's state-action pairs, so the D = N*M dimensional linear value function of
the paper splits into one M-dimensional regression per row (Section 7.1.2). The
action axis is the raw action index; whether it means "right" depends on the
instance's ``right_action``.
"""
from __future__ import annotations

from typing import Literal

import numpy as np

from rvfx.core.backward_induction import backward_induction

Basis = Literal["random_unit", "orthonormal"]


def optimal_q(env, treasure: bool | None = None) -> np.ndarray:
    """Q*_h(s, a) of a deep-sea instance (`rvfx.envs.deep_sea.DeepSea`), shape (N, N, 2), by backward
    induction (Algorithm 2).

    Rewards come from ``env.mean_reward``; moves mirror ``DeepSea.step`` (right:
    col + 1, left: col - 1, clipped). ``treasure`` sets the chest's sign (+1 or -1)
    while keeping the instance's action mapping, so one instance gives the Q* of
    both its treasure and its bomb version.
    """
    chest = None if treasure is None else (1.0 if treasure else -1.0)
    n = env.size
    cols = np.arange(n)

    def backup(h, v_next):
        right = np.array([env.mean_reward(h, s, True, chest) for s in cols])
        left = np.array([env.mean_reward(h, s, False, chest) for s in cols])
        q_h = np.zeros((n, 2))
        q_h[cols, env.right_action[h]] = right + v_next[np.minimum(cols + 1, n - 1)]
        q_h[cols, 1 - env.right_action[h]] = left + v_next[np.maximum(cols - 1, 0)]
        return q_h

    return backward_induction(backup, n, np.zeros(n))


def _haar_orthogonal(k: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random k x k orthogonal matrix (QR of a Gaussian with sign fix)."""
    qm, r = np.linalg.qr(rng.standard_normal((k, k)))
    return qm * np.where(np.diag(r) < 0, -1.0, 1.0)


def _unit_columns(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=0, keepdims=True)


def coherent_basis(env, M: int, rng: np.random.Generator,
                   basis: Basis = "random_unit") -> np.ndarray:
    """Per-row unit features spanning a random subspace that contains Q* (Section 7.1.2).

    For each row h the subspace of R^{2N} (row h's state-action pairs) is the span
    of Q*_h of the treasure and of the bomb version of ``env`` plus min(M, 2N) - 2
    random Gaussian directions; so least squares on these features reproduces Q*
    of either instance exactly whenever M >= 2. (M = 1 cannot hold both: its
    feature is a random unit vector in span{Q*_treasure, Q*_bomb}.)

    The paper's "random basis of D unit vectors that span the space" has two readings:

    - ``"random_unit"`` (default): M independent unit vectors drawn uniformly from
      the subspace's sphere (a basis with probability one when M <= 2N).
    - ``"orthonormal"``: a uniformly rotated orthonormal basis of the subspace.

    The default is ``"random_unit"`` because the paper asks only for unit vectors
    (not orthonormal ones) and because it is one rule for every M: beyond M = 2N
    the subspace is all of R^{2N} and extra features "must be linearly dependent"
    (Section 7.1.2), which random unit vectors are automatically, while the
    orthonormal reading has to switch rule there (its extra M - 2N features are
    random unit vectors) and would put a kink at M = 2N into Fig. 8 that comes
    from the construction, not from the algorithm.

    Returns ``phi`` of shape (N, N, 2, M).
    """
    if M < 1:
        raise ValueError(f"M must be >= 1, got {M}")
    if basis not in ("random_unit", "orthonormal"):
        raise ValueError(f"basis must be 'random_unit' or 'orthonormal', got {basis!r}")
    n = env.size
    width = 2 * n
    k = min(M, width)
    q_star = np.stack([optimal_q(env, True), optimal_q(env, False)], axis=-1).reshape(n, width, 2)
    phi = np.empty((n, width, M))
    for h in range(n):
        u, sv, _ = np.linalg.svd(q_star[h], full_matrices=False)
        span = u[:, sv > 1e-12 * max(sv.max(), 1e-300)]         # orthonormal basis of span{Q*_T, Q*_B}
        if k < span.shape[1]:                                  # M = 1: a random direction in that span
            span = span @ _unit_columns(rng.standard_normal((span.shape[1], k)))
        extra = rng.standard_normal((width, k - span.shape[1]))
        sub, _ = np.linalg.qr(np.concatenate([span, extra], axis=1))   # (2N, k), span includes Q*
        if basis == "random_unit":
            row = _unit_columns(sub @ rng.standard_normal((k, M)))
        else:
            row = sub @ _haar_orthogonal(k, rng)
            if M > k:                                          # extra features: dependent by necessity
                row = np.concatenate([row, _unit_columns(rng.standard_normal((width, M - k)))], axis=1)
        phi[h] = row
    return phi.reshape(n, n, 2, M)


def one_hot_basis(env) -> np.ndarray:
    """Tabular features of a layered environment (`shape` (H, S, A)): one indicator per (s, a)
    of each row, index s * A + a (M = S A; deep sea: 2N).

    With these, linear RLSVI is exactly tabular RLSVI (Section 5.3, X^T X = diag(counts)).
    """
    H, S, A = env.shape
    return np.broadcast_to(np.eye(S * A).reshape(1, S, A, S * A), (H, S, A, S * A)).copy()


def misspecify(phi: np.ndarray, psi: float, rng: np.random.Generator) -> np.ndarray:
    """Features phi_d + eta_d with eta_d's entries N(0, psi) on phi_d's row (Section 7.1.3).

    ``psi`` is a variance. eta_d is nonzero only on the state-action pairs of the row
    that feature d belongs to (its support under the coherent basis); every entry of
    ``phi`` lies on that row, so every entry is perturbed. psi = 0 returns a copy.
    """
    if psi < 0:
        raise ValueError(f"psi is a variance, must be >= 0, got {psi}")
    if psi == 0:
        return phi.copy()
    return phi + np.sqrt(psi) * rng.standard_normal(phi.shape)

"""Bayesian linear regression by perturbed least squares (eqs. 5.3-5.4).

With prior theta ~ N(theta_bar, lam I) and noise N(0, v), the minimiser of the
perturbed loss (eq. 5.4) with z ~ N(0, v I) and theta_hat ~ N(theta_bar, lam I)
is an exact posterior sample: it is affine in (z, theta_hat), with the posterior
mean at (0, theta_bar) and covariance (X^T X / v + I / lam)^-1.
"""
from __future__ import annotations

import numpy as np


def posterior(X: np.ndarray, y: np.ndarray, v: float, lam: float, theta_bar) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and covariance of theta given (X, y) (eq. 5.3)."""
    d = X.shape[1]
    cov = np.linalg.inv(X.T @ X / v + np.eye(d) / lam)
    return cov @ (X.T @ y / v + np.broadcast_to(theta_bar, (d,)) / lam), cov


def perturbed_sample(X: np.ndarray, y: np.ndarray, v: float, lam: float,
                     z: np.ndarray, theta_hat: np.ndarray) -> np.ndarray:
    """argmin of (1/v)||y + z - X theta||^2 + (1/lam)||theta_hat - theta||^2 (eq. 5.4)."""
    d = X.shape[1]
    return np.linalg.solve(X.T @ X / v + np.eye(d) / lam, X.T @ (y + z) / v + theta_hat / lam)

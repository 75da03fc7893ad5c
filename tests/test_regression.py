"""Eq. 5.4: training on perturbed data is an exact posterior sample (eq. 5.3)."""
import numpy as np

from rvfx.agents.linear.regression import perturbed_sample, posterior


def test_perturbed_sample_has_exact_posterior_mean_and_covariance():
    rng = np.random.default_rng(0)
    n, d, v, lam = 7, 3, 0.5, 2.0
    X, y, theta_bar = rng.normal(size=(n, d)), rng.normal(size=n), rng.normal(size=d)
    mean, cov = posterior(X, y, v, lam, theta_bar)
    # The sample is affine in the noise (z, theta_hat): read off its Jacobian exactly.
    base = perturbed_sample(X, y, v, lam, np.zeros(n), theta_bar)
    J_z = np.stack([perturbed_sample(X, y, v, lam, e, theta_bar) - base for e in np.eye(n)], axis=1)
    J_p = np.stack([perturbed_sample(X, y, v, lam, np.zeros(n), theta_bar + e) - base
                    for e in np.eye(d)], axis=1)
    np.testing.assert_allclose(base, mean, atol=1e-12)
    np.testing.assert_allclose(v * J_z @ J_z.T + lam * J_p @ J_p.T, cov, atol=1e-12)


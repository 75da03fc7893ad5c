"""Fig. 18's pair, Beta(3, 2) vs N(3/5, 1/3) of Lemma "Gaussian-Beta optimism": the set C where the
Beta density exceeds the Gaussian one, and the stochastic-optimism margin int_a^inf (G - F) ds.

With alpha = 3, beta = 2 the lemma's Gaussian has mean alpha/(alpha+beta) = 3/5 and variance
(alpha+beta-2)^-1 = 1/3 (so "N(3/5, 1/3)" gives the variance). g is the Beta density, f the
Gaussian one; D'(s) = g(s) - f(s), D(s) = G(s) - F(s), and C = {x : g(x) > f(x)} is an
interval. Condition (4) of the lemma on sufficient conditions (equal means and convex C) then
gives X ~ N >=_SO Y ~ Beta, i.e. int_a^inf D(s) ds >= 0 for every a; `optimism_margin` checks
that numerically.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import integrate, optimize, stats

A, B = 3.0, 2.0
MU, VAR = A / (A + B), 1.0 / (A + B - 2.0)


def distributions():
    return stats.beta(A, B), stats.norm(MU, np.sqrt(VAR))


def set_c(grid_points: int = 20001) -> tuple[float, float]:
    """Ends of C = {x : g(x) > f(x)}: the sign changes of g - f, refined by Brent's method."""
    beta, normal = distributions()
    d = lambda x: beta.pdf(x) - normal.pdf(x)   # noqa: E731
    xs = np.linspace(1e-9, 1 - 1e-9, grid_points)   # g = 0 < f outside [0, 1]
    s = np.sign(d(xs))
    idx = np.nonzero(s[:-1] != s[1:])[0]
    roots = [optimize.brentq(d, xs[i], xs[i + 1]) for i in idx]
    if len(roots) != 2:
        raise AssertionError(f"expected C to be one interval, found crossings {roots}")
    return roots[0], roots[1]


def optimism_margin(a_grid: np.ndarray) -> np.ndarray:
    """int_a^inf (G(s) - F(s)) ds for each a: >= 0 everywhere means N >=_SO Beta (condition 2)."""
    beta, normal = distributions()
    D = lambda s: beta.cdf(s) - normal.cdf(s)   # noqa: E731
    hi = MU + 12 * np.sqrt(VAR)
    out = []
    for a in a_grid:
        kinks = [p for p in (0.0, 1.0) if a < p < hi] or None   # the Beta cdf has kinks at 0, 1
        out.append(integrate.quad(D, a, hi, limit=200, points=kinks)[0])
    return np.array(out)


def margin_table() -> pd.DataFrame:
    """`optimism_margin` on Fig. 18's grid of a, -1.5 to 2.5 (the figure's minimum, a claim's table)."""
    a = np.linspace(-1.5, 2.5, 81)
    return pd.DataFrame({"a": a, "margin": optimism_margin(a)})

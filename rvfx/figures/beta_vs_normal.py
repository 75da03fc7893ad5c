"""Fig. 18 (fig:beta_vs_normal): Beta(3, 2) vs N(3/5, 1/3), the pair of Lemma "Gaussian-Beta optimism".

With alpha = 3, beta = 2 the lemma's Gaussian has mean alpha/(alpha+beta) = 3/5 and variance
(alpha+beta-2)^-1 = 1/3 (so "N(3/5, 1/3)" gives the variance). g is the Beta density, f the
Gaussian one; D'(s) = g(s) - f(s), D(s) = G(s) - F(s), and C = {x : g(x) > f(x)} is an
interval whose ends are drawn dashed. Condition (4) of the lemma on sufficient conditions
(equal means and convex C) then gives X ~ N >=_SO Y ~ Beta, i.e. int_a^inf D(s) ds >= 0 for
every a; `optimism_margin` checks that numerically.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import integrate, optimize, stats

from rvfx.figures.common import plt, save, write_table

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


def draw(results, out):
    beta, normal = distributions()
    lo, hi = set_c()
    s = np.linspace(-1.5, 2.5, 2001)
    g, f = beta.pdf(s), normal.pdf(s)
    G, F = beta.cdf(s), normal.cdf(s)
    fig, axes = plt.subplots(2, 2, figsize=(9, 6))
    panels = [
        (axes[0, 0], [(g, "Beta(3,2): g"), (f, "N(3/5, 1/3): f")], "(a) Comparison of PDFs"),
        (axes[0, 1], [(G, "Beta(3,2): G"), (F, "N(3/5, 1/3): F")], "(b) Comparison of CDFs"),
        (axes[1, 0], [(g - f, "D'(s) = g(s) - f(s)")], "(c) Difference in PDFs"),
        (axes[1, 1], [(G - F, "D(s) = G(s) - F(s)")], "(d) Difference in CDFs"),
    ]
    for ax, curves, title in panels:
        for y, label in curves:
            ax.plot(s, y, label=label)
        for x in (lo, hi):
            ax.axvline(x, ls="--", color="k", lw=0.8)
        ax.axhline(0, color="grey", lw=0.5)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("s")
        ax.legend(fontsize=7)
    fig.suptitle(f"Beta(3,2) vs N(3/5, 1/3); dashed: boundaries of C = ({lo:.4f}, {hi:.4f})", fontsize=10)
    fig.tight_layout()
    a = np.linspace(-1.5, 2.5, 81)
    margin = optimism_margin(a)
    summary = [{"quantity": "C lower end", "value": round(lo, 6)},
               {"quantity": "C upper end", "value": round(hi, 6)},
               {"quantity": "E[Beta] - E[Normal]", "value": round(beta.mean() - normal.mean(), 12)},
               {"quantity": "min_a int_a^inf (G - F) ds (>= 0: N >=_SO Beta)", "value": round(float(margin.min()), 8)}]
    return save(fig, out, "beta_vs_normal") + write_table(pd.DataFrame(summary), out, "beta_vs_normal")

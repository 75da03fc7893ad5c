"""Fig. 18 (fig:beta_vs_normal): Beta(3, 2) vs N(3/5, 1/3), the pair of Lemma "Gaussian-Beta optimism",
drawn from rvfx.analysis.beta_vs_normal: pdfs, cdfs and their differences, the ends of C dashed.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.analysis.beta_vs_normal import distributions, margin_table, set_c
from rvfx.figures.common import plt, save, write_table


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
        ax.set_title(title)
        ax.set_xlabel("s")
        ax.legend()
    fig.suptitle(f"Beta(3,2) vs N(3/5, 1/3); dashed: boundaries of C = ({lo:.4f}, {hi:.4f})")
    fig.tight_layout()
    margin = margin_table()["margin"]
    summary = [{"quantity": "C lower end", "value": round(lo, 6)},
               {"quantity": "C upper end", "value": round(hi, 6)},
               {"quantity": "E[Beta] - E[Normal]", "value": round(beta.mean() - normal.mean(), 12)},
               {"quantity": "min_a int_a^inf (G - F) ds (>= 0: N >=_SO Beta)", "value": round(float(margin.min()), 8)}]
    return save(fig, out, "beta_vs_normal") + write_table(pd.DataFrame(summary), out, "beta_vs_normal")

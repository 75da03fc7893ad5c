"""Beyond the paper: rvfx's ensemble and DQN against bsuite's own boot_dqn on bsuite's cartpole_swingup
(configs/bsuite_cartpole_swingup.yaml): returns over episodes, the first episode returning more than
100 per run, and the table of readouts with the stated verdict (rvfx "matches" boot_dqn when its median
first-success episode lies in the 95% CI of boot_dqn's, else "lags", or "ahead" below it)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rvfx.figures.common import SMOOTH, band, ci_cell, first_success_dots, plt, save, smoothed_returns, write_table


def summary_table(runs: pd.DataFrame) -> pd.DataFrame:
    """`summary` as the table says it."""
    from rvfx.analysis.bsuite_cartpole import summary
    return pd.DataFrame([{
        "level": r["level"], "agent": r["agent"], "seeds": r["seeds"], "episodes": r["episodes"],
        "first episode > 100: median [95% CI]": ci_cell(r["median"], r["lo"], r["hi"]),
        "never > 100": f"{r['never']}/{r['seeds']}",
        "episodes > 100 (mean ± s.e.)": (f"{r['successes']:.1f} ± {r['successes_sem']:.1f}" if r["seeds"] > 1
                                         else f"{r['successes']:.1f}"),
        "bsuite score: mean [95% CI]": f"{r['score']:.3f} [{r['score_lo']:.3f}, {r['score_hi']:.3f}]",
        "prior spread on the probe states (mean)": "" if np.isnan(r["prior_spread"]) else f"{r['prior_spread']:.2f}",
        "verdict vs boot_dqn": r["verdict"]} for r in summary(runs).to_dict("records")])


def draw(results, out):
    from rvfx.analysis.bsuite_cartpole import BOOT_DQN, EXPERIMENT, readouts
    runs, returns = readouts(results)
    returns = smoothed_returns(returns)
    levels = sorted(runs["level"].unique())
    agents = list(dict.fromkeys([BOOT_DQN, *runs["agent"]]))
    fig, axes = plt.subplots(2, len(levels), figsize=(5.5 * len(levels), 7.5), squeeze=False)
    for j, level in enumerate(levels):
        ax, ax2 = axes[0, j], axes[1, j]
        for i, agent in enumerate(agents):
            g = returns[(returns["agent"] == agent) & (returns["env.id"] == level)]
            r = runs[(runs["agent"] == agent) & (runs["level"] == level)]
            if not len(r):
                continue
            band(ax, g, "episode", "smoothed", f"{agent} ({len(r)} seeds)", color=f"C{i}")
            first_success_dots(ax2, i, r["first_success"].to_numpy(float), r["episodes"].to_numpy(), f"C{i}")
        ax.axhline(100, color="k", ls=":", lw=0.8)
        ax.set_xlabel("episode")
        ax.set_ylabel(f"return (running mean of {SMOOTH})")
        ax.set_title(f"bsuite {level}")
        ax.legend(title="mean ± 1 s.e.")
        ax2.set_xticks(range(len(agents)))
        ax2.set_xticklabels(agents, rotation=15, fontsize=7)
        ax2.set_ylabel("first episode with return > 100")
        ax2.set_title("median, 95% CI (\u25b3: never, at the budget)")
    fig.tight_layout()
    return (save(fig, out, EXPERIMENT) + write_table(summary_table(runs), out, f"{EXPERIMENT}_summary")
            + write_table(runs, out, f"{EXPERIMENT}_runs"))

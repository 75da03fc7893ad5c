"""Figs. 1-3 (fig:grid, fig:rlsvi, fig:online_models): the paper's illustrations, drawn from code.

- Fig. 1 draws a `DeepSea` instance from the environment object itself: which action index
  means "right" in each cell, the cells where "right" is charged, start, chest and the
  optimal path, all read from the instance.
- Fig. 2 (figure `rlsvi_uncertainty`) draws the experiment rlsvi_uncertainty: the variance of
  samples Q_h(s, a) of `learn_grlsvi` on the paper's 4-state example (rvfx/agents/tabular/
  uncertainty.py), averaged over seeds, as one shaded triangle per (s, h, a).
- Fig. 3 is the block diagram of learning one value function vs K in parallel
  (`learn_lsvi` vs `learn_ensemble_rlsvi`).

Figs. 1 and 3 compute nothing and register with no experiment (figure `illustrations`).
"""
from __future__ import annotations

import numpy as np
from matplotlib import colors
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Polygon, Rectangle

from rvfx.analysis.stats import mean_sem
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams
from rvfx.envs.four_state import DOWN, UP
from rvfx.experiment.results import load_table
from rvfx.figures.common import agent_params, plt, save, write_table

# ----------------------------------------------------------------------------- Fig. 1

def draw_deep_sea(ax, env: DeepSea) -> None:
    """The grid of `env`: row = time step, column = position; everything read from `env`."""
    n = env.size
    optimal = env.optimal_actions()
    for row in range(n):
        for col in range(n):
            charged = env.mean_reward(row, col, True) < 0 and not (row == col == n - 1)
            face = "#f6d5d5" if charged else "#e8f1fb"
            ax.add_patch(Rectangle((col, -row - 1), 1, 1, facecolor=face, edgecolor="#7a8ea8", lw=0.6))
            ax.text(col + 0.5, -row - 0.5, f"R={env.right_action[row, col]}", ha="center", va="center",
                    fontsize=max(4, 9 - n // 3), color="#33415c")
    chest = env.mean_reward(n - 1, n - 1, True) + env.move_cost
    ax.add_patch(Rectangle((n - 1, -n), 1, 1, facecolor="#f2c14e", edgecolor="k", lw=1.2))
    ax.text(n - 0.5, -n + 0.2, f"chest {chest:+.0f}", ha="center", va="bottom", fontsize=6)
    ax.text(0.5, -0.12, "start", ha="center", va="top", fontsize=6, color="#1b4965")
    # optimal path from (0, 0), following the instance's optimal actions
    row, col, xs, ys = 0, 0, [0.5], [-0.5]
    while row < n:
        right = optimal[row, col] == env.right_action[row, col]
        col = min(col + 1, n - 1) if right else max(col - 1, 0)
        row += 1
        xs.append(col + 0.5 if row < n else col + 0.5 + (0.45 if right else -0.45))
        ys.append(-row - 0.5 if row < n else -n + 0.05)
    ax.plot(xs, ys, "-", color="#c1121f", lw=1.5, alpha=0.8)
    ax.set_xlim(-0.1, n + 0.1)
    ax.set_ylim(-n - 0.1, 0.1)
    ax.set_aspect("equal")
    ax.set_xticks(np.arange(n) + 0.5, [str(c) for c in range(n)], fontsize=6)
    ax.set_yticks(-np.arange(n) - 0.5, [str(r) for r in range(n)], fontsize=6)
    ax.set_xlabel("column (position)")
    ax.set_ylabel("row = time step")


# ----------------------------------------------------------------------------- Fig. 2

def draw_uncertainty(ax, var: np.ndarray, norm, cmap) -> None:
    """One square per (s, h), split into an 'up' (upper-left) and a 'down' (lower-right) triangle."""
    H, S, _ = var.shape
    for h in range(1, H + 1):
        x = H - h                                    # h = H on the left, h = 1 on the right
        for s in range(S):
            y = S - 1 - s                             # state 1 on top
            up = Polygon([(x, y), (x, y + 1), (x + 1, y + 1)], closed=True)
            down = Polygon([(x, y), (x + 1, y), (x + 1, y + 1)], closed=True)
            for tri, a, tx, ty in ((up, UP, x + 0.3, y + 0.72), (down, DOWN, x + 0.7, y + 0.28)):
                tri.set_facecolor(cmap(norm(max(var[h - 1, s, a], norm.vmin))))
                tri.set_edgecolor("white")
                ax.add_patch(tri)
                value = var[h - 1, s, a]
                ax.text(tx, ty, f"{value:.2g}" if value >= 1e-3 else "~0", ha="center", va="center",
                        fontsize=5, color="white" if norm(max(value, norm.vmin)) > 0.6 else "black")
    ax.set_xlim(0, H)
    ax.set_ylim(0, S)
    ax.set_xticks(np.arange(H) + 0.5, [f"h={h}" for h in range(H, 0, -1)], fontsize=7)
    ax.set_yticks(np.arange(S) + 0.5, [f"s={s}" for s in range(S, 0, -1)], fontsize=7)
    ax.set_aspect("equal")


# ----------------------------------------------------------------------------- Fig. 3

def _box(ax, xy, w, h, text, color="#e8f1fb", fontsize=7):
    ax.add_patch(FancyBboxPatch(xy, w, h, boxstyle="round,pad=0.02", facecolor=color, edgecolor="#33415c"))
    ax.text(xy[0] + w / 2, xy[1] + h / 2, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax, a, b, text="", rad=0.0):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=9, color="#33415c",
                                 connectionstyle=f"arc3,rad={rad}", lw=0.9))
    if text:
        ax.text((a[0] + b[0]) / 2, (a[1] + b[1]) / 2 + 0.03, text, ha="center", va="bottom", fontsize=6)


def draw_single(ax) -> None:
    _box(ax, (0.03, 0.74), 0.94, 0.16, "environment", "#fdf0d5")
    _box(ax, (0.03, 0.3), 0.27, 0.18, "buffer\n(all observed\ntransitions)")
    _box(ax, (0.365, 0.3), 0.27, 0.18, "learn_lsvi\n(or learn_online_lsvi)", fontsize=5.5)
    _box(ax, (0.7, 0.3), 0.27, 0.18, r"one estimate $\tilde\theta$" + "\nact greedily", "#e9f5db")
    _arrow(ax, (0.165, 0.74), (0.165, 0.48), "update_buffer")
    _arrow(ax, (0.3, 0.39), (0.365, 0.39))
    _arrow(ax, (0.635, 0.39), (0.7, 0.39))
    _arrow(ax, (0.835, 0.48), (0.835, 0.74), "act")
    ax.set_title("(a) learning a single value function")


def draw_ensemble(ax) -> None:
    _box(ax, (0.03, 0.8), 0.94, 0.13, "environment", "#fdf0d5")
    rows = [(0.64, "1"), (0.5, "2"), (0.24, "K")]
    for y, label in rows:
        _box(ax, (0.03, y - 0.05), 0.42, 0.1,
             f"ensemble_buffer[{label}]\n" + r"$(s,a,r+z^{" + label + r"},s')$ or kept w.p. 1/2", fontsize=5.5)
        member = r"$\tilde\theta_{" + label + r"}$, prior $\tilde\theta^p_{" + label + "}$"
        _box(ax, (0.52, y - 0.05), 0.26, 0.1, member, "#e9f5db", fontsize=6)
        _arrow(ax, (0.45, y), (0.52, y))
    ax.text(0.24, 0.37, r"$\vdots$", ha="center", va="center", fontsize=10)
    ax.text(0.65, 0.37, r"$\vdots$", ha="center", va="center", fontsize=10)
    _arrow(ax, (0.24, 0.8), (0.24, 0.69), "update_buffer (each k)")
    _box(ax, (0.52, 0.0), 0.45, 0.12, "each episode: " + r"$j \sim$ Unif$\{1..K\}$" + "\n"
         + r"act greedily on $\tilde\theta_j$", fontsize=6)
    _arrow(ax, (0.65, 0.19), (0.65, 0.12))
    _arrow(ax, (0.92, 0.12), (0.92, 0.8), "act")
    ax.set_title("(b) learning multiple value functions in parallel")


# ----------------------------------------------------------------------------- register

def fig_rlsvi_uncertainty(results, out):
    """Fig. 2 from the experiment rlsvi_uncertainty: mean over seeds of each run's sample variance."""
    exp = "rlsvi_uncertainty"
    table = load_table(results, exp, "q_variance")
    summary = mean_sem(table, ["h", "state", "action", "pair"], "variance").sort_values(["h", "state", "action"])
    H, S = int(summary["h"].max()), int(summary["state"].max())
    var = np.zeros((H, S, 2))
    for row in summary.itertuples(index=False):
        var[row.h - 1, row.state - 1, UP if row.action == "up" else DOWN] = row.mean
    agent = agent_params(results, exp, str(table["agent"].iloc[0]))
    cmap = plt.get_cmap("Blues")
    norm = colors.LogNorm(vmin=1e-3 * agent.v, vmax=var.max())
    fig, ax = plt.subplots(figsize=(7, 3.8))
    draw_uncertainty(ax, var, norm, cmap)
    fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, shrink=0.8,
                 label=r"Var$[Q_h(s,a)]$ of learn_grlsvi samples")
    seeds = table["seed"].nunique()
    ax.set_title(f"Fig. 2: uncertainty propagates leftward from (4, down) (1 observation; others "
                 f"{agent.n_big:.0e});\nupper-left triangle = up, lower-right = down; v={agent.v:g}, "
                 f"lambda=inf; mean over {seeds} seeds of {agent.samples} samples each")
    tab = summary[["h", "state", "action", "pair", "count", "mean", "sem"]].rename(
        columns={"count": "seeds", "mean": "variance", "sem": "variance_se"})
    tab[["variance", "variance_se"]] = tab[["variance", "variance_se"]].map(lambda x: float(f"{x:.4g}"))
    return save(fig, out, "rlsvi_uncertainty") + write_table(tab, out, "rlsvi_uncertainty")


def draw(results, out):
    """Figs. 1 and 3."""
    paths = []
    env = DeepSea(DeepSeaParams(size=8), np.random.default_rng(0))
    fig, ax = plt.subplots(figsize=(5, 5))
    draw_deep_sea(ax, env)
    ax.set_title(f"Fig. 1: deep sea N={env.size} (seed 0). R=a: action a means 'right';\n"
                 f"red cells charge {env.move_cost:.4f} for 'right'; line: optimal path")
    paths += save(fig, out, "illustrations_deep_sea")

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    draw_single(axes[0])
    draw_ensemble(axes[1])
    for ax in axes:
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.axis("off")
    fig.suptitle("Fig. 3: RLSVI via ensemble sampling, each member produced by LSVI on perturbed data")
    paths += save(fig, out, "illustrations_ensemble")
    return paths

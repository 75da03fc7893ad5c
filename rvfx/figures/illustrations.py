"""Figs. 1-3 (fig:grid, fig:rlsvi, fig:online_models): the paper's illustrations, drawn from code.

- Fig. 1 draws a `DeepSea` instance from the environment object itself: which action index
  means "right" in each cell, the cells where "right" is charged, start, chest and the
  optimal path, all read from the instance.
- Fig. 2 is computed, not drawn by hand: the variance of samples Q_h(s, a) of
  `learn_grlsvi` (tabular, lambda = infinity, the same noise z across the iterations, as in
  Section 5.2.2) on the paper's 4-state example, with one observation of (4, down) and
  `N_BIG` of every other pair, shown as one shaded triangle per (s, h, a).
- Fig. 3 is the block diagram of learning one value function vs K in parallel
  (`learn_lsvi` vs `learn_ensemble_rlsvi`).

All three are cheap and register with no experiment.
"""
from __future__ import annotations

import numpy as np
from matplotlib import colors
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Polygon, Rectangle

from rvfx.core.backward_induction import backward_induction
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams
from rvfx.figures.common import plt, save

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

UP, DOWN = 0, 1
N_BIG = 10 ** 6           # "virtually infinite" observations of every pair but (4, down)


def four_state_example(stay: float = 0.2):
    """The 4-state, 2-action MDP of Section 5.2.2 (states 1..4 stored as 0..3).

    The paper gives only its shape; we fix: "down" moves to s+1 (clipped at 4) and "up" to
    s-1 (clipped at 1) with probability 1 - `stay`, and otherwise the state stays, so only
    (4, up), (3, down) and (4, down) itself can reach state 4, as in the paper's text.
    Rewards are 0 (the figure is about uncertainty, not value).
    Returns P (S, A, S) and mean rewards R (S, A).
    """
    S = 4
    P = np.zeros((S, 2, S))
    for s in range(S):
        P[s, UP, max(s - 1, 0)] += 1 - stay
        P[s, DOWN, min(s + 1, S - 1)] += 1 - stay
        P[s, :, s] += stay
    return P, np.zeros((S, 2))


def grlsvi_q_samples(H: int = 6, v: float = 1.0, samples: int = 20000, seed: int = 0,
                     shared_noise: bool = True) -> np.ndarray:
    """Samples of Q_h(s, a), h = 1..H, from tabular `learn_grlsvi` with lambda = infinity.

    Q_{h+1}(s, a) = mean over the n(s, a) observations of (r + max_a' Q_h(s', a') + z): for the
    N_BIG-observed pairs the empirical distribution equals P and the mean noise is
    N(0, v / N_BIG); (4, down) has one observation (r = 0, s' = 4) and noise N(0, v).
    `shared_noise`: the same z in every iteration (Algorithm 4); False redraws it per h.
    Returns an array (samples, H, S, A); index h-1 holds Q_h.
    """
    P, R = four_state_example()
    S, A = R.shape
    rng = np.random.default_rng(seed)
    n = np.full((S, A), float(N_BIG))
    n[3, DOWN] = 1.0
    exact = n > 1                                    # empirical distribution = P exactly
    obs_next = np.zeros((S, A, S))
    obs_next[3, DOWN, 3] = 1.0                       # the one observed transition: 4 -> 4
    P_hat = np.where(exact[..., None], P, obs_next)
    sd = np.sqrt(v / n)
    noise = [rng.standard_normal((samples, S, A)) * sd]

    def backup(layer, v_next):                       # layer H-1 is computed first: it holds Q_1
        if not shared_noise and layer < H - 1:
            noise.append(rng.standard_normal((samples, S, A)) * sd)
        return R + np.einsum("sat,kt->ksa", P_hat, v_next) + noise[-1]

    q = backward_induction(backup, H, np.zeros((samples, S)))
    return np.ascontiguousarray(q[::-1].transpose(1, 0, 2, 3))


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
    ax.set_title("(a) learning a single value function", fontsize=8)


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
    ax.set_title("(b) learning multiple value functions in parallel", fontsize=8)


# ----------------------------------------------------------------------------- register

def draw(results, out):
    paths = []
    env = DeepSea(DeepSeaParams(size=8), np.random.default_rng(0))
    fig, ax = plt.subplots(figsize=(5, 5))
    draw_deep_sea(ax, env)
    ax.set_title(f"Fig. 1: deep sea N={env.size} (seed 0). R=a: action a means 'right';\n"
                 f"red cells charge {env.move_cost:.4f} for 'right'; line: optimal path", fontsize=8)
    paths += save(fig, out, "illustrations_deep_sea")

    H, v = 6, 1.0
    q = grlsvi_q_samples(H=H, v=v)
    var = q.var(axis=0)
    cmap = plt.get_cmap("Blues")
    norm = colors.LogNorm(vmin=1e-3 * v, vmax=var.max())
    fig, ax = plt.subplots(figsize=(7, 3.8))
    draw_uncertainty(ax, var, norm, cmap)
    fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, shrink=0.8,
                 label=r"Var$[Q_h(s,a)]$ of learn_grlsvi samples")
    ax.set_title(f"Fig. 2: uncertainty propagates leftward from (4, down) (1 observation; others {N_BIG:.0e});\n"
                 f"upper-left triangle = up, lower-right = down; v={v:g}, lambda=inf, {q.shape[0]} samples",
                 fontsize=8)
    paths += save(fig, out, "illustrations_rlsvi_uncertainty")

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    draw_single(axes[0])
    draw_ensemble(axes[1])
    for ax in axes:
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.axis("off")
    fig.suptitle("Fig. 3: RLSVI via ensemble sampling, each member produced by LSVI on perturbed data", fontsize=9)
    paths += save(fig, out, "illustrations_ensemble")
    return paths

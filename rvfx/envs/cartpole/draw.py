"""Draw cartpole swing-up trajectories (§7.2.2) as a strip of frames, to see what a policy does."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from rvfx.envs.cartpole.dynamics import CartpoleSwingUpParams, upright


def draw_cartpole(ax, theta: float, x: float, length: float = 1.0, rail: float = 5.0,
                  color: str = "tab:blue", cart_width: float = 0.6, cart_height: float = 0.3) -> None:
    """Draw one frame on `ax`: rails at ±rail, the cart at x, the pole at angle θ (0 = upright)."""
    ax.plot([-rail, rail], [0.0, 0.0], color="0.6", lw=1)
    for end in (-rail, rail):
        ax.plot([end, end], [-0.3, 0.3], color="k", lw=3)
    ax.add_patch(Rectangle((x - cart_width / 2, -cart_height / 2), cart_width, cart_height,
                           facecolor="0.85", edgecolor="k"))
    ax.plot([x, x + length * math.sin(theta)], [0.0, length * math.cos(theta)], color=color, lw=3)
    ax.plot([x], [0.0], "ko", ms=3)
    ax.set_xlim(-rail - 0.5, rail + 0.5)
    ax.set_ylim(-length - 0.4, length + 0.4)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])


def draw_strip(observations, path, params: CartpoleSwingUpParams | None = None,
               num_frames: int = 8, dpi: int = 80) -> Path:
    """Save `num_frames` evenly spaced frames of a trajectory as one row of panels.

    `observations` is (T, 5) of (θ, θ̇, x, ẋ, t) as the env emits (`observation: raw`). A pole
    drawn green is inside the reward box of `params` (`upright`; default: the paper's task).
    """
    params = params or CartpoleSwingUpParams()
    obs = np.asarray(observations, dtype=float).reshape(-1, 5)
    idx = np.unique(np.linspace(0, len(obs) - 1, min(num_frames, len(obs))).round().astype(int))
    fig = Figure(figsize=(2.2 * len(idx), 1.0))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(idx), squeeze=False)[0]
    for ax, i in zip(axes, idx):
        theta, theta_dot, x, x_dot, t = obs[i]
        good = upright(math.cos(theta), theta_dot, x, x_dot, params)
        draw_cartpole(ax, theta, x, length=params.length, rail=params.rail, color="tab:green" if good else "tab:blue")
        ax.set_title(f"t={t:.2f}", fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=dpi)
    return path

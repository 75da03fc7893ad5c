"""Draw a cartpole swing-up frame (§7.2.2): rails, cart and pole, for the figures that show what a policy does."""
from __future__ import annotations

import math

from matplotlib.patches import Rectangle


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


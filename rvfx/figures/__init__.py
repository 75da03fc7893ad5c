"""Figure registry: figure id -> the experiments it reads and the function that draws it.

Every figure is drawn from the collected CSV tables alone (results/<experiment>/).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Figure:
    id: str
    experiments: tuple
    draw: Callable          # draw(results_dir: Path, out_dir: Path) -> list[Path]
    caption: str


FIGURES: dict[str, Figure] = {}


def register(fig_id: str, experiments, caption: str):
    def deco(fn):
        FIGURES[fig_id] = Figure(fig_id, tuple(experiments), fn, caption)
        return fn
    return deco


from rvfx.figures import deepsea_tabular  # noqa: E402,F401  (registers figures)
from rvfx.figures import deepsea_linear  # noqa: E402,F401
from rvfx.figures import beta_vs_normal, exploration_table, illustrations, regret_bound  # noqa: E402,F401
from rvfx.figures import cartpole  # noqa: E402,F401
from rvfx.figures import deepsea_ensemble  # noqa: E402,F401
from rvfx.figures import cartpole_ablation  # noqa: E402,F401
from rvfx.figures import interop  # noqa: E402,F401

"""The cartpole reference controller as an agent, so its return is a run like any other (§7.2.2).

It learns nothing: each step it reads the true state from the environment and acts with
`ReferenceController` (energy pumping, then LQR). Its return is the upper line the figures
draw: what the task allows as implemented.
"""
from __future__ import annotations

from dataclasses import dataclass

from rvfx.envs.cartpole_control import ReferenceController


@dataclass(frozen=True)
class CartpoleReferenceParams:
    """No parameters: the controller's gains are fixed for the paper's task."""


class CartpoleReference:
    def __init__(self, env):
        self.env = env
        self.controller = ReferenceController(env.params)

    def learn_from_buffer(self) -> None:
        """A new episode: the controller starts pumping again."""
        self.controller.reset()

    def act(self, observation) -> int:
        return self.controller.act(self.env.state)

    def update_buffer(self, transition) -> None:
        """Nothing to learn."""

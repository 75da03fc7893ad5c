"""The cartpole reference controller as an agent, so its return is a run like any other (§7.2.2).

It learns nothing: each step it reads the true state from the environment and acts with
`ReferenceController` (energy pumping, then LQR). Its return is the upper line the figures
draw: what the task allows as implemented.
"""
from __future__ import annotations

from dataclasses import dataclass

from rvfx.envs.cartpole.control import ReferenceController
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp


class ReferenceAgent:
    """`ReferenceController` as an agent of Algorithm 1: it reads the true state from `env` and
    learns nothing; `learn_from_buffer` starts a new episode (the controller pumps again)."""

    def __init__(self, env: CartpoleSwingUp):
        self.env = env
        self.controller = ReferenceController(env.params)

    def learn_from_buffer(self) -> None:
        self.controller.reset()

    def act(self, observation) -> int:
        return self.controller.act(self.env.state)

    def update_buffer(self, transition) -> None:
        """Nothing to learn."""


@dataclass(frozen=True)
class CartpoleReferenceParams:
    """No parameters: the controller's gains are fixed for the paper's task."""


def make_reference(params: CartpoleReferenceParams, env, rng) -> ReferenceAgent:
    return ReferenceAgent(env)

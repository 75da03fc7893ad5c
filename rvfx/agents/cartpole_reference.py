"""The cartpole reference controller as an agent, so its return is a run like any other (§7.2.2).

It learns nothing: each step it reads the true state from the environment and acts with
`ReferenceController` (energy pumping, then LQR). Its return is the upper line the figures
draw: what the task allows as implemented.
"""
from __future__ import annotations

from dataclasses import dataclass

from rvfx.envs.cartpole.control import ReferenceAgent


@dataclass(frozen=True)
class CartpoleReferenceParams:
    """No parameters: the controller's gains are fixed for the paper's task."""


def make_reference(params: CartpoleReferenceParams, env, rng) -> ReferenceAgent:
    return ReferenceAgent(env)

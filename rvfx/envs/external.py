"""The parameters of the `gym` and `bsuite` environment kinds, without their extras, so that specs
naming them validate anywhere (their factories: rvfx.envs.extras)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class GymParams:
    id: str = field(default="MountainCar-v0", metadata={
        "doc": "Gymnasium environment id: discrete actions, a Box or Discrete observation (e.g. "
               "MountainCar-v0, rvfx/DeepSea-v0)"})
    kwargs: str = field(default="{}", metadata={"doc": "keyword arguments of gymnasium.make, a JSON object"})
    max_episode_steps: int = field(default=0, metadata={
        "min": 0, "doc": "episode cap (gymnasium.make's max_episode_steps; 0: the id's registered limit)"})
    time_in_observation: bool = field(default=False, metadata={
        "doc": "append t / cap to the (Box) observation; a time-limit truncation then ends a finite-horizon "
               "episode at a terminal state (no bootstrap). false: the truncation ends the episode with "
               "the real next state, which value estimates bootstrap from"})

    def __post_init__(self):
        json_object(self.kwargs, "kwargs")


@dataclass(frozen=True)
class BsuiteParams:
    id: str = field(default="deep_sea/0", metadata={
        "doc": "a bsuite_id of bsuite's sweep (deep_sea/0 ... deep_sea/20: size 10 ... 50), or an "
               "experiment name (deep_sea, cartpole_swingup) constructed from `kwargs` alone"})
    kwargs: str = field(default="{}", metadata={
        "doc": "constructor keyword arguments, a JSON object merged over the bsuite_id's settings"})

    def __post_init__(self):
        json_object(self.kwargs, "kwargs")


def json_object(text: str, name: str) -> dict:
    """`text` parsed as a JSON object; else a ValueError naming the parameter `name` (a spec
    reports it at its env key)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{name}: not JSON ({err.msg}): {text!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{name}: expected a JSON object, got {text!r}")
    return value

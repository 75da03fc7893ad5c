"""The parameters of the `gym` and `bsuite` environment kinds, without their extras, so that specs
naming them validate anywhere (their factories: rvfx.envs.extras). They size a run from its id
without importing the extra where the extra fixes the sizes (bsuite's deep_sea sweep, Gymnasium's
MountainCar); other ids have no sizes before they are built. `settings` reads a bsuite id against
bsuite's sweep, importing the extra only when it is called."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

# Gymnasium ids whose sizes Gymnasium fixes: (registered max_episode_steps, Box observation
# length, actions) (gymnasium/envs/__init__.py, classic_control/mountain_car.py)
GYM_SIZES = {"MountainCar-v0": (200, 2, 3)}
# bsuite's deep_sea/<k> is size 10 + 2k (bsuite/experiments/deep_sea/sweep.py: sizes 10, 12, ..., 50)
BSUITE_DEEP_SEA_SIZES = tuple(range(10, 51, 2))


def settings(bsuite_id: str, kwargs: str = "{}") -> tuple[str, dict]:
    """(experiment name, constructor kwargs) of a bsuite_id or bare experiment name, `kwargs` over them;
    a ValueError for an id bsuite does not have. Reads bsuite's sweep (the extra) when called."""
    from bsuite import sweep
    from bsuite.bsuite import EXPERIMENT_NAME_TO_ENVIRONMENT
    name, _, index = bsuite_id.partition(sweep.SEPARATOR)
    if name not in EXPERIMENT_NAME_TO_ENVIRONMENT:
        raise ValueError(f"unknown bsuite experiment {name!r}")
    if index and bsuite_id not in sweep.SETTINGS:
        raise ValueError(f"{bsuite_id!r} is not in bsuite's sweep ({name} has "
                         f"{sum(i.startswith(name + sweep.SEPARATOR) for i in sweep.SETTINGS)} settings)")
    return name, {**(sweep.SETTINGS[bsuite_id] if index else {}), **json_object(kwargs, "kwargs")}


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

    size_key = "env.id"

    def run_sizes(self) -> dict | None:
        """The sizes of an id in `GYM_SIZES`, at the cap GymEnvironment sets (`RunSizes`); else None."""
        if self.id not in GYM_SIZES:
            return None
        registered, observation, actions = GYM_SIZES[self.id]
        kwargs = json_object(self.kwargs, "kwargs")
        steps = _positive_int(self.max_episode_steps or kwargs.get("max_episode_steps") or registered)
        if steps is None:
            return None
        return {"A": actions, "steps": steps, "inputs": observation + int(self.time_in_observation), "keys": 0}

    def run_memory(self) -> dict:
        return {}


# bsuite's step beyond rvfx's own deep sea's (dm_env's TimeStep, an N x N image, its conversion into the
# agent's input), measured by DQN and tabular RLSVI on deep_sea/0, /10, /20 against the native
# environment at the sweeps' load (two processes on two cores): 11-14 us a step for the table, up to
# 28 us for the network's input; bsuite's cartpole_swingup step alone costs 7 us more than rvfx's
STEP_SECONDS = 2.8e-5


@dataclass(frozen=True)
class BsuiteParams:
    id: str = field(default="deep_sea/0", metadata={
        "doc": "a bsuite_id of bsuite's sweep (deep_sea/0 ... deep_sea/20: size 10 ... 50), or an "
               "experiment name (deep_sea, cartpole_swingup) constructed from `kwargs` alone"})
    kwargs: str = field(default="{}", metadata={
        "doc": "constructor keyword arguments, a JSON object merged over the bsuite_id's settings"})

    def __post_init__(self):
        json_object(self.kwargs, "kwargs")

    size_key = "env.id"

    def run_sizes(self) -> dict | None:
        """The sizes of a deep_sea id (from `BSUITE_DEEP_SEA_SIZES`) or a cartpole_swingup one (the
        latter reads bsuite's sweep), as the environment bsuite builds has them (`RunSizes`); else None."""
        if self.id.partition("/")[0] == "deep_sea":
            n = self._deep_sea_size()
            if n is None:
                return None
            return {"H": n, "S": n, "A": 2, "steps": n, "inputs": n * n, "keys": n * n, "step_seconds": STEP_SECONDS}
        if self.id.startswith("cartpole_swingup"):
            kwargs = {"max_time": 10.0, "timescale": 0.01, **settings(self.id, self.kwargs)[1]}  # bsuite's defaults
            return {"A": 3, "steps": int(kwargs["max_time"] / kwargs["timescale"] + 1e-9) + 1, "inputs": 8, "keys": 0,
                    "step_seconds": STEP_SECONDS}
        return None

    def run_memory(self) -> dict:
        return {}

    def _deep_sea_size(self) -> int | None:
        """N of a deep_sea id (deep_sea/<k>, or bare deep_sea), its kwargs' `size` over the sweep's,
        as `settings` merges them; None where bsuite would refuse the id or the size
        is no positive integer."""
        _, _, index = self.id.partition("/")
        sweep = {str(k): n for k, n in enumerate(BSUITE_DEEP_SEA_SIZES)}
        if index and index not in sweep:
            return None
        return _positive_int(json_object(self.kwargs, "kwargs").get("size", sweep.get(index)))


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


def _positive_int(value) -> int | None:
    """`value` if it is an integer in [1, 2**63), as a spec's integers are (a size read from its JSON
    kwargs), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 1 <= value < 2**63 else None

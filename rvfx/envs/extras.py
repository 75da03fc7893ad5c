"""Registry factories of the `gym` and `bsuite` environment kinds: each imports its extra's adapter
(rvfx.envs.gym, rvfx.envs.bsuite) only when a run starts, so rvfx runs without the extras."""
from __future__ import annotations

from rvfx.envs.external import BsuiteParams, GymParams


def missing_extra(module: str, extra: str) -> ImportError:
    """The error for an environment kind used without its extra."""
    return ImportError(f"{module} is not installed: pip install 'rvfx[{extra}]'")


def gym_environment(params: GymParams, rng):
    """Registry factory of the `gym` kind: a Gymnasium environment as an rvfx one."""
    try:
        from rvfx.envs.gym import GymEnvironment
    except ModuleNotFoundError as err:
        raise missing_extra(err.name, "gym") from err
    return GymEnvironment(params, rng)


def bsuite_environment(params: BsuiteParams, rng):
    """Registry factory of the `bsuite` kind: a bsuite (dm_env) environment as an rvfx one."""
    try:
        from rvfx.envs.bsuite import BsuiteEnvironment
    except ModuleNotFoundError as err:
        raise missing_extra(err.name, "bsuite") from err
    return BsuiteEnvironment(params, rng)

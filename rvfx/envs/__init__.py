"""Environment registry: name -> (class, parameter dataclass)."""
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams

ENVS = {
    "deep_sea": (DeepSea, DeepSeaParams),
}


def make_env(name: str, params, rng):
    cls, _ = ENVS[name]
    return cls(params, rng)

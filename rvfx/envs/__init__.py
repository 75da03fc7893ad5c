"""Environment registry: name -> (class, parameter dataclass)."""
from rvfx.envs.cartpole import CartpoleSwingUp, CartpoleSwingUpParams
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams

ENVS = {
    "deep_sea": (DeepSea, DeepSeaParams),
    "cartpole_swingup": (CartpoleSwingUp, CartpoleSwingUpParams),
}


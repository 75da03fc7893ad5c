"""Environment registry: name -> (class, parameter dataclass). Each class declares what it offers
an agent (`offers`, rvfx.core.protocols), which an agent's `requires` (rvfx.agents) is checked
against; the gym and bsuite kinds, made by functions, declare theirs once built."""
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp, CartpoleSwingUpParams
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams
from rvfx.envs.external import BsuiteParams, GymParams
from rvfx.envs.extras import bsuite_environment, gym_environment
from rvfx.envs.four_state import FourStateExample, FourStateParams
from rvfx.envs.random_mdp import RandomMDP, RandomMDPParams

ENVS = {
    "deep_sea": (DeepSea, DeepSeaParams),
    "cartpole_swingup": (CartpoleSwingUp, CartpoleSwingUpParams),
    "random_mdp": (RandomMDP, RandomMDPParams),
    "four_state": (FourStateExample, FourStateParams),
    # beyond the paper, through the extras rvfx[gym] and rvfx[bsuite] (imported when a run starts)
    "gym": (gym_environment, GymParams),
    "bsuite": (bsuite_environment, BsuiteParams),
}


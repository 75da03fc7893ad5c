"""Environment registry: name -> (class, parameter dataclass); `PAPER_ENVS`, the paper's, which
an agent's `environments` (rvfx.agents.AgentEntry) speaks of."""
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp, CartpoleSwingUpParams
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams
from rvfx.envs.external import BsuiteParams, GymParams
from rvfx.envs.extras import bsuite_environment, gym_environment
from rvfx.envs.four_state import FourStateExample, FourStateParams
from rvfx.envs.random_mdp import RandomMDP, RandomMDPParams

PAPER_ENVS = ("deep_sea", "cartpole_swingup", "random_mdp", "four_state")
ENVS = {
    "deep_sea": (DeepSea, DeepSeaParams),
    "cartpole_swingup": (CartpoleSwingUp, CartpoleSwingUpParams),
    "random_mdp": (RandomMDP, RandomMDPParams),
    "four_state": (FourStateExample, FourStateParams),
    # beyond the paper, through the extras rvfx[gym] and rvfx[bsuite] (imported when a run starts)
    "gym": (gym_environment, GymParams),
    "bsuite": (bsuite_environment, BsuiteParams),
}


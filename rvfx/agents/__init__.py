"""Agent registry: name -> (factory(params, env, rng), parameter dataclass)."""
from rvfx.agents.tabular import exploration
from rvfx.agents.cartpole_reference import CartpoleReferenceParams, make_reference
from rvfx.agents.neural.ensemble import DQNParams, EnsembleParams, make_ensemble_agent
from rvfx.agents.tabular.psrl import PSRL, PSRLParams
from rvfx.agents.linear.rlsvi import LinearRLSVI, LinearRLSVIParams
from rvfx.agents.tabular.rlsvi import RLSVIParams, TabularRLSVI
from rvfx.agents.tabular.ucrl2 import UCRL2, UCRL2Params

AGENTS = {
    "lsvi": (lambda p, env, rng: TabularRLSVI(env.shape, rng, p, "none"), RLSVIParams),
    "grlsvi": (lambda p, env, rng: TabularRLSVI(env.shape, rng, p, "gaussian"), RLSVIParams),
    "brlsvi": (lambda p, env, rng: TabularRLSVI(env.shape, rng, p, "bootstrap"), RLSVIParams),
    "psrl": (lambda p, env, rng: PSRL(env.shape, rng, p), PSRLParams),
    "ucrl2": (lambda p, env, rng: UCRL2(env.shape, rng, p), UCRL2Params),
    "deepsea_optimal": (exploration.make_optimal, exploration.DeepSeaKnownParams),
    "deepsea_exploitation": (exploration.make_pure_exploitation, exploration.DeepSeaKnownParams),
    "deepsea_myopic": (exploration.make_myopic, exploration.MyopicParams),
    "deepsea_thompson": (exploration.make_thompson, exploration.DeepSeaKnownParams),
    "ensemble_rlsvi": (make_ensemble_agent, EnsembleParams),
    "dqn": (make_ensemble_agent, DQNParams),
    "cartpole_reference": (make_reference, CartpoleReferenceParams),
    "linear_lsvi": (lambda p, env, rng: LinearRLSVI(env, rng, p, "none"), LinearRLSVIParams),
    "linear_grlsvi": (lambda p, env, rng: LinearRLSVI(env, rng, p, "gaussian"), LinearRLSVIParams),
    "linear_brlsvi": (lambda p, env, rng: LinearRLSVI(env, rng, p, "bootstrap"), LinearRLSVIParams),
}


def make_agent(name: str, params, env, rng):
    factory, _ = AGENTS[name]
    return factory(params, env, rng)

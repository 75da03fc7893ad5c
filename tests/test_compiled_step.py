"""The SGD step compiled whole (rvfx.agents.neural.compiled_step) gives `td_step`'s bytes on dense inputs."""
import hashlib

import numpy as np
import pytest

from rvfx.agents.neural import compiled_step, fused
from rvfx.agents.neural.ensemble import DQNParams, EnsembleParams, make_ensemble_agent
from rvfx.core.live import live
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp, CartpoleSwingUpParams
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams

numba_only = pytest.mark.skipif(not fused.available(), reason="numba is not installed")


@pytest.fixture
def switch():
    """Set `compiled_step.enabled` (and the numba kernels) for a run; restored after."""
    was, backend = compiled_step.enabled, fused.backend
    fused.use("numba")

    def set_to(on: bool):
        compiled_step.enabled = on
    yield set_to
    compiled_step.enabled = was
    if backend is not None:
        fused.use(backend)


def run(params, episodes: int):
    """(state hash, generator state, logged rows, SGD steps, compiled?) of an agent after `episodes` on cartpole."""
    env = CartpoleSwingUp(CartpoleSwingUpParams(), np.random.default_rng(2))
    agent = make_ensemble_agent(params, env, np.random.default_rng(3))
    log = live(agent, env, episodes, log_every="all")
    e, h = agent.ensemble, hashlib.sha256()
    for x in [e.flat, e.target_flat, *getattr(e.opt, "m", []), *getattr(e.opt, "v", [])]:
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest(), str(agent.rng.bit_generator.state), str(log), agent.sgd_steps, compiled_step.applies(agent)


@numba_only
@pytest.mark.parametrize("params", [
    EnsembleParams(K=20, min_replay=500),
    EnsembleParams(K=5, hidden1=16, hidden2=16, mask="gaussian", td_target="double"),
    DQNParams(epsilon_anneal_episodes=2),
    EnsembleParams(K=4, hidden2=0, batch_size=100),
    EnsembleParams(K=4, hidden1=0, hidden2=0),
    EnsembleParams(K=3, prior_scale=0.0, mask="none", init="haiku_default", acting_weights="live", target_period=1),
    EnsembleParams(K=3, optimizer="sgd", learning_rate=1e-2),
], ids=["K20", "gaussian-double", "dqn", "one-layer", "linear", "no-prior-haiku-live", "sgd"])
def test_the_compiled_step_gives_td_steps_bytes(switch, params):
    """Whole runs with acting between the steps: weights, target, Adam's moments, the generator's state
    (the minibatch draw is the buffer's own) and every logged return equal, with the compiled step in use."""
    switch(False)
    reference = run(params, 3)
    switch(True)
    compiled = run(params, 3)
    assert compiled[4] and not reference[4]
    assert reference[3] > 1000
    assert compiled[:4] == reference[:4]


@numba_only
def test_the_compiled_step_is_not_used_where_it_does_not_apply(switch):
    """Keyed inputs (deep sea's pixels), a dimension of 1 (NumPy's matmul leaves gemm) and the NumPy passes
    keep `td_step`."""
    switch(True)
    env = DeepSea(DeepSeaParams(size=6), np.random.default_rng(0))
    agent = make_ensemble_agent(EnsembleParams(K=3), env, np.random.default_rng(1))
    assert not compiled_step.applies(agent)
    env = CartpoleSwingUp(CartpoleSwingUpParams(), np.random.default_rng(0))
    agent = make_ensemble_agent(EnsembleParams(K=3), env, np.random.default_rng(1))
    assert compiled_step.applies(agent)
    for params in (EnsembleParams(K=3, hidden1=1), EnsembleParams(K=3, batch_size=1, min_replay=1)):
        assert not compiled_step.applies(make_ensemble_agent(params, env, np.random.default_rng(1)))
    fused.use("numpy")
    assert not compiled_step.applies(agent)

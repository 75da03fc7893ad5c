"""The SGD step compiled whole (rvfx.agents.neural.compiled_step) gives `td_step`'s bytes."""
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


def outcome(agent, log, arrays) -> tuple:
    """(hash of `arrays`, generator state, logged rows, SGD steps) of a run."""
    h = hashlib.sha256()
    for x in arrays:
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest(), str(agent.rng.bit_generator.state), str(log), agent.sgd_steps


def run(params, episodes: int):
    """(state hash, generator state, logged rows, SGD steps, compiled?) of an agent after `episodes` on cartpole."""
    env = CartpoleSwingUp(CartpoleSwingUpParams(), np.random.default_rng(2))
    agent = make_ensemble_agent(params, env, np.random.default_rng(3))
    log = live(agent, env, episodes, log_every="all")
    e = agent.ensemble
    arrays = [e.flat, e.target_flat, *getattr(e.opt, "m", []), *getattr(e.opt, "v", [])]
    return (*outcome(agent, log, arrays), compiled_step.applies(agent))


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


def deep_sea_run(params, size: int, episodes: int):
    """(state hash, generator state, logged rows, SGD steps, steps handed back to `td_step`) on deep sea."""
    env = DeepSea(DeepSeaParams(size=size), np.random.default_rng(1))
    agent = make_ensemble_agent(params, env, np.random.default_rng(3))
    handed_back = []
    td_step = agent._td_step
    agent._td_step = lambda idx=None: handed_back.append(idx is not None) or td_step(idx)
    log = live(agent, env, episodes, log_every="all")
    e = agent.ensemble
    arrays = [e.flat, e.target_flat, e.params[0], e.target_params[0], *e.opt.m, *e.opt.v, e._target_cache,
              e._target_valid, e._dirty]
    return (*outcome(agent, log, arrays), sum(handed_back))


@numba_only
@pytest.mark.parametrize("params, size", [
    (EnsembleParams(K=20), 12),
    (EnsembleParams(K=3, mask="gaussian", prior_scale=0.0, min_replay=32, batch_size=32), 6),
    (EnsembleParams(K=5, mask="none", hidden2=0), 10),
], ids=["K20", "gaussian-no-prior-small", "one-layer"])
def test_the_compiled_step_on_one_hot_inputs_gives_td_steps_bytes(switch, params, size):
    """Deep sea's pixels: weights, target, W_1's rows, Adam's moments, the cached target values, the changed-row
    marks, the generator's state and every return equal; on the small sea some steps (a single fresh state)
    go back to `td_step` on the same draw, and the runs still agree."""
    switch(False)
    reference = deep_sea_run(params, size, 40)
    switch(True)
    compiled = deep_sea_run(params, size, 40)
    assert reference[3] > 200 and reference[4] == 0
    assert compiled[:4] == reference[:4]
    if size == 6:
        assert 0 < compiled[4] < compiled[3] / 2


@numba_only
def test_the_compiled_step_is_not_used_where_it_does_not_apply(switch):
    """The linear basis (block inputs), one-hot inputs with K = 1 or a double-Q target, a dimension of 1
    (NumPy's matmul leaves gemm) and the NumPy passes keep `td_step`."""
    switch(True)
    env = DeepSea(DeepSeaParams(size=6), np.random.default_rng(0))
    assert compiled_step.applies(make_ensemble_agent(EnsembleParams(K=3), env, np.random.default_rng(1)))
    for params in (EnsembleParams(K=3, representation="linear_basis"), DQNParams(),
                   EnsembleParams(K=3, td_target="double")):
        assert not compiled_step.applies(make_ensemble_agent(params, env, np.random.default_rng(1)))
    env = CartpoleSwingUp(CartpoleSwingUpParams(), np.random.default_rng(0))
    agent = make_ensemble_agent(EnsembleParams(K=3), env, np.random.default_rng(1))
    assert compiled_step.applies(agent)
    for params in (EnsembleParams(K=3, hidden1=1), EnsembleParams(K=3, batch_size=1, min_replay=1)):
        assert not compiled_step.applies(make_ensemble_agent(params, env, np.random.default_rng(1)))
    fused.use("numpy")
    assert not compiled_step.applies(agent)

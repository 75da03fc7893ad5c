"""numba's kernels give NumPy's bytes over whole runs: the passes (cartpole's dense inputs, every kind of
network and target) and the SGD step on one-hot inputs compiled whole (rvfx.agents.neural.compiled_step)."""
import hashlib

import numpy as np
import pytest

from rvfx.agents.neural import backend, compiled_step, fused
from rvfx.agents.neural.ensemble import DQNParams, EnsembleParams, make_ensemble_agent
from rvfx.core.live import live
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp, CartpoleSwingUpParams
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams

numba_only = pytest.mark.skipif(not fused.available(), reason="numba is not installed")


def numba_kernels(whole_step: bool = True):
    from rvfx.agents.neural.kernels import Numba
    return Numba(whole_step)


def outcome(agent, log, arrays) -> tuple:
    """(hash of `arrays`, generator state, logged rows, SGD steps) of a run."""
    h = hashlib.sha256()
    for x in arrays:
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest(), str(agent.rng.bit_generator.state), str(log), agent.sgd_steps


def run(params, episodes: int, kernels):
    """(state hash, generator state, logged rows, SGD steps) of an agent after `episodes` on cartpole."""
    env = CartpoleSwingUp(CartpoleSwingUpParams(), np.random.default_rng(2))
    agent = make_ensemble_agent(params, env, np.random.default_rng(3), kernels)
    log = live(agent, env, episodes, log_every="all")
    e = agent.ensemble
    return outcome(agent, log, [e.flat, e.target_flat, *getattr(e.opt, "m", []), *getattr(e.opt, "v", [])])


@numba_only
@pytest.mark.parametrize("params", [
    EnsembleParams(K=20, min_replay=500),
    EnsembleParams(K=5, hidden1=16, hidden2=16, mask="gaussian", td_target="double"),
    DQNParams(epsilon_anneal_episodes=2),
    EnsembleParams(K=4, hidden2=0, batch_size=100),
    EnsembleParams(K=4, hidden1=0, hidden2=0),
    EnsembleParams(K=3, prior_scale=0.0, mask="none", init="haiku_default", acting_weights="live", target_period=1),
    EnsembleParams(K=3, optimizer="sgd", learning_rate=1e-2),
    EnsembleParams(K=3, hidden1=1, hidden2=4),
], ids=["K20", "gaussian-double", "dqn", "one-layer", "linear", "no-prior-haiku-live", "sgd", "width-1"])
def test_numbas_passes_give_numpys_bytes_over_whole_runs(params):
    """Whole runs with acting between the steps: weights, target, Adam's moments, the generator's state
    (the minibatch draw is the buffer's own) and every logged return equal."""
    reference = run(params, 3, backend.Numpy())
    assert reference[3] > 1000
    assert run(params, 3, numba_kernels()) == reference


def deep_sea_run(params, size: int, episodes: int, kernels):
    """(state hash, generator state, logged rows, SGD steps, steps through `td_step`) on deep sea."""
    env = DeepSea(DeepSeaParams(size=size), np.random.default_rng(1))
    agent = make_ensemble_agent(params, env, np.random.default_rng(3), kernels)
    through_td_step = []
    td_step = agent._td_step
    agent._td_step = lambda idx: through_td_step.append(1) or td_step(idx)
    log = live(agent, env, episodes, log_every="all")
    e = agent.ensemble
    arrays = [e.flat, e.target_flat, e.params[0], e.target_params[0], *e.opt.m, *e.opt.v, e.target_cache,
              e.target_valid, e.changed_rows]
    return (*outcome(agent, log, arrays), len(through_td_step))


@numba_only
@pytest.mark.parametrize("params, size", [
    (EnsembleParams(K=20), 12),
    (EnsembleParams(K=3, mask="gaussian", prior_scale=0.0, min_replay=32, batch_size=32), 6),
    (EnsembleParams(K=5, mask="none", hidden2=0), 10),
], ids=["K20", "gaussian-no-prior-small", "one-layer"])
def test_the_compiled_step_on_one_hot_inputs_gives_td_steps_bytes(params, size):
    """Deep sea's pixels: weights, target, W_1's rows, Adam's moments, the cached target values, the changed-row
    marks, the generator's state and every return equal with NumPy's passes, numba's, and numba's with the
    step compiled whole; on the small sea some draws (a single fresh state) go to `td_step`, and the runs
    still agree."""
    reference = deep_sea_run(params, size, 40, backend.Numpy())
    passes = deep_sea_run(params, size, 40, numba_kernels(whole_step=False))
    whole = deep_sea_run(params, size, 40, numba_kernels())
    assert reference[3] > 200 and reference[4] == passes[4] == reference[3]
    assert passes[:4] == whole[:4] == reference[:4]
    assert whole[4] < whole[3] / 2 and (size != 6 or whole[4] > 0)      # most steps compiled whole


@numba_only
def test_the_compiled_step_is_used_only_where_it_applies():
    """One-hot inputs with K >= 2, a max target and Adam on numba's kernels with `whole_step`; not the linear
    basis (block inputs), K = 1, a double-Q target, SGD, a dimension of 1, dense inputs or NumPy's passes."""
    env = DeepSea(DeepSeaParams(size=6), np.random.default_rng(0))

    def applies(params, kernels=None):
        return compiled_step.applies(make_ensemble_agent(params, env, np.random.default_rng(1),
                                                         kernels or numba_kernels()))
    assert applies(EnsembleParams(K=3))
    for params in (EnsembleParams(K=3, representation="linear_basis"), DQNParams(),
                   EnsembleParams(K=3, td_target="double"), EnsembleParams(K=3, optimizer="sgd"),
                   EnsembleParams(K=3, hidden1=1), EnsembleParams(K=3, batch_size=1, min_replay=1),
                   EnsembleParams(K=3, hidden1=0, hidden2=0)):
        assert not applies(params)
    assert not applies(EnsembleParams(K=3), backend.Numpy()) and not applies(EnsembleParams(K=3), numba_kernels(False))
    env = CartpoleSwingUp(CartpoleSwingUpParams(), np.random.default_rng(0))
    assert not applies(EnsembleParams(K=3))

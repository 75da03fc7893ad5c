"""The passes of the SGD step: numba's kernels (rvfx.agents.neural.kernels) give NumPy's bytes
(rvfx.agents.neural.fused), pass by pass, over SGD steps and over whole runs."""
import copy
import hashlib

import numpy as np
import pytest

from rvfx.agents.neural import backend, fused
from rvfx.agents.neural.ensemble import DQNParams, EnsembleParams, make_ensemble_agent
from rvfx.core.live import live
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp, CartpoleSwingUpParams
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams

numba_only = pytest.mark.skipif(not fused.available(), reason="numba is not installed")


def hard(rng, shape, dtype=np.float32):
    """Values over 50 decades, with +-0.0, subnormals, infinities and nans sprinkled in."""
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-45, 8, shape)
    x = x.astype(dtype)
    flat = x.reshape(-1)
    for start, value in ((0, 0.0), (3, -0.0), (6, np.inf), (8, -np.inf), (10, np.nan)):
        flat[start::29] = value
    flat[5::13] = (rng.standard_normal(flat[5::13].shape) * np.finfo(dtype).smallest_normal * 0.3).astype(dtype)
    return x


PASSES = ("bias_relu", "relu", "relu_grad_sum", "adam", "adam_rows", "bootstrap", "td", "distinct", "copy_rows")


def numba_kernels():
    from rvfx.agents.neural.kernels import Numba
    return Numba()


@pytest.fixture
def kernels():
    """The passes of NumPy's kernels and of numba's, by name, as an agent calls them."""
    ref, fast = backend.Numpy(), numba_kernels()
    return {k: getattr(ref, k) for k in PASSES}, {k: getattr(fast, k) for k in PASSES}


def same(a, b):
    """Equal bytes, but for the sign and payload of nans: a nan is a nan (LLVM, like C, leaves which
    operand's nan an addition returns unspecified; a step that makes one has diverged and stops)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    nan = np.isnan(a)
    if a.dtype.kind != "f" or not nan.any():
        return a.tobytes() == b.tobytes()
    return bool((nan == np.isnan(b)).all()) and a[~nan].tobytes() == b[~nan].tobytes()


@numba_only
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning", "ignore:overflow:RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (7, 50), (128, 1000), (300, 13)])
def test_relu_passes_give_numpys_bytes(kernels, dtype, shape):
    ref, fast = kernels
    rng = np.random.default_rng(shape[0] * 1000 + shape[1])
    z, b, d = hard(rng, shape, dtype), hard(rng, shape[1:], dtype), hard(rng, shape, dtype)
    z1, z2, z3 = z.copy(), z.copy(), z.copy()
    m1, m2 = np.empty(shape, dtype), np.empty(shape, np.bool_)
    ref["bias_relu"](z1, b, m1)
    fast["bias_relu"](z2, b, m2)
    fast["relu"](z3, b)
    assert same(z1, z2) and same(z1, z3) and same(m1, m2.astype(dtype))
    d1, d2 = d.copy(), d.copy()
    o1, o2 = np.empty(shape[1], dtype), np.empty(shape[1], dtype)
    ref["relu_grad_sum"](d1, m1, o1)
    fast["relu_grad_sum"](d2, m2, o2)
    assert same(d1, d2) and same(o1, o2)


@numba_only
def test_the_bias_gradient_sum_is_numpys_order_not_pairwise(kernels):
    """Rows whose sum depends on the order: the kernel's sum is NumPy's (rows in order), which
    pairwise summation is not; and a dead unit's -0.0s sum to NumPy's 0.0 (its sum starts from 0.0)."""
    ref, fast = kernels
    rng = np.random.default_rng(0)
    d = (rng.standard_normal((128, 64)) * 10.0 ** rng.integers(-8, 8, (128, 64))).astype(np.float32)
    mask = np.ones(d.shape, np.float32)
    o1, o2 = np.empty(64, np.float32), np.empty(64, np.float32)
    ref["relu_grad_sum"](d.copy(), mask, o1)
    fast["relu_grad_sum"](d.copy(), mask.astype(bool), o2)
    assert same(o1, o2)
    assert not same(o1, np.add.reduce(np.ascontiguousarray(d.T), axis=1))    # pairwise differs here
    d[:, :3], mask[:, 1:3] = -1.0, 0.0           # units 1, 2 dead: -1 * 0 is -0.0 in every row
    ref["relu_grad_sum"](d.copy(), mask, o1)
    fast["relu_grad_sum"](d.copy(), mask.astype(bool), o2)
    assert same(o1, o2) and o1[0] == -128.0 and o1[1:3].tobytes() == np.zeros(2, np.float32).tobytes()


@numba_only
def test_a_single_columns_sum_is_numpys_pairwise_one(kernels):
    """One column (a hidden unit of a one-member network): NumPy's reduction then runs over contiguous
    memory, pairwise, and numba's kernels sum it so too, which rows in order would not."""
    ref, fast = kernels
    rng = np.random.default_rng(2)
    d = (rng.standard_normal((128, 1)) * 10.0 ** rng.integers(-6, 6, (128, 1))).astype(np.float32)
    in_order = np.float32(0.0)
    for x in d[:, 0]:
        in_order = np.float32(in_order + x)
    o1, o2 = np.empty(1, np.float32), np.empty(1, np.float32)
    ref["relu_grad_sum"](d.copy(), np.ones_like(d), o1)
    fast["relu_grad_sum"](d.copy(), np.ones(d.shape, bool), o2)
    assert same(o1, o2) and o1[0] != in_order


@numba_only
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning", "ignore:overflow:RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_kernels_give_numpys_bytes(kernels, dtype):
    ref, fast = kernels
    rng = np.random.default_rng(1)
    t = np.dtype(dtype).type
    c = (np.float64(t(0.9)), t(0.999), np.float64(t(1.7e-3)), t(3.2e-8), 1.0)
    p, g, m = (hard(rng, 5000, dtype) for _ in range(3))
    v = np.abs(hard(rng, 5000, dtype))
    a, b = [x.copy() for x in (p, g, m, v)], [x.copy() for x in (p, g, m, v)]
    ref["adam"](*a, *c)
    fast["adam"](*b, *c)
    for i in (0, 2, 3):                         # p, m, v (g is scratch)
        assert same(a[i], b[i])
    rows = np.sort(rng.choice(50, 17, replace=False))
    P, M = hard(rng, (50, 40), dtype), hard(rng, (50, 40), dtype)
    V, G = np.abs(hard(rng, (50, 40), dtype)), hard(rng, (17, 40), dtype)
    a, b = [x.copy() for x in (P, G, M, V)], [x.copy() for x in (P, G, M, V)]
    ref["adam_rows"](a[0], rows, a[1], a[2], a[3], *c)
    fast["adam_rows"](b[0], rows, b[1], b[2], b[3], *c)
    for i in (0, 2, 3):
        assert same(a[i], b[i])


@numba_only
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning", "ignore:overflow:RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_kernel_on_subnormal_moments(kernels, dtype):
    """numba's Adam skips the quotient of a subnormal m~ (x86's slow path) where its step is below half
    an ulp of p, and redoes it in float64 elsewhere: every weight of p = +-0, subnormal, tiny, normal, inf
    and nan against every subnormal or zero m~ gives NumPy's bits, with both cases present."""
    ref, fast = kernels
    rng = np.random.default_rng(3)
    t, tiny = np.dtype(dtype).type, np.finfo(dtype).smallest_normal
    c = (np.float64(t(0.9)), t(0.999), np.float64(t(1.7e-3)), t(3.2e-8), 1.0)
    moments = np.concatenate([rng.uniform(-1, 1, 40) * tiny, [0.0, -0.0, tiny, -tiny, tiny / 2 ** 20]]).astype(dtype)
    weights = np.array([0.0, -0.0, tiny * 0.3, -tiny, 1e-30, -1e-28, 1e-20, 0.5, -3.0, np.inf, np.nan], dtype)
    m, p = (np.repeat(moments, weights.size), np.tile(weights, moments.size))
    g = np.where(rng.random(m.size) < 0.7, 0.0, rng.uniform(-1, 1, m.size) * tiny).astype(dtype)
    v = np.where(rng.random(m.size) < 0.3, 0.0, 10.0 ** rng.uniform(-12, 2, m.size)).astype(dtype)
    a, b = [x.copy() for x in (p, g, m, v)], [x.copy() for x in (p, g, m, v)]
    ref["adam"](*a, *c)
    fast["adam"](*b, *c)
    for i in (0, 2, 3):
        assert same(a[i], b[i])
    changed = a[0].tobytes() != p.tobytes()
    moved = (a[0] != p) & np.isfinite(p)
    subnormal = (a[2] != 0) & (np.abs(a[2]) < tiny)
    assert changed and (moved & subnormal).any()                # the redone quotients moved some p
    assert (~moved & subnormal & (np.abs(p) > 1e-20)).any()      # and the skipped ones moved none


@numba_only
def test_adam_skips_a_subnormal_moment_only_where_that_is_exact(kernels):
    """The bound at its edge: the largest subnormal m~ (after its update) and v~ = 0, so |q| = tiny / eps, its
    largest, a step of (1 + 2^-10) 2^-10 and eps = 2^-30, so |q| step = (1 + 2^-10 - 2^-23) 2^-106; p = 2^-81,
    half of whose gap below is 2^-106: NumPy moves p to its lower neighbour, and numba's Adam must redo
    that quotient, not skip it. p is 4 / (1 + 2^-10) times tiny / eps * step / eps_p, so a bound with a safety
    factor under 3.99 (below the 4 its argument needs) skips it."""
    ref, fast = kernels
    tiny, step, eps = np.finfo(np.float32).tiny, np.float32((1 + 2 ** -10) * 2 ** -10), np.float32(2 ** -30)
    m_new = np.nextafter(tiny, np.float32(0))                   # the largest subnormal
    c = (np.float64(np.float32(0.9)), np.float32(0.999), np.float64(step), eps, 1.0)
    p = np.array([2.0 ** -81, -2.0 ** -81, 2.0 ** -80, 1.0], np.float32)
    g = np.array([m_new, -m_new, m_new, m_new], np.float32)     # m~ = 0.9 * 0 + g; v~ = 0.999 * 0 + g^2 = 0
    m, v = np.zeros(4, np.float32), np.zeros(4, np.float32)
    a, b = [x.copy() for x in (p, g, m, v)], [x.copy() for x in (p, g, m, v)]
    ref["adam"](*a, *c)
    fast["adam"](*b, *c)
    assert a[2].tobytes() == g.tobytes() and not a[3].any()
    assert list(a[0] != p) == [True, True, False, False]          # at the edge NumPy moves p; above it, not
    assert a[0][0] == np.nextafter(p[0], np.float32(0))
    assert p[0] / (float(tiny) / float(eps) * float(step) / float(np.finfo(np.float32).eps)) > 3.99
    for i in (0, 2, 3):
        assert same(a[i], b[i])


@numba_only
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning", "ignore:overflow:RuntimeWarning")
@pytest.mark.parametrize("K, U, A", [(1, 1, 2), (20, 128, 3), (7, 40, 2)])
def test_td_kernels_give_numpys_bytes(kernels, K, U, A):
    """Bootstrap values (max and double-Q argmax over hard values: ties of signed zeros, nans, infinities),
    then TD errors, weighted errors and dL/dQ, with shared or per-member rewards, with or without
    weights and repeated states, on (K, U, A) views of (U, K, A) memory as the step hands them in."""
    ref, fast = kernels
    rng = np.random.default_rng(K * 100 + U)
    view = lambda shape: hard(rng, (shape[1], shape[0], *shape[2:])).transpose(1, 0, 2)  # noqa: E731
    q_next, online, q = view((K, U, A)), view((K, U, A)), view((K, U, A))
    q_next[:, ::5, :] = 0.0
    q_next[:, ::5, 0] = -0.0                                  # max of -0.0 and 0.0 in either order
    online[:, ::7, :] = 1.0                                   # argmax ties: the first
    B = U
    action = rng.integers(0, A, B)
    discount = np.where(rng.random(B) < 0.2, 0.0, 0.99).astype(np.float32)
    for online_next in (None, online):
        v1, v2 = np.empty((K, U), np.float32), np.empty((K, U), np.float32)
        ref["bootstrap"](q_next, online_next, v1)
        fast["bootstrap"](q_next, online_next, v2)
        assert same(v1, v2)
    for reward in (hard(rng, (1, B)), hard(rng, (K, B))):
        for weight in (None, rng.random((B, K)).T < 0.5):
            for rows in (None, rng.integers(0, U, B)):
                out = []
                for kernel in (ref["td"], fast["td"]):
                    delta, g = np.empty((K, B), np.float32), np.empty((K, B), np.float32)
                    dout = None if rows is not None else np.full((B, K, A), 7.0, np.float32).transpose(1, 0, 2)
                    kernel(q, v1, action, reward, discount, weight, rows, rows, np.float32(1 / B), delta, g, dout)
                    out.append([delta, g] + ([] if dout is None else [dout]))
                assert all(same(x, y) for x, y in zip(*out))


@numba_only
def test_distinct_states_are_numpys_unique(kernels):
    ref, fast = kernels
    rng = np.random.default_rng(5)
    for dtype in (np.int64, np.int32):
        for n in (1, 2, 128, 500):
            codes = rng.integers(0, int(rng.integers(1, 3 * n)), n).astype(dtype)
            for x, y in zip(ref["distinct"](codes), fast["distinct"](codes)):
                assert x.dtype == y.dtype and x.tobytes() == y.tobytes()


def _agents():
    ds = DeepSea(DeepSeaParams(size=8), np.random.default_rng(1))
    cp = CartpoleSwingUp(CartpoleSwingUpParams(), np.random.default_rng(2))
    out = []
    for params, env in ((EnsembleParams(K=4, hidden1=16, hidden2=16), ds),
                        (EnsembleParams(K=3, representation="linear_basis", M=3), ds),
                        (EnsembleParams(K=4, hidden1=16, hidden2=16, mask="gaussian", td_target="double"), cp),
                        (DQNParams(hidden1=16, hidden2=16, epsilon_anneal_episodes=5), cp)):
        agent = make_ensemble_agent(params, env, np.random.default_rng(3))
        live(agent, env, 8, log_every="last")
        out.append(agent)
    return out


@numba_only
def test_sgd_steps_are_byte_identical_with_either_kernels():
    """60 SGD steps from the same replay buffers: weights, targets, Adam's moments and losses equal in bytes."""
    for agent in _agents():
        runs = []
        for kernels in (backend.Numpy(), numba_kernels()):
            a = copy.deepcopy(agent, {id(agent.kernels): kernels})       # the same agent on these kernels
            assert a.net.kernels is kernels and a.ensemble.opt.kernels is kernels
            losses = np.array([a.sgd_step() for _ in range(60)])
            e = a.ensemble
            runs.append([losses, e.flat, e.target_flat, *e.params[:1], *e.target_params[:1], *e.opt.m, *e.opt.v])
        assert all(same(x, y) for x, y in zip(*runs))


def whole_run(params, env, episodes: int, kernels) -> tuple:
    """(hash of the weights, target and Adam's moments, generator state, logged rows, SGD steps) of a run."""
    agent = make_ensemble_agent(params, env, np.random.default_rng(3), kernels)
    log = live(agent, env, episodes, log_every="all")
    e, h = agent.ensemble, hashlib.sha256()
    for x in [e.flat, e.target_flat, *e.params[:1], *e.target_params[:1], *getattr(e.opt, "m", []),
              *getattr(e.opt, "v", [])]:
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest(), str(agent.rng.bit_generator.state), str(log), agent.sgd_steps


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
def test_whole_cartpole_runs_are_byte_identical_with_either_kernels(params):
    """Whole runs with acting between the steps: weights, target, Adam's moments, the generator's state
    (the minibatch draw is the buffer's own) and every logged return equal."""
    def env():
        return CartpoleSwingUp(CartpoleSwingUpParams(), np.random.default_rng(2))
    reference = whole_run(params, env(), 3, backend.Numpy())
    assert reference[3] > 1000
    assert whole_run(params, env(), 3, numba_kernels()) == reference


@numba_only
@pytest.mark.parametrize("params, size", [
    (EnsembleParams(K=20), 12),
    (EnsembleParams(K=3, mask="gaussian", prior_scale=0.0, min_replay=32, batch_size=32), 6),
    (EnsembleParams(K=5, mask="none", hidden2=0), 10),
    (DQNParams(hidden1=1, epsilon_anneal_episodes=10), 6),
], ids=["K20", "gaussian-no-prior-small", "one-layer", "dqn-width-1"])
def test_whole_deep_sea_runs_are_byte_identical_with_either_kernels(params, size):
    """Deep sea's pixels (repeated states sharing their passes, target values cached per state, W_1's rows
    updated and copied by rows): the same, on a sea small enough for single distinct states, and with
    K = 1 and a hidden width of 1 (a bias gradient of one column)."""
    def env():
        return DeepSea(DeepSeaParams(size=size), np.random.default_rng(1))
    reference = whole_run(params, env(), 40, backend.Numpy())
    assert reference[3] > 100
    assert whole_run(params, env(), 40, numba_kernels()) == reference


@numba_only
def test_copy_rows_copies_exactly_those_rows(kernels):
    ref, fast = kernels
    rng = np.random.default_rng(3)
    src, dst = hard(rng, (40, 30)), hard(rng, (40, 30))
    rows = np.sort(rng.choice(40, 11, replace=False))
    a, b = dst.copy(), dst.copy()
    ref["copy_rows"](a, src, rows)
    fast["copy_rows"](b, src, rows)
    assert a.tobytes() == b.tobytes()
    untouched = np.setdiff1d(np.arange(40), rows)
    assert b[rows].tobytes() == src[rows].tobytes() and b[untouched].tobytes() == dst[untouched].tobytes()

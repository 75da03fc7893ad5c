"""The fused passes (rvfx.agents.neural.fused): numba kernels and NumPy passes give the same bytes."""
import copy

import numpy as np
import pytest

from rvfx.agents.neural import fused
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


@pytest.fixture
def kernels():
    """Both sets of kernels, the module rebound as it was after."""
    was = fused.backend
    fused.use("numba")
    compiled = {k: getattr(fused, k) for k in fused.NUMPY}
    yield fused.NUMPY, compiled
    if was is not None:
        fused.use(was)


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
    pairwise summation is not."""
    ref, fast = kernels
    rng = np.random.default_rng(0)
    d = (rng.standard_normal((128, 64)) * 10.0 ** rng.integers(-8, 8, (128, 64))).astype(np.float32)
    mask = np.ones(d.shape, np.float32)
    o1, o2 = np.empty(64, np.float32), np.empty(64, np.float32)
    ref["relu_grad_sum"](d.copy(), mask, o1)
    fast["relu_grad_sum"](d.copy(), mask.astype(bool), o2)
    assert same(o1, o2)
    assert not same(o1, np.add.reduce(np.ascontiguousarray(d.T), axis=1))    # pairwise differs here


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
    """The compiled Adam skips the quotient of a subnormal m~ (x86's slow path) where its step is below half
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
    was = fused.backend
    try:
        for agent in _agents():
            runs = []
            for backend in ("numpy", "numba"):
                fused.use(backend)
                a = copy.deepcopy(agent)
                losses = np.array([a.sgd_step() for _ in range(60)])
                e = a.ensemble
                runs.append([losses, e.flat, e.target_flat, *e.params[:1], *e.target_params[:1], *e.opt.m, *e.opt.v])
            assert all(same(x, y) for x, y in zip(*runs))
    finally:
        if was is not None:
            fused.use(was)


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

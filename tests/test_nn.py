"""The NumPy ensemble MLP (rvfx/agents/neural/: sparse, mlp, optimisers, prior_ensemble): exact gradients,
batched == per-member, optimisers, prior cache."""
import numpy as np
import pytest

from rvfx.agents.neural.fused import WIDE
from rvfx.agents.neural.mlp import EnsembleMLP, Tape
from rvfx.agents.neural.optimisers import SGD, Adam, pack
from rvfx.agents.neural.prior_ensemble import PriorEnsemble
from rvfx.agents.neural.sparse import SparseRows, row_sums


def numeric_grad(loss, p: np.ndarray, eps: float) -> np.ndarray:
    """Central finite differences of loss() with respect to the array p (changed in place, restored)."""
    numeric = np.zeros_like(p)
    for i in np.ndindex(p.shape):
        old = p[i]
        p[i] = old + eps
        up = loss()
        p[i] = old - eps
        down = loss()
        p[i] = old
        numeric[i] = (up - down) / (2 * eps)
    return numeric


def assert_members_equal(params, members):
    """Member k of the batched ensemble `params` has the parameters of the one-member ensemble members[k]."""
    for k, member in enumerate(members):
        for p, pk in zip(EnsembleMLP.member(params, k), member):
            np.testing.assert_allclose(p, pk, rtol=1e-5, atol=1e-6)


def dense_grad(g, shape):
    if isinstance(g, SparseRows):
        out = np.zeros(shape, g.values.dtype)
        out[g.rows] = g.values
        return out
    return g


def make_input(net, rng, B, dtype=np.float64):
    if net.index_input:
        return rng.integers(0, net.sizes[0], B)
    return rng.standard_normal((B, net.sizes[0])).astype(dtype)


@pytest.mark.parametrize("index_input", [True, False])
@pytest.mark.parametrize("hidden", [(7, 5), (6,), ()])
def test_gradient_matches_finite_differences(index_input, hidden):
    """Backprop (incl. the row-gather layer, duplicate indices, ReLU, several members) equals central differences."""
    rng = np.random.default_rng(0)
    K, B, D, A = 3, 9, 6, 2
    net = EnsembleMLP(D, hidden, A, index_input=index_input, dtype=np.float64)
    params = net.init(rng, K)
    for p in params:                       # nonzero biases, so that every parameter matters
        p += 0.1 * rng.standard_normal(p.shape)
    x = np.array([0, 3, 3, 5, 1, 3, 0, 2, 5]) if index_input else make_input(net, rng, B)
    dout = rng.standard_normal((K, B, A))
    tape = Tape()
    net.forward(params, x, tape)
    grads = net.backward(params, tape, dout)

    def loss():
        return float(np.sum(dout * net.forward(params, x)))

    eps = 1e-6
    for p, g in zip(params, grads):
        g = dense_grad(g, p.shape)
        assert g.shape == p.shape
        numeric = numeric_grad(loss, p, eps)
        np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("rows", [
    np.array([4, 1, 4, 4, 0, 9, 1, 7]),        # duplicates, unsorted
    np.array([3, 3, 3, 3, 3]),                 # one index only
    np.array([0, 2, 5, 6]),                    # distinct and sorted: returned as is
])
def test_row_sums_equals_scatter_add(rows):
    rng = np.random.default_rng(1)
    values = rng.standard_normal((rows.size, 3, 4)).astype(np.float32)
    expected = np.zeros((10, 3, 4), np.float32)
    np.add.at(expected, rows, values)          # the slow reference
    got = row_sums(rows, values)
    assert np.array_equal(got.rows, np.unique(rows))
    np.testing.assert_allclose(got.values, expected[got.rows], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("index_input", [True, False])
def test_batched_members_equal_per_member_loop(index_input):
    """K stacked members == K one-member networks run in a Python loop: outputs, gradients, Adam steps."""
    rng = np.random.default_rng(2)
    K, B, D, A = 4, 16, 12, 3
    net = EnsembleMLP(D, (10, 8), A, index_input=index_input)
    params = net.init(rng, K)
    members = [EnsembleMLP.member(params, k) for k in range(K)]
    opt = Adam(params, 1e-2)
    opts = [Adam(m, 1e-2) for m in members]
    tape, tapes = Tape(), [Tape() for _ in range(K)]
    for _ in range(3):
        x = make_input(net, rng, B, np.float32)
        dout = rng.standard_normal((K, B, A)).astype(np.float32)
        out = net.forward(params, x, tape).copy()
        for k in range(K):
            out_k = net.forward(members[k], x, tapes[k])
            np.testing.assert_allclose(out[k], out_k[0], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(net.forward_member(params, k, x), out_k[0], rtol=1e-5, atol=1e-6)
        grads = net.backward(params, tape, dout)
        for k in range(K):
            grads_k = net.backward(members[k], tapes[k], dout[k:k + 1])
            for i, (g, gk) in enumerate(zip(grads, grads_k)):
                member_slice = (slice(None), slice(k, k + 1)) if i == 0 else slice(k, k + 1)
                np.testing.assert_allclose(dense_grad(g, params[i].shape)[member_slice],
                                           dense_grad(gk, members[k][i].shape), rtol=1e-5, atol=1e-6)
            opts[k].step(members[k], grads_k)
        opt.step(params, grads)
    assert_members_equal(params, members)


def test_float32_throughout():
    """No silent float64 upcast in activations, gradients or optimiser state."""
    rng = np.random.default_rng(3)
    net = EnsembleMLP(20, (8, 8), 2, index_input=True)
    ens = PriorEnsemble(net, 5, rng, prior_scale=1.0)
    tape = Tape()
    x = rng.integers(0, 20, 32)
    q = ens.value(x, tape=tape)
    assert q.dtype == np.float32
    grads = net.backward(ens.params, tape, np.ones_like(q))
    assert all((g.values if isinstance(g, SparseRows) else g).dtype == np.float32 for g in grads)
    ens.apply_gradient(tape, np.ones_like(q))
    assert all(p.dtype == np.float32 for p in ens.params + ens.target_params)
    assert all(m.dtype == np.float32 for m in ens.opt.m + ens.opt.v)
    assert ens.prior_table.dtype == np.float32


def adam_reference(p, grads, lr, b1=0.9, b2=0.999, eps=1e-8):
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return p


def test_adam_dense_matches_textbook_and_sparse_is_lazy():
    rng = np.random.default_rng(4)
    p0 = rng.standard_normal((6, 2, 3))
    gs = [rng.standard_normal(p0.shape) for _ in range(5)]
    p = p0.copy()
    opt = Adam([p], 1e-2)
    for g in gs:
        opt.step([p], [g.copy()])
    np.testing.assert_allclose(p, adam_reference(p0, gs, 1e-2), rtol=1e-10, atol=1e-12)

    # every row seen each step: the lazy rule is Adam; a row never seen never moves
    seen = np.array([0, 2, 3, 5])
    p = p0.copy()
    opt = Adam([p], 1e-2)
    for g in gs:
        opt.step([p], [SparseRows(seen, g[seen].copy())])
    ref = adam_reference(p0[seen], [g[seen] for g in gs], 1e-2)
    np.testing.assert_allclose(p[seen], ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(p[[1, 4]], p0[[1, 4]])


def test_adam_float64_products_are_float32s_own_subnormals_included():
    """Adam's products by b1 and step and its quotient, evaluated in float64 and rounded once, are float32's
    own results bit for bit, on operands and results spanning the normal and the subnormal range."""
    rng = np.random.default_rng(7)
    n = 300_000
    def spread(low, high):     # random signs, magnitudes 2^low .. 2^high
        return (rng.choice([-1.0, 1.0], n) * np.exp2(rng.uniform(low, high, n))).astype(np.float32)
    a, b = spread(-149.0, -80.0), spread(-30.0, 30.0)          # a third of a subnormal, as are many a / b
    assert np.count_nonzero(np.abs(a) < np.finfo(np.float32).tiny) > n // 4
    assert np.count_nonzero(np.abs(a / b) < np.finfo(np.float32).tiny) > n // 4
    for c in (0.9, 0.999, 1e-3 * 0.1 * 31.6 / 0.3, float(rng.uniform(1e-6, 1.0))):
        wide = a.copy()
        np.multiply(wide, WIDE(np.float32(c)), out=wide, dtype=WIDE)     # as Adam's products
        np.testing.assert_array_equal(wide.view(np.uint32), (a * np.float32(c)).view(np.uint32))
    quotient = np.empty_like(a)
    np.divide(a, b, out=quotient, dtype=WIDE)
    np.testing.assert_array_equal(quotient.view(np.uint32), np.divide(a, b).view(np.uint32))


def test_sgd_sparse_rows_is_exact():
    rng = np.random.default_rng(5)
    p0 = rng.standard_normal((8, 3))
    rows = np.array([1, 4, 6])
    vals = rng.standard_normal((3, 3))
    p = p0.copy()
    SGD([p], 0.5).step([p], [SparseRows(rows, vals.copy())])
    dense = np.zeros_like(p0)
    dense[rows] = vals
    np.testing.assert_allclose(p, p0 - 0.5 * dense)


def test_pack_gives_views_into_one_buffer():
    arrays = [np.arange(6.0).reshape(2, 3), np.ones(4)]
    flat, views = pack(arrays)
    assert flat.size == 10 and all(np.shares_memory(flat, v) for v in views)
    flat += 1
    np.testing.assert_array_equal(views[0], arrays[0] + 1)


def train_and_check_caches(ens, net, x, K, steps):
    """A few SGD steps; after each, target values (cached per input where possible) equal a fresh
    pass with theta^-, a sync copies theta into theta^-, and each member's value is its slice."""
    tape = Tape()
    for step in range(steps):
        q = ens.value(x, tape=tape)
        ens.apply_gradient(tape, np.ones_like(q))
        fresh = net.forward(ens.target_params, x) + ens.prior(x)
        np.testing.assert_allclose(ens.value(x, target=True), fresh, rtol=1e-6, atol=1e-6)
        if step % 2 == 1:
            ens.sync_target()
            for t, p in zip(ens.target_params, ens.params):
                np.testing.assert_array_equal(t, p)
    for k in range(K):
        np.testing.assert_allclose(ens.member_value(k, x), ens.value(x)[k], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("index_input", [True, False])
def test_prior_is_fixed_and_cached_exactly(index_input):
    """Q = f + beta f(theta0): the cached prior table is exact, theta0 never trains, target cache is exact."""
    rng = np.random.default_rng(6)
    D, K, beta = 10, 4, 3.0
    net = EnsembleMLP(D, (6, 6), 2, index_input=index_input)
    ens = PriorEnsemble(net, K, rng, prior_scale=beta, learning_rate=0.05)
    prior0 = [p.copy() for p in ens.prior_params]
    x = make_input(net, rng, 12, np.float32)
    np.testing.assert_allclose(ens.prior(x), beta * net.forward(ens.prior_params, x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ens.value(x), net.forward(ens.params, x) + ens.prior(x), rtol=1e-6)
    train_and_check_caches(ens, net, x, K, steps=6)
    for p, p0 in zip(ens.prior_params, prior0):
        np.testing.assert_array_equal(p, p0)


def test_glorot_uniform_limits():
    rng = np.random.default_rng(7)
    net = EnsembleMLP(300, (50,), 2)
    w1, b1, w2, _ = net.init(rng, 3)
    limit = np.sqrt(6 / 350)
    assert w1.shape == (300, 3, 50) and b1.shape == (3, 50) and w2.shape == (3, 50, 2)
    assert np.abs(w1).max() <= limit and np.abs(w1).max() > 0.95 * limit
    assert np.all(b1 == 0)
    # uniform on [-L, L] has variance L^2 / 3
    assert abs(w1.var() / (limit ** 2 / 3) - 1) < 0.05


def init_moments(scheme: str, fan_in: int, fan_out: int):
    """(s.d., bound, 4th moment / variance^2) of one weight of a (fan_in, fan_out) layer under `scheme`."""
    from scipy import stats
    if scheme == "glorot_uniform":
        limit = np.sqrt(6 / (fan_in + fan_out))
        return limit / np.sqrt(3), limit, 9 / 5                       # uniform: E w^4 = L^4 / 5
    z = stats.truncnorm(-2, 2)                                        # haiku.Linear: TruncatedNormal(1/sqrt(fan_in))
    return z.std() / np.sqrt(fan_in), 2 / np.sqrt(fan_in), float(z.stats(moments="k")) + 3


@pytest.mark.parametrize("scheme", ["glorot_uniform", "haiku_default"])
def test_initialisation_moments_bound_and_zero_biases(scheme):
    """Every layer of the trained and the prior network: mean 0 and variance within 4 standard errors
    (se of the mean sigma / sqrt(n), of the variance sigma^2 sqrt((kurtosis - 1) / n)), |w| within the
    bound and reaching its last 1% (for n >= 16,000 the chance of no draw there is below e^-35), biases
    zero. Haiku's s.d. is 0.880 / sqrt(fan_in): its TruncatedNormal is not rescaled."""
    from rvfx.agents.neural.ensemble import EnsembleParams, EnsembleRLSVI
    from rvfx.agents.neural.representations import DenseVector
    agent = EnsembleRLSVI(EnsembleParams(K=40, init=scheme, prior_scale=5.0), DenseVector(8), 3,
                          np.random.default_rng(11))
    for params in (agent.ensemble.params, agent.ensemble.prior_params):
        for l, (fan_in, fan_out) in enumerate([(8, 50), (50, 50), (50, 3)]):
            w = params[2 * l].astype(np.float64).ravel()
            sd, bound, kurtosis = init_moments(scheme, fan_in, fan_out)
            n = w.size
            assert abs(w.mean()) < 4 * sd / np.sqrt(n), (l, w.mean())
            assert abs(w.var() / sd ** 2 - 1) < 4 * np.sqrt((kurtosis - 1) / n), (l, w.var() / sd ** 2)
            assert np.abs(w).max() <= bound * (1 + 1e-6)
            if n >= 16_000:
                assert np.abs(w).max() > 0.99 * bound
            assert not params[2 * l + 1].any()


def test_glorot_default_draws_the_stream_it_always_drew():
    """The default init is the paper's Glorot-uniform drawn exactly as before the option existed: one
    rng.uniform(-L, L, (K, fan_in, fan_out)) per layer, trained network first, then the prior."""
    rng, ref = np.random.default_rng(3), np.random.default_rng(3)
    ens = PriorEnsemble(EnsembleMLP(6, (5, 4), 2), 3, rng, prior_scale=1.0)
    for params in (ens.params, ens.prior_params):
        for l, (fan_in, fan_out) in enumerate([(6, 5), (5, 4), (4, 2)]):
            limit = np.sqrt(6.0 / (fan_in + fan_out))
            w = ref.uniform(-limit, limit, (3, fan_in, fan_out)).astype(np.float32)
            np.testing.assert_array_equal(params[2 * l], w.transpose(1, 0, 2) if l == 0 else w)
    with pytest.raises(ValueError, match="unknown init"):
        EnsembleMLP(6, (5,), 2, init="he_normal")


# ------------------------------------------------------------------ block inputs (the deep sea linear basis)

def block_input(rng, B, n_blocks, width, dtype=np.float64, keys=False):
    from rvfx.agents.neural.sparse import BlockInput
    block = rng.integers(0, n_blocks, B)
    values = rng.standard_normal((B, width)).astype(dtype)
    return BlockInput(block, values, np.arange(B) if keys else None)


@pytest.mark.parametrize("hidden", [(7, 5), (6,), ()])
def test_block_input_gradient_matches_finite_differences(hidden):
    """x_b nonzero on one block of `width` rows: the gather-and-weighted-sum layer and its SparseRows gradient
    (unsorted blocks, repeated blocks, ReLU, several members) equal central differences of the dense loss."""
    from rvfx.agents.neural.sparse import BlockInput
    rng = np.random.default_rng(10)
    K, n_blocks, width, A = 3, 4, 3, 2
    net = EnsembleMLP(n_blocks * width, hidden, A, dtype=np.float64, block_size=width)
    params = net.init(rng, K)
    for p in params:
        p += 0.1 * rng.standard_normal(p.shape)
    x = BlockInput(np.array([2, 0, 2, 3, 0, 2, 1]), rng.standard_normal((7, width)))
    dout = rng.standard_normal((K, 7, A))
    tape = Tape()
    net.forward(params, x, tape)
    grads = net.backward(params, tape, dout)
    assert isinstance(grads[0], SparseRows)
    # the gradient rows are whole blocks, in runs of consecutive rows
    assert np.array_equal(grads[0].rows, np.arange(n_blocks * width))
    assert grads[0].runs == [(0, n_blocks * width)]

    def loss():
        return float(np.sum(dout * net.forward(params, x)))

    eps = 1e-6
    for p, g in zip(params, grads):
        g = dense_grad(g, p.shape)
        numeric = numeric_grad(loss, p, eps)
        np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-7)


def test_block_input_equals_the_dense_product():
    """forward, forward_member and the gradient of a BlockInput == the same net on x.dense() (a dense input)."""
    rng = np.random.default_rng(11)
    K, n_blocks, width, A, B = 4, 6, 5, 2, 20
    block_net = EnsembleMLP(n_blocks * width, (8, 8), A, dtype=np.float64, block_size=width)
    dense_net = EnsembleMLP(n_blocks * width, (8, 8), A, dtype=np.float64)
    params = block_net.init(rng, K)
    x = block_input(rng, B, n_blocks, width)
    x = x._replace(block=np.where(x.block == 3, 4, x.block))          # block 3 unseen; 2 and 4 not adjacent
    xd = x.dense(n_blocks * width)
    np.testing.assert_allclose(block_net.forward(params, x), dense_net.forward(params, xd), rtol=1e-12)
    for k in range(K):
        np.testing.assert_allclose(block_net.forward_member(params, k, x), dense_net.forward(params, xd)[k],
                                   rtol=1e-12)
    dout = rng.standard_normal((K, B, A))
    tb, td = Tape(), Tape()
    block_net.forward(params, x, tb)
    dense_net.forward(params, xd, td)
    gb, gd = block_net.backward(params, tb, dout), dense_net.backward(params, td, dout)
    seen = np.unique(x.block)
    assert np.array_equal(gb[0].rows, (seen[:, None] * width + np.arange(width)).ravel())
    runs = [(int(gb[0].rows[a]), int(gb[0].rows[b - 1]) + 1) for a, b in gb[0].runs]
    assert runs == [(0, 15), (20, 30)]                               # blocks {0,1,2} and {4,5}
    for a, b in zip(gb, gd):
        np.testing.assert_allclose(dense_grad(a, b.shape), b, rtol=1e-10, atol=1e-12)


def test_adam_on_runs_of_rows_equals_the_gathered_update():
    """SparseRows given as runs of consecutive rows (updated on slices) == the same rows gathered."""
    rng = np.random.default_rng(12)
    p0 = rng.standard_normal((12, 2, 3))
    rows = np.array([0, 1, 2, 3, 7, 8, 9])
    p1, p2 = p0.copy(), p0.copy()
    o1, o2 = Adam([p1], 1e-2), Adam([p2], 1e-2)
    for _ in range(4):
        g = rng.standard_normal((7, 2, 3))
        o1.step([p1], [SparseRows(rows, g.copy(), [(0, 4), (4, 7)])])
        o2.step([p2], [SparseRows(rows, g.copy())])
    np.testing.assert_array_equal(p1, p2)
    np.testing.assert_array_equal(o1.m[0], o2.m[0])
    np.testing.assert_array_equal(p1[[4, 5, 6, 10, 11]], p0[[4, 5, 6, 10, 11]])


@pytest.mark.parametrize("hidden", [(10, 8), ()])
def test_block_input_batched_members_equal_per_member_loop(hidden):
    """K stacked members == K one-member networks, for block inputs: outputs, gradients, Adam steps."""
    rng = np.random.default_rng(13)
    K, n_blocks, width, A, B = 4, 5, 4, 3, 16
    net = EnsembleMLP(n_blocks * width, hidden, A, block_size=width)
    params = net.init(rng, K)
    members = [EnsembleMLP.member(params, k) for k in range(K)]
    opt, opts = Adam(params, 1e-2), [Adam(m, 1e-2) for m in members]
    tape, tapes = Tape(), [Tape() for _ in range(K)]
    for _ in range(3):
        x = block_input(rng, B, n_blocks, width, np.float32)
        dout = rng.standard_normal((K, B, A)).astype(np.float32)
        out = net.forward(params, x, tape).copy()
        grads = net.backward(params, tape, dout)
        for k in range(K):
            np.testing.assert_allclose(out[k], net.forward(members[k], x, tapes[k])[0], rtol=1e-5, atol=1e-6)
            opts[k].step(members[k], net.backward(members[k], tapes[k], dout[k:k + 1]))
        opt.step(params, grads)
    assert_members_equal(params, members)


def test_keyed_block_inputs_cache_prior_and_target_exactly():
    """With `key_inputs`, the prior table and the per-key target cache equal fresh evaluations."""
    from rvfx.agents.neural.sparse import BlockInput
    rng = np.random.default_rng(14)
    n_keys, n_blocks, width, K, beta = 9, 3, 4, 3, 2.0
    block_of = np.arange(n_keys) // 3
    table = rng.standard_normal((n_keys, width)).astype(np.float32)
    def inputs(keys):
        return BlockInput(block_of[keys], table[keys], keys)

    net = EnsembleMLP(n_blocks * width, (6, 6), 2, block_size=width)
    ens = PriorEnsemble(net, K, rng, prior_scale=beta, learning_rate=0.05, key_inputs=inputs(np.arange(n_keys)))
    assert ens.prior_table.shape == (n_keys, K, 2)
    x = inputs(np.array([4, 0, 8, 4, 2, 7]))
    np.testing.assert_allclose(ens.prior(x), beta * net.forward(ens.prior_params, x), rtol=1e-6, atol=1e-6)
    train_and_check_caches(ens, net, x, K, steps=5)
    with pytest.raises(ValueError, match="key"):
        ens.value(x._replace(key=None), target=True)

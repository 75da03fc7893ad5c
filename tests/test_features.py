"""Deep-sea feature maps (Sections 7.1.2-7.1.3): Q*, the coherent basis, misspecification."""
import itertools

import numpy as np
import pytest

from rvfx.envs.deep_sea import DeepSea, DeepSeaParams
from rvfx.envs.features import coherent_basis, misspecify, one_hot_basis, optimal_q

N = 6


def make_env(size=N, seed=1, **kw):
    return DeepSea(DeepSeaParams(size=size, **kw), np.random.default_rng(seed))


def brute_force_q(env, h, s, a):
    """Best return after taking a at (h, s), by enumerating every later action sequence."""
    n = env.size

    def rollout(row, col, actions):
        total = 0.0
        for act in actions:
            right = act == env.right_action[row, col]
            total += env.mean_reward(row, col, right)
            col = min(col + 1, n - 1) if right else max(col - 1, 0)
            row += 1
        return total

    return max(rollout(h, s, (a,) + rest) for rest in itertools.product((0, 1), repeat=n - 1 - h))


@pytest.mark.parametrize("treasure", [True, False])
@pytest.mark.parametrize("move_cost", ["diagonal", "every_right"])
def test_optimal_q_matches_brute_force(treasure, move_cost):
    env = make_env(size=5, seed=3, treasure=treasure, move_cost=move_cost)
    q = optimal_q(env)
    expected = np.array([[[brute_force_q(env, h, s, a) for a in (0, 1)] for s in range(5)]
                         for h in range(5)])
    np.testing.assert_allclose(q, expected, atol=1e-12)
    assert q[0, 0].max() == pytest.approx(env.optimal_return)


def test_optimal_q_of_the_other_chest_keeps_the_action_mapping():
    env = make_env(treasure=True)
    bomb_env = DeepSea(DeepSeaParams(size=N, treasure=False), np.random.default_rng(1))
    assert np.array_equal(env.right_action, bomb_env.right_action)
    np.testing.assert_allclose(optimal_q(env, treasure=False), optimal_q(bomb_env), atol=0)
    np.testing.assert_allclose(optimal_q(bomb_env, treasure=True), optimal_q(env), atol=0)
    assert env.chest == 1.0 and env.params.treasure        # the instance itself is untouched


def _rows(phi):
    n, _, _, m = phi.shape
    return phi.reshape(n, 2 * n, m)


@pytest.mark.parametrize("basis", ["random_unit", "orthonormal"])
@pytest.mark.parametrize("M", [2, 3, 7, 2 * N, 2 * N + 5])
def test_coherent_basis_reproduces_q_star_of_treasure_and_bomb(basis, M):
    env = make_env()
    phi = coherent_basis(env, M, np.random.default_rng(0), basis)
    assert phi.shape == (N, N, 2, M)
    rows = _rows(phi)
    for treasure in (True, False):
        q = optimal_q(env, treasure).reshape(N, 2 * N)
        for h in range(N):
            theta = np.linalg.lstsq(rows[h], q[h], rcond=None)[0]
            assert np.abs(rows[h] @ theta - q[h]).max() < 1e-8, (treasure, h)


@pytest.mark.parametrize("basis", ["random_unit", "orthonormal"])
@pytest.mark.parametrize("M", [1, 4, 2 * N, 2 * N + 5])
def test_coherent_basis_is_unit_random_and_of_full_rank(basis, M):
    env = make_env()
    rows = _rows(coherent_basis(env, M, np.random.default_rng(0), basis))
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-12)  # unit features
    for h in range(N):
        assert np.linalg.matrix_rank(rows[h]) == min(M, 2 * N)
        if basis == "orthonormal":
            k = min(M, 2 * N)
            np.testing.assert_allclose(rows[h][:, :k].T @ rows[h][:, :k], np.eye(k), atol=1e-12)
    other = _rows(coherent_basis(env, M, np.random.default_rng(1), basis))
    assert not np.allclose(rows, other)                         # drawn from the rng


def test_single_feature_lies_in_the_span_of_both_q_stars():
    env = make_env()
    rows = _rows(coherent_basis(env, 1, np.random.default_rng(0)))
    q = np.stack([optimal_q(env, True), optimal_q(env, False)], -1).reshape(N, 2 * N, 2)
    for h in range(N):
        coef = np.linalg.lstsq(q[h], rows[h][:, 0], rcond=None)[0]
        assert np.abs(q[h] @ coef - rows[h][:, 0]).max() < 1e-10


def test_features_of_a_row_are_its_own():
    """phi[h] describes row h only: the D = N*M features are block-diagonal by construction."""
    phi = coherent_basis(make_env(), 5, np.random.default_rng(0))
    assert phi.shape[:3] == (N, N, 2)
    assert np.all(np.abs(phi).sum(axis=(1, 2)) > 0)             # every feature is used on its row


def test_one_hot_basis_is_the_tabular_representation():
    phi = one_hot_basis(make_env())
    assert phi.shape == (N, N, 2, 2 * N)
    for h, s, a in itertools.product(range(N), range(N), range(2)):
        assert phi[h, s, a].nonzero()[0].tolist() == [2 * s + a]
        assert phi[h, s, a, 2 * s + a] == 1.0


def test_misspecified_features_add_gaussian_noise_of_variance_psi():
    env = make_env(size=20)
    phi = coherent_basis(env, 10, np.random.default_rng(0))
    psi = 0.3
    eta = misspecify(phi, psi, np.random.default_rng(5)) - phi
    n = eta.size                                                # 8000 entries
    assert abs(eta.mean()) < 5 * np.sqrt(psi / n)
    assert abs(eta.var() - psi) < 5 * psi * np.sqrt(2 / n)
    np.testing.assert_array_equal(misspecify(phi, 0.0, np.random.default_rng(5)), phi)
    with pytest.raises(ValueError):
        misspecify(phi, -1.0, np.random.default_rng(5))


def test_misspecified_features_no_longer_span_q_star():
    env = make_env(size=10)
    phi = misspecify(coherent_basis(env, 5, np.random.default_rng(0)), 0.1, np.random.default_rng(1))
    rows, q = _rows(phi), optimal_q(env).reshape(10, 20)
    h = 5
    theta = np.linalg.lstsq(rows[h], q[h], rcond=None)[0]
    assert np.abs(rows[h] @ theta - q[h]).max() > 1e-3

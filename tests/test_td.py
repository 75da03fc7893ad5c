"""The pure TD error (rvfx/agents/neural/td.py) against a batch computed by hand."""
import numpy as np

from rvfx.agents.neural.td import bootstrap_values, td_errors

f32 = np.float32
# K = 2 members, B = 3 transitions, A = 2 actions
Q = np.array([[[1, 2], [3, 4], [5, 6]],
              [[0, -1], [2, 2], [-3, 1]]], f32)            # Q_k(s_b, .)
Q_NEXT = np.array([[[1, 0], [0, 2], [4, 4]],
                   [[-1, 1], [3, 0], [0, 0]]], f32)        # Q^-_k(s'_b, .)
ONLINE_NEXT = np.array([[[0, 1], [1, 0], [0, 1]],
                        [[1, 0], [0, 1], [1, 0]]], f32)    # Q_k(s'_b, .): argmax 1, 0, 1 and 0, 1, 0
ACTION = np.array([1, 0, 1])
REWARD = np.array([1, 0, -1], f32)
DISCOUNT = np.array([0.5, 0.5, 0.0], f32)                 # the last transition ends its episode


def test_q_learning_targets_and_errors_by_hand():
    inputs = [a.copy() for a in (Q, ACTION, REWARD, DISCOUNT, Q_NEXT)]
    v = bootstrap_values(Q_NEXT)
    np.testing.assert_array_equal(v, [[1, 2, 4], [1, 3, 0]])                  # max_a' Q^-_k(s'_b, a')
    y, delta = td_errors(Q, ACTION, REWARD, DISCOUNT, v)
    np.testing.assert_array_equal(y, [[1.5, 1, -1], [1.5, 1.5, -1]])          # r + discount * v
    np.testing.assert_array_equal(delta, [[0.5, 2, 7], [-2.5, 0.5, 2]])       # Q_k(s_b, a_b) - y
    assert y.dtype == delta.dtype == f32
    for before, after in zip(inputs, (Q, ACTION, REWARD, DISCOUNT, Q_NEXT)):
        np.testing.assert_array_equal(before, after)                          # inputs only read


def test_double_q_learning_by_hand():
    v = bootstrap_values(Q_NEXT, ONLINE_NEXT)
    np.testing.assert_array_equal(v, [[0, 0, 4], [-1, 0, 0]])                # Q^-_k(s', argmax_a' Q_k(s', a'))
    y, delta = td_errors(Q, ACTION, REWARD, DISCOUNT, v)
    np.testing.assert_array_equal(y, [[1, 0, -1], [0.5, 0, -1]])
    np.testing.assert_array_equal(delta, [[1, 3, 7], [-1.5, 2, 2]])


def test_member_rewards_and_state_indices():
    """Per-member rewards (Gaussian noise) shift each member's targets; states read through index maps
    (repeated states computed once) give the errors of the full batch."""
    noise = np.array([[0.5, 0, 0], [0, 0, -1]], f32)
    y, delta = td_errors(Q, ACTION, REWARD + noise, DISCOUNT, bootstrap_values(Q_NEXT))
    np.testing.assert_array_equal(y, [[2, 1, -1], [1.5, 1.5, -2]])
    np.testing.assert_array_equal(delta, [[0, 2, 7], [-2.5, 0.5, 3]])
    order, rows = [1, 2, 0], np.array([2, 0, 1])                 # Q[:, order][:, rows] == Q
    v = bootstrap_values(Q_NEXT)
    y, delta = td_errors(Q[:, order], ACTION, REWARD, DISCOUNT, v[:, order], rows, rows)
    np.testing.assert_array_equal(y, [[1.5, 1, -1], [1.5, 1.5, -1]])
    np.testing.assert_array_equal(delta, [[0.5, 2, 7], [-2.5, 0.5, 2]])

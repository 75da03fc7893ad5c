"""`ensemble_buffer`: the FIFO replay of transitions shared by the K members, each seeing it through
its own perturbation (Section 5.3.1, Algorithms 6-7).
"""
from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np

Mask = Literal["bootstrap", "gaussian", "none"]


class Batch(NamedTuple):
    """A minibatch of B transitions (s_b, a_b, r_b, s'_b) shared by the members, with each member's perturbation:
    what `sample` draws and what `td_step` reads.

    `state`, `next_state` are the states s and s': as stored (the representation's codes) or, for
    `td_step`, as network inputs. `reward` is (B,), or (K, B) with member k's Gaussian noise added;
    `discount` is gamma, or 0 for a terminal transition; `weight` is (K, B) bootstrap bits m_t^k (bools:
    the weight is 2 m_t^k), or None (all ones); `prior`, `next_prior` (K, U, A) are the stored
    prior-network values of s and s', or None.
    With `index`, `state` holds U distinct states and sample b's is state[index[b]] (likewise
    `next_index`): repeated states then share one pass.
    """
    state: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    discount: np.ndarray
    next_state: np.ndarray
    weight: np.ndarray | None = None
    prior: np.ndarray | None = None
    next_prior: np.ndarray | None = None
    index: np.ndarray | None = None
    next_index: np.ndarray | None = None


class EnsembleBuffer:
    """`ensemble_buffer`: one FIFO ring of compact transitions shared by the K members.

    ensemble_buffer[k] of Algorithms 6-7 is this ring seen through member k's
    perturbation, drawn once when the transition is enqueued and fixed after:
    "bootstrap" keeps a bit m_t^k ~ Unif{0,1} and weighs the transition 2 m_t^k
    (double-or-nothing: a uniform draw weighted so is a draw from
    ensemble_buffer[k], up to scale); "gaussian" keeps z_t^k ~ N(0, noise_scale^2)
    added to r_t. A minibatch is B uniform draws with replacement, shared by
    the members (as in the authors' bootstrapped DQN), each seeing it through
    its own perturbation.
    """

    def __init__(self, capacity: int, num_members: int, code_shape: tuple, code_dtype,
                 rng: np.random.Generator, mask: Mask = "bootstrap", noise_scale: float = 0.0,
                 prior_actions: int = 0):
        self.capacity, self.K, self.rng = capacity, num_members, rng
        self.noise_scale = float(noise_scale)
        self.code = np.zeros((capacity, *code_shape), code_dtype)
        self.next_code = np.zeros((capacity, *code_shape), code_dtype)
        self.action = np.zeros(capacity, np.intp)
        self.reward = np.zeros(capacity, np.float32)
        self.discount = np.zeros(capacity, np.float32)
        self.mask = np.zeros((capacity, num_members), bool) if mask == "bootstrap" else None
        self.noise = np.zeros((capacity, num_members), np.float32) if mask == "gaussian" else None
        # With prior_actions = A, the fixed prior values of s and s' are stored too (dense inputs:
        # one small forward per step at enqueue instead of two minibatch forwards per SGD step).
        shape = (capacity, num_members, prior_actions)
        self.prior = np.zeros(shape, np.float32) if prior_actions else None
        self.next_prior = np.zeros(shape, np.float32) if prior_actions else None
        self.size = 0
        self._next = 0

    def add(self, code, action: int, reward: float, next_code, discount: float,
            prior=None, next_prior=None) -> None:
        """Enqueue (s, a, r, s', discount) with its K perturbations, overwriting the oldest when full."""
        i = self._next
        if self.prior is not None:
            self.prior[i] = prior
            self.next_prior[i] = next_prior
        self.code[i] = code
        self.next_code[i] = next_code
        self.action[i] = action
        self.reward[i] = reward
        self.discount[i] = discount
        if self.mask is not None:
            self.mask[i] = self.rng.random(self.K) < 0.5                       # Algorithm 7
        elif self.noise is not None:
            self.noise[i] = self.noise_scale * self.rng.standard_normal(self.K)  # Algorithm 6
        self._next = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def draw(self, batch_size: int) -> np.ndarray:
        """The indices of B transitions drawn uniformly with replacement (the buffer's random stream)."""
        return self.rng.integers(0, self.size, batch_size)

    def sample(self, batch_size: int, idx: np.ndarray | None = None) -> Batch:
        """B uniform draws with replacement (`draw`), or the transitions `idx` already drawn."""
        idx = self.draw(batch_size) if idx is None else idx
        reward = self.reward[idx]
        weight = None
        if self.mask is not None:
            weight = self.mask[idx].T                                           # m_t^k: weighs 2 m_t^k
        elif self.noise is not None:
            reward = reward + self.noise[idx].T
        priors = (None, None) if self.prior is None else \
            (self.prior[idx].transpose(1, 0, 2), self.next_prior[idx].transpose(1, 0, 2))
        return Batch(self.code[idx], self.action[idx], reward, self.discount[idx],
                     self.next_code[idx], weight, *priors)

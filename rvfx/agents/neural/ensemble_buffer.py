"""`ensemble_buffer`: the FIFO replay of transitions shared by the K members, each seeing it through
its own perturbation (Section 5.3.1, Algorithms 6-7), or (`MemberBuffers`) as K separate double-or-nothing
buffers, each member drawing its own minibatch (Algorithm 7 literally).
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

    @property
    def next_slot(self) -> int:
        """The ring position the next transition goes to (the oldest one's once the ring is full)."""
        return self._next

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


class MemberBuffers(EnsembleBuffer):
    """ensemble_buffer[k] of Algorithm 7 taken literally: member k's buffer holds the transitions of the FIFO
    window whose bit m_t^k ~ Unif{0,1} kept it (each transition in each member's buffer with probability
    1/2, independently; the bits are `EnsembleBuffer`'s, drawn at enqueue), and member k draws its own
    minibatch, B uniform draws with replacement from its own buffer (`draw_members`), instead of one shared
    minibatch weighted 2 m_t^k. The window is the last `capacity` transitions of the stream, as the paper's
    "ensemble_buffer that stores the most recent 10^5 transitions".
    """

    def __init__(self, capacity: int, num_members: int, code_shape: tuple, code_dtype,
                 rng: np.random.Generator, prior_actions: int = 0):
        super().__init__(capacity, num_members, code_shape, code_dtype, rng, "bootstrap", 0.0, prior_actions)
        self.held = np.zeros(num_members, np.int64)        # how many transitions each member's buffer holds

    def add(self, code, action: int, reward: float, next_code, discount: float,
            prior=None, next_prior=None) -> None:
        """`EnsembleBuffer.add`, counting what each member's buffer holds (the overwritten transition leaves)."""
        i = self._next
        if self.size == self.capacity:
            self.held -= self.mask[i]
        super().add(code, action, reward, next_code, discount, prior, next_prior)
        self.held += self.mask[i]

    def holds(self, k: int) -> np.ndarray:
        """The ring positions member k's buffer holds."""
        return np.flatnonzero(self.mask[:self.size, k])

    def draw_members(self, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        """(idx, ready): idx (K, B) the ring positions of each member's B draws, uniform with replacement over
        its own buffer (rejection from uniform draws over the window, exact: each accepted draw is uniform on
        the member's buffer); ready (K,) False for a member whose buffer is still empty (its row is 0s)."""
        K, B = self.K, batch_size
        idx = np.zeros((K, B), np.intp)
        filled = np.zeros(K, np.intp)
        ready = self.held > 0
        todo = np.flatnonzero(ready)
        while todo.size:
            cand = self.rng.integers(0, self.size, (todo.size, 2 * B))
            keep = self.mask[cand, todo[:, None]]
            rank = np.cumsum(keep, axis=1)
            keep &= rank <= (B - filled[todo])[:, None]
            rows, cols = np.nonzero(keep)
            idx[todo[rows], filled[todo][rows] + rank[rows, cols] - 1] = cand[rows, cols]
            filled[todo] += keep.sum(axis=1)
            todo = todo[filled[todo] < B]
        return idx, ready

    def sample_members(self, batch_size: int) -> Batch:
        """Each member's own minibatch (`draw_members`): states (K, B, ...), actions, rewards and discounts (K, B),
        priors (K, B, A); `weight` None, or (K, B) bools False on the rows of a member whose buffer is empty."""
        idx, ready = self.draw_members(batch_size)
        members = np.arange(self.K)[:, None]
        priors = (None, None) if self.prior is None else (self.prior[idx, members], self.next_prior[idx, members])
        weight = None if ready.all() else np.repeat(ready[:, None], batch_size, axis=1)
        return Batch(self.code[idx], self.action[idx], self.reward[idx], self.discount[idx], self.next_code[idx],
                     weight, *priors)

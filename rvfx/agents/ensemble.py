"""Ensemble RLSVI with neural networks: `learn_ensemble_rlsvi` (Algorithm 8, Section 7.2).

K value networks Q_k = f(theta_k) + beta f(theta0_k) (randomized prior, Section 7.2.1)
train in parallel by SGD on the discounted TD loss (eq. 5.7, Algorithm 5) with a
target network, each on its own perturbation of a shared FIFO `ensemble_buffer`
(Section 5.3.1): double-or-nothing bootstrap weights (Algorithm 7) or Gaussian
reward noise (Algorithm 6), drawn once per transition and member. Each episode
acts greedily on one member k ~ Unif(1..K) (Algorithm 8, last line).

The SGD steps run per environment step in `update_buffer` (as in DQN), so the
per-episode cost is O(H) whatever the history; `learn_from_buffer` only samples
the member. With K=1, prior_scale=0, mask="none" and an annealed epsilon this is
DQN (Section 7.2.2, Fig. 16).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np

from rvfx.agents.tabular import greedy_policy
from rvfx.envs.representations import Representation, num_actions, representation_for
from rvfx.nn import EnsembleMLP, PriorEnsemble, Tape

Mask = Literal["bootstrap", "gaussian", "none"]


@dataclass(frozen=True)
class EnsembleParams:
    K: int = field(default=20, metadata={"min": 1, "doc": "ensemble size (paper: 1, 5, 10, 20, 40)"})
    hidden1: int = field(default=50, metadata={"min": 0, "doc": "ReLU units of layer 1 (0: linear Q)"})
    hidden2: int = field(default=50, metadata={"min": 0, "doc": "ReLU units of layer 2 (0: one hidden layer)"})
    prior_scale: float = field(default=1.0, metadata={"min": 0.0, "doc": "beta of Q = f + beta*prior (paper: 1)"})
    buffer_size: int = field(default=100_000, metadata={"min": 1, "doc": "FIFO ensemble_buffer capacity (paper: 1e5)"})
    batch_size: int = field(default=128, metadata={"min": 1, "doc": "minibatch per member per SGD step (paper: 128)"})
    min_replay: int = field(default=128, metadata={"min": 1, "doc": "SGD starts once the buffer holds this many"})
    gamma: float = field(default=0.99, metadata={"min": 0.0, "max": 1.0, "doc": "TD discount (paper: 0.99)"})
    learning_rate: float = field(default=1e-3, metadata={"gt": 0.0, "doc": "alpha (paper: 1e-3)"})
    optimizer: Literal["adam", "sgd"] = field(default="adam", metadata={"doc": "adam | sgd"})
    target_period: int = field(default=4, metadata={"min": 1, "doc": "SGD steps between target-network copies"})
    sgd_steps_per_step: int = field(default=1, metadata={"min": 0, "doc": "SGD steps per environment step"})
    mask: Mask = field(default="bootstrap", metadata={
        "doc": "bootstrap: weights {0,2} w.p. 1/2 (Alg. 7) | gaussian: reward noise (Alg. 6) | none"})
    noise_scale: float = field(default=0.1, metadata={"min": 0.0, "doc": "std of the Gaussian reward noise (Alg. 6)"})
    epsilon: float = field(default=0.0, metadata={"min": 0.0, "max": 1.0, "doc": "epsilon-greedy at episode 1"})
    epsilon_final: float = field(default=0.0, metadata={"min": 0.0, "max": 1.0, "doc": "epsilon after annealing"})
    epsilon_anneal_episodes: int = field(default=0, metadata={
        "min": 0, "doc": "episodes of linear annealing epsilon -> epsilon_final (0: constant epsilon)"})


@dataclass(frozen=True)
class DQNParams(EnsembleParams):
    """DQN (Section 7.2.2): one network, no prior, no perturbation, epsilon annealed 1 -> 0."""
    K: int = field(default=1, metadata={"min": 1, "doc": "ensemble size (DQN: 1)"})
    prior_scale: float = field(default=0.0, metadata={"min": 0.0, "doc": "beta of the prior network (DQN: 0)"})
    mask: Mask = field(default="none", metadata={"doc": "bootstrap | gaussian | none (DQN: none)"})
    epsilon: float = field(default=1.0, metadata={"min": 0.0, "max": 1.0, "doc": "epsilon-greedy at episode 1"})
    epsilon_anneal_episodes: int = field(default=100, metadata={
        "min": 0, "doc": "episodes of linear annealing epsilon -> epsilon_final (0: constant epsilon)"})


class Batch(NamedTuple):
    """Per-member minibatches, leading axes (K, B); `weight` None means all ones."""
    code: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    discount: np.ndarray
    next_code: np.ndarray
    weight: np.ndarray | None


class EnsembleBuffer:
    """`ensemble_buffer`: one FIFO ring of compact transitions shared by the K members.

    ensemble_buffer[k] of Algorithms 6-7 is this ring seen through member k's
    perturbation, drawn once when the transition is enqueued and fixed after:
    "bootstrap" keeps a bit m_t^k ~ Unif{0,1} and weighs the transition 2 m_t^k
    (double-or-nothing: uniform sampling with these weights is sampling from
    ensemble_buffer[k]); "gaussian" keeps z_t^k ~ N(0, noise_scale^2) added to r_t.
    Each member samples its own minibatch, uniformly with replacement.
    """

    def __init__(self, capacity: int, num_members: int, code_shape: tuple, code_dtype,
                 rng: np.random.Generator, mask: Mask = "bootstrap", noise_scale: float = 0.0):
        self.capacity, self.K, self.rng, self.mask_kind = capacity, num_members, rng, mask
        self.noise_scale = float(noise_scale)
        self.code = np.zeros((capacity, *code_shape), code_dtype)
        self.next_code = np.zeros((capacity, *code_shape), code_dtype)
        self.action = np.zeros(capacity, np.int32)
        self.reward = np.zeros(capacity, np.float32)
        self.discount = np.zeros(capacity, np.float32)
        self.mask = np.zeros((capacity, num_members), bool) if mask == "bootstrap" else None
        self.noise = np.zeros((capacity, num_members), np.float32) if mask == "gaussian" else None
        self.size = 0
        self._next = 0
        self._members = np.arange(num_members)[:, None]

    def add(self, code, action: int, reward: float, next_code, discount: float) -> None:
        """Enqueue (s, a, r, s', discount), overwriting the oldest when full (Algorithms 6-7)."""
        i = self._next
        self.code[i] = code
        self.next_code[i] = next_code
        self.action[i] = action
        self.reward[i] = reward
        self.discount[i] = discount
        if self.mask is not None:
            self.mask[i] = self.rng.random(self.K) < 0.5
        elif self.noise is not None:
            self.noise[i] = self.noise_scale * self.rng.standard_normal(self.K)
        self._next = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size: int, member: int | None = None) -> Batch:
        """A (K, B) minibatch, member k's row drawn from ensemble_buffer[k] (or one member's (1, B))."""
        rows = 1 if member is not None else self.K
        idx = self.rng.integers(0, self.size, (rows, batch_size))
        cols = self._members if member is None else member
        reward = self.reward[idx]
        weight = None
        if self.mask is not None:
            weight = self.mask[idx, cols].astype(np.float32)
            weight *= 2.0
        elif self.noise is not None:
            reward += self.noise[idx, cols]
        return Batch(self.code[idx], self.action[idx], reward, self.discount[idx],
                     self.next_code[idx], weight)


_FLAT_BASE: dict[tuple, np.ndarray] = {}


def td_step(ensemble: PriorEnsemble, tape: Tape, target_tape: Tape, x: np.ndarray, action: np.ndarray,
            reward: np.ndarray, discount: np.ndarray, x_next: np.ndarray,
            weight: np.ndarray | None) -> float:
    """One SGD step of every member on its discounted TD loss with target net (eq. 5.7, Alg. 8 l.1-4).

    Member k minimises 1/(2B) sum_b w_kb (r + discount * max_a' Q^-_k(s', a') - Q_k(s, a))^2,
    discount = gamma, or 0 for a terminal transition (no bootstrap). Returns the
    mean loss over members (non-finite when the values diverged).
    """
    q = ensemble.value(x, tape=tape)
    q_next = ensemble.value(x_next, target=True, tape=target_tape)
    K, B, A = q.shape
    y = q_next.max(axis=2)
    y *= discount
    y += reward
    base = _FLAT_BASE.get((K, B, A))
    if base is None:
        base = _FLAT_BASE[(K, B, A)] = np.arange(K * B) * A
    flat = base + action.ravel()
    delta = q.reshape(-1)[flat]
    delta -= y.ravel()
    g = delta if weight is None else delta * weight.ravel()
    loss = 0.5 * float(np.dot(g, delta)) / (B * K)
    g *= 1.0 / B
    dout = tape.buf("dout", q.shape, q.dtype)
    dout.fill(0.0)
    dout.reshape(-1)[flat] = g
    ensemble.apply_gradient(tape, dout)
    return loss


class EnsembleRLSVI:
    """`learn_ensemble_rlsvi` agent (Algorithm 8) for the `live` loop (Algorithm 1)."""

    def __init__(self, params: EnsembleParams, representation: Representation, num_actions: int,
                 rng: np.random.Generator):
        if params.hidden1 == 0 and params.hidden2 > 0:
            raise ValueError("hidden2 > 0 needs hidden1 > 0")
        if params.min_replay > params.buffer_size:
            raise ValueError(f"min_replay ({params.min_replay}) exceeds buffer_size ({params.buffer_size})")
        self.params, self.rep, self.num_actions, self.rng = params, representation, num_actions, rng
        self.K = params.K
        hidden = tuple(h for h in (params.hidden1, params.hidden2) if h > 0)
        self.net = EnsembleMLP(representation.input_dim, hidden, num_actions,
                               index_input=representation.index_input)
        self.ensemble = PriorEnsemble(self.net, params.K, rng, params.prior_scale,
                                      params.optimizer, params.learning_rate)
        self.buffer = EnsembleBuffer(params.buffer_size, params.K, representation.code_shape,
                                     representation.code_dtype, rng, params.mask, params.noise_scale)
        self._terminal_code = np.zeros(representation.code_shape, representation.code_dtype)
        self._tape, self._target_tape = Tape(), Tape()
        self.episode = 0
        self.active = 0
        self.sgd_steps = 0
        self.epsilon = params.epsilon

    def learn_from_buffer(self) -> None:
        """Start an episode: sample the member that acts, j ~ Unif(1..K) (Algorithm 8), and epsilon."""
        p = self.params
        self.episode += 1
        self.active = int(self.rng.integers(self.K))
        if p.epsilon_anneal_episodes > 0:
            frac = min(1.0, (self.episode - 1) / p.epsilon_anneal_episodes)
            self.epsilon = p.epsilon + (p.epsilon_final - p.epsilon) * frac
        else:
            self.epsilon = p.epsilon

    def _inputs(self, state) -> np.ndarray:
        code = np.asarray(self.rep.encode(state), dtype=self.rep.code_dtype)
        return self.rep.inputs(code[None])

    def q_values(self, state, member: int | None = None) -> np.ndarray:
        """Q_k(state, .) of the acting member (or `member`), shape (A,)."""
        k = self.active if member is None else member
        return self.ensemble.member_value(k, self._inputs(state))[0]

    def act(self, state) -> int:
        """Greedy in the sampled member's Q (ties at random), epsilon-greedy if epsilon > 0."""
        if self.epsilon > 0.0 and self.rng.random() < self.epsilon:
            return int(self.rng.integers(self.num_actions))
        q = self.q_values(state)
        if not np.isfinite(q).all():
            self._diverged("acting")
        return int(greedy_policy(q, self.rng))

    def update_buffer(self, transition) -> None:
        """Enqueue the transition with its K perturbations, then take the SGD steps."""
        rep = self.rep
        terminal = transition.new_state is None
        self.buffer.add(rep.encode(transition.old_state), transition.action, transition.reward,
                        self._terminal_code if terminal else rep.encode(transition.new_state),
                        0.0 if terminal else self.params.gamma)
        if self.buffer.size >= self.params.min_replay:
            for _ in range(self.params.sgd_steps_per_step):
                self.sgd_step()

    def sgd_step(self) -> float:
        """Algorithm 8 lines 1-4 for all K members at once; copies to the target every target_period."""
        batch = self.buffer.sample(self.params.batch_size)
        loss = td_step(self.ensemble, self._tape, self._target_tape, self.rep.inputs(batch.code),
                       batch.action, batch.reward, batch.discount, self.rep.inputs(batch.next_code),
                       batch.weight)
        if not math.isfinite(loss):
            self._diverged("SGD")
        self.sgd_steps += 1
        if self.sgd_steps % self.params.target_period == 0:
            self.ensemble.sync_target()
        return loss

    def _diverged(self, where: str):
        raise FloatingPointError(
            f"ensemble RLSVI diverged: non-finite values in {where} during episode {self.episode} "
            f"(SGD step {self.sgd_steps}); lower learning_rate or raise target_period")


def make_ensemble_agent(params: EnsembleParams, env, rng: np.random.Generator) -> EnsembleRLSVI:
    """Registry factory: the representation and action count come from the environment."""
    return EnsembleRLSVI(params, representation_for(env), num_actions(env), rng)

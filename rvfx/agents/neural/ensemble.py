"""Ensemble RLSVI with neural networks: `learn_ensemble_rlsvi` (Algorithm 8, Section 7.2).

K value networks Q_k = f(theta_k) + beta f(theta0_k) (randomized prior, Section 7.2.1)
train in parallel by SGD on the discounted TD loss (eq. 5.7, Algorithm 5) with a
target network, each on its own perturbation of a shared FIFO `ensemble_buffer`
(Section 5.3.1): double-or-nothing bootstrap weights (Algorithm 7) or Gaussian
reward noise (Algorithm 6), drawn once per transition and member. Each episode
acts greedily on one member k ~ Unif(1..K) (Algorithm 8, last line).

The SGD steps run per environment step in `update_buffer` (as in DQN), so the
per-episode cost is O(H) whatever the history; `learn_from_buffer` only samples
the member. All members read one shared minibatch per step, each through its own
weights or noise (as the authors' bootstrapped DQN); in expectation member k
still descends the loss on its own ensemble_buffer[k]. With member_buffers each
member draws its own minibatch from its own buffer instead (Algorithm 7 literally). With K=1, prior_scale=0,
mask="none" and an annealed epsilon this is DQN (Section 7.2.2, Fig. 16).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from rvfx.agents.neural import backend, td
from rvfx.agents.neural.diagnostics import EnsembleDiagnostics
from rvfx.agents.neural.ensemble_buffer import Batch, EnsembleBuffer, Mask, MemberBuffers
from rvfx.agents.neural.mlp import EnsembleMLP, Tape
from rvfx.agents.neural.prior_ensemble import PriorEnsemble
from rvfx.agents.neural.representations import FiniteCodes, Representation, RepresentationKind, representation_for
from rvfx.agents.tabular.base import greedy_policy
from rvfx.core.protocols import ProbeStates


@dataclass(frozen=True)
class EnsembleParams:
    K: int = field(default=20, metadata={"min": 1, "doc": "ensemble size (paper: 1, 5, 10, 20, 40)"})
    hidden1: int = field(default=50, metadata={"min": 0, "doc": "ReLU units of layer 1 (0: linear Q)"})
    hidden2: int = field(default=50, metadata={"min": 0, "doc": "ReLU units of layer 2 (0: one hidden layer)"})
    prior_scale: float = field(default=1.0, metadata={"min": 0.0, "doc": "beta of Q = f + beta*prior (paper: 1)"})
    buffer_size: int = field(default=100_000, metadata={"min": 1, "doc": "FIFO ensemble_buffer capacity (paper: 1e5)"})
    batch_size: int = field(default=128, metadata={
        "min": 1, "doc": "minibatch per SGD step, shared by the members (paper: 128)"})
    min_replay: int = field(default=128, metadata={"min": 1, "doc": "SGD starts once the buffer holds this many"})
    gamma: float = field(default=0.99, metadata={"min": 0.0, "max": 1.0, "doc": "TD discount (paper: 0.99)"})
    learning_rate: float = field(default=1e-3, metadata={"gt": 0.0, "doc": "alpha (paper: 1e-3)"})
    optimizer: Literal["adam", "sgd"] = field(default="adam", metadata={"doc": "adam | sgd"})
    target_period: int = field(default=4, metadata={
        "min": 1, "doc": "SGD steps between target-network copies; 1 is exactly no target network: every step "
                         "bootstraps from the weights it starts from (Algorithm 8's loss L(theta; theta~_k, D~_k))"})
    sgd_steps_per_step: int = field(default=1, metadata={"min": 0, "doc": "SGD steps per environment step"})
    sgd_period: int = field(default=1, metadata={
        "min": 1, "added_later": True,
        "doc": "take the sgd_steps_per_step SGD steps every sgd_period-th environment step (paper: 1)"})
    mask: Mask = field(default="bootstrap", metadata={
        "doc": "bootstrap: weights {0,2} w.p. 1/2 (Alg. 7) | gaussian: reward noise (Alg. 6) | none"})
    member_buffers: bool = field(default=False, metadata={
        "added_later": True,
        "doc": "with mask bootstrap: K separate double-or-nothing buffers (Algorithm 7 literally): member k keeps "
               "each transition of the FIFO window with probability 1/2 and draws its own minibatch of "
               "batch_size from what it kept, weight 1 | false: one minibatch shared by the members, weighted "
               "2 m_t^k. Dense inputs only (cartpole's observations)"})
    noise_scale: float = field(default=0.1, metadata={"min": 0.0, "doc": "std of the Gaussian reward noise (Alg. 6)"})
    epsilon: float = field(default=0.0, metadata={"min": 0.0, "max": 1.0, "doc": "epsilon-greedy at episode 1"})
    epsilon_final: float = field(default=0.0, metadata={"min": 0.0, "max": 1.0, "doc": "epsilon after annealing"})
    epsilon_anneal_episodes: int = field(default=0, metadata={
        "min": 0, "doc": "episodes of linear annealing epsilon -> epsilon_final (0: constant epsilon)"})
    acting_weights: Literal["episode", "live"] = field(default="episode", metadata={
        "doc": "episode: act all episode with a copy of the sampled member taken at its start (Algorithm 8 "
               "sets theta~ once per episode, Algorithm 1 acts with it) | live: the weights SGD is changing"})
    td_target: Literal["max", "double"] = field(default="max", metadata={
        "added_later": True,
        "doc": "max: r + gamma max_a' Q^-(s', a') (eq. 5.7) | double: r + gamma Q^-(s', argmax_a' Q(s', a')) "
               "(double Q-learning, against over-estimation)"})
    diagnostics_every: int = field(default=0, metadata={
        "min": 0, "added_later": True,
        "doc": "every this many episodes, write each member's Q on the environment's probe states, its "
               "over-estimation on recent transitions and its greedy-action flip rate to diagnostics.csv "
               "(0: off; draws no random numbers, so it changes no result)"})
    init: Literal["glorot_uniform", "haiku_default"] = field(default="glorot_uniform", metadata={
        "added_later": True,
        "doc": "initial weights of the trained and the prior networks (biases zero): glorot_uniform "
               "U(+-sqrt(6/(fan_in+fan_out))) (the paper) | haiku_default: Haiku's Linear default, "
               "(1/sqrt(fan_in)) x a standard normal truncated to [-2, 2] (bsuite's boot_dqn)"})
    prior_spread: bool = field(default=False, metadata={
        "added_later": True,
        "doc": "write the members' prior spread (s.d. over members of beta f(theta0_k; s, a), mean over "
               "actions) on the environment's probe states to diagnostics.csv at episode 1 (draws no "
               "random numbers, so it changes no result)"})
    representation: RepresentationKind = field(default="observation", metadata={
        "renamed": {"observation": "pixels"},
        "doc": "network input: observation (the environment's own: deep sea's one-hot N x N image, "
               "cartpole's observation vector) | linear_basis (deep sea: the coherent basis of Sec. 7.1.2 "
               "with M features per row, Fig. 15)"})
    M: int = field(default=10, metadata={"min": 1, "doc": "features per row of the linear_basis input (paper: 10)"})
    basis: Literal["random_unit", "orthonormal"] = field(default="random_unit", metadata={
        "doc": "linear_basis: random unit vectors (default) or an orthonormal basis of the subspace"})

    def __post_init__(self):
        """Settings no single bound can refuse; `build` reports them at the spec's key."""
        if self.hidden1 == 0 and self.hidden2 > 0:
            raise ValueError("hidden1=0 (a linear Q) needs hidden2=0")
        if self.member_buffers and self.mask != "bootstrap":
            raise ValueError(f"member_buffers needs mask bootstrap (mask is {self.mask!r})")
        if self.min_replay > self.buffer_size:
            raise ValueError(f"min_replay ({self.min_replay}) exceeds buffer_size ({self.buffer_size})")


@dataclass(frozen=True)
class DQNParams(EnsembleParams):
    """DQN (Section 7.2.2): one network, no prior, no perturbation, epsilon annealed 1 -> 0."""
    K: int = field(default=1, metadata={"min": 1, "doc": "ensemble size (DQN: 1)"})
    prior_scale: float = field(default=0.0, metadata={"min": 0.0, "doc": "beta of the prior network (DQN: 0)"})
    mask: Mask = field(default="none", metadata={"doc": "bootstrap | gaussian | none (DQN: none)"})
    epsilon: float = field(default=1.0, metadata={"min": 0.0, "max": 1.0, "doc": "epsilon-greedy at episode 1"})
    epsilon_anneal_episodes: int = field(default=100, metadata={
        "min": 0, "doc": "episodes of linear annealing epsilon -> epsilon_final (0: constant epsilon)"})
    acting_weights: Literal["episode", "live"] = field(default="live", metadata={
        "added_later": True, "doc": "live: DQN acts with the weights it is training (episode: a per-episode copy)"})


def td_step(ensemble: PriorEnsemble, tape: Tape, batch: Batch, double: bool = False) -> float:
    """One optimiser step of every member on its discounted TD loss with target net (eq. 5.7, Alg. 8 l.1-4).

    Member k minimises 1/(2B) sum_b w_kb (r_kb + discount_b max_a' Q^-_k(s'_b, a') - Q_k(s_b, a_b))^2
    on the `batch` (states as network inputs). With the batch's `index`, repeated states share one
    forward and backward pass, an exact saving since the gradient is a sum of per-state terms; its
    `prior`, `next_prior` hand in stored prior values. With `double` the target is
    Q^-_k(s', argmax_a' Q_k(s', a')) (double Q-learning) instead of the max. Returns the
    mean loss over members (non-finite when the values diverged).

    The target pass runs first, in `tape`'s buffers, and is reduced to v_next before the online
    pass that `backward` reads overwrites them: one set of activation buffers, not two, stays in cache.
    """
    q_next = ensemble.value(batch.next_state, target=True, tape=tape, prior=batch.next_prior)   # (K, U', A)
    online_next = ensemble.value(batch.next_state, prior=batch.next_prior) if double else None
    K, dt, kernels = q_next.shape[0], q_next.dtype, ensemble.net.kernels
    v_next = tape.buf("v_next", q_next.shape[:2], dt)
    kernels.bootstrap(q_next, online_next, v_next)
    q = ensemble.value(batch.state, tape=tape, prior=batch.prior)                        # (K, U, A)
    U, A = q.shape[1:]
    B = batch.action.shape[0]
    delta, g = tape.buf("delta", (K, B), dt), tape.buf("g", (K, B), dt)
    reward = batch.reward if batch.reward.ndim == 2 else batch.reward[None]              # (K or 1, B)
    dout = None if batch.index is not None else tape.buf("dout", (U, K, A), dt).transpose(1, 0, 2)
    scale = dt.type(1.0 / B)
    kernels.td(q, v_next, batch.action, reward, batch.discount, batch.weight, batch.index, batch.next_index,
             scale, delta, g, dout)
    loss = 0.5 * float(np.vdot(g, delta)) / (B * K)
    if dout is None:            # repeated states: their samples' gradients summed by one product
        g *= scale
        dout = value_gradient(tape, g, batch.action, batch.index, U, A)
    ensemble.apply_gradient(tape, dout)
    return loss


def value_gradient(tape: Tape, g: np.ndarray, action: np.ndarray, index: np.ndarray, U: int, A: int) -> np.ndarray:
    """dL/dQ (K, U, A) of U distinct states, in `tape`'s scratch: dout[k, u, a] is the sum of g[k, b] (K, B) over
    the samples b of state u = index[b] and action a (one product with their one-hot matrix)."""
    K, B = g.shape
    dout = tape.buf("dout", (U, K, A), g.dtype).transpose(1, 0, 2)      # (U, K, A) memory
    onehot = tape.buf("onehot", (B, U * A), g.dtype)
    onehot.fill(0.0)
    onehot[np.arange(B), index * A + action] = 1.0
    dsum = tape.buf("dsum", (U * A, K), g.dtype)
    np.matmul(onehot.T, g.T, out=dsum)
    dout.transpose(1, 2, 0)[...] = dsum.reshape(U, A, K)
    return dout


def member_td_step(ensemble: PriorEnsemble, tape: Tape, batch: Batch, double: bool = False) -> float:
    """`td_step` with each member on its own minibatch (per-member buffers, Algorithm 7 literally): states
    (K, B, in) as network inputs, actions, rewards and discounts (K, B), stored priors (K, B, A) or None.

    Member k minimises 1/(2B) sum_b (r_kb + discount_kb v_k(s'_kb) - Q_k(s_kb, a_kb))^2 over its own B
    transitions (weight 1; a `weight` False marks the rows of a member whose buffer is still empty, which
    takes a zero gradient). Plain NumPy (`td`'s functions). Returns the
    mean loss over members.
    """
    q_next = ensemble.value(batch.next_state, target=True, tape=tape, prior=batch.next_prior)    # (K, B, A)
    online_next = ensemble.value(batch.next_state, prior=batch.next_prior) if double else None
    v_next = td.bootstrap_values(q_next, online_next)                  # a copy: the online pass reuses the tape
    q = ensemble.value(batch.state, tape=tape, prior=batch.prior)                                # (K, B, A)
    K, B, A = q.shape
    _, delta = td.td_errors(q, batch.action, batch.reward, batch.discount, v_next, np.arange(B))
    if batch.weight is not None:
        delta *= batch.weight
    dout = tape.buf("dout", (B, K, A), q.dtype).transpose(1, 0, 2)
    dout.fill(0.0)
    dout[np.arange(K)[:, None], np.arange(B), batch.action] = delta / q.dtype.type(B)
    loss = 0.5 * float(np.vdot(delta, delta)) / (B * K)
    ensemble.apply_gradient(tape, dout)
    return loss


class EnsembleRLSVI:
    """`learn_ensemble_rlsvi` agent (Algorithm 8) for the `live` loop (Algorithm 1)."""

    def __init__(self, params: EnsembleParams, representation: Representation, num_actions: int,
                 rng: np.random.Generator, kernels=None):
        self.params, self.rep, self.num_actions, self.rng = params, representation, num_actions, rng
        self.K = params.K
        self.kernels = kernels if kernels is not None else backend.choose()    # NumPy's or numba's passes
        hidden = tuple(h for h in (params.hidden1, params.hidden2) if h > 0)
        block_size = representation.block_size
        self.net = EnsembleMLP(representation.input_dim, hidden, num_actions, index_input=representation.index_input,
                               block_size=block_size, init=params.init, kernels=self.kernels)
        # block inputs of a finite code set: prior and target values cached per code (exact)
        key_inputs = representation.all_inputs() if block_size and isinstance(representation, FiniteCodes) else None
        self.ensemble = PriorEnsemble(self.net, params.K, rng, params.prior_scale,
                                      params.optimizer, params.learning_rate, key_inputs=key_inputs)
        # a prior without a cached table (dense inputs) is evaluated once per state at enqueue
        self._store_prior = self.ensemble.prior_params is not None and self.ensemble.prior_table is None
        prior_actions = num_actions if self._store_prior else 0
        if params.member_buffers:
            if representation.index_input or block_size:
                raise ValueError("member_buffers needs dense inputs (cartpole's observations), not one-hot or "
                                 "block inputs")
            self.buffer = MemberBuffers(params.buffer_size, params.K, representation.code_shape,
                                        representation.code_dtype, rng, prior_actions)
        else:
            self.buffer = EnsembleBuffer(params.buffer_size, params.K, representation.code_shape,
                                         representation.code_dtype, rng, params.mask, params.noise_scale,
                                         prior_actions)
        self._last = None                       # (code, prior) of the last new state
        self._terminal_code = np.zeros(representation.code_shape, representation.code_dtype)
        self._tape = Tape()
        self._discrete = representation.code_shape == ()
        self.episode = 0
        self.active = 0
        self._acting = None                     # the acting member's weights this episode ("episode")
        self.diagnostics = None                 # an EnsembleDiagnostics when diagnostics_every > 0
        self.env_steps = 0
        self.sgd_steps = 0
        self.epsilon = params.epsilon

    def learn_from_buffer(self) -> None:
        """Start an episode: sample the member that acts, j ~ Unif(1..K) (Algorithm 8), and epsilon."""
        p = self.params
        self.episode += 1
        self.active = int(self.rng.integers(self.K))
        if p.acting_weights == "episode":
            self._acting = self.ensemble.snapshot(self.active)
        if self.diagnostics is not None:
            self.diagnostics.episode_start(self.episode)
        if p.epsilon_anneal_episodes > 0:
            frac = min(1.0, (self.episode - 1) / p.epsilon_anneal_episodes)
            self.epsilon = p.epsilon + (p.epsilon_final - p.epsilon) * frac
        else:
            self.epsilon = p.epsilon

    def _inputs(self, state) -> np.ndarray:
        code = np.asarray(self.rep.encode(state), dtype=self.rep.code_dtype)
        return self.rep.inputs(code[None])

    def q_values(self, state, member: int | None = None) -> np.ndarray:
        """Q(state, .) of the acting member as it acts this episode (or of `member`'s live weights), (A,)."""
        if member is None:
            return self.ensemble.member_value(self.active, self._inputs(state), self._acting)[0]
        return self.ensemble.member_value(member, self._inputs(state))[0]

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
        code = rep.encode(transition.old_state)
        next_code = self._terminal_code if terminal else rep.encode(transition.new_state)
        prior = next_prior = None
        if self._store_prior:
            prior = self._prior_of(code)
            next_prior = self._prior_of(next_code)   # terminal placeholder too: equal codes, equal priors
        self.buffer.add(code, transition.action, transition.reward, next_code,
                        0.0 if terminal else self.params.gamma, prior, next_prior)
        self.env_steps += 1
        if self.buffer.size >= self.params.min_replay and self.env_steps % self.params.sgd_period == 0:
            for _ in range(self.params.sgd_steps_per_step):
                self.sgd_step()

    def _prior_of(self, code) -> np.ndarray:
        """(K, A) prior values of one state; s' of a step is s of the next, so reuse it."""
        if self._last is not None and np.array_equal(self._last[0], code):
            return self._last[1]
        prior = self.ensemble.prior(self.rep.inputs(np.asarray(code, self.rep.code_dtype)[None]))[:, 0].copy()
        self._last = (np.array(code, copy=True), prior)
        return prior

    def sgd_step(self) -> float:
        """Algorithm 8 lines 1-4 for all K members at once; copies to the target every target_period."""
        loss = self._td_step()
        if not math.isfinite(loss):
            self._diverged("SGD")
        self.sgd_steps += 1
        if self.sgd_steps % self.params.target_period == 0:
            self.ensemble.sync_target()
        if self.diagnostics is not None:
            self.diagnostics.after_sgd_step(self.sgd_steps)
        return loss

    def _td_step(self) -> float:
        """`td_step` on a minibatch of the buffer (repeated discrete states sharing their passes)."""
        if self.params.member_buffers:
            return self._member_td_step()
        batch = self.buffer.sample(self.params.batch_size)
        if self._discrete:                      # repeated states share their passes (exact)
            state, first, index = self.kernels.distinct(batch.state)
            next_state, next_first, next_index = self.kernels.distinct(batch.next_state)
            prior, next_prior = batch.prior, batch.next_prior
            if prior is not None:
                prior, next_prior = prior[:, first], next_prior[:, next_first]
            batch = batch._replace(state=state, next_state=next_state, prior=prior, next_prior=next_prior,
                                   index=index, next_index=next_index)
        inputs = self.rep.inputs
        return td_step(self.ensemble, self._tape,
                       batch._replace(state=inputs(batch.state), next_state=inputs(batch.next_state)),
                       double=self.params.td_target == "double")

    def _member_td_step(self) -> float:
        """`member_td_step` on each member's own minibatch (per-member buffers)."""
        batch = self.buffer.sample_members(self.params.batch_size)
        K, B = batch.action.shape

        def inputs(codes):
            return self.rep.inputs(codes.reshape(K * B, *codes.shape[2:])).reshape(K, B, -1)
        return member_td_step(self.ensemble, self._tape,
                              batch._replace(state=inputs(batch.state), next_state=inputs(batch.next_state)),
                              double=self.params.td_target == "double")

    def run_tables(self) -> dict:
        """Extra per-run tables for the shard: diagnostics.csv when diagnostics are on."""
        return {} if self.diagnostics is None else {"diagnostics": self.diagnostics.table()}

    def _diverged(self, where: str):
        raise FloatingPointError(
            f"ensemble RLSVI diverged: non-finite values in {where} during episode {self.episode} "
            f"(SGD step {self.sgd_steps}); lower learning_rate or raise target_period")


def make_ensemble_agent(params: EnsembleParams, env, rng: np.random.Generator, kernels=None) -> EnsembleRLSVI:
    """Registry factory: the representation (`params.representation` of the environment) and the
    action count come from the environment; a linear basis is drawn from the agent's `rng`. The
    networks run on `kernels` (`backend`), the process's choice unless given."""
    rep = representation_for(env, params.representation, params.M, params.basis, rng)
    agent = EnsembleRLSVI(params, rep, env.num_actions, rng, kernels)
    if params.diagnostics_every or params.prior_spread:
        probes = env.probe_states() if isinstance(env, ProbeStates) else {}
        agent.diagnostics = EnsembleDiagnostics(agent, probes, params.diagnostics_every, params.prior_spread)
    return agent

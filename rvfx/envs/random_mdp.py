"""Time-inhomogeneous tabular MDPs drawn from the Dirichlet prior of Section 6 (Assumptions 1-2).

States are layered pairs (h, x): h = 0..H-1 is the period, x = 0..X-1 the state within
it, as in DeepSea. An action at (h, x) yields an *outcome* o = (r, x') with r in {0, 1}
and x' the state of period h+1; its distribution P^O_{h,x,a} over the 2X outcomes is drawn
from Dirichlet(alpha_0) independently across (h, x, a), with 1^T alpha_0 = beta >= 3
(Assumption 2). The process terminates after period H-1 (Assumption 1), so every policy
terminates in exactly H steps.

Two choices the paper leaves open, fixed here and documented:
- alpha_0 is symmetric: beta / (2X) on each outcome (`concentration = beta`).
- In the last period h = H-1 there is no next state; Assumption 2 only covers h <= H-2.
  The reward of the last period is Bernoulli(p) with p ~ Beta(beta/2, beta/2), which is the
  law of P(r = 1) under the same Dirichlet prior (the reward marginal of Dirichlet(alpha_0)).
- Episodes start in x_0 = 0 (rho is a point mass; `start_state`).

`optimal_return` is V*_0(x_0) by backward induction on the sampled MDP, and
`expected_return` the noise-free return of the current episode: the sum of the mean
rewards E[r | h, x, a] along the visited path. Its expectation given the agent's policy is
V^pi_0(x_0), so per-episode regret is an unbiased estimate of the paper's regret.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

import numpy as np

from rvfx.core.backward_induction import backward_induction
from rvfx.core.protocols import Layered
from rvfx.core.transition import Transition


@dataclass(frozen=True)
class RandomMDPParams:
    horizon: int = field(default=5, metadata={"min": 1, "doc": "H: periods per episode (layers)"})
    states: int = field(default=3, metadata={"min": 1, "doc": "|X|: states per period"})
    actions: int = field(default=2, metadata={"min": 1, "doc": "|A|: actions"})
    beta: float = field(
        default=3.0, metadata={"min": 3.0, "doc": "1^T alpha_0 of the Dirichlet prior (Assumption 2: >= 3)"})
    start_state: int = field(default=0, metadata={"min": 0, "doc": "x_0: every episode starts in (0, x_0)"})

    def __post_init__(self):
        """Settings no single bound can refuse; `build` reports them at the spec's key."""
        if self.start_state >= self.states:
            raise ValueError(f"start_state {self.start_state} must be < states {self.states}")

    size_key = "env.states"

    def run_sizes(self) -> dict:
        """H layers of |X| states, |A| actions, H steps; no network input (`RunSizes`)."""
        return {"H": self.horizon, "S": self.states, "A": self.actions, "steps": self.horizon, "inputs": 0, "keys": 0}

    def run_memory(self) -> dict:
        return {"the MDP's outcome law and sampling lists": 100 * self.horizon * self.states ** 2 * self.actions}


class RandomMDP:
    """A time-inhomogeneous MDP drawn from Theorem 1's Dirichlet prior (Sec. 6).

    One MDP drawn from the prior with the instance's rng; then episodes use the same rng.

    Arrays (X = states, A = actions):
      outcome[h, x, a, r, x']  for h < H-1: P^O_{h,x,a}(r, x'), sums to 1 over (r, x')
      reward_prob[h, x, a]     P(r = 1 | h, x, a) for every h (the last period included)
      transition[h, x, a, x']  P(x' | h, x, a) for h < H-1
    """
    offers = (Layered,)

    def __init__(self, params: RandomMDPParams, rng: np.random.Generator):
        self.params = params
        H, X, A = params.horizon, params.states, params.actions
        self.rng = rng
        self.shape = (H, X, A)
        self.num_actions = A
        self.alpha0 = np.full(2 * X, params.beta / (2 * X))       # outcomes ordered (r=0, x'), (r=1, x')
        outcome = rng.dirichlet(self.alpha0, size=(max(H - 1, 0), X, A)).reshape(max(H - 1, 0), X, A, 2, X)
        self.outcome = outcome
        reward_prob = np.empty((H, X, A))
        reward_prob[:H - 1] = outcome[:, :, :, 1, :].sum(axis=-1)
        reward_prob[H - 1] = rng.beta(params.beta / 2, params.beta / 2, size=(X, A))
        self.reward_prob = reward_prob
        self.transition = outcome.sum(axis=3)                     # (H-1, X, A, X)
        self.q_star = self.optimal_q()
        self.optimal_return = float(self.q_star[0, params.start_state].max())
        # Per (h, x, a): cumulative outcome probabilities for fast sampling in `step`.
        self._cum = [[[list(np.cumsum(outcome[h, x, a].ravel())) if h < H - 1
                       else [1.0 - reward_prob[h, x, a], 1.0]
                       for a in range(A)] for x in range(X)] for h in range(H)]
        self._mean = reward_prob.tolist()
        self._h = 0
        self._x = params.start_state
        self.expected_return = 0.0

    def optimal_q(self) -> np.ndarray:
        """Q*_h(x, a) by backward induction (value iteration over the H periods)."""
        H, X, _ = self.shape
        r, p = self.reward_prob, self.transition
        return backward_induction(lambda h, v: r[h] + (p[h] @ v if h < H - 1 else 0.0), H, np.zeros(X))

    def policy_value(self, policy: np.ndarray) -> float:
        """V^pi_0(x_0) of a deterministic policy given as an (H, X) array of actions."""
        H, X, _ = self.shape
        v = np.zeros(X)
        idx = np.arange(X)
        for h in range(H - 1, -1, -1):
            a = policy[h]
            v = self.reward_prob[h, idx, a] + (self.transition[h, idx, a] @ v if h < H - 1 else 0.0)
        return float(v[self.params.start_state])

    def reset(self) -> Transition:
        self._h, self._x = 0, self.params.start_state
        self.expected_return = 0.0
        return Transition(None, None, 0.0, (0, self._x), 0)

    def step(self, action: int) -> Transition:
        h, x = self._h, self._x
        X = self.shape[1]
        self.expected_return += self._mean[h][x][action]
        cum = self._cum[h][x][action]
        k = min(bisect_right(cum, self.rng.random()), len(cum) - 1)
        if h < self.shape[0] - 1:
            reward, nxt = divmod(k, X)
            self._h, self._x = h + 1, nxt
            new_state = (h + 1, nxt)
        else:
            reward, new_state = k, None
        return Transition((h, x), action, float(reward), new_state, h)

"""What a run of each shipped agent costs, for rvfx.experiment.memory's estimates: the memory it
holds (`Part`s) and the CPU seconds it adds per step, per episode and per run (`RunCost`), as the
registry's `AgentEntry.sizes` and `AgentEntry.cost` hooks. The speed constants are fitted to
measured runs (benchmarks/fit_speeds.py, which sets them here) at the sweeps' load, two processes
on two cores; they live here, beside each other, not in the algorithms they charge.
"""
from __future__ import annotations

import math

from rvfx.core.cost import Part, RunCost

# CPU seconds every run pays per environment step and per episode whatever its agent (the `live` loop,
# the environment's step, logging), fitted with the tabular agents' charges. Every constant here is
# benchmarks/fit_speeds.py's: those that charge no case of `make bench` less than its measured time,
# with the least largest model/measured (then the least summed one)
FIXED_PER_STEP, FIXED_PER_EPISODE = 2.95e-6, 4.03e-6

# ---- tabular agents ---------------------------------------------------------------------------

BYTES_PER_TRANSITION = 64   # TransitionStore: 24-byte rows, doubled when full, plus resampling
# the bootstrap's resample (draws and weighted bincounts), per stored transition and episode, fitted with the
# tabular agents' constants (histories up to 20,000 transitions)
RESAMPLE_PER_TRANSITION = 1.27e-8
# CPU seconds per episode and layer of learn_from_buffer, fitted to deep sea N = 5-40: a fixed part and
# one per (s, a, s') entry of the next-state table, per agent family (Thompson's: its posterior draw;
# "none": a one-step bonus or a known structure, no backup beyond the fixed costs). RLSVI's backup on
# deterministic transitions (deep sea) reads one next state per (s, a): its entry part is small. The
# bootstrap's statistics from the resampled counts add nothing the fit can tell from the resample's cost
LEARN = {"rlsvi": (8.78e-6, 2.11e-9), "psrl": (7.41e-6, 1.75e-8), "ucrl2": (2.5e-5, 2.15e-8),
         "thompson": (1.27e-5, 0.0), "none": (0.0, 0.0)}
# Boltzmann acting (eq. 4.2): a softmax per step
BOLTZMANN_STEP = 1.41e-5


def history_cost(z: dict, episodes: int) -> RunCost:
    """The bootstrap's `TransitionStore`: every transition of the run stored (`BYTES_PER_TRANSITION`
    each) and the whole history resampled every episode (`RESAMPLE_PER_TRANSITION` per stored
    transition)."""
    transitions = episodes * z["steps"]
    return RunCost(parts=(Part(f"{transitions:,} stored transitions (bootstrap)", BYTES_PER_TRANSITION * transitions,
                               "episodes"),),
                   per_run=(RESAMPLE_PER_TRANSITION * z["steps"] * episodes * (episodes + 1) / 2,))


def tabular_cost(learn: str, next_state_tables: int = 1, bootstrap: bool = False):
    """`AgentEntry.cost` of a layered tabular agent: `next_state_tables` H×S×A×S float64 tables alive
    at the peak of one learn_from_buffer, next_count included (psrl: Dirichlet arguments and gamma
    draws; ucrl2: empirical transitions and their where(); brlsvi: the resampled counts), six H×S×A
    ones; per episode its family's `LEARN` per layer, and with `bootstrap` the stored history and its
    resample."""
    def cost(params, z: dict, episodes: int, size_key: str) -> RunCost:
        H, S, A = z.get("H", 0), z.get("S", 0), z["A"]
        n = next_state_tables
        layer, entry = LEARN[learn]
        own = RunCost(parts=(Part(f"{n} next-state table(s) of H×S×A×S", 8 * n * H * S * A * S, size_key),
                             Part("the H×S×A tables", 8 * 6 * H * S * A, size_key)),
                      per_step=(BOLTZMANN_STEP,) if getattr(params, "act", None) == "boltzmann" else (),
                      per_episode=(H * (layer + entry * S ** 2 * A),))
        return own.plus(history_cost(z, episodes)) if bootstrap else own
    return cost


def uncertainty_cost(params, z: dict, episodes: int, size_key: str) -> RunCost:
    """`AgentEntry.cost` of the Fig. 2 probe: the samples of Q of every layer, the noise and the
    transposed copy, and their backups."""
    H, S, A = z.get("H", 0), z.get("S", 0), z["A"]
    return RunCost(parts=(Part(f"{params.samples:,} samples of Q (H×S×A each)", 8 * 3 * params.samples * H * S * A,
                               "agent.samples"),),
                   per_run=(1e-8 * params.samples * z["H"] * z["S"] ** 2 * z["A"],))


# ---- linear agents ----------------------------------------------------------------------------

# CPU seconds per episode, fitted to runs on deep sea at the specs' settings (N = 10-80, M = 2-160; 15
# cases): per row of the backward pass (the step that fills it included) a fixed cost and the M x M
# solve's M^2 and M^3 parts (at M <= 160 LAPACK's time grows nearer M^2), and per (h, s, a, feature)
# the Q table's products
LINEAR_ROW = (1.35e-5, 7.04e-9, 2.28e-11, 3.16e-9)
# learn_brlsvi's statistics from the resampled counts, per H*S*A: the Gram matrices (x M^2), the
# next-state sums (x S*M) and the next-state count tables (x S)
LINEAR_BOOTSTRAP = (2.36e-11, 3.38e-11, 5.98e-10)


def linear_sizes(params, z: dict) -> dict:
    """`AgentEntry.sizes` of the linear agents: M, features per row (2N for the one-hot basis)."""
    return {"M": 2 * z["S"] if params.basis == "one_hot" else params.M}


def linear_cost(bootstrap: bool = False):
    """`AgentEntry.cost` of the linear agents: features, next-state sums and Gram matrices; per episode
    the rows' solves and the Q table's products (`LINEAR_ROW`), with `bootstrap` the statistics from
    the resampled counts (`LINEAR_BOOTSTRAP`) and the stored history."""
    def cost(params, z: dict, episodes: int, size_key: str) -> RunCost:
        H, S, A, M = z["H"], z["S"], z["A"], z["M"]
        copies = 3 if params.psi > 0 else 1           # phi, eta and phi + eta
        row, row_m2, row_m3, q_product = LINEAR_ROW
        per_episode = (H * (row + row_m2 * M ** 2 + row_m3 * M ** 3) + q_product * H * S * A * M,)
        if bootstrap:
            gram, next_sums, tables = LINEAR_BOOTSTRAP
            per_episode += (H * S * A * (gram * M ** 2 + next_sums * S * M + tables * S),)
        own = RunCost(parts=(Part("features (N, N, 2, M) and next-state sums (N, M, N)",
                                  8 * (2 * copies + 1) * H * S * M, size_key),
                             Part("Gram matrices (N, M, M)", 8 * 2 * H * M ** 2, "agent.M")),
                      per_episode=per_episode)
        return own.plus(history_cost(z, episodes)) if bootstrap else own
    return cost


# ---- neural agents ----------------------------------------------------------------------------

# CPU seconds, fitted jointly to runs on deep sea (N = 5-50: one-hot pixels, the linear basis, DQN on
# rvfx's and bsuite's environment) and the cartpole (50-50, one layer, linear, DQN; sgd_period 1 and 4)
# with the fast extra: per environment step the acting, the environment and the enqueue; per SGD step
# and member at batch 128 a part per unit (bias, ReLU and Adam passes) and per multiply-add of the
# layers. A keyed input is charged per distinct input of the batch (`minibatch_inputs`), its first layer
# multiplies its block only (one-hot: a row gather; the linear basis: its row's 2M features), and the
# linear basis adds per member and distinct row (block) of the batch its small product, cached targets
# and gathered rows' Adam; a double-Q target adds its extra forward pass. An SGD step also pays a part
# that does not grow with K (its Python calls: most of DQN's step), keyed inputs (distinct inputs,
# cached values, gathered rows) more than dense ones
NETWORK_STEP = (7.55e-7, 3.63e-7, 1.12e-8)
KEYED_MEMBER = {"one-hot": 1.73e-6, "block": 2.46e-6}
DOUBLE_Q = 1.3
SGD_FIXED = {"dense": 9.61e-5, "keyed": 1.92e-4}
# a dense input with a prior (cartpole) evaluates the K members' prior on each new state as it is stored:
# per environment step and member a fixed part and one per multiply-add of the layers
STORED_PRIOR = (1.91e-6, 4.42e-10)


def network_sizes(p, z: dict) -> dict:
    """`AgentEntry.sizes` of Ensemble RLSVI / DQN: the linear_basis input on a layered environment, M
    features per row of H."""
    if p.representation == "linear_basis" and "S" in z:
        return {"M": p.M, "inputs": z["H"] * 2 * p.M}
    return {}


def minibatch_inputs(draws: int, z: dict) -> float:
    """The expected distinct inputs of a minibatch of `draws` from the replay buffer of a keyed input: on a
    layered environment (deep sea) the draws spread over the H layers and, within layer h (from 0), over
    the h + 1 states a run can have reached there (at most S); else over every input."""
    if "H" not in z:
        return expected_distinct(draws, z["keys"])
    H, S = z["H"], z["S"]
    return sum(min(S, h + 1) * (1 - (1 - 1 / (H * min(S, h + 1))) ** draws) for h in range(H))


def expected_distinct(draws: int, n: int) -> float:
    """The expected number of distinct values among `draws` uniform draws from n (a minibatch's distinct
    inputs or rows)."""
    return n * -math.expm1(draws * math.log1p(-1 / n)) if n > 1 else float(min(n, draws))


def network_cost(p, z: dict, episodes: int, size_key: str) -> RunCost:
    """`AgentEntry.cost` of Ensemble RLSVI / DQN: its memory (`network_memory`) and its CPU time per step
    (`network_step`)."""
    hidden = [h for h in (p.hidden1, p.hidden2) if h > 0]
    layers = list(zip([z["inputs"], *hidden], [*hidden, z["A"]]))
    return RunCost(parts=network_memory(p, z, layers, size_key), per_step=(network_step(p, z, layers),))


def network_memory(p, z: dict, layers: list, size_key: str) -> tuple:
    """The parts of Ensemble RLSVI's / DQN's memory: replay buffer, the K networks' copies, cached values
    per input (keyed inputs), one SGD step's activations, and the one-off temporaries of building the
    networks. `layers` are the networks' (inputs, outputs) per layer."""
    K, A, B = p.K, z["A"], p.batch_size
    hidden = [o for _, o in layers[:-1]]
    first = z["inputs"] * layers[0][1] * K
    weights = sum((i + 1) * o for i, o in layers) * K
    keyed = z["keys"] > 0
    # online, target, Adam's two moments, prior; dense inputs add a flat gradient
    copies = 2 + 2 * (p.optimizer == "adam") + (p.prior_scale > 0) + (not keyed)
    code = 4 if keyed else 4 * z["inputs"]
    row = 2 * code + 16 + {"bootstrap": K, "gaussian": 4 * K}.get(p.mask, 0)
    if not keyed and p.prior_scale > 0:
        row += 2 * 4 * K * A                    # stored prior values of s and s'
    net_key = size_key if 2 * first > weights else "agent.hidden1"
    parts = [Part(f"a replay buffer of {p.buffer_size:,} transitions", row * p.buffer_size, "agent.buffer_size"),
             Part(f"{copies} copies of K={K} networks", 4 * copies * weights, net_key)]
    temporary = 16 * first                       # W_1 drawn in float64, cast and transposed
    if keyed:
        parts.append(Part("cached prior and target values per input", 4 * 2 * z["keys"] * K * A, size_key))
        temporary = max(temporary, (p.prior_scale > 0) * 4 * z["keys"] * K * (2 * sum(hidden) + A))
    if "M" in z:
        parts.append(Part("the linear basis input", 4 * 3 * z["inputs"] * z["S"], "agent.M"))
    parts.append(Part("building the networks (float64 draws, the prior over every input)", temporary,
                      net_key, temporary=True))
    rows = min(B, z["keys"]) if keyed else B     # memory: at most one pass per distinct input of the batch
    # per unit and row about three float32s: the online pass's activation and ReLU' (a byte with the
    # fast extra's passes), the target pass's activation (its ReLU' is not kept), the backward reusing them
    sgd = 4 * 3 * rows * K * (sum(hidden) + A) + 4 * 8 * B * K + (4 * B * rows * A if keyed else 0)
    parts.append(Part("one SGD step's activations and gradients", sgd, "agent.batch_size"))
    return tuple(parts)


def network_step(p, z: dict, layers: list) -> float:
    """Ensemble RLSVI's / DQN's CPU seconds per step: the acting, a dense input's stored prior and the SGD
    steps (`NETWORK_STEP`, `KEYED_MEMBER`, `DOUBLE_Q`, `SGD_FIXED`, `STORED_PRIOR`)."""
    K, B, keyed = p.K, p.batch_size, z["keys"] > 0
    act, unit, mac = NETWORK_STEP
    # a keyed input is a block of the first layer's input (one-hot: 1 wide; the linear basis: its row's 2M
    # features), so the first layer multiplies that block's rows only
    width = (2 * p.M if "M" in z else 1) if keyed else layers[0][0]
    macs = sum(i * o for i, o in layers) - (layers[0][0] - width) * layers[0][1]
    passes = minibatch_inputs(B, z) if keyed else B      # keyed inputs: one pass per distinct input
    member = passes / 128 * (unit * sum(o for _, o in layers) + mac * macs)
    if keyed:      # the linear basis: one product per distinct row (block) of the batch; one-hot: none
        member += KEYED_MEMBER["block"] * expected_distinct(B, z["H"]) if "M" in z else KEYED_MEMBER["one-hot"]
    step = K * member * (DOUBLE_Q if p.td_target == "double" else 1.0) + SGD_FIXED["keyed" if keyed else "dense"]
    if not keyed and p.prior_scale > 0:
        act += K * (STORED_PRIOR[0] + STORED_PRIOR[1] * macs)
    return act + p.sgd_steps_per_step / p.sgd_period * step

"""What a run costs, from its parameters alone: its sizes, its peak memory and a coarse CPU time.

Validation uses these to refuse, before anything runs, a run that cannot fit in this machine's
memory and a sweep whose time is absurd. The memory estimate counts the arrays the agent and
the environment allocate (tables, replay buffer, network copies, features, stored history,
logged rows) plus the largest one-off temporary; tests/test_bad_inputs.py checks it against
traced peaks. The time model is coarse on purpose (README, Speed): it tells hours from
centuries, not minutes from hours. The environment's parameters declare its sizes and its arrays
(rvfx.core.protocols.RunSizes); an environment without them has no sizes before it is built, so
only its logged rows are counted.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from rvfx.core.live import log_grid
from rvfx.core.protocols import RunSizes

TABULAR = ("lsvi", "grlsvi", "brlsvi", "psrl", "ucrl2")
DEEP_SEA_KNOWN = ("deepsea_optimal", "deepsea_exploitation", "deepsea_myopic", "deepsea_thompson")
LINEAR = ("linear_lsvi", "linear_grlsvi", "linear_brlsvi")
NEURAL = ("ensemble_rlsvi", "dqn")
BOOTSTRAP = ("brlsvi", "linear_brlsvi")
# H*S*A*S float64 tables alive at the peak of one learn_from_buffer, next_count included (psrl:
# Dirichlet arguments and gamma draws; ucrl2: empirical transitions and their where();
# brlsvi: the resampled counts)
NEXT_STATE_TABLES = {"psrl": 3, "ucrl2": 3, "brlsvi": 2}
BYTES_PER_TRANSITION = 64   # bootstrap TransitionStore: 24-byte rows, doubled when full, plus resampling
BYTES_PER_ROW = 900         # a logged episode: live's dict, then the shard's row with identity columns
CSV_ROW_BYTES = 400         # a logged episode in the shard's episodes.csv, identity columns included
PROCESS_BYTES = 200 * 2**20  # Python with numpy, scipy and pandas imported, before a run allocates
# Linear agents' CPU seconds per episode, fitted to runs on deep sea (N = 10-80, M = 2-160, CPU time with
# both cores of a 2-core VM busy; benchmarks/bench_linear.py): per row of the backward pass (the step
# that fills it included) a fixed cost and the M x M solve's M^2 and M^3 parts (at M <= 160 LAPACK's
# time grows nearer M^2 than M^3), and per (h, s, a, feature) the Q table's products
LINEAR_ROW = (8e-6, 3.3e-9, 3.7e-11, 4.5e-9)
# linear_brlsvi's statistics from the resampled counts, per H*S*A: the Gram matrices (x M^2), the
# next-state sums (x S*M) and the next-state count tables (x S)
LINEAR_BOOTSTRAP = (1.4e-10, 1e-11, 2.1e-9)
# the bootstrap's resample (draws and weighted bincounts), per stored transition and episode:
# 11-22 ns measured from 30,000 to 1.2 M stored transitions (caches miss more as the history grows)
RESAMPLE_PER_TRANSITION = 2e-8


@dataclass(frozen=True)
class Part:
    """One term of a run's peak memory, and the parameter that sets its size (a grid-style key:
    "env.size", "agent.buffer_size", "episodes")."""
    what: str
    nbytes: float
    key: str
    temporary: bool = False     # freed before the run goes on: only the largest one counts


def sizes(algorithm: str, agent, env_params) -> dict | None:
    """A run's sizes: those the environment's parameters declare (`RunSizes`: H, S, A where the
    environment is layered, `steps`, `inputs`, `keys`) and M (features per row of the linear agents:
    2N for the one-hot basis). None for an environment whose sizes are known only once built."""
    out = env_params.run_sizes() if isinstance(env_params, RunSizes) else None
    if out is None:
        return None
    if algorithm in LINEAR:
        out["M"] = 2 * out["S"] if agent.basis == "one_hot" else agent.M
    elif algorithm in NEURAL and agent.representation == "linear_basis" and "S" in out:
        out["M"] = agent.M
        out["inputs"] = out["H"] * 2 * agent.M
    return out


def environments_for(algorithm: str, agent) -> tuple[str, ...] | None:
    """The paper's environments `algorithm` (with these parameters) can run on; None if any."""
    if algorithm in TABULAR:
        return ("deep_sea", "random_mdp", "four_state")
    if algorithm == "grlsvi_uncertainty":
        return ("four_state",)
    if algorithm in DEEP_SEA_KNOWN + LINEAR:
        return ("deep_sea",)
    if algorithm in NEURAL:
        return ("deep_sea", "cartpole_swingup") if agent.representation == "observation" else ("deep_sea",)
    if algorithm == "cartpole_reference":
        return ("cartpole_swingup",)
    return None


def peak_parts(algorithm: str, agent, env_params, episodes: int, log: str) -> list[Part]:
    """The terms of a run's peak memory above the interpreter's (`PROCESS_BYTES`), largest first."""
    logged = episodes if log == "all" else len(log_grid(episodes))
    parts = [Part(f"{logged:,} logged episodes (log: {log})", BYTES_PER_ROW * logged, "episodes")]
    z = sizes(algorithm, agent, env_params)
    if z is None:
        return parts
    size_key = env_params.size_key
    parts += [Part(what, nbytes, size_key) for what, nbytes in env_params.run_memory().items()]
    H, S, A = z.get("H", 0), z.get("S", 0), z["A"]
    if algorithm in TABULAR + DEEP_SEA_KNOWN:
        tables = NEXT_STATE_TABLES.get(algorithm, 1)
        parts.append(Part(f"{tables} next-state table(s) of H×S×A×S", 8 * tables * H * S * A * S, size_key))
        parts.append(Part("the H×S×A tables", 8 * 6 * H * S * A, size_key))
    elif algorithm in LINEAR:
        copies = 3 if agent.psi > 0 else 1           # phi, eta and phi + eta
        parts.append(Part("features (N, N, 2, M) and next-state sums (N, M, N)",
                          8 * (2 * copies + 1) * H * S * z["M"], size_key))
        parts.append(Part("Gram matrices (N, M, M)", 8 * 2 * H * z["M"] ** 2, "agent.M"))
    elif algorithm in NEURAL:
        parts += _network_parts(agent, z, size_key)
    elif algorithm == "grlsvi_uncertainty":          # Q of every layer, the noise, the transposed copy
        parts.append(Part(f"{agent.samples:,} samples of Q (H×S×A each)", 8 * 3 * agent.samples * H * S * A,
                          "agent.samples"))
    if algorithm in BOOTSTRAP:
        transitions = episodes * z["steps"]
        parts.append(Part(f"{transitions:,} stored transitions (bootstrap)", BYTES_PER_TRANSITION * transitions,
                          "episodes"))
    return sorted(parts, key=lambda p: -p.nbytes)


def _network_parts(p, z: dict, size_key: str) -> list[Part]:
    """Ensemble RLSVI / DQN: replay buffer, the K networks' copies, cached values per input (keyed
    inputs), one SGD step's activations, and the one-off temporaries of building the networks."""
    K, A, B = p.K, z["A"], p.batch_size
    hidden = [h for h in (p.hidden1, p.hidden2) if h > 0]
    layers = list(zip([z["inputs"], *hidden], [*hidden, A]))
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
    rows = min(B, z["keys"]) if keyed else B     # keyed inputs: one pass per distinct state of the batch
    sgd = 4 * 5 * rows * K * (sum(hidden) + A) + 4 * 8 * B * K + (4 * B * rows * A if keyed else 0)
    parts.append(Part("one SGD step's activations and gradients", sgd, "agent.batch_size"))
    return parts


def peak_bytes(parts: list[Part]) -> float:
    """A run's estimated peak memory above the interpreter's: every lasting part and the largest
    temporary one."""
    return float(sum(p.nbytes for p in parts if not p.temporary)
                 + max((p.nbytes for p in parts if p.temporary), default=0))


def shard_bytes(episodes: int, log: str) -> int:
    """Disk room a run's shard takes: its logged rows, and up to a MiB of summary, manifest and
    per-run tables (a cartpole trajectory is about 150 kB)."""
    logged = episodes if log == "all" else len(log_grid(episodes))
    return CSV_ROW_BYTES * logged + 2**20


def machine_bytes() -> int:
    """Physical memory of this machine."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def cpu_seconds(algorithm: str, agent, env_params, episodes: int) -> float | None:
    """Coarse estimate of one run's CPU seconds (stop_at_learning may end it sooner) at README,
    Speed's measured rates, not a bound: CPU time per step varies with the machine and its load
    (the Fig. 17 agent step, 1.46 ms there, took 5.3 ms CPU on 2026-11-27 with both cores of this
    VM busy). Fixed costs per step and per episode, the tabular backup's H*S*A*S, the linear
    agents' per-row solve and products (`LINEAR_ROW`), the ensemble's acting per step and its SGD
    steps (0.1 ms + K x 0.068 ms each at batch 128 on the 50-50 MLP), and the bootstrap's
    resampling of the whole history each episode (`RESAMPLE_PER_TRANSITION`). None when the
    environment's sizes are unknown."""
    z = sizes(algorithm, agent, env_params)
    if z is None:
        return None
    per_step, per_episode = 5e-6, 5e-5
    if algorithm in TABULAR + DEEP_SEA_KNOWN:
        per_episode += 3e-8 * z["H"] * z["S"] ** 2 * z["A"]
    elif algorithm in LINEAR:
        H, S, A, M = z["H"], z["S"], z["A"], z["M"]
        row, row_m2, row_m3, q_product = LINEAR_ROW
        per_episode += H * (row + row_m2 * M ** 2 + row_m3 * M ** 3) + q_product * H * S * A * M
        if algorithm == "linear_brlsvi":
            gram, next_sums, tables = LINEAR_BOOTSTRAP
            per_episode += H * S * A * (gram * M ** 2 + next_sums * S * M + tables * S)
    elif algorithm in NEURAL:
        widths = [h for h in (agent.hidden1, agent.hidden2) if h > 0] + [z["A"]]
        flops = widths[0] + sum(i * o for i, o in zip(widths, widths[1:]))
        member = 6.8e-5 * agent.batch_size / 128 * flops / 2700
        per_step += 1.5e-4 + agent.sgd_steps_per_step / agent.sgd_period * (1e-4 + agent.K * member)
    seconds = episodes * (z["steps"] * per_step + per_episode)
    if algorithm == "grlsvi_uncertainty":
        seconds += 1e-8 * agent.samples * z["H"] * z["S"] ** 2 * z["A"]
    if algorithm in BOOTSTRAP:
        seconds += RESAMPLE_PER_TRANSITION * z["steps"] * episodes * (episodes + 1) / 2
    return seconds

"""The neural SGD step beside its matmul floor, bsuite's JAX boot_dqn and PyTorch, per network.

For each network, in one process: the SGD step of all K members (`sgd_step`: minibatch, target and
online passes, TD loss, backward, Adam) and the floor of the same step, its own matrix products
alone in plain NumPy, timed in interleaved rounds (`matmul_floor.step_vs_floor`: thread CPU time,
BLAS on one thread, median and spread over the rounds). Then, where `.venv-bsuite` exists (`make
bsuite-venv`), bsuite's own boot_dqn on the same task (`boot_dqn_step.py`: its per-step update,
K=20 members of 50-50 MLPs plus priors, batch 128, XLA on one thread) against rvfx's step timed
just before it the same way (process CPU time), as a ratio; without that venv the line says so.
Where `.venv-torch` exists (`make torch-venv`), the same step written in PyTorch (`torch_step.py`:
the K members stacked and batched by matmul, autograd, Adam; eager, one thread) against rvfx's step
timed just before it on each of its kernels, as ratios (PyTorch / rvfx, process CPU time); deep sea
also with the one-hot images through a dense first layer (more work, for reference).
Each network's step is timed on each of the agent's possible kernels (`rvfx.agents.neural.backend`):
NumPy's passes and, where numba is installed (the `fast` extra), numba's (the same bits, fewer passes
over memory). The boot_dqn line times the last of them.

Networks: cartpole swing-up (5-50-50-3 MLP + prior, K=20, priors stored in the buffer: Fig. 17;
boot_dqn on the same 5-d observations) and deep sea N=25 (one-hot pixels read as a row gather of
W_1, 625-50-50-2 + prior, K=20: Fig. 14; boot_dqn reads bsuite's image through a dense first
layer), and DQN on cartpole (K=1, no prior; no boot_dqn line).

With one-hot inputs it also prints the floor of their row gathers and row updates in plain NumPy and
the ratio to products + rows (`matmul_floor.sparse_step`).

Run: .venv/bin/python benchmarks/bench_neural_step.py  (about a minute; two more with the peers)
"""
import rvfx  # noqa: F401, I001  (first: BLAS threads and kernels pinned as in the runs)

import copy
import json
import subprocess
import time
from pathlib import Path

import numpy as np
from matmul_floor import describe, step_vs_floor
from threadpoolctl import threadpool_limits

from rvfx.agents.neural import backend, fused
from rvfx.agents.neural.ensemble import DQNParams, EnsembleParams, EnsembleRLSVI, make_ensemble_agent
from rvfx.agents.neural.representations import representation_for
from rvfx.core.live import episode, live
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp, CartpoleSwingUpParams
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams

HERE = Path(__file__).parent
BSUITE_PYTHON = HERE.parent / ".venv-bsuite" / "bin" / "python"
TORCH_PYTHON = HERE.parent / ".venv-torch" / "bin" / "python"
TORCH_NETWORKS = {"deep_sea": "stacked members, W_1 read by rows, SparseAdam on them",   # torch_step.py's
                  "deep_sea_dense": "stacked members, one-hot images through a dense first layer",
                  "cartpole": "stacked members", "dqn": "one member"}


def cartpole_agent(params, seed: int = 0, transitions: int = 1500):
    """An agent on cartpole swing-up whose buffer holds `transitions` transitions of its own acting."""
    env = CartpoleSwingUp(CartpoleSwingUpParams(), np.random.default_rng(seed))
    agent = make_ensemble_agent(params, env, np.random.default_rng(seed + 1))
    while agent.buffer.size < transitions:
        agent.learn_from_buffer()
        episode(agent, env)
    return agent


def deep_sea_agent(size: int = 25, K: int = 20, episodes: int = 60):
    """Ensemble RLSVI on deep sea (one-hot pixels) after `episodes` episodes of its own acting."""
    env = DeepSea(DeepSeaParams(size=size), np.random.default_rng(1))
    agent = EnsembleRLSVI(EnsembleParams(K=K, batch_size=128), representation_for(env), 2, np.random.default_rng(2))
    live(agent, env, episodes, log_every="last")
    return agent


def with_kernels(agent) -> list:
    """[(label, the agent on those kernels)]: copies of `agent` on NumPy's passes and on numba's."""
    ways = [("NumPy's passes", backend.Numpy())]
    if fused.available():
        from rvfx.agents.neural.kernels import Numba
        ways.append(("numba's passes", Numba()))
    return [(label, copy.deepcopy(agent, {id(agent.kernels): kernels})) for label, kernels in ways]


def cpu_ms_per_step(agent, steps: int = 100, rounds: int = 5) -> float:
    """Median process CPU ms per SGD step of `agent` (BLAS on one thread), the peer's clock."""
    ms = []
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(rounds):
            t = time.process_time()
            for _ in range(steps):
                agent.sgd_step()
            ms.append((time.process_time() - t) / steps * 1e3)
    return float(np.median(ms))


def boot_dqn_ms(obs_shape: tuple, num_actions: int) -> dict:
    """bsuite boot_dqn's ms per step on observations of `obs_shape` (boot_dqn_step.py in the bsuite venv)."""
    done = subprocess.run([str(BSUITE_PYTHON), str(HERE / "boot_dqn_step.py"), ",".join(map(str, obs_shape)),
                           str(num_actions)], capture_output=True, text=True, timeout=1200, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def peer_line(agent, obs_shape: tuple, num_actions: int, inputs: str) -> str:
    """rvfx's step against bsuite boot_dqn's on `obs_shape` observations, or why it is skipped."""
    if not BSUITE_PYTHON.exists():
        return "    bsuite boot_dqn: skipped (no .venv-bsuite here; `make bsuite-venv` builds it)"
    ours = cpu_ms_per_step(agent)
    theirs = boot_dqn_ms(obs_shape, num_actions)
    return (f"    bsuite boot_dqn (JAX, XLA on one thread; {inputs}): {theirs['ms']:.2f} ms per step "
            f"({theirs['min']:.2f}-{theirs['max']:.2f}) vs rvfx {ours:.3f} ms: peer ratio "
            f"{theirs['ms'] / ours:.1f} (process CPU time)")


def torch_ms(network: str) -> dict:
    """PyTorch's ms per step of `network` (torch_step.py in the torch venv)."""
    done = subprocess.run([str(TORCH_PYTHON), str(HERE / "torch_step.py"), network], capture_output=True,
                          text=True, timeout=600, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def torch_lines(agents: list, networks: tuple) -> list[str]:
    """PyTorch's step of each of `networks` against rvfx's on each of its kernels (`agents`: [(label, agent)]),
    timed just before it, or why they are skipped."""
    if not TORCH_PYTHON.exists():
        return ["    PyTorch: skipped (no .venv-torch here; `make torch-venv` builds it)"]
    lines = []
    for network in networks:
        ours = [(how, cpu_ms_per_step(agent)) for how, agent in agents]
        theirs = torch_ms(network)
        vs = ", ".join(f"{ms:.3f} ms on {how}" for how, ms in ours)
        ratios = ", ".join(f"{theirs['ms'] / ms:.1f} ({how})" for how, ms in ours)
        lines.append(f"    PyTorch {theirs['torch']} (eager, one thread; {TORCH_NETWORKS[network]}): "
                     f"{theirs['ms']:.2f} ms per step ({theirs['min']:.2f}-{theirs['max']:.2f}) vs rvfx {vs}: "
                     f"ratio PyTorch/rvfx {ratios} (process CPU time)")
    return lines


def main() -> None:
    t0 = time.perf_counter()
    print("neural SGD step (all K members) vs its matmul floor (plain NumPy, same products), bsuite's boot_dqn "
          "and PyTorch")
    cases = [   # label, agent, boot_dqn's observations and actions (or None), torch_step.py's networks
        ("cartpole 5-50-50-3 + prior, K=20, batch 128, priors stored (Fig. 17)",
         cartpole_agent(EnsembleParams(K=20, hidden1=50, hidden2=50)), ((5,), 3, "the same 5-d inputs"),
         ("cartpole",)),
        ("deep sea N=25 one-hot pixels, 625-50-50-2 + prior, K=20, batch 128 (Fig. 14)",
         deep_sea_agent(), ((25, 25), 2, "bsuite's 25 x 25 image through a dense first layer"),
         ("deep_sea", "deep_sea_dense")),
        ("DQN on cartpole, 5-50-50-3, K=1 (Fig. 16)", cartpole_agent(DQNParams(epsilon_anneal_episodes=100)), None,
         ("dqn",)),
    ]
    for label, agent, peer, networks in cases:
        agents = with_kernels(agent)
        for how, on_kernels in agents:
            print(describe(f"{label}; {how}", step_vs_floor(on_kernels)))
        if peer is not None:
            print(peer_line(on_kernels, *peer))
        print("\n".join(torch_lines(agents, networks)))
    if not fused.available():
        print("  (numba not installed: `pip install -e '.[fast]'` adds numba's lines)")
    print(f"benchmark took {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()

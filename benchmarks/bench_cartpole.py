"""Cartpole swing-up throughput: environment steps per second of the physics (scalar env vs B carts
stepped together) and of the full agent step of the cartpole experiments, in the same run.

The agent step is what `live` does per environment step: `act` (greedy on the sampled member),
`env.step`, and `update_buffer` (enqueue with the K bootstrap masks and prior values, then one
SGD step of all K members on a minibatch of 128). It is timed for ensemble RLSVI with K=20 and
the 50-50 ReLU MLP (Fig. 17; the cost that sets the paper-scale budget), and for the other
agents of configs/cartpole_*.yaml. Both wall-clock and process CPU time are shown (medians
over rounds); on a shared machine the CPU time is the steadier. BLAS is pinned to one thread, as
in the runner (each run is one process on one core; parallelism comes from `--jobs`).

Last, `rvfx validate`'s speed model against the CPU time per episode of the cartpole specs' agents
(estimate_check): configs/cartpole_rlsvi.yaml's three networks at sgd_period 4 and 1, DQN, and
configs/cartpole_confirm.yaml's cell (trig observation, prior 3, double-Q target).

The SGD step alone, beside its matmul floor, is bench_neural_step.py's. No line times BLAS on
several threads: the products are 128 x 50 x 50 per member, too small to split well, and on a
machine whose cores run other work such a timing measures their contention, not the agent (in a
process pinned to one core, two BLAS threads only oversubscribe it).

Run: .venv/bin/python benchmarks/bench_cartpole.py  (about 30 s)
"""
import rvfx  # noqa: F401, I001  (first: BLAS threads and kernels pinned as in the runs)

import time

import numpy as np
from estimate_check import Case, check
from rvfx.agents.neural.ensemble import DQNParams, EnsembleParams, make_ensemble_agent
from rvfx.envs.cartpole.dynamics import CartpoleSwingUp, CartpoleSwingUpBatch, CartpoleSwingUpParams


def bench_scalar(episodes: int = 20, seed: int = 0) -> float:
    """Steps/s of the single env driven like `live`: reset, then step until new_state is None."""
    env = CartpoleSwingUp(CartpoleSwingUpParams(), np.random.default_rng(seed))
    actions = np.random.default_rng(seed + 1).integers(0, 3, env.horizon).tolist()
    steps = 0
    start = time.perf_counter()
    for _ in range(episodes):
        tr = env.reset()
        k = 0
        while tr.new_state is not None:
            tr = env.step(actions[k])
            k += 1
        steps += k
    return steps / (time.perf_counter() - start)


def bench_batch(batch: int = 20, episodes: int = 10, seed: int = 0) -> float:
    """Cart-steps/s of `batch` carts stepped together (B cart-steps per call)."""
    env = CartpoleSwingUpBatch(CartpoleSwingUpParams(),
                               [np.random.default_rng(seed + i) for i in range(batch)])
    actions = np.random.default_rng(seed + batch).integers(0, 3, (env.horizon, batch))
    steps = 0
    start = time.perf_counter()
    for _ in range(episodes):
        env.reset()
        done, k = False, 0
        while not done:
            _, _, done = env.step(actions[k])
            k += 1
        steps += k * batch
    return steps / (time.perf_counter() - start)


# label, parameters: the agents of configs/cartpole_rlsvi.yaml and configs/cartpole_dqn.yaml
AGENT_CASES = [
    ("ensemble RLSVI K=20, 50-50 MLP + prior (Fig. 17)", EnsembleParams(K=20, hidden1=50, hidden2=50)),
    ("ensemble RLSVI K=20, one layer of 50", EnsembleParams(K=20, hidden1=50, hidden2=0)),
    ("ensemble RLSVI K=20, linear Q", EnsembleParams(K=20, hidden1=0, hidden2=0)),
    ("DQN, 50-50 MLP (Fig. 16)", DQNParams(epsilon_anneal_episodes=100)),
]


def bench_agent_step(params, steps: int = 1500, rounds: int = 3, warmup: int = 300,
                     seed: int = 0) -> tuple[float, float, int]:
    """(median wall ms, median CPU ms, SGD steps per env step) of one full agent step on cartpole.

    One step = act + env.step + update_buffer (with its SGD step), as in `live`; the buffer
    is first filled past `min_replay` so every timed step trains. Episodes restart as needed.
    """
    env = CartpoleSwingUp(CartpoleSwingUpParams(), np.random.default_rng(seed))
    agent = make_ensemble_agent(params, env, np.random.default_rng(seed + 1))
    state = [None]

    def run(n: int) -> None:
        for _ in range(n):
            if state[0] is None:
                agent.learn_from_buffer()
                state[0] = env.reset().new_state
            tr = env.step(agent.act(state[0]))
            agent.update_buffer(tr)
            state[0] = tr.new_state

    run(max(warmup, params.min_replay + 1))
    walls, cpus = [], []
    sgd0 = agent.sgd_steps
    for _ in range(rounds):
        w, c = time.perf_counter(), time.process_time()
        run(steps)
        walls.append(1e3 * (time.perf_counter() - w) / steps)
        cpus.append(1e3 * (time.process_time() - c) / steps)
    return float(np.median(walls)), float(np.median(cpus)), (agent.sgd_steps - sgd0) // (rounds * steps)


# label, parameters, environment parameters: rvfx validate's model checked on each
MODEL_CASES = [
    ("cartpole_rlsvi 50-50, sgd_period 4", EnsembleParams(K=20, sgd_period=4), {}),
    ("cartpole_rlsvi 50-50, sgd_period 1", EnsembleParams(K=20, sgd_period=1), {}),
    ("cartpole_rlsvi one layer, sgd_period 4", EnsembleParams(K=20, hidden2=0, sgd_period=4), {}),
    ("cartpole_rlsvi linear, sgd_period 4", EnsembleParams(K=20, hidden1=0, hidden2=0, sgd_period=4), {}),
    ("cartpole_dqn, sgd_period 4", DQNParams(sgd_period=4, epsilon_anneal_episodes=300), {}),
    ("cartpole_confirm 50-50 (trig, double)", EnsembleParams(
        K=20, sgd_period=4, prior_scale=3.0, td_target="double", target_period=500, acting_weights="live",
        diagnostics_every=50), {"observation": "trig"}),
]


def model_cases() -> list[Case]:
    """`MODEL_CASES` timed over 1001-step episodes after one episode of warm-up."""
    return [Case("network", label, "dqn" if isinstance(params, DQNParams) else "ensemble_rlsvi", params,
                 "cartpole_swingup", CartpoleSwingUpParams(tau_pole_mass=True, **env_values), 1, 3)
            for label, params, env_values in MODEL_CASES]


def main() -> None:
    t0 = time.perf_counter()
    bench_scalar(episodes=1)  # warm up
    scalar = bench_scalar()
    print("cartpole swing-up physics (eq. 7.2, Euler, dt = 0.01)")
    print(f"  scalar env (B=1):           {scalar:12,.0f} steps/s")
    for b in (1, 20, 100):
        rate = bench_batch(batch=b)
        print(f"  batch physics (B={b:3d}):     {rate:12,.0f} cart-steps/s  ({rate / scalar:5.2f}x scalar)")
    print("full agent step on cartpole (act + env step + update_buffer + 1 SGD step, batch 128, Adam)")
    for label, params in AGENT_CASES:
        wall, cpu, per = bench_agent_step(params)
        print(f"  {label:48s} {1e3 / wall:8,.0f} steps/s wall ({wall:6.3f} ms), "
              f"{1e3 / cpu:8,.0f} steps/s CPU ({cpu:6.3f} ms); "
              f"{cpu * 1.001:5.2f} CPU-s per 1001-step episode")
    check("cartpole swing-up (tau_pole_mass)", model_cases())
    print(f"benchmark took {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()

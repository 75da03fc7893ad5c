"""bsuite's JAX boot_dqn: CPU time of its per-step update (run by the bsuite venv's interpreter).

    .venv-bsuite/bin/python benchmarks/boot_dqn_step.py OBS_SHAPE NUM_ACTIONS [STEPS ROUNDS]

e.g. `25,25 2` (deep sea N=25: bsuite's one-hot image, read by a dense first layer) or `5 3` (rvfx's
cartpole vector). Builds bsuite's own `boot_dqn.default_agent` (K=20 members, each a 50-50 MLP plus a
prior MLP, batch 128, Adam 1e-3, one SGD step per environment step), fills its replay with random
transitions, and times `agent.update`: the enqueue, one minibatch from the replay, every member's
jitted `sgd_step` and the target copies, which is what the agent costs per environment step besides
acting. Prints one JSON line: median, min and max ms per step over ROUNDS rounds of STEPS updates,
in process CPU time (all of XLA's threads), after a warm-up that compiles the step. XLA runs on one
thread, as rvfx's BLAS does. Imports nothing from rvfx: the bsuite venv does not hold it.
"""
import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import dm_env  # noqa: E402
import numpy as np  # noqa: E402
from bsuite.baselines.jax import boot_dqn  # noqa: E402
from dm_env import specs  # noqa: E402

FILL = 1_000          # transitions in the replay before timing (> the agent's min_replay_size of 128)
WARMUP = 5            # updates before timing: the first compiles sgd_step


def observations(shape: tuple, rng: np.random.Generator, n: int) -> np.ndarray:
    """n float32 observations: one-hot images for a 2-d shape (deep sea), standard normal vectors otherwise."""
    if len(shape) == 2:
        obs = np.zeros((n, *shape), np.float32)
        obs.reshape(n, -1)[np.arange(n), rng.integers(0, shape[0] * shape[1], n)] = 1.0
        return obs
    return rng.standard_normal((n, *shape)).astype(np.float32)


def main(shape: tuple, num_actions: int, steps: int, rounds: int) -> dict:
    np.random.seed(0)                     # the agent draws masks and minibatches from np.random
    rng = np.random.default_rng(0)
    agent = boot_dqn.default_agent(specs.Array(shape, np.float32), specs.DiscreteArray(num_actions))
    obs = observations(shape, rng, FILL + WARMUP + steps * rounds + 1)
    actions = rng.integers(0, num_actions, len(obs))
    i = 0

    def update() -> None:
        nonlocal i
        step = dm_env.transition(reward=0.0, observation=obs[i])
        agent.update(step, int(actions[i]), dm_env.transition(reward=float(rng.random() < 0.1),
                                                               observation=obs[i + 1]))
        i += 1

    for _ in range(FILL // 2):            # below min_replay_size these only enqueue
        agent._replay.add([obs[i], int(actions[i]), np.float32(0.0), np.float32(1.0), obs[i + 1],
                           np.ones(agent._num_ensemble), np.zeros(agent._num_ensemble)])
        i += 1
    for _ in range(WARMUP):
        update()
    ms = []
    for _ in range(rounds):
        t = time.process_time()
        for _ in range(steps):
            update()
        ms.append((time.process_time() - t) / steps * 1e3)
    return {"ms": float(np.median(ms)), "min": min(ms), "max": max(ms), "rounds": rounds, "steps": steps}


if __name__ == "__main__":
    obs_shape = tuple(int(n) for n in sys.argv[1].split(","))
    extra = [int(a) for a in sys.argv[3:5]]
    print(json.dumps(main(obs_shape, int(sys.argv[2]), *(extra or [20, 5]))))

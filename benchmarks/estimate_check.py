"""`rvfx validate`'s speed model against measured CPU time, one run at a time.

A case runs an agent through `live` (as a paper-scale run does: BLAS on one thread, every episode
logged), then times `episodes` more in process CPU time and sets the result beside the model's CPU
time for those same episodes (`rvfx.experiment.memory.cpu_seconds`: the difference between the
run charged to its end and to its start, so a cost that grows with the history is charged at the
history it has). bench_tabular, bench_ensemble and bench_cartpole each print their cases: the
model's constants are re-measured by running them, and a ratio model/measured below 1 is a
constant to raise.
"""
from __future__ import annotations

import time

import numpy as np

from rvfx.agents import AGENTS, make_agent
from rvfx.core.live import live
from rvfx.experiment import memory


def model_over_measured(label: str, algorithm: str, params, env, warmup: int, episodes: int,
                        seed: int = 1) -> tuple[float, float]:
    """Print and return (measured, model) CPU seconds per episode of `episodes` episodes after `warmup`."""
    agent = make_agent(algorithm, params, env, np.random.default_rng(seed))
    live(agent, env, warmup, log_every="last")
    start = time.process_time()
    live(agent, env, episodes, log_every="all")
    measured = (time.process_time() - start) / episodes
    charged = [memory.cpu_seconds(algorithm, params, env.params, n) for n in (warmup, warmup + episodes)]
    model = (charged[1] - charged[0]) / episodes
    steps = memory.sizes(algorithm, params, env.params)["steps"]
    print(f"  {label:44s} {1e3 * measured:9.3f} ms/episode ({1e3 * measured / steps:7.4f} ms/step) measured, "
          f"model {1e3 * model:9.3f}: model/measured {model / measured:5.2f}", flush=True)
    return measured, model


def agent_params(algorithm: str, **values):
    """The agent's parameter dataclass with `values` (the specs' settings)."""
    return AGENTS[algorithm].params(**values)

"""The matmul floor of the neural SGD step: its own products, and nothing else, in plain NumPy.

`record_products` runs SGD steps on a copy of an agent and notes the shapes and dtypes of every
`np.matmul` the network and the TD step make; `floor_step` then does those products with
`a @ b` on contiguous operands made once per product (no element-wise work, no Python around
them). `step_vs_floor` times the agent's own steps and the floor of the same steps in
interleaved rounds of one process (thread CPU time, BLAS on one thread as in the runs) and
returns the median ratio with its spread over the rounds.
"""
from __future__ import annotations

import copy
import time

import numpy as np
from threadpoolctl import threadpool_limits

from rvfx.agents.neural import ensemble, mlp


class _Recorder:
    """Stands in for the numpy module inside the network's modules: np.matmul notes its shapes."""

    def __init__(self, log: list):
        self._log = log

    def matmul(self, a, b, *args, **kwargs):
        self._log[-1].append((np.shape(a), np.shape(b), np.result_type(a, b)))
        return np.matmul(a, b, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(np, name)


def record_products(agent, steps: int) -> list[list[tuple]]:
    """[[(a shape, b shape, dtype), ...] per step] of `steps` SGD steps of a copy of `agent`."""
    clone, log = copy.deepcopy(agent), []
    modules = (mlp, ensemble)
    saved = [m.np for m in modules]
    try:
        for m in modules:
            m.np = _Recorder(log)
        for _ in range(steps):
            log.append([])
            clone.sgd_step()
    finally:
        for m, s in zip(modules, saved):
            m.np = s
    return log


def floor_operands(products: list[list[tuple]], rng: np.random.Generator) -> list[list[tuple]]:
    """Contiguous random operands for every recorded product (made before timing): one pair per
    position in the step and shapes, so products that differ in the step differ here too."""
    made: dict = {}

    def pair(key):
        if key not in made:
            _, a, b, dt = key
            made[key] = (rng.standard_normal(a).astype(dt), rng.standard_normal(b).astype(dt))
        return made[key]

    return [[pair((i, a, b, dt)) for i, (a, b, dt) in enumerate(step)] for step in products]


def floor_step(operands: list[tuple]) -> None:
    for a, b in operands:
        a @ b


def step_vs_floor(agent, steps: int = 200, rounds: int = 7, seed: int = 0) -> dict:
    """Median ms per SGD step of `agent`, of its matmul floor, and their ratio, over interleaved rounds.

    Each round takes `steps` SGD steps of the agent, then the products of the same steps
    (recorded beforehand on a copy) in plain NumPy.
    """
    clock = time.thread_time
    products = record_products(agent, steps * rounds)
    operands = floor_operands(products, np.random.default_rng(seed))
    step_ms, floor_ms, ratios = [], [], []
    with threadpool_limits(limits=1, user_api="blas"):
        for r in range(rounds):
            chunk = operands[r * steps:(r + 1) * steps]
            t = clock()
            for _ in range(steps):
                agent.sgd_step()
            s = (clock() - t) / steps * 1e3
            t = clock()
            for ops in chunk:
                floor_step(ops)
            f = (clock() - t) / steps * 1e3
            step_ms.append(s)
            floor_ms.append(f)
            ratios.append(s / f)
    return {"step_ms": float(np.median(step_ms)), "step_min": min(step_ms), "step_max": max(step_ms),
            "floor_ms": float(np.median(floor_ms)), "floor_min": min(floor_ms), "floor_max": max(floor_ms),
            "ratio": float(np.median(ratios)), "ratio_min": float(min(ratios)), "ratio_max": float(max(ratios)),
            "products": len(products[0]), "rounds": rounds}


def describe(label: str, res: dict) -> str:
    """Two lines: the network, then step, floor and ratio with their ranges over the rounds."""
    return (f"  {label}\n    SGD step {res['step_ms']:.3f} ms ({res['step_min']:.3f}-{res['step_max']:.3f}), "
            f"matmul floor {res['floor_ms']:.3f} ms ({res['floor_min']:.3f}-{res['floor_max']:.3f}; "
            f"{res['products']} products in plain NumPy), ratio {res['ratio']:.2f} "
            f"({res['ratio_min']:.2f}-{res['ratio_max']:.2f}; medians and ranges over {res['rounds']} "
            f"interleaved rounds; target <= 1.25)")

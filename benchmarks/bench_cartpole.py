"""Cartpole swing-up throughput: environment steps per second, scalar env vs B carts stepped together.

Run: .venv/bin/python benchmarks/bench_cartpole.py  (about 10 s)
"""
from __future__ import annotations

import time

import numpy as np

from rvfx.envs.cartpole import CartpoleSwingUp, CartpoleSwingUpBatch, CartpoleSwingUpParams


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


def main() -> None:
    bench_scalar(episodes=1)  # warm up
    scalar = bench_scalar()
    print(f"scalar env (B=1):           {scalar:12,.0f} steps/s")
    for b in (1, 20, 100):
        rate = bench_batch(batch=b)
        print(f"batch physics (B={b:3d}):     {rate:12,.0f} cart-steps/s  ({rate / scalar:5.2f}x scalar)")


if __name__ == "__main__":
    main()

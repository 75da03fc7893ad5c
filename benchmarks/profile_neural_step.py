"""Where the neural SGD step's time goes: its matrix products, each element-wise pass of its kernels,
Adam, the minibatch, and the rest (Python and small NumPy calls), per network and kernels, in thread
CPU microseconds per step.

Each part is timed by a wrapper around its call (thread CPU time, BLAS on one thread), over `steps`
steps after a warm-up; "rest" is the step's total less the parts. The wrappers cost ~0.3 us per call,
which lands in the parts. The networks are bench_neural_step.py's, on each kernels it times.

Then, per network, what the step's passes over memory (activations and weights larger than this core's
L2 cache) cost the small calls between them: the time of a draw of B minibatch indices made right
after a step (the code and data of NumPy's and Python's calls reloaded from L3 cache) against the
same draw repeated at once, from a generator of its own (the agent's random stream is not touched).

Run: .venv/bin/python benchmarks/profile_neural_step.py  (about a minute)
"""
import rvfx  # noqa: F401, I001  (first: BLAS threads and kernels pinned as in the runs)

import time
from collections import defaultdict

import numpy as np
from bench_neural_step import cartpole_agent, deep_sea_agent, with_kernels
from threadpoolctl import threadpool_limits

from rvfx.agents.neural import ensemble, mlp, optimisers, sparse
from rvfx.agents.neural.ensemble import DQNParams, EnsembleParams

CLOCK = time.thread_time_ns


class _Timed:
    """Stands in for the numpy module in a network module: np.matmul and np.take are timed."""

    def __init__(self, acc: dict):
        self._acc = acc

    def matmul(self, *args, **kwargs):
        t = CLOCK()
        try:
            return np.matmul(*args, **kwargs)
        finally:
            self._acc["products (BLAS)"] += CLOCK() - t

    def take(self, *args, **kwargs):
        t = CLOCK()
        try:
            return np.take(*args, **kwargs)
        finally:
            self._acc["one-hot row gather"] += CLOCK() - t

    def __getattr__(self, name):
        return getattr(np, name)


def _timed(acc: dict, label: str, fn):
    def wrapped(*args, **kwargs):
        t = CLOCK()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[label] += CLOCK() - t
    return wrapped


def profile(agent, steps: int = 500) -> dict:
    """{part: us per step} of `agent`'s SGD steps, "total" and "rest" included."""
    acc: dict = defaultdict(int)
    for _ in range(20):
        agent.sgd_step()                            # warm-up (and the kernels' compilation)
    patches = [(mlp, "np", _Timed(acc)), (ensemble, "np", _Timed(acc)), (sparse, "np", _Timed(acc))]
    kernels = agent.kernels
    for name in ("bias_relu", "relu", "relu_grad_sum", "adam", "adam_rows", "bootstrap", "td", "distinct"):
        patches.append((kernels, name, _timed(acc, f"kernels.{name}", getattr(kernels, name))))
    patches += [(mlp, "_sum_batch", _timed(acc, "output bias gradient (add.reduce)", mlp._sum_batch)),
                (optimisers.Adam, "step", _timed(acc, "Adam.step (all)", optimisers.Adam.step)),
                (agent.buffer, "sample", _timed(acc, "buffer.sample", agent.buffer.sample)),
                (ensemble, "value_gradient", _timed(acc, "repeated states' value gradient",
                                                    ensemble.value_gradient))]
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
    try:
        for obj, name, new in patches:
            setattr(obj, name, new)
        with threadpool_limits(limits=1, user_api="blas"):
            t = CLOCK()
            for _ in range(steps):
                agent.sgd_step()
            total = CLOCK() - t
    finally:
        for obj, name, old in saved:
            setattr(obj, name, old)
        for name in list(vars(kernels)):            # the kernels' own passes again (their class's)
            delattr(kernels, name)
    out = {k: v / steps / 1e3 for k, v in acc.items()}
    inner = sum(v for k, v in out.items() if k != "Adam.step (all)" and not k.startswith("kernels.adam"))
    out["Adam.step (all)"] = out.get("Adam.step (all)", 0.0)
    out["total"] = total / steps / 1e3
    out["rest (Python, small NumPy calls)"] = out["total"] - inner - out["Adam.step (all)"]
    return out


def cold_call(agent, steps: int = 500) -> tuple[float, float]:
    """(us, us): a draw of B indices right after each SGD step, and the same draw again at once."""
    rng, B, size = np.random.default_rng(0), agent.params.batch_size, agent.buffer.size
    first = again = 0
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(steps):
            agent.sgd_step()
            t0 = CLOCK()
            rng.integers(0, size, B)
            t1 = CLOCK()
            rng.integers(0, size, B)
            first, again = first + t1 - t0, again + CLOCK() - t1
    return first / steps / 1e3, again / steps / 1e3


def main() -> None:
    cases = [("cartpole 5-50-50-3 + prior, K=20", cartpole_agent(EnsembleParams(K=20, hidden1=50, hidden2=50))),
             ("deep sea N=25 one-hot, K=20", deep_sea_agent()),
             ("DQN cartpole, K=1", cartpole_agent(DQNParams(epsilon_anneal_episodes=100)))]
    for label, agent in cases:
        for how, on_kernels in with_kernels(agent):
            res = profile(on_kernels)
            print(f"  {label} ({how}), us per SGD step:")
            for k, v in sorted(res.items(), key=lambda kv: -kv[1]):
                print(f"    {v:8.1f}  {k}")
        cold, warm = cold_call(on_kernels)
        print(f"    a draw of B minibatch indices right after a step {cold:.1f} us, the same draw again at once "
              f"{warm:.1f} us")


if __name__ == "__main__":
    main()

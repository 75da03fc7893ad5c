"""The matmul floor of the neural SGD step: its own products, and nothing else, in plain NumPy.

`record_products` runs SGD steps on a copy of an agent and notes the shapes and dtypes of every
`np.matmul` the network and the TD step make; `floor_step` then does those products with
`a @ b` on contiguous operands made once per product (no element-wise work, no Python around
them). A one-hot first layer is no product but a row gather (`np.take` of W_1's rows) and, for its
gradient, rows of W_1 updated in place: those are recorded too (the takes, and the rows of each
`SparseRows` gradient) and timed apart as the plain-NumPy `w.take(rows, axis=0)` and
`w[rows] += values`, so the floor is reported both ways. `step_vs_floor` times the agent's own
steps, the products, and the gathers and scatters, in interleaved rounds of one process (thread
CPU time, BLAS on one thread as in the runs) and returns the median ratios with their spread. The
rounds are short and alternate their order, so a shared machine's drifting speed falls on both
sides of each ratio alike.
"""
from __future__ import annotations

import copy
import time

import numpy as np
from threadpoolctl import threadpool_limits

from rvfx.agents.neural import ensemble, mlp
from rvfx.agents.neural.sparse import SparseRows


class _Recorder:
    """Stands in for the numpy module inside the network's modules: np.matmul notes its shapes,
    np.take (a one-hot layer's row gather) its table and index count."""

    def __init__(self, log: list, sparse: list):
        self._log, self._sparse = log, sparse

    def matmul(self, a, b, *args, **kwargs):
        self._log[-1].append((np.shape(a), np.shape(b), np.result_type(a, b)))
        return np.matmul(a, b, *args, **kwargs)

    def take(self, a, indices, *args, **kwargs):
        self._sparse[-1].append(("take", np.shape(a), np.size(indices), a.dtype))
        return np.take(a, indices, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(np, name)


def record_products(agent, steps: int, sparse: list | None = None) -> list[list[tuple]]:
    """[[(a shape, b shape, dtype), ...] per step] of `steps` SGD steps of a copy of `agent`; with a
    list `sparse`, append to it per step [(kind, table shape, rows, dtype), ...] of the row gathers
    ("take") and of the rows each `SparseRows` gradient updates ("scatter")."""
    clone, log, sparse = copy.deepcopy(agent), [], [] if sparse is None else sparse
    modules = (mlp, ensemble)
    saved = [m.np for m in modules]
    opt, step = clone.ensemble.opt, clone.ensemble.opt.step

    def noting_step(params, grads):
        for p, g in zip(params, grads):
            if isinstance(g, SparseRows):
                sparse[-1].append(("scatter", p.shape, g.rows.shape[0], p.dtype))
        return step(params, grads)

    try:
        for m in modules:
            m.np = _Recorder(log, sparse)
        opt.step = noting_step
        for _ in range(steps):
            log.append([])
            sparse.append([])
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


def sparse_operands(ops: list[list[tuple]], rng: np.random.Generator) -> list[list[tuple]]:
    """(kind, table, distinct sorted rows, values) per recorded gather or scatter, made before timing."""
    tables: dict = {}

    def one(kind, shape, n, dt):
        if shape not in tables:
            tables[shape] = rng.standard_normal(shape).astype(dt)
        rows = np.sort(rng.choice(shape[0], n, replace=False))
        values = rng.standard_normal((n, *shape[1:])).astype(dt) if kind == "scatter" else None
        return kind, tables[shape], rows, values

    return [[one(*op) for op in step] for step in ops]


def sparse_step(operands: list[tuple]) -> None:
    """A one-hot layer's plain-NumPy floor: its row gathers, and its gradients' rows added in place."""
    for kind, w, rows, values in operands:
        if kind == "take":
            w.take(rows, axis=0)
        else:
            w[rows] += values


def step_vs_floor(agent, steps: int = 40, rounds: int = 35, seed: int = 0) -> dict:
    """Median ms per SGD step of `agent`, of its matmul floor, and their ratio, over interleaved rounds;
    with row gathers (one-hot inputs), also their floor and the ratio to products + gathers + scatters.

    Each round takes `steps` SGD steps of the agent, the products of the same steps (recorded
    beforehand on a copy) in plain NumPy, and their gathers and scatters; odd rounds in reverse order.
    """
    clock = time.thread_time
    sparse: list = []
    products = record_products(agent, steps * rounds, sparse)
    rng = np.random.default_rng(seed)
    operands, sparse_ops = floor_operands(products, rng), sparse_operands(sparse, rng)
    times: dict = {"step": [], "floor": [], "sparse": []}

    def sgd_steps(_):
        for _ in range(steps):
            agent.sgd_step()

    def floors(chunk):
        for ops in operands[chunk]:
            floor_step(ops)

    def rows(chunk):
        for ops in sparse_ops[chunk]:
            sparse_step(ops)

    with threadpool_limits(limits=1, user_api="blas"):
        for r in range(rounds):
            chunk = slice(r * steps, (r + 1) * steps)
            works = (("step", sgd_steps), ("floor", floors), ("sparse", rows))
            for name, work in works if r % 2 == 0 else works[::-1]:
                t = clock()
                work(chunk)
                times[name].append((clock() - t) / steps * 1e3)
    step, floor, sparse_ms = (np.array(times[k]) for k in ("step", "floor", "sparse"))
    res = {"products": len(products[0]), "rounds": rounds, "gathers": sum(len(s) for s in sparse) / len(sparse)}
    for key, ms in (("step_ms", step), ("floor_ms", floor), ("sparse_ms", sparse_ms),
                    ("ratio", step / floor), ("ratio_sparse", step / (floor + sparse_ms))):
        low = key.removesuffix("_ms")
        res.update({key: float(np.median(ms)), f"{low}_min": float(ms.min()), f"{low}_max": float(ms.max())})
    return res


def describe(label: str, res: dict) -> str:
    """The network, then step, floor and ratio with their ranges over the rounds; with row gathers,
    a third line: their plain-NumPy time and the ratio to products + gathers + scatters."""
    text = (f"  {label}\n    SGD step {res['step_ms']:.3f} ms ({res['step_min']:.3f}-{res['step_max']:.3f}), "
            f"matmul floor {res['floor_ms']:.3f} ms ({res['floor_min']:.3f}-{res['floor_max']:.3f}; "
            f"{res['products']} products in plain NumPy), ratio {res['ratio']:.2f} "
            f"({res['ratio_min']:.2f}-{res['ratio_max']:.2f}; medians and ranges over {res['rounds']} "
            f"interleaved rounds; target with the fast extra <= 1.4)")
    if res["gathers"]:
        text += (f"\n    one-hot rows in plain NumPy (W_1.take, W_1[rows] += g; {res['gathers']:.1f} per step): "
                 f"{res['sparse_ms']:.3f} ms ({res['sparse_min']:.3f}-{res['sparse_max']:.3f}); ratio to "
                 f"products + rows {res['ratio_sparse']:.2f} ({res['ratio_sparse_min']:.2f}-"
                 f"{res['ratio_sparse_max']:.2f})")
    return text

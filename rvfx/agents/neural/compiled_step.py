"""The SGD step on one-hot inputs (deep sea's pixels) compiled whole: minibatch gather, target and online
passes, TD errors, backprop (`layers`, as `EnsembleMLP` runs it) and Adam in one numba call
(Algorithm 8, lines 1-4; `kernels.keyed_step`), with the bits of `td_step` on the same draw.

What it saves is Python's calls between the passes, each of which reloads its code and data from cache
after the step's passes over memory (benchmarks/profile_neural_step.py). It applies where the agent's
kernels are numba's (with `whole_step`) and its network float32 on one-hot inputs, with a hidden layer
and no dimension of 1, K >= 2 members (the value gradient's product has K columns), a max target and
Adam; and to each draw whose passes have more than one row (a single distinct or fresh state leaves
it to `td_step`). Its state goes in as a few records of the buffer's, the ensemble's and Adam's public
arrays, its scratch from the agent's tape.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from rvfx.agents.neural.optimisers import Adam


class Memory(NamedTuple):
    """The buffer's transitions (`EnsembleBuffer`'s arrays; empty for a perturbation it does not keep)."""
    code: np.ndarray
    next_code: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    noise: np.ndarray
    discount: np.ndarray
    mask: np.ndarray


class Network(NamedTuple):
    """The online and target networks (W_1 as (n, K * H_1) rows, the rest flat as `PriorEnsemble` packs
    them), the flat gradient, and the layout: parameter r (W_1, b_1, W_2, ...) at flat[starts[r]:starts[r + 1]]."""
    w1: np.ndarray
    flat: np.ndarray
    w1_target: np.ndarray
    target: np.ndarray
    grad: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray


class Caches(NamedTuple):
    """`PriorEnsemble`'s per-state caches: prior values (empty: no prior), target values and which are
    valid, and W_1's rows changed since the target's copy."""
    prior: np.ndarray
    values: np.ndarray
    valid: np.ndarray
    changed: np.ndarray


class AdamState(NamedTuple):
    """Adam's moments of W_1 (rows) and of the flat rest, and its step's constants (`Adam.constants`)."""
    m1: np.ndarray
    v1: np.ndarray
    m: np.ndarray
    v: np.ndarray
    constants: tuple


class Work(NamedTuple):
    """The step's scratch: the minibatch's fields, activations and ReLU', values, TD errors, gradients."""
    act: np.ndarray
    rew: np.ndarray
    disc: np.ndarray
    weight: np.ndarray
    z: np.ndarray
    masks: np.ndarray
    q_next: np.ndarray
    v_next: np.ndarray
    q: np.ndarray
    delta: np.ndarray
    g: np.ndarray
    scaled: np.ndarray
    onehot: np.ndarray
    dsum: np.ndarray
    dout: np.ndarray


def applies(agent) -> bool:
    """The agent's SGD step can run compiled whole: see the module's docstring."""
    net = agent.net
    return bool(agent.kernels.whole_step and net.index_input and net.dtype == np.float32 and net.num_layers > 1
                and min(net.sizes[1:]) > 1 and agent.params.batch_size > 1 and agent.K > 1
                and agent.params.td_target == "max" and isinstance(agent.ensemble.opt, Adam))


@functools.lru_cache(maxsize=64)
def _starts(sizes: tuple, K: int) -> np.ndarray:
    """Where each parameter after W_1 starts in the flat buffers (W_1, read by rows, is not in them)."""
    blocks = [0, K * sizes[1]]
    for n_in, n_out in zip(sizes[1:-1], sizes[2:]):
        blocks += [K * n_in * n_out, K * n_out]
    return np.concatenate(([0], np.cumsum(blocks))).astype(np.int64)


def sgd_step(agent, idx: np.ndarray) -> float | None:
    """`td_step` and Adam's step on the buffer's transitions `idx`, compiled; the mean loss, or None, with
    nothing changed, where the kernel leaves the draw to `td_step`."""
    e, buf, tape, opt = agent.ensemble, agent.buffer, agent.tape, agent.ensemble.opt
    sizes, K, B, dt = agent.net.sizes, agent.K, agent.params.batch_size, np.float32
    A, n = sizes[-1], sizes[0]
    none = np.zeros((0, 0), dt)
    memory = Memory(buf.code, buf.next_code, buf.action, buf.reward, none if buf.noise is None else buf.noise,
                    buf.discount, none.astype(np.bool_) if buf.mask is None else buf.mask)
    net = Network(e.params[0].reshape(n, -1), e.flat, e.target_params[0].reshape(n, -1), e.target_flat, e.flat_grad,
                  _starts(tuple(sizes), K), np.array(sizes, np.int64))
    caches = Caches(np.zeros((0, K, A), dt) if e.prior_table is None else e.prior_table, e.target_cache,
                    e.target_valid, e.changed_rows)
    adam = AdamState(opt.m[0].reshape(n, -1), opt.v[0].reshape(n, -1), opt.m[1], opt.v[1],
                     opt.constants(dt, *opt.step_sizes(opt.t + 1)))
    units = B * K * sum(sizes[1:])
    work = Work(tape.buf("c_act", (B,), np.intp), tape.buf("c_rew", (1 if buf.noise is None else K, B), dt),
                tape.buf("c_disc", (B,), dt), tape.buf("c_w", (0 if buf.mask is None else B, K), np.bool_),
                tape.buf("c_z", (units,), dt), tape.buf("c_m", (units,), np.bool_), tape.buf("c_qn", (B, K, A), dt),
                tape.buf("v_next", (K, B), dt), tape.buf("c_q", (B, K, A), dt), tape.buf("delta", (K, B), dt),
                tape.buf("g", (K, B), dt), tape.buf("c_g", (K, B), dt), tape.buf("c_hot", (B * B * A,), dt),
                tape.buf("c_dsum", (B * A * K,), dt), tape.buf("c_dout", (B * K * A,), dt))
    if not agent.kernels.keyed_step(idx, memory, net, caches, adam, work):
        return None
    opt.t += 1
    return 0.5 * float(np.vdot(work.g, work.delta)) / (B * K)

"""What a run costs, from its parameters alone: its sizes, its peak memory and a coarse CPU time.

Validation uses these to refuse, before anything runs, a run that cannot fit in this machine's
memory and a sweep whose time is absurd. The memory estimate counts the arrays the agent and
the environment allocate (tables, replay buffer, network copies, features, stored history,
logged rows) plus the largest one-off temporary; tests/test_bad_inputs.py checks it against
traced peaks. The time model is coarse on purpose (README, Speed): it tells hours from
centuries, not minutes from hours. Each term is declared where its knowledge lives: the
environment's parameters declare its sizes and its arrays (rvfx.core.protocols.RunSizes), the agent's
registry entry its sizes, memory and CPU terms (rvfx.agents.AgentEntry); this module adds them up
and names no agent or environment. An environment without sizes has none before it is built, so
only its logged rows are counted.
"""
from __future__ import annotations

import os
from typing import NamedTuple

from rvfx.agents import AGENTS, costs
from rvfx.core.cost import Part, RunCost
from rvfx.core.live import log_grid
from rvfx.core.protocols import RunSizes

BYTES_PER_ROW = 900         # a logged episode: live's dict, then the shard's row with identity columns
CSV_ROW_BYTES = 400         # a logged episode in the shard's episodes.csv, identity columns included
PROCESS_BYTES = 200 * 2**20  # Python with numpy, scipy and pandas imported, before a run allocates


def entry_sizes(entry, agent, env_params) -> dict | None:
    """A run's sizes: those the environment's parameters declare (`RunSizes`: H, S, A where the
    environment is layered, `steps`, `inputs`, `keys`) and those the agent's registry `entry` adds
    (`AgentEntry.sizes`: M, features per row). None for an environment whose sizes are known only
    once built."""
    out = env_params.run_sizes() if isinstance(env_params, RunSizes) else None
    if out is not None and entry.sizes is not None:
        out.update(entry.sizes(agent, out))
    return out


def sizes(algorithm: str, agent, env_params) -> dict | None:
    """`entry_sizes` of the registered agent `algorithm`."""
    return entry_sizes(AGENTS[algorithm], agent, env_params)


class Estimate(NamedTuple):
    """What a run costs: the terms of its peak memory above the interpreter's (`PROCESS_BYTES`),
    largest first, and its CPU seconds (None when the environment's sizes are unknown)."""
    parts: list
    seconds: float | None


def estimate(entry, agent, env_params, z: dict | None, episodes: int, log: str) -> Estimate:
    """The Estimate of a run of the agent of registry `entry` with sizes `z` (`entry_sizes`): its logged
    rows, the arrays the environment declares (`RunSizes.run_memory`) and the terms the agent declares
    (`AgentEntry.cost`, asked once). CPU time is coarse on purpose, at the rates docs/speed.md reports,
    measured on a loaded machine: CPU time per step varies with the machine and its load (the cartpole's
    SGD step of K = 20 members took 1.7 ms CPU with both cores busy and 3.3 ms at a load of 13-15 on 2
    cores). It adds the fixed costs per step and per episode (rvfx.agents.costs) and the terms the agent
    declares per step, per episode and per run; benchmarks/estimate_check.py sets them beside measured
    runs."""
    logged = episodes if log == "all" else len(log_grid(episodes))
    parts = [Part(f"{logged:,} logged episodes (log: {log})", BYTES_PER_ROW * logged, "episodes")]
    if z is None:
        return Estimate(parts, None)
    size_key = env_params.size_key
    cost = RunCost() if entry.cost is None else entry.cost(agent, z, episodes, size_key)
    parts += [Part(what, nbytes, size_key) for what, nbytes in env_params.run_memory().items()]
    parts += cost.parts
    per_step, per_episode = costs.FIXED_PER_STEP + z.get("step_seconds", 0.0), costs.FIXED_PER_EPISODE
    for term in cost.per_step:
        per_step += term
    for term in cost.per_episode:
        per_episode += term
    seconds = episodes * (z["steps"] * per_step + per_episode)
    for term in cost.per_run:
        seconds += term
    return Estimate(sorted(parts, key=lambda p: -p.nbytes), seconds)


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
    """`Estimate.seconds` of a run of the registered agent `algorithm` (stop_at_learning may end it
    sooner); None when the environment's sizes are unknown."""
    entry = AGENTS[algorithm]
    return estimate(entry, agent, env_params, entry_sizes(entry, agent, env_params), episodes, "log").seconds

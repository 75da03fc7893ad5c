"""`rvfx validate`'s speed model beside measured CPU time, at the sweeps' load.

A `Case` is a run of an agent at a spec's settings. Its agent runs through `live` for `warmup`
episodes (as a paper-scale run does: BLAS on one thread, every episode logged), then `episodes`
more are timed in process CPU time, in `ROUNDS` rounds taken in turn over all the cases: a
disturbance of a few seconds then moves one round of several cases rather than all of one case,
and a case's time is its median round's. The load is the one the constants are for, a sweep's on
two cores (`--jobs 2`, or two sweeps): two processes, one per core, each running every case at
once (`at_sweep_load`); a case's time is the mean of theirs. Time it on a machine whose other work
is paused, so that the two processes are the whole load.

The model's time for those episodes is the difference of `rvfx.experiment.memory.cpu_seconds` at
their end and at their start, so a cost that grows with the history is charged at the history it
has. bench_tabular, bench_linear, bench_ensemble and bench_cartpole `check` their cases: model over
measured per case and, per agent, the least and the largest against `TARGET`; fit_speeds.py refits
the constants on the same cases.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from rvfx.agents import AGENTS, make_agent
from rvfx.core.live import live
from rvfx.envs import ENVS
from rvfx.envs.deep_sea import DeepSeaParams
from rvfx.experiment import memory, runner
from rvfx.experiment.spec import load_spec

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
TARGET = (0.8, 1.5)     # model/measured: no agent charged below 0.8x or above 1.5x of its time
ROUNDS = 5
PROCESSES = 2           # the sweeps' load: one process per core of a 2-core machine


@dataclass(frozen=True)
class Case:
    """A run to time: `family` names the constants fit_speeds fits on it (tabular, linear, network)."""
    family: str
    label: str
    algorithm: str
    params: object
    env: str
    env_params: object
    warmup: int
    episodes: int
    seed_run: object = None         # a spec's run whose generators it uses, else fixed seeds

    @property
    def key(self) -> str:
        """The case's name in fit_speeds' saved measurements."""
        return f"{self.family}/{self.label}"

    def per_round(self) -> int:
        return math.ceil(self.episodes / ROUNDS)


def agent_params(algorithm: str, **values):
    """The agent's parameter dataclass with `values` (the specs' settings)."""
    return AGENTS[algorithm].params(**values)


def deep_sea_case(family: str, label: str, algorithm: str, params, size: int, warmup: int, episodes: int) -> Case:
    """A run on rvfx's deep sea of `size` (treasure) with fixed seeds."""
    return Case(family, f"{label} N={size}", algorithm, params, "deep_sea", DeepSeaParams(size=size), warmup, episodes)


def spec_case(family: str, spec: str, label: str, warmup: int, episodes: int, where: str = "native",
              **want) -> Case:
    """The run of configs/`spec` with agent `label` and these env/agent values (its first seed); a bsuite run
    `where`="native" on rvfx's DeepSea of the size bsuite's id has."""
    exp = load_spec(str(CONFIGS / f"{spec}.yaml"), "paper", allow_long=True)
    run = next(r for r in exp.runs if r.agent == label
               and all({**asdict(r.env_params), **asdict(r.agent_params)}.get(k) == v for k, v in want.items()))
    params, env_params = run.agent_params, run.env_params
    if run.env == "bsuite" and where == "native":
        env, env_params = "deep_sea", DeepSeaParams(size=env_params.run_sizes()["S"])
    else:
        env = run.env
    name = " ".join([spec, label, where if run.env == "bsuite" else "", *(f"{k}={v}" for k, v in want.items())])
    return Case(family, " ".join(name.split()), run.algorithm, params, env, env_params, warmup, episodes, run)


def measure(cases: list[Case]) -> tuple[list[float], float]:
    """Each case's CPU seconds per episode in this process: every agent built and warmed up, then
    `ROUNDS` rounds over all of them; the median round's. And the CPU seconds this process spent."""
    times: list[list[float]] = [[] for _ in cases]
    with threadpool_limits(limits=1, user_api="blas"):
        runs = []
        for case in cases:
            rngs = (runner.run_rngs(case.seed_run) if case.seed_run is not None
                    else (np.random.default_rng(1), np.random.default_rng(2)))
            env = ENVS[case.env][0](case.env_params, rngs[0])
            agent = make_agent(case.algorithm, case.params, env, rngs[1])
            live(agent, env, case.warmup, log_every="last")
            runs.append((agent, env))
        for _ in range(ROUNDS):
            for case, (agent, env), spent in zip(cases, runs, times):
                start = time.process_time()
                live(agent, env, case.per_round(), log_every="all")
                spent.append((time.process_time() - start) / case.per_round())
    return [float(np.median(t)) for t in times], time.process_time()


def busy_seconds() -> float:
    """CPU seconds all processes of this machine have spent since boot (Linux's /proc/stat; 0 elsewhere)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def at_sweep_load(cases: list[Case]) -> np.ndarray:
    """Each case's CPU seconds per episode with `PROCESSES` processes running every case at once (forked:
    they inherit the cases), the mean of theirs. Says how much other work ran meanwhile: it slows the cases."""
    start, wall = busy_seconds(), time.perf_counter()
    with multiprocessing.get_context("fork").Pool(PROCESSES) as pool:
        results = pool.map(measure, [cases] * PROCESSES, chunksize=1)
    other = busy_seconds() - start - sum(spent for _, spent in results)
    print(f"  (other work on the machine meanwhile: {other / (time.perf_counter() - wall):.2f} cores on average; "
          "above ~0.1 it slows the timed cases)", flush=True)
    return np.mean([times for times, _ in results], axis=0)


def charged(case: Case) -> float:
    """The model's CPU seconds per episode over the case's timed episodes (its history included)."""
    at = [memory.cpu_seconds(case.algorithm, case.params, case.env_params, n)
          for n in (case.warmup, case.warmup + ROUNDS * case.per_round())]
    return (at[1] - at[0]) / (ROUNDS * case.per_round())


def summary(cases: list[Case], ratios) -> list[str]:
    """Per agent, the least and the largest model/measured of its cases, against `TARGET`."""
    by_agent: dict[str, list[float]] = {}
    for case, ratio in zip(cases, ratios):
        by_agent.setdefault(case.algorithm, []).append(float(ratio))
    lo, hi = TARGET
    lines = []
    for agent, r in by_agent.items():
        verdict = "within" if lo <= min(r) and max(r) <= hi else "OUTSIDE"
        lines.append(f"  {agent:22s} model/measured {min(r):5.2f}-{max(r):5.2f} over {len(r):2d} cases: "
                     f"{verdict} the target {lo}-{hi}")
    return lines


def report(cases: list[Case], measured) -> np.ndarray:
    """Print model/measured per case and per agent for these measured times; the ratios."""
    ratios = np.array([charged(c) for c in cases]) / measured
    for case, m, r in zip(cases, measured, ratios):
        print(f"  {case.label:48s} {1e3 * m:9.3f} ms/episode measured, model {1e3 * m * r:9.3f}: "
              f"model/measured {r:5.2f}")
    print("\n".join(summary(cases, ratios)), flush=True)
    return ratios


def check(title: str, cases: list[Case]) -> np.ndarray:
    """Time `cases` at the sweeps' load and print model/measured per case and per agent; the ratios."""
    print(f"rvfx validate's model against CPU time per episode, {title} ({PROCESSES} processes on "
          f"{PROCESSES} cores, the median of {ROUNDS} rounds)", flush=True)
    return report(cases, at_sweep_load(cases))

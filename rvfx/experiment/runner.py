"""Execute RunSpecs on any concurrent.futures.Executor, skipping finished runs (resume)."""
from __future__ import annotations

import hashlib
import json
import sys
import time
import traceback
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from rvfx.agents import AGENTS, make_agent
from rvfx.core.live import live
from rvfx.core.protocols import run_tables
from rvfx.envs import ENVS
from rvfx.experiment import results


def seed_sequence(*parts) -> np.random.SeedSequence:
    """A SeedSequence from a stable hash of `parts` (JSON-serialisable)."""
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).digest()
    return np.random.SeedSequence(int.from_bytes(digest[:16], "little"))


def run_rngs(run) -> tuple[np.random.Generator, np.random.Generator]:
    """Environment and agent generators. The environment's depends only on (env, its
    parameters, seed), so every agent of a sweep meets the same instances."""
    env_rng = np.random.default_rng(seed_sequence("env", run.env, run.env_params, run.seed))
    agent_rng = np.random.default_rng(seed_sequence("agent", run.identity()))
    return env_rng, agent_rng


def execute(run) -> dict:
    """Run one RunSpec in this process and return its logged metrics, with the extra per-run
    tables ("tables") the agent and the environment declare (`run_tables`)."""
    env_rng, agent_rng = run_rngs(run)
    env_cls, env_params_cls = ENVS[run.env]
    env = env_cls(env_params_cls(**run.env_params), env_rng)
    agent = make_agent(run.algorithm, AGENTS[run.algorithm].params(**run.agent_params), env, agent_rng)
    metrics = live(agent, env, run.episodes, log_every=run.log, stop_at_learning=run.stop_at_learning)
    metrics["tables"] = run_tables(agent, env)
    return metrics


@dataclass
class Outcome:
    run_id: str
    ok: bool
    message: str = ""


def run_and_store(run, out: str) -> Outcome:
    """Execute `run` and write its shard; a raised error is stored, not propagated."""
    start = time.perf_counter()
    try:
        metrics = execute(run)
    except Exception:
        path = results.write_failure(out, run, traceback.format_exc())
        return Outcome(run.run_id, False, f"{path}")
    learning_time = metrics["learning_time"]
    has_regret = metrics["final_cum_regret"] is not None
    summary = {"learning_time": learning_time if learning_time is not None else "",
               "censored": learning_time is None if has_regret else "",
               "episodes_run": metrics["episodes_run"],
               "final_cum_regret": metrics["final_cum_regret"] if has_regret else ""}
    results.write_shard(out, run, metrics["episodes"], summary, time.perf_counter() - start, metrics["tables"])
    return Outcome(run.run_id, True)


def run_sweep(runs, out: str, jobs: int = 1, executor: Executor | None = None) -> list[Outcome]:
    """Run every unfinished run; `jobs` > 1 uses a process pool unless `executor` is given
    (any concurrent.futures.Executor, e.g. a dask.distributed Client's executor)."""
    # seed by seed (spec order within a seed): an interrupted sweep has seen every cell first
    pending = sorted((r for r in runs if not results.is_done(out, r)), key=lambda r: r.seed)
    outcomes = []
    # In a terminal the bar redraws in place; redirected to a log (a background sweep) it still
    # reports, once a minute, so `tail` shows progress and an ETA.
    tty = sys.stderr.isatty()
    bar = tqdm(total=len(pending), desc="runs", unit="run", mininterval=0.1 if tty else 60.0,
               miniters=None if tty else 1)
    if executor is None and jobs <= 1:
        for run in pending:
            outcomes.append(run_and_store(run, out))
            bar.update()
    else:
        own = executor is None
        executor = executor or ProcessPoolExecutor(max_workers=jobs)
        try:
            futures = [executor.submit(run_and_store, run, out) for run in pending]
            for fut in as_completed(futures):
                outcomes.append(fut.result())
                bar.update()
        finally:
            if own:
                executor.shutdown(cancel_futures=True)
    bar.close()
    return outcomes

"""Execute RunSpecs: find which are finished (`plan_sweep`: each shard verified once) and run the
others in this process, on a local pool, on any concurrent.futures Executor or on Dask
(rvfx.experiment.executors), one sweep per experiment folder at a time (`sweep_lock`), with a
progress bar over episodes and a clean stop on Ctrl-C. rvfx.api.run puts these together."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import signal
import socket
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Executor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from rvfx.agents import make_agent
from rvfx.core.live import live
from rvfx.core.protocols import run_tables
from rvfx.envs import ENVS
from rvfx.experiment import folders, results
from rvfx.experiment.checkpoint import Checkpoint
from rvfx.experiment.dask_pool import dask_pool
from rvfx.experiment.executors import ExecutorPool, LocalPool, Progress, Stopped
from rvfx.experiment.plugins import load_plugins
from rvfx.experiment.provenance import blas, blas_info

LOG_EVERY = 60.0   # seconds between progress lines when stderr is not a terminal (a log)
POLL = 0.5         # seconds between the driver's looks at running runs
RETRIES = 1        # times a run whose pool worker died is run again before it is recorded failed


def seed_sequence(*parts) -> np.random.SeedSequence:
    """A SeedSequence from a stable hash of `parts` (JSON-serialisable)."""
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).digest()
    return np.random.SeedSequence(int.from_bytes(digest[:16], "little"))


def run_rngs(run) -> tuple[np.random.Generator, np.random.Generator]:
    """Environment and agent generators. The environment's depends only on (env, its
    parameters as the run's identity spells them, seed), so every agent of a sweep meets the same
    instances."""
    env_rng = np.random.default_rng(seed_sequence("env", run.env, run.recorded.identity["env"], run.seed))
    agent_rng = np.random.default_rng(seed_sequence("agent", run.identity()))
    return env_rng, agent_rng


def execute(run, on_episode: Callable[[int], None] | None = None, checkpoint: Checkpoint | None = None) -> dict:
    """Run one RunSpec in this process and return its logged metrics, with the extra per-run
    tables ("tables") the agent and the environment declare (`run_tables`). `on_episode` hears the
    end of each episode (progress; it may stop the run); with a `checkpoint` the run goes on from
    it when it verifies, and checkpoints as it goes.

    BLAS runs on one thread: runs are parallel across processes, and a multi-threaded BLAS on
    the small products of these agents is slower (~0.04 ms vs ~15 ms for one first-layer product
    of the cartpole ensemble on 2 busy cores) and may round differently. `import rvfx` sets the
    thread count before NumPy loads; this holds it where NumPy loaded first (a notebook, a Dask
    worker), and warns where the BLAS kernels are not the ones `import rvfx` pins."""
    warn_unless_pinned_kernels()
    with blas().limit(limits=1):
        env_rng, agent_rng = run_rngs(run)
        env = ENVS[run.env][0](run.env_params, env_rng)
        agent = make_agent(run.algorithm, run.agent_params, env, agent_rng)
        state = checkpoint.load(agent, env) if checkpoint is not None else None      # restored into agent and env
        metrics = live(agent, env, run.episodes, log_every=run.log, stop_at_learning=run.stop_at_learning,
                       on_episode=on_episode, state=state,
                       after_episode=None if checkpoint is None else lambda s: checkpoint.save_if_due(agent, env, s))
        metrics["tables"] = run_tables(agent, env)
    return metrics


def warn_unless_pinned_kernels() -> None:
    """Warn where OpenBLAS runs other kernels than OPENBLAS_CORETYPE asks (NumPy loaded before
    rvfx, without it): the run is sound, but its CSV may differ in the last digits from
    another machine's."""
    pinned = os.environ.get("OPENBLAS_CORETYPE")
    for lib in blas_info():
        if pinned and lib["internal_api"] == "openblas" and lib["architecture"].lower() != pinned.lower():
            warnings.warn(f"OpenBLAS runs {lib['architecture']} kernels, not {pinned}: set "
                          f"OPENBLAS_CORETYPE={pinned} before NumPy loads for CSV byte-identical "
                          "across machines", RuntimeWarning, stacklevel=2)


@dataclass
class Outcome:
    run_id: str
    ok: bool
    message: str = ""


def run_and_store(run, out: str, progress: Progress | None = None) -> Outcome:
    """Execute `run` (from its checkpoint, if one verifies) and write its shard; a raised error
    is stored, not propagated. `progress` hears each episode and may stop the run (Stopped),
    which then leaves nothing behind but its last checkpoint."""
    load_plugins(run.plugins)                # a worker started afresh (spawn, Dask) knows no plugin yet
    ckpt = Checkpoint(out, run)
    try:
        metrics = execute(run, progress, ckpt)
    except Stopped:
        return Outcome(run.run_id, False, "stopped")
    except Exception:
        path = results.write_failure(out, run, traceback.format_exc())
        ckpt.remove()
        return Outcome(run.run_id, False, f"{path}")
    learning_time = metrics["learning_time"]
    has_regret = metrics["final_cum_regret"] is not None
    summary = {"learning_time": learning_time if learning_time is not None else "",
               "censored": learning_time is None if has_regret else "",
               "episodes_run": metrics["episodes_run"],
               "final_cum_regret": metrics["final_cum_regret"] if has_regret else ""}
    results.write_shard(out, run, metrics["episodes"], summary, ckpt.elapsed(), metrics["tables"])
    ckpt.remove()
    return Outcome(run.run_id, True)


@dataclass
class Plan:
    """What a sweep finds before it runs: each run's problem (None for a finished run, whose shard
    verifies; "missing" or why its shard cannot be used), the runs recorded elsewhere (`--record`,
    not looked at), and the episode each resumable run's checkpoint holds. `verified` names the runs
    whose shards this command has verified: collect and a record read those without checking them
    again, and add each one they check."""
    problems: dict[str, str | None]
    recorded: set
    resumable: dict[str, int]
    pending: list
    verified: set
    notes: list = dataclasses.field(default_factory=list)      # what the command says before the counts

    @property
    def done(self) -> int:
        """Runs whose shard verified before the sweep."""
        return sum(problem is None for problem in self.problems.values())


def plan_sweep(out: str, runs, recorded: set = frozenset(), notes: list = ()) -> Plan:
    """The Plan of `runs` in `out`: every shard verified once, the runs in `recorded` left out."""
    from rvfx.experiment.checkpoint import resumable
    problems = results.shard_problems(out, [r for r in runs if r.run_id not in recorded])
    pending = [r for r in runs if problems.get(r.run_id) is not None]
    return Plan(problems, set(recorded), resumable(out, pending), pending,
                {run_id for run_id, problem in problems.items() if problem is None}, list(notes))


class SweepBusy(Exception):
    """Another sweep holds the experiment folder's lock, or what is there is not a lock."""


class Interrupted(Exception):
    """Ctrl-C stopped the sweep; the shards of finished runs are kept."""


@contextmanager
def sweep_lock(out, experiment: str):
    """Hold OUT/<experiment>/.lock for one sweep, so that a second sweep into the same folder
    stops at once (SweepBusy) instead of racing this one for its shards (folders.lock: an flock,
    dropped when the holder dies). Failing beats waiting: a second sweep there is usually the
    same command started twice."""
    path = folders.inside(out, experiment) / ".lock"
    try:
        with folders.lock(path, f"rvfx run, pid {os.getpid()} on {socket.gethostname()}",
                          "wait for it to finish or use another --out"):
            yield
    except folders.Busy as err:
        raise SweepBusy(str(err)) from None


class SweepProgress:
    """Episodes done across the sweep (finished runs in full, running ones as last reported) and
    an ETA: a bar in a terminal; in a log, a line every LOG_EVERY seconds and one at the end."""

    def __init__(self, name: str, pending):
        self.name, self.episodes = name, {r.run_id: r.episodes for r in pending}
        self.total = sum(self.episodes.values())
        self.done, self.running, self.n, self.finished = set(), {}, 0, 0     # finished: the done runs' episodes
        self.start = self.logged = time.monotonic()
        self.bar = tqdm(total=self.total, desc=name, unit="ep", mininterval=0.5) if sys.stderr.isatty() else None

    def update(self, running: dict[str, int] | None = None, finished: str | None = None) -> None:
        self.running.update((r, e) for r, e in (running or {}).items() if r not in self.done)
        if finished is not None and finished not in self.done:
            self.done.add(finished)
            self.finished += self.episodes[finished]
            self.running.pop(finished, None)
        n = min(max(self.finished + sum(self.running.values()), self.n), self.total)  # a retry may report from 0
        runs = f"{len(self.done)}/{len(self.episodes)} runs"
        if self.bar is not None:
            self.bar.set_postfix_str(runs, refresh=False)
            self.bar.update(n - self.n)
        elif time.monotonic() - self.logged >= LOG_EVERY:
            self._log(n, runs)
        self.n = n

    def _log(self, n: int, runs: str) -> None:
        self.logged = time.monotonic()
        meter = tqdm.format_meter(n, self.total, self.logged - self.start, prefix=self.name, unit="ep",
                                  postfix=runs, ncols=0)
        print(meter, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        else:
            self._log(self.n, f"{len(self.done)}/{len(self.episodes)} runs")


class _InProcess:
    """The link of a run executing in the driver: progress goes straight to the bar."""

    def __init__(self, progress: SweepProgress):
        self.progress = progress

    def report(self, run_id, episodes):
        self.progress.update({run_id: episodes})

    def stopping(self):
        return False


def run_sweep(runs, out: str, jobs: int = 1, executor: Executor | None = None,
              dask: str | None = None, on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Run `runs` (the unfinished runs of one experiment: `plan_sweep`'s pending; the caller holds its
    `sweep_lock`) seed by seed: in this process when `jobs` is 1, else on a pool of `jobs` workers but
    never more than there are runs, on `executor` (any concurrent.futures.Executor), or on a Dask
    cluster (`dask`: local:N or tcp://HOST:PORT); `on_outcome` hears each run's Outcome as it comes.
    Ctrl-C cancels the runs not started, stops those running at their next episode and raises
    Interrupted; finished shards stay."""
    outcomes = []
    if not runs:
        return outcomes
    # seed by seed (spec order within a seed): an interrupted sweep has seen every cell first
    pending = sorted(runs, key=lambda r: r.seed)
    try:
        _clean_strays(out, pending[0].experiment)
        _run_pending(pending, out, outcomes, jobs, executor, dask, on_outcome)
    except KeyboardInterrupt:
        heard = {o.run_id for o in outcomes}             # the others may have finished unreported
        kept = sum(o.ok for o in outcomes) + sum(results.is_done(out, r) for r in pending if r.run_id not in heard)
        raise Interrupted(f"interrupted: {kept} of {len(pending)} run(s) finished and kept") from None
    return outcomes


def _run_pending(pending, out: str, outcomes: list, jobs: int, executor, dask, on_outcome=None) -> None:
    """Run `pending` as run_sweep says, appending each Outcome to `outcomes` (and telling
    `on_outcome`) as it comes."""
    progress = SweepProgress(pending[0].experiment, pending)

    def arrived(outcome: Outcome) -> None:
        outcomes.append(outcome)
        progress.update(finished=outcome.run_id)
        if on_outcome is not None:
            on_outcome(outcome)

    try:
        if executor is None and dask is None and min(jobs, len(pending)) == 1:
            link = _InProcess(progress)
            for run in pending:
                arrived(run_and_store(run, out, Progress(run.run_id, link)))
            return
        pool = (dask_pool(dask) if dask else ExecutorPool(executor) if executor
                else LocalPool(min(jobs, len(pending))))
        try:
            with _deferred_sigint() as interrupted:
                futures, tries = {pool.submit(run_and_store, run, out): run for run in pending}, {}
                while futures and not interrupted.is_set():
                    finished, _ = wait(futures, timeout=POLL, return_when=FIRST_COMPLETED)
                    if pool.rebuilds and any(_broken(f) for f in finished):
                        futures = _after_break(pool, futures, out, tries, arrived)
                        continue
                    for future in finished:
                        arrived(_outcome(future, futures.pop(future), out))
                    progress.update(pool.live())
            if interrupted.is_set():
                pool.stop()
                raise KeyboardInterrupt
        finally:
            pool.close()
    finally:
        progress.close()


def _broken(future) -> bool:
    return not future.cancelled() and isinstance(future.exception(), BrokenProcessPool)


def _after_break(pool, futures: dict, out: str, tries: dict, arrived) -> dict:
    """A pool worker died (SIGKILL, the OOM killer, a crash), which fails every run of the pool:
    the run it held costs one retry (a second loss records it failed, with how its worker
    ended), the others go on, unpenalised, in a fresh pool. Returns the futures to wait on."""
    wait(futures)                                     # the broken pool fails all its runs at once
    lost = pool.lost()
    pool.rebuild()
    _clean_strays(out, next(iter(futures.values())).experiment)
    again = {}
    for future, run in futures.items():
        if not _broken(future):
            arrived(_outcome(future, run, out))
        elif results.is_done(out, run):               # its shard was written before the pool broke
            arrived(Outcome(run.run_id, True))
        elif run.run_id in lost and tries.get(run.run_id, 0) >= RETRIES:
            path = results.write_failure(out, run, f"the run's worker died ({lost[run.run_id]}) on each of its "
                                                   f"{RETRIES + 1} tries")
            arrived(Outcome(run.run_id, False, f"its worker died ({lost[run.run_id]}) on each of its "
                                               f"{RETRIES + 1} tries: {path}"))
        else:
            if run.run_id in lost:
                tries[run.run_id] = tries.get(run.run_id, 0) + 1
                print(f"{run.run_id}: its worker died ({lost[run.run_id]}); retrying the run "
                      f"({tries[run.run_id]} of {RETRIES} retries)", file=sys.stderr, flush=True)
            again[pool.submit(run_and_store, run, out)] = run
    return again


def _clean_strays(out: str, experiment: str) -> None:
    """Remove what a writer killed midway left in the shards and failed folders (.NAME.*.tmp, a
    file, or a folder an older rvfx made); called under the sweep's lock, so no live writer's.
    Never through a link: a link in place of either folder is refused (folders.ForeignFolder)."""
    d = folders.experiment_folder(out, experiment)
    for stray in [*d.glob("shards/.*.tmp"), *d.glob("failed/.*.tmp")]:
        if stray.is_dir() and not stray.is_symlink():
            shutil.rmtree(stray, ignore_errors=True)
        else:
            stray.unlink(missing_ok=True)


@contextmanager
def _deferred_sigint():
    """Within, Ctrl-C only sets the event this yields, which the driver reads between looks at
    its runs: a KeyboardInterrupt raised inside concurrent.futures or a queue could leave a lock
    held and the pool's shutdown waiting forever. A second Ctrl-C, once out, interrupts as usual."""
    flag = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: flag.set())
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)


def _outcome(future, run, out: str) -> Outcome:
    """The run's Outcome, or, when its worker died before returning one (a broken pool, Dask's
    KilledWorker), a failure recorded in the driver so the sweep goes on and a rerun retries it."""
    try:
        return future.result()
    except Exception:
        path = results.write_failure(out, run, f"the run's worker died\n\n{traceback.format_exc()}")
        return Outcome(run.run_id, False, f"{path}")

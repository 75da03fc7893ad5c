"""Where a sweep's runs execute: any concurrent.futures Executor, a local process pool whose
workers die with the driver, or a Dask cluster (rvfx.experiment.dask_pool).

The pool and Dask pass each running run's episode count back to the driver (its progress bar)
and stop running runs at their next episode when the driver is interrupted. Neither draws a
random number or changes an output, so results stay byte-identical whatever runs them.
"""
from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import threading
import time
from concurrent.futures import Executor, Future, ProcessPoolExecutor

from rvfx.experiment.plugins import load_plugins

REPORT_EVERY = 1.0       # seconds between a running run's progress messages


class Stopped(Exception):
    """Raised inside a run, at the end of an episode, once the driver asked the sweep to stop."""


class Progress:
    """A run's `on_episode` callback: sends (run id, episodes done) through `link` at most every
    REPORT_EVERY seconds, and raises Stopped once `link` says the sweep is stopping."""

    def __init__(self, run_id: str, link):
        self.run_id, self.link, self.due = run_id, link, 0.0

    def __call__(self, episode: int) -> None:
        now = time.monotonic()
        if now >= self.due:
            self.due = now + REPORT_EVERY
            self.link.report(self.run_id, episode)
            if self.link.stopping():
                raise Stopped


class ExecutorPool:
    """Runs submitted to any concurrent.futures Executor (not ours to shut down): progress
    counts finished runs only; stopping cancels the runs not yet started."""

    rebuilds = False   # whether a worker's death is survived (lost, rebuild): LocalPool's is

    def __init__(self, executor: Executor):
        self.executor, self.futures = executor, []

    def submit(self, fn, run, out) -> Future:
        future = self.executor.submit(*self._task(fn, run, out))
        self.futures.append(future)
        return future

    def _task(self, fn, run, out) -> tuple:
        return fn, run, out

    def live(self) -> dict[str, int]:
        """Episodes done so far by running runs, by run id (those reported since the last call)."""
        return {}

    def stop(self) -> None:
        for future in self.futures:
            future.cancel()

    def close(self) -> None:
        pass


# ---- local process pool ----------------------------------------------------------------------

_link = None   # in a pool worker: its _QueueLink to the driver, set by _start_worker
_held = None   # in a pool worker: the pool's `held` array, pid and run number of each worker
_slot = 0      # in a pool worker: the index of its own two cells there


class _QueueLink:
    def __init__(self, messages, stop):
        self.messages, self.stop = messages, stop

    def report(self, run_id, episodes):
        self.messages.put((run_id, episodes))

    def stopping(self):
        return self.stop.is_set()


def _start_worker(messages, stop, held, workers) -> None:
    """Pool worker initializer: Ctrl-C is the driver's to handle (it stops runs through `stop`),
    and the worker exits as soon as the driver dies, even by SIGKILL, so none is orphaned. It
    takes two cells of `held`, shared memory in which it says which run it holds (`_in_worker`)."""
    global _link, _held, _slot
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    messages.cancel_join_thread()          # progress may be lost at exit; never wait on it
    _link = _QueueLink(messages, stop)
    with workers.get_lock():
        _slot, workers.value = 2 * workers.value, workers.value + 1
    _held = held
    held[_slot], held[_slot + 1] = os.getpid(), -1
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    """Exit once this process is re-parented, i.e. its parent (the driver, or with forkserver
    the server that exits with the driver) has died."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _in_worker(fn, run, out, number):
    """Run `fn` with the run's number in the worker's cell of `held` meanwhile: a plain store to
    shared memory, which the driver reads even once this process has been killed."""
    load_plugins(run.plugins)                # before the run id, which reads the agent's registry entry
    _held[_slot + 1] = number
    try:
        return fn(run, out, Progress(run.run_id, _link))
    finally:
        _held[_slot + 1] = -1


class LocalPool(ExecutorPool):
    """A ProcessPoolExecutor of `jobs` workers linked to the driver by a queue (progress) and an
    event (stop); BLAS stays at one thread as the workers inherit rvfx's environment. A worker that
    dies breaks a ProcessPoolExecutor (every run it had fails with BrokenProcessPool): `lost` says
    which run the dead worker held, and `rebuild` starts a fresh pool for the runs to go on."""

    rebuilds = True

    def __init__(self, jobs: int):
        self.jobs, self.runs = jobs, []
        super().__init__(self._executor())

    def _executor(self) -> ProcessPoolExecutor:
        """A fresh pool with a fresh queue and `held` array: a killed worker may have died holding
        the old ones' locks."""
        context = self.workers = _Recording(multiprocessing.get_context())
        self.messages, self.stop_event = context.Queue(), context.Event()
        self.held = context.Array("q", [0, -1] * self.jobs, lock=False)
        return ProcessPoolExecutor(self.jobs, mp_context=context, initializer=_start_worker,
                                   initargs=(self.messages, self.stop_event, self.held, context.Value("i", 0)))

    def _task(self, fn, run, out) -> tuple:
        self.runs.append(run)
        return _in_worker, fn, run, out, len(self.runs) - 1

    def lost(self) -> dict[str, str]:
        """Once the pool broke, shut it down and say which runs its workers held, by run id, with
        how each worker ended: those of a worker that died on its own, for the pool itself stops
        the others (SIGTERM) as it breaks, and their runs are not at fault; all held runs when no
        worker is seen to have died otherwise."""
        self.close()                                                           # waits for every worker's end
        processes = {p.pid: p for p in self.workers.started}
        held = {int(self.held[i]): int(self.held[i + 1]) for i in range(0, len(self.held), 2) if self.held[i + 1] >= 0}
        ended = {pid: processes[pid].exitcode if pid in processes else None for pid in held}
        why = {self.runs[n].run_id: (_ending(ended[pid]), ended[pid] != -signal.SIGTERM) for pid, n in held.items()}
        own = {run_id: how for run_id, (how, alone) in why.items() if alone}
        return own or {run_id: how for run_id, (how, _) in why.items()}

    def rebuild(self) -> None:
        """Replace the broken pool (shut down by `lost`) by a fresh one of as many workers."""
        self.executor, self.futures = self._executor(), []

    def live(self) -> dict[str, int]:
        counts = {}
        try:
            while True:
                run_id, episodes = self.messages.get_nowait()
                counts[run_id] = episodes
        except queue.Empty:
            return counts

    def stop(self) -> None:
        super().stop()
        self.stop_event.set()

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.messages.close()


class _Recording:
    """A multiprocessing context that keeps each process it starts (a pool's workers, whose exit
    codes say how a worker that broke the pool ended); the rest is the context's own."""

    def __init__(self, context):
        self.context, self.started = context, []

    def Process(self, *args, **kwargs):  # noqa: N802  (the context's name)
        process = self.context.Process(*args, **kwargs)
        self.started.append(process)
        return process

    def __getattr__(self, name):
        return getattr(self.context, name)


def _ending(exitcode) -> str:
    """How a worker process ended, in words: "killed by SIGKILL", "exit code 1"."""
    if exitcode is None:
        return "ended unseen"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"

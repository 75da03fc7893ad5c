"""Runs on a Dask cluster (`--dask local:N` or `--dask tcp://HOST:PORT`) behind the pool interface of
rvfx.experiment.executors: each run a task whose worker writes its shard, progress and stop through
a distributed Queue and Event."""
from __future__ import annotations

import asyncio
import re
import uuid

from rvfx.experiment.executors import ExecutorPool, Progress
from rvfx.experiment.plugins import load_plugins

CONNECT_TIMEOUT = 10.0   # seconds to reach a Dask scheduler before giving up
WORKER_TIMEOUT = 10.0    # seconds for a reached scheduler to have a worker before giving up


class DaskAddressError(Exception):
    """A `--dask` address that is malformed, unreachable, or not a Dask scheduler."""


class _DaskLink:
    """A Dask task's link to the driver: a distributed Queue and Event shared by name."""

    def __init__(self, name: str):
        from distributed import Event, Queue
        self.messages, self.stop = Queue(name), Event(name)

    def report(self, run_id, episodes):
        self.messages.put([run_id, episodes])

    def stopping(self):
        return self.stop.is_set()


def _on_dask(fn, run, out, name):
    load_plugins(run.plugins)
    return fn(run, out, Progress(run.run_id, _DaskLink(name)))


class DaskPool(ExecutorPool):
    """Runs as tasks of a Dask client (and its LocalCluster, if we started one). A worker that
    dies takes no run with it: the scheduler reruns its task elsewhere, or after too many
    deaths the future raises KilledWorker and the driver records the run failed."""

    def __init__(self, client, cluster=None):
        from distributed import Event, Queue
        super().__init__(client.get_executor(pure=False))
        self.client, self.cluster = client, cluster
        self.name = f"rvfx-{uuid.uuid4().hex}"
        self.messages, self.stop_event = Queue(self.name, client), Event(self.name, client)

    def _task(self, fn, run, out) -> tuple:
        return _on_dask, fn, run, out, self.name

    def live(self) -> dict[str, int]:
        return {run_id: episodes for run_id, episodes in self.messages.get(batch=True)}

    def stop(self) -> None:
        super().stop()
        self.stop_event.set()    # tasks already running stop at their next episode

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


_TCP = re.compile(r"tcp://(\[[0-9A-Fa-f:.]+\]|[^\s/:\[\]]+):\d{1,5}/?")


def dask_pool(address: str) -> DaskPool:
    """`local:N` starts a LocalCluster of N one-thread worker processes on this machine;
    `tcp://HOST:PORT` joins a running scheduler. Anything else, a scheduler that does not answer
    Dask's handshake within CONNECT_TIMEOUT seconds, or one with no worker WORKER_TIMEOUT seconds
    later (its tasks would wait forever), raises DaskAddressError."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise DaskAddressError("--dask needs the dask extra: pip install 'rvfx[dask]'") from None
    local = re.fullmatch(r"local:(\d+)", address)
    if local and int(local[1]) >= 1:
        # no dashboard, so no use for the profiler that samples each running task every 10 ms
        with dask.config.set({"distributed.worker.profile.enabled": False}):
            cluster = LocalCluster(n_workers=int(local[1]), threads_per_worker=1, processes=True,
                                   dashboard_address=None)
        return DaskPool(Client(cluster), cluster)
    if not _TCP.fullmatch(address):
        raise DaskAddressError(f"--dask {address!r}: expected local:N (N >= 1) or tcp://HOST:PORT")
    try:
        asyncio.run(_handshake(address))
        client = Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, asyncio.TimeoutError) as err:
        why = f" ({str(err).splitlines()[0]})" if str(err) else ""
        raise DaskAddressError(f"--dask {address}: no Dask scheduler answered within "
                               f"{CONNECT_TIMEOUT:g} s{why}") from None
    try:
        client.wait_for_workers(1, timeout=WORKER_TIMEOUT)
    except TimeoutError:
        client.close()
        raise DaskAddressError(f"--dask {address}: the scheduler has no workers (none joined within "
                               f"{WORKER_TIMEOUT:g} s); start some with `dask worker {address}`") from None
    return DaskPool(client)


async def _handshake(address: str) -> None:
    """Open a Dask comm to `address`, including the handshake distributed itself waits on forever
    when a server accepts but says nothing."""
    from distributed.comm import connect
    comm = await asyncio.wait_for(connect(address, timeout=CONNECT_TIMEOUT), CONNECT_TIMEOUT)
    comm.abort()

"""Dask as the path beyond one machine, tested against LocalClusters of worker processes on
loopback: same tables as a local pool, a killed worker loses nothing, Ctrl-C stops the
cluster's work, and bad addresses fail fast with one line."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="the Dask tests need the dask extra: pip install -e '.[dask]'")
from cli_helpers import invoke  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

from rvfx.experiment import dask_pool, results  # noqa: E402
from rvfx.experiment.runner import run_sweep  # noqa: E402
from rvfx.experiment.spec import load_spec  # noqa: E402

TABLES = ("episodes.csv", "runs.csv")


def tables(out: Path) -> dict:
    return {name: (out / "tiny" / name).read_bytes() for name in TABLES}


@pytest.fixture(scope="module")
def cluster():
    """Two one-thread worker processes (a killed one is restarted) and a client to watch them."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c, \
            Client(c) as client:
        yield c, client


def test_dask_local_gives_the_same_bytes_as_a_local_pool(tiny_spec, tmp_path):
    assert invoke("run", tiny_spec, "--dask", "local:2", "--out", tmp_path / "d").exit_code == 0
    assert invoke("run", tiny_spec, "--jobs", 2, "--out", tmp_path / "p").exit_code == 0
    assert tables(tmp_path / "d") == tables(tmp_path / "p")
    # and the workers ran the BLAS kernels of the driver (rvfx pins them: a network's numbers depend on them)
    kernels = {(out, shard.name): json.loads(shard.read_text())["blas"]
               for out in ("d", "p") for shard in (tmp_path / out / "tiny" / "shards").iterdir()}
    assert len(kernels) == 16 and len({tuple(k) for k in kernels.values()}) == 1


def test_a_worker_killed_mid_sweep_loses_nothing(tiny_spec, tmp_path, cluster):
    c, client = cluster
    sets = ("seeds=1", "env.size=10", "episodes=1500")
    exp = load_spec(str(tiny_spec), "ci", sets)
    killed = []

    def kill_a_busy_worker():
        busy = busy_worker(client, for_at_least=0.3)
        pid = client.run(os.getpid, workers=[busy])[busy]
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    killer = threading.Thread(target=kill_a_busy_worker)
    killer.start()
    outcomes = run_sweep(exp.runs, str(tmp_path / "d"), dask=c.scheduler_address)
    killer.join()
    assert killed and len(outcomes) == 4 and all(o.ok for o in outcomes)     # its run was redone
    results.collect(tmp_path / "d", exp.runs)
    overrides = [a for s in sets for a in ("--set", s)]
    assert invoke("run", tiny_spec, "--jobs", 1, "--out", tmp_path / "s", *overrides).exit_code == 0
    assert tables(tmp_path / "d") == tables(tmp_path / "s")


def busy_worker(client, for_at_least: float) -> str:
    """The address of a worker that has been running a task for `for_at_least` seconds."""
    while True:
        busy = [w for w, keys in client.processing().items() if keys]
        if busy:
            time.sleep(for_at_least)
            return busy[0]
        time.sleep(0.05)


def test_ctrl_c_cancels_the_sweep_on_the_cluster_and_stops_running_runs(tiny_spec, tmp_path, cluster):
    c, client = cluster
    out = tmp_path / "c"
    cmd = [sys.executable, "-c", "from rvfx.cli import main; main()", "run", str(tiny_spec), "--out", str(out),
           "--dask", c.scheduler_address, "--set", "env.size=10", "--set", "episodes=200000"]  # ~20 s a run
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    busy_worker(client, for_at_least=1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "rerun the same command (finished runs are skipped)" in err.splitlines()[-1]
    deadline = time.monotonic() + 5                          # the runs in progress stop too
    while any(client.run(lambda dask_worker: len(dask_worker.state.executing)).values()):
        assert time.monotonic() < deadline, "a worker still computes the interrupted sweep"
        time.sleep(0.1)
    assert not any((out / "tiny" / "shards").glob("[!.]*"))  # no run finished, none was left running


def silent_server() -> int:
    """A TCP server on loopback that accepts and says nothing (not a Dask scheduler)."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []
    threading.Thread(target=lambda: accepted.extend(server.accept() for _ in range(3)), daemon=True).start()
    return server.getsockname()[1]


def closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return s.getsockname()[1]


@pytest.mark.parametrize("address", ["foo", "http://127.0.0.1:8787", "local:0", "closed", "silent"])
def test_bad_dask_address_fails_within_the_timeout_with_one_line(tiny_spec, tmp_path, monkeypatch, address):
    monkeypatch.setattr(dask_pool, "CONNECT_TIMEOUT", 2.0)
    address = {"closed": lambda: f"tcp://127.0.0.1:{closed_port()}",
               "silent": lambda: f"tcp://127.0.0.1:{silent_server()}"}.get(address, lambda: address)()
    start = time.monotonic()
    result = invoke("run", tiny_spec, "--dask", address, "--out", tmp_path / "x")
    assert time.monotonic() - start < 2.0 + 3
    assert result.exit_code == 2 and "Traceback" not in result.output
    last = result.output.splitlines()[-1]
    assert last.startswith("error: --dask ") and address in last
    assert not any((tmp_path / "x" / "tiny").glob("shards/*"))

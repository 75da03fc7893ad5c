"""`rvfx run` refuses what would fail every run before any starts, and names what failed: a bad
RVFX_KERNELS in one line (exit 2, nothing in failed/); a Dask scheduler without workers within
seconds."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import CONFIGS, invoke

SPEC = [CONFIGS / "deepsea_tabular.yaml", "--set", "seeds=1", "--set", "episodes=20"]


@pytest.mark.parametrize("value", ["garbage", "NUMPY", "numba,numpy"])
def test_a_bad_rvfx_kernels_is_refused_before_any_run(tmp_path, monkeypatch, value):
    monkeypatch.setenv("RVFX_KERNELS", value)
    result = invoke("run", *SPEC, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert [line for line in result.output.splitlines() if line.startswith("error")] == [
        f"error: RVFX_KERNELS={value!r}: expected numba or numpy (unset: numba where the fast extra is installed)"]
    assert not (tmp_path / "out" / "deepsea_tabular" / "failed").exists()
    assert not (tmp_path / "out" / "deepsea_tabular" / "shards").exists()


def test_numba_kernels_asked_for_without_numba_are_refused_before_any_run(tmp_path, monkeypatch):
    from rvfx.agents.neural import fused
    monkeypatch.setenv("RVFX_KERNELS", "numba")
    monkeypatch.setattr(fused, "available", lambda: False)
    result = invoke("run", *SPEC, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert result.output.splitlines()[-1].startswith("error: RVFX_KERNELS='numba': numba is not installed")
    assert not (tmp_path / "out" / "deepsea_tabular" / "shards").exists()


def test_a_dask_scheduler_with_no_workers_is_named_within_seconds(tmp_path):
    """A scheduler that answers but has no worker would hold the sweep's tasks forever: the run ends
    within WORKER_TIMEOUT (10 s) plus start-up, in one line, and nothing is run."""
    distributed = pytest.importorskip("distributed", reason="needs the dask extra")
    with distributed.LocalCluster(n_workers=0, dashboard_address=None) as cluster:
        start = time.monotonic()
        rvfx = str(Path(sys.executable).parent / "rvfx")
        result = subprocess.run([rvfx, "run", *map(str, SPEC), "--out", str(tmp_path / "out"), "--dask",
                                 cluster.scheduler_address], capture_output=True, text=True, timeout=120)
        elapsed = time.monotonic() - start
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower() or "Traceback" in line]
    assert errors == [f"error: --dask {cluster.scheduler_address}: the scheduler has no workers (none joined "
                      f"within 10 s); start some with `dask worker {cluster.scheduler_address}`"], result.stderr
    assert result.stderr.splitlines()[-1] == errors[0]
    assert elapsed < 10 + 30
    assert not (tmp_path / "out" / "deepsea_tabular" / "shards").exists()


NO_SPACE = (28, "No space left on device")


class _Full:
    """A file whose every write fails as a full disk's does: [Errno 28], no file named."""

    def __init__(self, f):
        self.f = f

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()

    def __getattr__(self, name):
        return getattr(self.f, name)

    def write(self, data):
        raise OSError(*NO_SPACE)


def test_a_full_disk_while_the_report_is_written_names_the_file(tmp_path, monkeypatch):
    assert invoke("run", *SPEC, "--out", tmp_path / "results").exit_code == 0
    real = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda fd, *args, **kwargs: _Full(real(fd, *args, **kwargs)))
    result = invoke("report", "--results", tmp_path / "results", "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == f"error: {tmp_path / 'out' / 'report.md'}: No space left on device"
    assert not list((tmp_path / "out").iterdir())

"""The checks before a sweep starts, each of which refuses it in one line (Refused) with nothing run:
OUT/<experiment> is rvfx's to write (no file on the way to it, no link in place of it or of its
folders, not a record), it holds no other spec's sweep that collecting this one would replace, it
can be written and has room for a shard, the checkpoint key is usable, NumPy's BLAS runs here and
RVFX_KERNELS names kernels this environment has.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from rvfx.experiment import folders, results
from rvfx.experiment.spec import resolved_yaml


class Refused(Exception):
    """A sweep that cannot start as asked: the message says why; `code` is the exit status the
    command line gives (2: bad input)."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def _not_under_a_file(out: str, exp) -> None:
    """--out names a place a folder can be: no file on the way to OUT/<experiment>."""
    blocker = next((p for p in (Path(out) / exp.name).parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise Refused(f"--out {out}: {blocker} is not a directory")


def results_folder(out: str, exp) -> None:
    """OUT/<experiment> is rvfx's to write: no file on the way to it, no link in place of it or of its
    folders, and not a record or an export (tables without shards)."""
    _not_under_a_file(out, exp)
    try:
        refused = results.not_results(folders.experiment_folder(out, exp.name))
    except folders.ForeignFolder as err:
        refused = str(err)
    if refused:
        raise Refused(refused)


def other_sweep(out: str, exp) -> None:
    """OUT/<experiment> may hold the sweep of another spec of the same name (its spec.yaml differs):
    that is refused, since collecting this one would replace the other's runs.csv and spec.yaml, unless
    this spec holds every run the other one did (runs.csv and failures.csv name them all): then it is
    that sweep grown, and resuming it loses nothing."""
    d = results.experiment_dir(out, exp.name)
    saved = d / "spec.yaml"
    if not saved.is_file() or saved.read_bytes() == resolved_yaml(exp).encode():
        return
    try:
        before = set().union(*(results.read_table(d / n)["run_id"] for n in ("runs.csv", "failures.csv")
                               if (d / n).exists()))
    except (OSError, ValueError, KeyError) as err:
        raise Refused(f"{d} holds the tables of another spec named {exp.name} ({saved}), unreadable "
                      f"({type(err).__name__}); use another --out, or move {d} aside") from None
    lacks = len(before - {r.run_id for r in exp.runs})
    if lacks:
        raise Refused(f"{d} holds the sweep of another spec named {exp.name} ({saved}); {exp.source} lacks {lacks} "
                      f"of its {len(before)} runs, so collecting it would replace that sweep's tables: use another "
                      f"--out, or move {d} aside")


def writable(out: str, exp) -> None:
    """OUT/<experiment>/ can be made and written (a probe file is written, synced and deleted) and has
    room for a shard, and the user's checkpoint key is usable; after results_folder, which has checked
    the way to it and its folders."""
    from rvfx.experiment.checkpoint import key_problem
    from rvfx.experiment.memory import shard_bytes
    folder = Path(out) / exp.name
    try:
        folders.inside(out, exp.name)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".probe.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(bytes(4096))
                f.flush()
                os.fsync(f.fileno())
        finally:
            os.unlink(probe)
        free = shutil.disk_usage(folder).free
    except folders.ForeignFolder as err:
        raise Refused(str(err)) from None
    except OSError as err:
        raise Refused(f"--out {out}: cannot write results in {folder}: {folders.os_error(err)}") from None
    problem = key_problem()
    if problem:
        raise Refused(f"checkpoint {problem}")
    need = max((shard_bytes(episodes, log) for episodes, log in {(r.episodes, r.log) for r in exp.runs}), default=0)
    if free < need:
        raise Refused(f"--out {out}: {folder} has {free / 2**20:,.1f} MB free, a run's shard needs about "
                      f"{need / 2**20:,.1f} MB")


def kernels() -> None:
    """RVFX_KERNELS names network kernels this environment has (rvfx.agents.neural.fused)."""
    from rvfx.agents.neural.fused import requested_problem
    problem = requested_problem()
    if problem:
        raise Refused(problem)


def blas_runs(dask: str | None) -> None:
    """NumPy's BLAS works where the runs execute: probed here (rvfx.experiment.blas_check), except
    for a remote Dask cluster's workers."""
    from rvfx.experiment.blas_check import blas_problem
    problem = None if dask and not dask.startswith("local:") else blas_problem()
    if problem:
        raise Refused(problem)


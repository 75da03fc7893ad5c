"""What the `rvfx` commands share: a spec loaded with the `--plugin` modules, the checks before any
run starts, an error in one line and its exit code, figures drawn with a line per figure, the
`--record` recorder. The work itself lives in the modules these call.
"""
from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

import click

from rvfx.experiment.params import SpecError


def fail(message: str, code: int):
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def os_error(err: OSError) -> str:
    """'path: reason' of an OS error (both paths of a failed rename)."""
    names = " -> ".join(str(f) for f in (err.filename, err.filename2) if f is not None)
    return f"{names}: {err.strerror}" if names and err.strerror else str(err)


def load(spec_path, scale, sets, allow_long=True):
    """The experiment of SPEC, its runs naming the `--plugin` modules their workers import."""
    from rvfx.experiment.spec import load_spec
    from rvfx.figures import FIGURES
    from rvfx.shipped import spec_path as shipped
    plugins = click.get_current_context().find_root().obj or ()
    try:
        return load_spec(shipped(spec_path), scale, tuple(sets), figure_ids=FIGURES, allow_long=allow_long,
                         plugins=plugins, source=spec_path)
    except SpecError as err:
        fail(_with_known_agents(err, scale), 2)


def _with_known_agents(err: SpecError, scale: str) -> str:
    """The spec error, an unknown algorithm's naming the registered agents nearest to it and `--plugin`."""
    from rvfx.agents import AGENTS, unknown_algorithm
    from rvfx.experiment.spec import resolved_spec
    parts = err.path.split(".")
    if len(parts) != 3 or parts[0] != "agents" or parts[2] != "algorithm" or not err.file:
        return str(err)
    try:
        algo = resolved_spec(err.file, scale)["agents"][parts[1]]["algorithm"]
    except (SpecError, KeyError, TypeError):
        return str(err)
    if not isinstance(algo, str) or algo in AGENTS:      # a --set named it: the message as it was
        return str(err)
    return str(SpecError(err.path, unknown_algorithm(algo), err.file, err.line))


def blas_preflight(dask_address) -> None:
    """Before any run starts here (not on a remote Dask cluster): NumPy's BLAS works in this
    environment (rvfx.experiment.blas_check); else one line, exit 2, and nothing written."""
    from rvfx.experiment.blas_check import blas_problem
    problem = None if dask_address and not dask_address.startswith("local:") else blas_problem()
    if problem:
        fail(problem, 2)


def _not_under_a_file(out: str, exp) -> None:
    """--out names a place a folder can be: no file on the way to OUT/<experiment>; else one line, exit 2."""
    folder = Path(out) / exp.name
    blocker = next((p for p in folder.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        fail(f"--out {out}: {blocker} is not a directory", 2)


def results_folder(out: str, exp) -> None:
    """OUT/<experiment> is rvfx's to write: no link in place of it or of its folders, and not a
    record or an export (tables without shards); else one line, exit 2, nothing written."""
    from rvfx.experiment import folders, results
    _not_under_a_file(out, exp)
    try:
        refused = results.not_results(folders.experiment_folder(out, exp.name))
    except folders.ForeignFolder as err:
        refused = str(err)
    if refused:
        fail(refused, 2)


def preflight(out: str, exp) -> None:
    """Before any run starts: RVFX_KERNELS names kernels this environment has, and OUT/<experiment>/
    can be made and written (a probe file is written, synced and deleted) and has room for a shard;
    else one line, exit 2, and nothing computed."""
    from rvfx.agents.neural.fused import requested_problem
    if requested_problem():
        fail(requested_problem(), 2)
    from rvfx.experiment import folders
    from rvfx.experiment.memory import shard_bytes
    folder = Path(out) / exp.name
    _not_under_a_file(out, exp)
    try:
        folders.inside(out, exp.name)
        folders.experiment_folder(out, exp.name)
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
        fail(str(err), 2)
    except OSError as err:
        fail(f"--out {out}: cannot write results in {folder}: {os_error(err)}", 2)
    from rvfx.experiment.checkpoint import key_problem
    problem = key_problem()
    if problem:
        fail(f"checkpoint {problem}", 2)
    need = max((shard_bytes(r.episodes, r.log) for r in exp.runs), default=0)
    if free < need:
        fail(f"--out {out}: {folder} has {free / 2**20:,.1f} MB free, a run's shard needs about "
              f"{need / 2**20:,.1f} MB", 2)


def recorder(exp, out: str, record_dir: str, claims_path: str):
    """(recorder, recorded): a Recorder that merges the finished runs into the record in RECORD_DIR
    as they come, and the run ids of `exp` that record holds; a record or registry that cannot be
    used, or a record another process is writing (its lock, held here until the command ends),
    ends here, before anything runs."""
    from rvfx.experiment.folders import Busy
    from rvfx.report.export import record_lock
    from rvfx.report.record import Recorder, RecordError, lacking, recorded
    from rvfx.report.registry import RegistryError, load_registry
    try:        # held until the command ends: one writer at a time on a record
        click.get_current_context().with_resource(record_lock(Path(record_dir), exp.name))
    except Busy as err:
        fail(f"--record {record_dir}: {err}", 1)
    try:
        registry = load_registry(claims_path)
        ids, strays = recorded(registry, Path(record_dir), exp)
        recorder = Recorder(registry, Path(out), Path(record_dir), exp)
    except (RecordError, RegistryError) as err:
        fail(str(err), 2)
    except unreadable_tables() as err:
        fail(f"--record {record_dir}: {err}", 2)
    if strays:
        click.echo(f"{Path(record_dir) / exp.name} holds rows of {len(strays)} run id(s) not in this spec "
                   f"({', '.join(strays)}): they are dropped as the record updates, and the runs it lacks rerun",
                   err=True)
    new_tables = lacking(registry, Path(record_dir), exp)
    if new_tables:
        click.echo(f"{Path(record_dir) / exp.name} lacks {', '.join(n + '.csv' for n in new_tables)} (kept since it "
                   f"was recorded): its runs are taken from {Path(out) / exp.name} or rerun", err=True)
    return recorder, ids


def unreadable_tables() -> tuple:
    """The errors of reading a damaged result table or spec.yaml."""
    import pandas as pd
    import yaml

    from rvfx.experiment.results import DamagedTable
    return pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, yaml.YAMLError, DamagedTable


def experiments_in(results_dir) -> list[str]:
    return sorted(p.name for p in Path(results_dir).glob("*") if p.is_dir())


def unreadable_file(results_dir: str, experiments, err: Exception) -> str:
    """Which file of the experiments' tables (or their spec.yaml) cannot be read, and why."""
    import yaml

    from rvfx.experiment.results import DamagedTable, read_table
    if isinstance(err, DamagedTable):
        return str(err)
    for e in experiments:
        folder = Path(results_dir) / e
        for path in [*sorted(folder.glob("*.csv")), folder / "spec.yaml"]:
            try:
                read_table(path) if path.suffix == ".csv" else yaml.safe_load(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                continue
            except unreadable_tables() as bad:
                return f"{path}: damaged, cannot be read ({type(bad).__name__}: {str(bad).strip().splitlines()[0]})"
    return f"{', '.join(str(Path(results_dir) / e) for e in experiments)}: a table cannot be read " \
           f"({type(err).__name__}: {str(err).strip().splitlines()[0]})"


def draw(figures, results_dir, out, shown=None):
    """Draw each figure from RESULTS_DIR/<its experiments>; exit 2 on a damaged table, 1 on missing ones.
    Figures without tables are named once, in one line, with the runs that would make them; `shown`
    is the results folder to name there (the user's, when RESULTS_DIR is a view of it)."""
    from rvfx.experiment.results import missing_runs
    from rvfx.figures import FIGURES
    unreadable = unreadable_tables()
    shown = shown or results_dir
    missing, damaged, absent = [], [], set()
    for fig_id in figures or FIGURES:
        fig = FIGURES[fig_id]
        lacks = [e for e in fig.experiments if not any((Path(results_dir) / e).glob("*.csv"))]
        if lacks:
            missing.append(fig_id)
            absent.update(lacks)
            continue
        try:
            paths = fig.draw(Path(results_dir), Path(out))
            lacking = [(e, missing_runs(results_dir, e)) for e in fig.experiments]
        except FileNotFoundError as err:
            missing.append(fig_id)
            click.echo(f"skipped {fig_id}: {err}", err=True)
            continue
        except unreadable as err:
            damaged.append(fig_id)
            click.echo(f"error: {fig_id}: {unreadable_file(results_dir, fig.experiments, err)}", err=True)
            continue
        click.echo(f"{fig_id}: " + ", ".join(str(p) for p in paths))
        for _, lack in lacking:
            if lack:
                click.echo(f"warning: {fig_id} drawn without {lack}", err=True)
    if absent:
        skipped = [f for f in missing if set(FIGURES[f].experiments) & absent]
        click.echo(f"skipped {len(skipped)} figure(s) with no tables in {shown}: {', '.join(skipped)}; "
                   f"draw them after {_run_hint(sorted(absent), shown)}", err=True)
    if damaged:
        sys.exit(2)
    if missing and figures:
        sys.exit(1)


def _run_hint(experiments: list, results_dir: str) -> str:
    """The command that makes the experiments' tables in the user's results folder."""
    command = f"`rvfx run NAME --out {shlex.quote(str(results_dir))}`"
    return command.replace("NAME", experiments[0]) if len(experiments) == 1 else \
        f"{command} for NAME in {', '.join(experiments)}"

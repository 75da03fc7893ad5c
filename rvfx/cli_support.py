"""What the `rvfx` commands share: a spec loaded with the `--plugin` modules, a sweep run through
rvfx.api.run with its refusals as one line and an exit code, figures drawn with a line per figure.
The work itself lives in the modules these call.
"""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from rvfx.experiment.params import SpecError


def fail(message: str, code: int):
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


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


def sweep(exp, out: str, **options) -> list:
    """rvfx.api.run(exp, out, **options), each refusal ending in one line and its exit code, Ctrl-C in a
    line saying how to resume (exit 130)."""
    from rvfx import api
    from rvfx.experiment.dask_pool import DaskAddressError
    from rvfx.experiment.preflight import Refused
    from rvfx.experiment.runner import Interrupted, SweepBusy
    try:
        return api.run(exp, out, **options)
    except Refused as err:
        fail(str(err), err.code)
    except DaskAddressError as err:
        fail(str(err), 2)
    except SweepBusy as err:
        fail(str(err), 1)
    except Interrupted as err:
        click.echo(f"{err}; to resume, rerun the same command (finished runs are skipped): "
                   f"{shlex.join(['rvfx', *sys.argv[1:]])}", err=True)
        sys.exit(130)


def unreadable_tables() -> tuple:
    """The errors of reading a damaged result table or spec.yaml (rvfx.experiment.results'; imported here
    only once one is raised, so that the command line starts without the results module)."""
    from rvfx.experiment.results import unreadable_tables
    return unreadable_tables()


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

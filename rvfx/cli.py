"""The `rvfx` command line: click commands only, the work lives in the modules they call."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from rvfx.experiment.params import SpecError


def _load(spec_path, scale, sets):
    from rvfx.experiment.spec import load_spec
    from rvfx.figures import FIGURES
    try:
        return load_spec(spec_path, scale, tuple(sets), figure_ids=FIGURES)
    except SpecError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)


@click.group()
def main():
    """Deep exploration via randomized value functions: run specs, draw the paper's figures."""


@main.command()
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--scale", type=click.Choice(["ci", "paper"]), default="ci", show_default=True)
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="worker processes; 1 runs in this process")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="override a spec key, e.g. seeds=3")
@click.option("--out", type=click.Path(file_okay=False), default="results", show_default=True)
@click.option("--dask", "dask_address", metavar="ADDRESS", default=None,
              help="run on a Dask distributed scheduler (needs `pip install distributed`)")
@click.option("--dry-run", is_flag=True, help="print how many runs there are, are done, and remain")
def run(spec, scale, jobs, sets, out, dask_address, dry_run):
    """Expand SPEC into runs, execute the unfinished ones, and collect tidy CSV."""
    from rvfx.experiment import results
    from rvfx.experiment.runner import run_sweep
    from rvfx.experiment.spec import resolved_yaml
    exp = _load(spec, scale, sets)
    problems = {r.run_id: results.shard_problem(out, r) for r in exp.runs}
    done = sum(p is None for p in problems.values())
    click.echo(f"{exp.name} [{scale}]: {len(exp.runs)} runs, {done} done, {len(exp.runs) - done} to run"
               f" -> {Path(out) / exp.name}")
    for run_id, problem in problems.items():
        if problem not in (None, "missing"):
            click.echo(f"rerunning {run_id}: {problem}", err=True)
    if dry_run:
        return
    executor = None
    if dask_address:
        try:
            from distributed import Client
        except ImportError:
            click.echo("error: --dask needs the 'distributed' package (pip install distributed)", err=True)
            sys.exit(2)
        executor = Client(dask_address).get_executor()
    outcomes = run_sweep(exp.runs, out, jobs=jobs, executor=executor)
    results.collect(out, exp.runs, resolved_yaml(exp))
    failed = [o for o in outcomes if not o.ok]
    click.echo(f"{exp.name}: {len(outcomes) - len(failed)} run(s) finished, {len(failed)} failed; "
               f"tables in {Path(out) / exp.name}")
    if failed:
        click.echo(f"{len(failed)} run(s) failed (the others were kept):", err=True)
        for o in failed:
            click.echo(f"  {o.run_id}: {o.message}", err=True)
        sys.exit(1)


@main.command()
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--scale", type=click.Choice(["ci", "paper"]), default="ci", show_default=True)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE")
def validate(spec, scale, sets):
    """Check SPEC without running anything."""
    exp = _load(spec, scale, sets)
    click.echo(f"{spec}: ok ({exp.name}, {len(exp.runs)} runs at scale {scale})")


@main.command()
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--scale", type=click.Choice(["ci", "paper"]), default="ci", show_default=True)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE")
@click.option("--out", type=click.Path(file_okay=False), default="results", show_default=True)
def collect(spec, scale, sets, out):
    """Concatenate SPEC's finished shards into episodes.csv / runs.csv."""
    from rvfx.experiment import results
    from rvfx.experiment.spec import resolved_yaml
    exp = _load(spec, scale, sets)
    for name, path in results.collect(out, exp.runs, resolved_yaml(exp)).items():
        click.echo(f"{name}: {path}")
    lacking = results.missing_runs(out, exp.name)
    if lacking:
        click.echo(f"warning: the tables lack {lacking}", err=True)


@main.command()
@click.argument("figures", nargs=-1)
@click.option("--results", "results_dir", type=click.Path(file_okay=False), default="results", show_default=True)
@click.option("--out", type=click.Path(file_okay=False), default="figures", show_default=True)
def plot(figures, results_dir, out):
    """Draw FIGURES (default: every figure whose results exist) from CSV alone."""
    from rvfx.experiment.params import did_you_mean
    from rvfx.experiment.results import missing_runs
    from rvfx.figures import FIGURES
    for f in figures:
        if f not in FIGURES:
            click.echo(f"error: unknown figure {f!r}{did_you_mean(f, FIGURES)}", err=True)
            sys.exit(2)
    missing = []
    for fig_id in figures or FIGURES:
        fig = FIGURES[fig_id]
        try:
            paths = fig.draw(Path(results_dir), Path(out))
        except FileNotFoundError as err:
            missing.append(fig_id)
            click.echo(f"skipped {fig_id}: {err}", err=True)
            continue
        click.echo(f"{fig_id}: " + ", ".join(str(p) for p in paths))
        for exp_name in fig.experiments:
            lacking = missing_runs(results_dir, exp_name)
            if lacking:
                click.echo(f"warning: {fig_id} drawn without {lacking}", err=True)
    if missing and figures:
        sys.exit(1)


@main.command()
@click.option("--results", "results_dir", type=click.Path(file_okay=False), default="results", show_default=True)
@click.option("--out", type=click.Path(file_okay=False), default="figures", show_default=True,
              help="where report.md and report.html go, beside the figures they show")
@click.option("--claims", "claims_path", type=click.Path(dir_okay=False), default="claims.yaml", show_default=True)
@click.option("--readme", type=click.Path(dir_okay=False), default=None,
              help="also fill (with --check: compare) the blocks <!-- report:begin ID --> ... <!-- report:end -->")
@click.option("--strict", is_flag=True, help="exit 1 unless every claim holds on complete results")
@click.option("--check", is_flag=True, help="write nothing; exit 1 where the report files or README blocks "
                                            "differ from the results")
def report(results_dir, out, claims_path, readme, strict, check):
    """Test every claim of claims.yaml on the result tables: verdicts in OUT/report.md and OUT/report.html."""
    from rvfx import report as rep
    readme_path = Path(readme) if readme else None
    try:
        registry = rep.load_registry(claims_path)
        outcomes = rep.evaluate(registry, Path(results_dir))
        if check:
            problems = rep.check_files(registry, outcomes, Path(out), readme_path)
        else:
            problems = []
            click.echo("report: " + ", ".join(str(p) for p in rep.write_files(registry, outcomes, Path(out),
                                                                                readme_path)))
    except rep.RegistryError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    for line in problems:
        click.echo(line, err=True)
    click.echo(rep.summary_line(outcomes))
    failing = [o for o in outcomes if o.verdict != "holds"] if strict else []
    for o in failing:
        click.echo(f"  {o.claim['id']}: {o.verdict}" + (f" ({o.problem})" if o.problem else ""), err=True)
    if problems or failing:
        sys.exit(1)


@main.command("list")
def list_():
    """Show experiments (configs/), figures, agents and environments with their parameters."""
    from rvfx.agents import AGENTS
    from rvfx.envs import ENVS
    from rvfx.experiment.params import describe
    from rvfx.figures import FIGURES
    click.echo("experiments (configs/*.yaml):")
    for p in sorted(Path("configs").glob("*.yaml")):
        click.echo(f"  {p.stem}")
    click.echo("figures:")
    for f in FIGURES.values():
        click.echo(f"  {f.id:28s} from {', '.join(f.experiments)}: {f.caption}")
    for title, registry in (("agents", AGENTS), ("environments", ENVS)):
        click.echo(f"{title}:")
        for name, (_, params_cls, *_) in registry.items():
            click.echo(f"  {name}")
            for pname, tname, default, doc in describe(params_cls):
                click.echo(f"      {pname} ({tname}, default {default!r}): {doc}")

"""The `rvfx` command line: click commands only, the work lives in the modules they call."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

import rvfx
from rvfx import cli_support as support
from rvfx import shipped
from rvfx.agents import AGENTS
from rvfx.envs import ENVS
from rvfx.experiment.folders import Busy, ForeignFolder, os_error


class _Main(click.Group):
    """An OS error reaching a command (a file that cannot be read or written, a full disk) ends in
    one line naming the file, exit 1; a link or a record where rvfx would write a folder of its own,
    exit 2. A run's own errors never get here: the runner keeps each one's traceback in failed/."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:              # `rvfx list | head`: the reader left, nothing to say
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        except ForeignFolder as err:
            support.fail(str(err), 2)
        except Busy as err:
            support.fail(str(err), 1)
        except OSError as err:
            support.fail(os_error(err), 1)


def _claims_option(help="the claims registry"):
    return click.option("--claims", "claims_path", type=click.Path(dir_okay=False), default=str(shipped.CLAIMS),
                        show_default="the shipped claims.yaml", help=help)


@click.group(cls=_Main)
@click.version_option(rvfx.__version__, prog_name="rvfx")
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE",
              help="import MODULE first (it registers agents, environments or figures; docs/extending.md), "
                   "here and in every worker; installed entry points (rvfx.agents, rvfx.envs, rvfx.figures) "
                   "are always loaded")
@click.pass_context
def main(ctx, plugins):
    """Deep exploration via randomized value functions: run specs, draw the paper's figures."""
    from rvfx.experiment.plugins import PluginError, load_plugins
    from rvfx.figures import FIGURES
    try:
        load_plugins(tuple(plugins), {"rvfx.agents": AGENTS, "rvfx.envs": ENVS, "rvfx.figures": FIGURES})
    except PluginError as err:
        support.fail(str(err), 2)
    ctx.obj = tuple(plugins)


@main.command(epilog="Shipped experiments (`rvfx list experiments`): " + ", ".join(shipped.experiments()))
@click.argument("spec", type=click.Path())
@click.option("--scale", type=click.Choice(["ci", "paper"]), default="ci", show_default=True)
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="worker processes; 1 runs in this process")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="override a spec key, e.g. seeds=3")
@click.option("--out", type=click.Path(), default="results", show_default=True)
@click.option("--allow-long", is_flag=True, help="run a sweep estimated at over a CPU-year")
@click.option("--dask", "dask_address", metavar="ADDRESS", default=None,
              help="run on Dask: local:N (a LocalCluster of N processes) or tcp://HOST:PORT "
                   "(a running scheduler); needs pip install 'rvfx[dask]'")
@click.option("--dry-run", is_flag=True, help="print how many runs there are, are done, and remain")
@click.option("--record", "record_dir", type=click.Path(file_okay=False), default=None,
              help="a committed folder of per-run tables, e.g. figures/paper: runs recorded there are not "
                   "rerun, and it takes each run as it finishes, so a sweep outlives its --out folder")
@_claims_option("the registry naming the tables a --record keeps")
def run(spec, scale, jobs, sets, out, allow_long, dask_address, dry_run, record_dir, claims_path):
    """Expand SPEC into runs, execute the unfinished ones, and collect tidy CSV. SPEC is a spec file
    or the name of a shipped experiment, e.g. `rvfx run deepsea_tabular` from any folder."""
    exp = support.load(spec, scale, sets, allow_long)

    def show(plan) -> None:
        for note in plan.notes:
            click.echo(note, err=True)
        resuming = f" ({len(plan.resumable)} from a checkpoint)" if plan.resumable else ""
        in_record = f", {len(plan.recorded)} recorded in {record_dir}" if record_dir else ""
        click.echo(f"{exp.name} [{scale}]: {len(exp.runs)} runs, {plan.done} done{in_record}, "
                   f"{len(plan.pending)} to run{resuming} -> {Path(out) / exp.name}")
        for run_id, problem in plan.problems.items():
            if problem not in (None, "missing"):
                click.echo(f"rerunning {run_id}: {problem}", err=True)

    outcomes = support.sweep(exp, out, jobs=jobs, dask=dask_address, record=record_dir, claims=claims_path,
                             dry_run=dry_run, on_plan=show)
    if dry_run:
        return
    failed = [o for o in outcomes if not o.ok]
    click.echo(f"{exp.name}: {len(outcomes) - len(failed)} run(s) finished, {len(failed)} failed; "
               f"tables in {Path(out) / exp.name}")
    if failed:
        click.echo(f"{len(failed)} run(s) failed (the others were kept):", err=True)
        for o in failed:
            click.echo(f"  {o.run_id}: {o.message}", err=True)
        sys.exit(1)


@main.command()
@click.argument("specs", metavar="SPEC...", nargs=-1, required=True, type=click.Path())
@click.option("--scale", type=click.Choice(["ci", "paper"]), default="ci", show_default=True)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE")
@click.option("--allow-long", is_flag=True, help="accept a sweep estimated at over a CPU-year, as run does")
def validate(specs, scale, sets, allow_long):
    """Check each SPEC without running anything: what `rvfx run` would refuse, this refuses. With
    several, a last line sums their CPU estimates (`rvfx validate --scale paper configs/*.yaml`)."""
    total, unknown = 0.0, 0
    for spec in specs:
        exp = support.load(spec, scale, sets, allow_long)
        cost = (f"about {exp.cpu_seconds / 3600:,.3g} CPU-hours by a coarse estimate at README's measured speeds; "
                f"a busy or slower machine can take several times that" if exp.cpu_seconds > 0 else
                "no CPU estimate: its environment's sizes are known only once an extra builds it")
        click.echo(f"{spec}: ok ({exp.name}, {len(exp.runs)} runs at scale {scale}, {cost})")
        uncosted = sorted({r.algorithm for r in exp.runs if AGENTS[r.algorithm].cost is None})
        if uncosted and exp.cpu_seconds > 0:
            click.echo(f"  no cost declared by {', '.join(uncosted)}: the estimate counts only the fixed costs per "
                       f"step and per episode for it (AgentEntry's optional cost hook)")
        total += exp.cpu_seconds
        unknown += exp.cpu_seconds <= 0
    if len(specs) > 1:
        without = f"; {unknown} of them without an estimate" if unknown else ""
        click.echo(f"total: about {total / 3600:,.3g} CPU-hours for the {len(specs)} specs at scale {scale}{without}")


@main.command()
@click.argument("spec", type=click.Path())
@click.option("--scale", type=click.Choice(["ci", "paper"]), default="ci", show_default=True)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE")
@click.option("--out", type=click.Path(), default="results", show_default=True)
def collect(spec, scale, sets, out):
    """Concatenate SPEC's finished shards into episodes.csv / runs.csv."""
    from rvfx.experiment import results
    from rvfx.experiment.preflight import Refused, results_folder
    from rvfx.experiment.spec import resolved_yaml
    exp = support.load(spec, scale, sets)
    try:
        results_folder(out, exp)
    except Refused as err:
        support.fail(str(err), err.code)
    for name, path in results.collect(out, exp.runs, resolved_yaml(exp)).items():
        click.echo(f"{name}: {path}")
    lacking = results.missing_runs(out, exp.name)
    if lacking:
        click.echo(f"warning: the tables lack {lacking}", err=True)


@main.command()
@click.argument("figures", nargs=-1)
@click.option("--results", "results_dir", type=click.Path(), default="results", show_default=True)
@click.option("--out", type=click.Path(), default="figures", show_default=True)
@click.option("--spec", "spec_path", type=click.Path(), default=None,
              help="draw this spec's figures from its own experiment folder (a variant under its own name)")
def plot(figures, results_dir, out, spec_path):
    """Draw FIGURES (default: every figure whose results exist) from CSV alone. A name that is no
    registered figure but an experiment under RESULTS gets the standard panels (per-episode curves
    with 95% bands, learning time against each swept axis) and its summary table."""
    from rvfx.experiment.params import did_you_mean
    from rvfx.figures import FIGURES
    present = support.experiments_in(results_dir)
    for f in figures:
        if f not in FIGURES and f not in present:
            click.echo(f"error: unknown figure {f!r}, and no experiment of that name in {results_dir}"
                       f"{did_you_mean(f, [*FIGURES, *present])}; `rvfx list figures` lists the figures", err=True)
            sys.exit(2)
    standard = [f for f in figures if f not in FIGURES]
    for f in standard:
        _draw_standard(f, results_dir, out)
    figures = tuple(f for f in figures if f in FIGURES)
    if standard and not figures:
        return
    if spec_path is None:
        return support.draw(figures, results_dir, out)
    exp = support.load(spec_path, "ci", ())
    figures = figures or tuple(exp.figures)
    with tempfile.TemporaryDirectory(prefix="rvfx-view-") as view:
        for name in {e for f in figures for e in FIGURES[f].experiments}:
            (Path(view) / name).symlink_to((Path(results_dir) / exp.name).resolve(), target_is_directory=True)
        support.draw(figures, view, out, shown=results_dir)


def _no_tables(experiment: str, results_dir: str) -> str:
    """No collected tables of EXPERIMENT: the command that makes them, by its shipped name where it ships."""
    spec = experiment if shipped.shipped_spec(experiment) else "SPEC"
    return f"{experiment}: no collected tables in {results_dir}: run `rvfx run {spec} --out {results_dir}` first"


def _draw_standard(experiment: str, results_dir: str, out: str) -> None:
    """The standard panels and summary table of EXPERIMENT's tables; one line and exit 1 (missing) or 2
    (damaged) when they cannot be read."""
    from rvfx.figures.standard import draw
    try:
        paths = draw(Path(results_dir), Path(out), experiment)
    except FileNotFoundError:
        support.fail(_no_tables(experiment, results_dir), 1)
    except support.unreadable_tables() as err:
        support.fail(support.unreadable_file(results_dir, [experiment], err), 2)
    click.echo(f"{experiment} (standard panels): " + ", ".join(str(p) for p in paths))


@main.command()
@click.argument("experiment")
@click.option("--results", "results_dir", type=click.Path(file_okay=False), default="results", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["md", "csv"]), default="md", show_default=True,
              help="md: each estimate with its interval in one cell; csv: the numbers, one column each")
def summary(experiment, results_dir, fmt):
    """Print EXPERIMENT's summary table from its tables under RESULTS: per agent and setting, its runs,
    the final cumulative regret (mean, 95% t-interval), the median learning time (eq. 7.1; 95%
    bootstrap CI) and the censored runs; the final return where the environment knows no optimum."""
    from rvfx.analysis.standard import markdown, summary_text
    from rvfx.analysis.standard import summary as summarise
    from rvfx.experiment.results import load_table
    try:
        runs = load_table(results_dir, experiment, "runs")
        has_episodes = (Path(results_dir) / experiment / "episodes.csv").is_file()
        table = summarise(runs, load_table(results_dir, experiment, "episodes") if has_episodes else None)
    except FileNotFoundError:
        support.fail(_no_tables(experiment, results_dir), 1)
    except support.unreadable_tables() as err:
        support.fail(support.unreadable_file(results_dir, [experiment], err), 2)
    click.echo(markdown(summary_text(table)) if fmt == "md" else table.to_csv(index=False, lineterminator="\n"),
               nl=fmt == "md")


@main.command()
@click.argument("target", metavar="SPEC|AGENT")
@click.option("--scale", type=click.Choice(["ci", "paper"]), default="ci", show_default=True,
              help="the battery's scale: ci (N = 4, 5, 6, 8; 3 seeds; seconds for an agent that learns) or "
                   "paper (Fig. 5's N = 5 ... 20, 10 seeds, up to 10^6 episodes a run)")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--out", type=click.Path(), default="results", show_default=True,
              help="where the battery's runs go (OUT/scorecard_NAME; a rerun resumes)")
@click.option("--figures", "figures_dir", type=click.Path(file_okay=False), default="figures", show_default=True)
def scorecard(target, scale, jobs, out, figures_dir):
    """Score an agent on Fig. 5's deep-sea scaling battery beside the paper's agents: AGENT is a
    registered algorithm (with `--plugin`, yours), run with its defaults; SPEC a spec whose agents
    are run with their settings, on the battery's deep sea settings only. Prints each agent's
    log-log slope of learning time on N with its 95% CI and the verdict in the paper's terms
    (polynomial: deep exploration; exponential: dithering), with the paper agents' from the shipped
    paper-scale baseline, and draws the figure FIGURES/scorecard_NAME.png."""
    from rvfx import scorecard as sc
    from rvfx.analysis.standard import markdown
    from rvfx.experiment import results
    from rvfx.figures.scorecard import draw
    try:
        name, agents = sc.agents_of(target, AGENTS)
    except sc.ScorecardError as err:
        support.fail(str(err), 2)
    env = support.load(str(shipped.shipped_spec(sc.BATTERY)), scale, ()).runs[0].settings["env"]
    if agents is not None:
        own = support.load(target, scale, ()).runs[0]          # the spec's own errors, at its own lines
        problem = sc.env_problem({"name": own.env, **own.settings["env"]}, env)
        if problem:
            support.fail(f"{target}: {problem}: the scorecard compares agents on the battery's settings only", 2)
    with tempfile.TemporaryDirectory(prefix="rvfx-scorecard-") as folder:
        spec = Path(folder) / f"scorecard_{name}.yaml"
        spec.write_text(sc.battery_spec(name, agents or {name: {"algorithm": name}}), encoding="utf-8")
        exp = support.load(str(spec), scale, ())
    exp.source = target                                        # how messages name it: its spec is gone
    outcomes = support.sweep(exp, out, jobs=jobs, on_plan=lambda plan: click.echo(
        f"{exp.name} [{scale}]: {len(exp.runs)} runs -> {Path(out) / exp.name}"))
    failed = [o for o in outcomes if not o.ok]
    if failed:
        support.fail(f"{len(failed)} run(s) failed, e.g. {failed[0].run_id}: {failed[0].message}", 1)
    runs = results.load_table(out, exp.name, "runs")
    base = sc.load_baseline()
    table, notes = sc.card(runs, base, sc.battery_env(env))
    click.echo(markdown(table))
    for note in notes:
        click.echo(note)
    for row in table[table["source"] == "this run"].to_dict("records"):
        click.echo(f"verdict: {row['agent']}: {row['verdict']} (slope {row['slope [95% CI]']}, {scale} scale)")
    seeds = runs.groupby(["agent", "env.size"]).size().max()
    paths = draw(runs, sc.fit_lines(base, sc.battery_env(env)),
                 f"{name} on Fig. 5's deep sea battery ({scale} scale, {seeds} seeds per N); dashed: the paper's "
                 f"agents at paper scale", Path(figures_dir), exp.name)
    click.echo(f"figure: {paths[0]}")


@main.command()
@click.option("--results", "results_dir", type=click.Path(file_okay=False), default="results", show_default=True)
@click.option("--out", type=click.Path(file_okay=False), default="figures", show_default=True,
              help="where report.md and report.html go, beside the figures they show")
@_claims_option()
@click.option("--readme", type=click.Path(dir_okay=False, exists=True), multiple=True,
              help="also fill (with --check: compare) the blocks <!-- report:begin ID --> ... <!-- report:end -->, "
                   "table and results-at-a-glance blocks of this file (repeatable)")
@click.option("--docs", "docs_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="likewise for every Markdown file under this folder (the results pages)")
@click.option("--strict", is_flag=True, help="exit 1 unless every claim of the paper (not those beyond it, nor "
                                             "other readings) holds on complete results")
@click.option("--check", is_flag=True, help="write nothing; exit 1 where the report files or README blocks "
                                            "differ from the results")
def report(results_dir, out, claims_path, readme, docs_dir, strict, check):
    """Test every claim of claims.yaml on the result tables: verdicts in OUT/report.md and OUT/report.html."""
    from rvfx.report.claims import evaluate
    from rvfx.report.folder import ResultsFolder
    from rvfx.report.readme import check_files, write_files
    from rvfx.report.registry import RegistryError, load_registry
    from rvfx.report.render import paper_claims, scale_banner, summary_line
    from rvfx.report.settings import modified_runs, results_scale
    pages = [Path(p) for p in readme] + (sorted(Path(docs_dir).rglob("*.md")) if docs_dir else [])
    try:
        registry = load_registry(claims_path)
        folder = ResultsFolder(results_dir)        # each table and spec.yaml read once, for all three
        outcomes = evaluate(registry, folder)
        scale, modified = results_scale(folder), modified_runs(folder)
        click.echo(scale_banner(scale, modified, outcomes)[1])
        if check:
            problems = check_files(registry, outcomes, Path(out), scale, pages, modified)
        else:
            problems = []
            click.echo("report: " + ", ".join(str(p) for p in write_files(registry, outcomes, Path(out),
                                                                            scale, pages, modified)))
    except RegistryError as err:
        support.fail(str(err), 2)
    except support.unreadable_tables() as err:
        support.fail(support.unreadable_file(results_dir, support.experiments_in(results_dir), err), 2)
    for line in problems:
        click.echo(line, err=True)
    click.echo(summary_line(outcomes))
    failing = [o for o in paper_claims(outcomes) if o.verdict != "holds"] if strict else []
    for o in failing:
        click.echo(f"  {o.claim['id']}: {o.verdict}" + (f" ({o.problem})" if o.problem else ""), err=True)
    if problems or failing:
        sys.exit(1)


@main.command()
@click.option("--results", "results_dir", type=click.Path(file_okay=False), default="results", show_default=True)
@click.option("--out", type=click.Path(file_okay=False), required=True,
              help="a folder laid out as a results folder, e.g. figures/paper (committed)")
@_claims_option()
@click.option("--scale", type=click.Choice(["ci", "paper"]), default=None,
              help="refuse (and copy nothing) unless every experiment to copy was run at this scale")
def export(results_dir, out, claims_path, scale):
    """Copy the per-run tables the claims read (runs.csv and small per-run tables, none per episode)
    from RESULTS into OUT, so that `rvfx report --results OUT` recomputes every verdict on a clone."""
    from rvfx.report.export import export_tables
    from rvfx.report.registry import RegistryError, load_registry
    try:
        registry = load_registry(claims_path)
        written = export_tables(registry, Path(results_dir), Path(out), scale)
    except RegistryError as err:
        support.fail(str(err), 2)
    except support.unreadable_tables() as err:
        support.fail(support.unreadable_file(results_dir, support.experiments_in(results_dir), err), 2)
    click.echo(f"export: {len(written)} experiment(s) -> {out}" + "".join(f"\n  {p}" for p in written))


@main.command("docs")
@click.option("--out", type=click.Path(file_okay=False), default="docs/reference", show_default=True)
@click.option("--check", is_flag=True, help="write nothing; exit 1 naming each page that differs from the code")
def docs_(out, check):
    """Write the reference pages (spec keys, experiments, agents, environments, figures, parameters)
    from the registries, so that the docs cannot drift from the code."""
    from rvfx.experiment.results import write_atomic_text
    from rvfx.reference import reference_pages
    pages = reference_pages(shipped.CONFIGS)
    if check:
        stale = [name for name, text in pages.items()
                 if not (Path(out) / name).is_file() or (Path(out) / name).read_text(encoding="utf-8") != text]
        for name in stale:
            click.echo(f"{Path(out) / name}: differs from the code (run rvfx docs --out {out})", err=True)
        click.echo(f"docs: {len(pages) - len(stale)} of {len(pages)} reference pages up to date")
        if stale:
            sys.exit(1)
        return
    try:
        Path(out).mkdir(parents=True, exist_ok=True)
        for name, text in pages.items():
            write_atomic_text(Path(out) / name, text)
    except OSError as err:
        support.fail(f"--out {out}: {os_error(err)}", 2)
    click.echo(f"docs: {len(pages)} reference pages -> {out}")


LISTED = ("experiments", "figures", "agents", "envs")


@main.command("list")
@click.argument("what", required=False, type=click.Choice(LISTED))
@click.argument("name", required=False)
def list_(what, name):
    """List experiments, figures, agents and environments, one line each; WHAT NAME shows one entry
    in full (an agent's or environment's parameters, a figure's experiments, a spec's runs)."""
    from rvfx.experiment.params import did_you_mean
    from rvfx.listing import entries, entry_detail
    if name is not None:
        found = entries(what)
        if name not in found:
            support.fail(f"unknown {what[:-1]} {name!r}{did_you_mean(name, found)}; "
                         f"`rvfx list {what}` lists them", 2)
        click.echo(entry_detail(what, name))
        return
    for section in (what,) if what else LISTED:
        found = entries(section)
        click.echo(f"{section} ({len(found)}; `rvfx list {section} NAME` for one in full):")
        width = max(map(len, found), default=0)
        for entry, line in found.items():
            click.echo(f"  {entry:{width}s}  {line}")

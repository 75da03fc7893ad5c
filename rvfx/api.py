"""rvfx's Python API: what the command line does, as functions a notebook or script can call.

    from rvfx import api
    exp = api.load("deepsea_tabular", scale="ci", overrides={"seeds": 2})
    api.run(exp, out="results", jobs=2)
    runs = api.table("results", exp.name, "runs")          # one row per run
    api.plot("deepsea_tabular", results="results", out="figures")
    verdicts = api.claims(results="figures/paper")          # one row per claim of the paper

The command line (rvfx.cli) calls these same functions and adds messages and exit codes.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import pandas as pd
import yaml

from rvfx import shipped
from rvfx.experiment import results as _results
from rvfx.experiment.spec import ExperimentSpec, load_spec, resolved_yaml
from rvfx.figures import FIGURES


def load(spec: str | Path, scale: str = "ci", overrides: Mapping | Iterable[str] = ()) -> ExperimentSpec:
    """The experiment of a spec file or of a shipped spec's name (`rvfx list`), at `scale`, with
    `overrides` as {dotted.key: value} or as `--set`'s "dotted.key=value" strings. A bad spec or
    override raises rvfx.experiment.params.SpecError naming the file, line and key."""
    sets = tuple(f"{k}={yaml.safe_dump(v, default_flow_style=True).strip().removesuffix('...').strip()}"
                 for k, v in overrides.items()) if isinstance(overrides, Mapping) else tuple(overrides)
    return load_spec(str(shipped.spec_path(str(spec))), scale, sets, figure_ids=FIGURES, source=str(spec))


def run(exp: ExperimentSpec, out: str | Path = "results", jobs: int = 1, dask: str | None = None,
        record: str | Path | None = None, claims: str | Path = shipped.CLAIMS, dry_run: bool = False,
        on_plan: Callable | None = None) -> list:
    """Execute the experiment's unfinished runs (finished ones are skipped: a rerun resumes), then
    collect its tables into OUT/<experiment>/. Returns one Outcome (run_id, ok, message) per run
    executed; a failed run is kept in OUT/<experiment>/failed/ and the others go on.

    Before anything runs, Refused (rvfx.experiment.preflight; nothing written) where OUT/<experiment>
    is not rvfx's to write, holds another spec's sweep, cannot be written or lacks room, or where
    NumPy's BLAS dies here; SweepBusy where another sweep holds its lock. With `record` (a folder of
    per-run tables such as figures/paper, the tables kept as the registry `claims` says) runs recorded
    there are not rerun, and it takes each run as it finishes (rvfx.report.record). `on_plan` hears
    the Plan (rvfx.experiment.runner: which runs are done, recorded, resumable) before any run starts;
    with `dry_run` nothing more happens. Ctrl-C raises Interrupted once the record has every finished
    run."""
    from rvfx.experiment import preflight
    out = str(out)
    preflight.results_folder(out, exp)
    preflight.other_sweep(out, exp)
    from rvfx.experiment.runner import Interrupted, plan_sweep, run_sweep, sweep_lock
    with contextlib.ExitStack() as held:
        registry, recorded, notes = _record_holds(exp, out, record, claims, held) if record else (None, set(), [])
        try:
            plan = plan_sweep(out, exp.runs, recorded, notes)
        except KeyboardInterrupt:
            raise Interrupted("interrupted before any run started") from None
        keep = _recorder(registry, exp, out, record, plan) if record else None
        if on_plan is not None:
            on_plan(plan)
        if dry_run:
            return []
        if plan.pending:
            preflight.blas_runs(dask)
        preflight.kernels()
        preflight.writable(out, exp)
        with sweep_lock(out, exp.name):       # collect within it too: it trusts the shards the plan verified
            try:
                outcomes = run_sweep(plan.pending, out, jobs=jobs, dask=dask, on_outcome=keep and keep.heard)
            except Interrupted:
                if keep is not None:
                    keep.merge()
                raise
            _results.collect(out, exp.runs, resolved_yaml(exp), plan.verified)
            if keep is not None:
                keep.finish()
    return outcomes


@contextlib.contextmanager
def _record_errors(record):
    """A record that cannot be used, as Refused: one line naming it, exit 2 (1: another process writes it)."""
    from rvfx.experiment.folders import Busy
    from rvfx.experiment.preflight import Refused
    from rvfx.report.record import RecordError
    from rvfx.report.registry import RegistryError
    try:
        yield
    except Busy as err:
        raise Refused(f"--record {record}: {err}", 1) from None
    except (RecordError, RegistryError) as err:
        raise Refused(str(err)) from None
    except _results.unreadable_tables() as err:
        raise Refused(f"--record {record}: {err}") from None


def _record_holds(exp, out: str, record, claims, held: contextlib.ExitStack) -> tuple[dict, set, list]:
    """(registry, recorded, notes): the claims registry (it names the tables a record keeps), the run
    ids of `exp` the record in RECORD holds, and what the command should say of it (rows of runs not in
    the spec, kept tables it lacks). Its lock is held in `held`: one writer at a time on a record."""
    from rvfx.report.export import record_lock
    from rvfx.report.record import lacking, recorded
    from rvfx.report.registry import load_registry
    with _record_errors(record):
        held.enter_context(record_lock(Path(record), exp.name))
    with _record_errors(record):
        registry = load_registry(claims)
        ids, strays = recorded(registry, Path(record), exp)
        new_tables = lacking(registry, Path(record), exp)
    folder = Path(record) / exp.name
    notes = [f"{folder} holds rows of {len(strays)} run id(s) not in this spec ({', '.join(strays)}): they are "
             f"dropped as the record updates, and the runs it lacks rerun"] if strays else []
    notes += [f"{folder} lacks {', '.join(n + '.csv' for n in new_tables)} (kept since it was recorded): its runs "
              f"are taken from {Path(out) / exp.name} or rerun"] if new_tables else []
    return registry, ids, notes


def _recorder(registry: dict, exp, out: str, record, plan):
    """The Recorder that merges the sweep's finished runs into the record in RECORD as they come."""
    from rvfx.report.record import Recorder
    with _record_errors(record):
        return Recorder(registry, Path(out), Path(record), exp, plan)


def table(results: str | Path, experiment: str, name: str = "runs") -> pd.DataFrame:
    """A collected table, verified against the checksums beside it: "runs" (one row per run),
    "episodes" (one row per logged episode), or a per-run table an experiment writes."""
    return _results.load_table(results, experiment, name)


def plot(figure: str, results: str | Path = "results", out: str | Path = "figures") -> list[Path]:
    """Draw a registered figure (`rvfx list`) from the tables under RESULTS; returns the files written."""
    if figure not in FIGURES:
        raise KeyError(f"unknown figure {figure!r}; registered: {', '.join(FIGURES)}")
    return FIGURES[figure].draw(Path(results), Path(out))


def claims(results: str | Path = "results", registry: str | Path = shipped.CLAIMS) -> pd.DataFrame:
    """Every claim of the registry tested on the tables under RESULTS: one row per claim (per group and
    level of a claim tested per group or comparing levels) with its id, figure, the paper's words, its
    role (paper: a verdict on the paper; beyond: rvfx's own measurement; reading: another reading of a
    claim), the verdict (holds, differs, inconclusive) of its current version and, for an amended
    claim, of its first (first_verdict), what lacks, its negative controls' verdicts (where the rule
    must not hold), and the estimate: group, level, estimate with its 95% interval (lower, upper) in
    the statistic's natural units, n (runs behind it), runs_per_group (the fewest runs of a group
    it resamples) and the group's verdict."""
    from rvfx.report.claims import evaluate, role
    from rvfx.report.registry import load_registry
    from rvfx.report.rules import nat
    from rvfx.report.statistics import STATISTICS
    rows = []
    for o in evaluate(load_registry(registry), Path(results)):
        scale = STATISTICS[o.claim["statistic"]["kind"]][3]
        head = {"id": o.claim["id"], "figure": o.claim["figure"], "words": o.claim["words"], "role": role(o.claim),
                "verdict": o.verdict, "first_verdict": o.first.verdict if o.first else o.verdict,
                "problem": o.problem, "negative_control": ", ".join(c.verdict for _, c in o.contrasts)}
        found = [{"group": r.label, "level": lv, "estimate": nat(e.value, scale), "lower": nat(e.lo, scale),
                  "upper": nat(e.hi, scale), "n": e.n, "runs_per_group": e.fewest, "group_verdict": r.verdict}
                 for r in o.rows for lv, e in r.estimates]
        rows += [{**head, **f} for f in found] or [head]
    return pd.DataFrame(rows)

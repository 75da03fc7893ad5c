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

from collections.abc import Iterable, Mapping
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
    return load_spec(str(shipped.spec_path(str(spec))), scale, sets, figure_ids=FIGURES)


def run(exp: ExperimentSpec, out: str | Path = "results", jobs: int = 1, dask: str | None = None) -> list:
    """Execute the experiment's unfinished runs (finished ones are skipped: a rerun resumes), then
    collect its tables into OUT/<experiment>/. Returns one Outcome (run_id, ok, message) per run
    executed; a failed run is kept in OUT/<experiment>/failed/ and the others go on."""
    from rvfx.experiment.runner import run_sweep
    outcomes = run_sweep(exp.runs, str(out), jobs=jobs, dask=dask)
    _results.collect(str(out), exp.runs, resolved_yaml(exp))
    return outcomes


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

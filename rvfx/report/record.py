"""A sweep's record: its per-run tables (those `rvfx export` keeps, kept_tables) in a folder that is
committed, such as figures/paper, updated as its runs finish (`rvfx run SPEC --record DIR`). A
sweep longer than a session then survives the loss of its results folder with the machine: runs
recorded there are not rerun, and the record grows by the runs finished since, in the spec's run
order, so that it ends as the export of one uninterrupted sweep would be (tests/test_record.py).
This holds for per-run tables, whose rows for a run depend on that run and the spec alone; every
kept table is one (regret_over_bounds keeps the same logged episodes of every run of a spec).
"""
from __future__ import annotations

import io
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from rvfx.experiment.results import (
    DamagedTable,
    experiment_dir,
    failure_row,
    load_table,
    provenance_text,
    read_checksums,
    read_table,
    shard_tables,
)
from rvfx.experiment.spec import resolved_yaml
from rvfx.report.export import kept_tables, repair, unwritten_tables, write_tables, written_tables

SPACING = 3.0    # Recorder: time between merges, in units of the last merge's time


class RecordError(ValueError):
    """The record cannot be used for this sweep; the message names the folder and why."""


def _has_record(d: Path, exp) -> bool:
    """Whether the record folder `d` holds runs (runs.csv), or RecordError when it was made under
    another resolved spec or scale whose runs this one lacks (one that holds them all grows it)."""
    if not (d / "runs.csv").exists():
        return False
    spec = d / "spec.yaml"
    if not spec.exists():
        raise RecordError(f"{d}: recorded under another spec or scale (it has no spec.yaml); move it aside or "
                          f"record elsewhere")
    if spec.read_text(encoding="utf-8") != resolved_yaml(exp):
        lacks = _held(d, exp.name) - {r.run_id for r in exp.runs}
        if lacks:
            raise RecordError(f"{d}: recorded under another spec or scale (its spec.yaml differs from this "
                              f"sweep's, which lacks {len(lacks)} of its runs); move it aside or record elsewhere")
    _made_by(d)                                    # refuses an unreadable provenance.json now
    return True


def _run_ids(d: Path, experiment: str) -> set[str]:
    """The run ids of the record's runs.csv, verified against tables.json (DamagedTable naming a
    tables.json that is not an object of checksums)."""
    read_checksums(d)
    try:
        return _ids(load_table(d.parent, experiment, "runs"), d / "runs.csv")
    except DamagedTable as err:
        raise RecordError(f"{str(err).split(' (')[0]}: its sha256 differs from tables.json beside it; restore the "
                          f"record (git checkout) or move it aside") from None


def _ids(table: pd.DataFrame, path: Path) -> set[str]:
    """The run ids of a record's table, or RecordError naming it when it has none."""
    if "run_id" not in table:
        raise RecordError(f"{path}: has no run_id column; restore the record (git checkout) or move it aside")
    return set(table["run_id"])


def _held(d: Path, experiment: str) -> set[str]:
    """The run ids a record names (runs.csv and failures.csv): a spec that holds them all is the
    recorded sweep grown (more seeds, a wider grid), and records into it."""
    failed = d / "failures.csv"
    return _run_ids(d, experiment) | (_ids(read_table(failed), failed) if failed.exists() else set())


def lacking(registry: dict, record: Path, exp) -> list[str]:
    """The tables kept for `exp` (kept_tables) that its record lacks: kept since it was recorded
    (none where there is no record yet)."""
    d = experiment_dir(record, exp.name)
    if not (d / "runs.csv").exists():
        return []
    return [n for n in sorted(kept_tables(registry).get(exp.name, {"runs"}) - unwritten_tables(d))
            if not (d / f"{n}.csv").exists()]


def _complete(registry: dict, record: Path, exp) -> bool:
    """Whether the record of `exp` holds runs in every kept table: the runs `recorded` counts and
    `update_record` keeps (RecordError as _has_record)."""
    return _has_record(experiment_dir(record, exp.name), exp) and not lacking(registry, record, exp)


def recorded(registry: dict, record: Path, exp) -> tuple[set[str], list[str]]:
    """(recorded, foreign): the run ids of `exp` its record holds (runs.csv, checked against
    tables.json), none while it lacks a kept table, so that those runs are taken from the results
    folder or rerun; and the record's run ids the spec lacks, rows misnamed when a number-like run
    id was read as a number (rvfx before read_table wrote 'inf'), which update_record drops while
    their runs are rerun. RecordError as _has_record."""
    repair(experiment_dir(record, exp.name))
    if not _complete(registry, record, exp):
        return set(), []
    ids = _run_ids(experiment_dir(record, exp.name), exp.name)
    spec = {r.run_id for r in exp.runs}
    return ids & spec, sorted(ids - spec)


def _made_by(folder: Path) -> dict:
    """Per run id, what made it (provenance.json's "runs"; none in one written before rvfx kept it)."""
    path = folder / "provenance.json"
    if not path.exists():
        return {}
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")).get("runs", {}))
    except (ValueError, AttributeError, TypeError) as err:
        raise RecordError(f"{path}: unreadable ({type(err).__name__}); restore it (git checkout) or delete it") from err


def update_record(registry: dict, results: Path, record: Path, exp) -> Path | None:
    """Merge the runs collected in `results` into the record of `exp` (a run in both takes its
    collected rows, rows of a run id not in the spec are dropped), rows in the spec's run order,
    failures.csv listing the runs in neither; the folder, or None when neither holds a finished
    run yet. While the record lacks a kept table, it keeps only the runs collected in `results`
    (the others are rerun: `recorded` counts none)."""
    names = sorted(kept_tables(registry).get(exp.name, {"runs"}))
    src = experiment_dir(results, exp.name)
    repair(experiment_dir(record, exp.name))
    old = _recorded_tables(record, exp.name, names) if _complete(registry, record, exp) else {}
    new = written_tables(results, exp.name, names) if (src / "runs.csv").exists() else {}
    if not old and not new:
        return None
    failures = read_table(src / "failures.csv") if (src / "failures.csv").exists() else None
    _write_merged(record, exp, names, old, new, _made_by(src), failures)
    return experiment_dir(record, exp.name)


def _recorded_tables(record: Path, experiment: str, names) -> dict[str, pd.DataFrame]:
    """The kept tables `names` the record holds (none for those it notes no run wrote)."""
    unwritten = unwritten_tables(experiment_dir(record, experiment))
    return {n: load_table(record, experiment, n) for n in sorted(names) if n not in unwritten}


def _write_merged(record: Path, exp, names, old: dict, new: dict, made_by: dict, failures) -> dict[str, pd.DataFrame]:
    """Write the record of `exp`: of each kept table in `names`, the `old` rows of spec runs not in
    `new`, then `new`'s, in the spec's run order (a table neither holds is noted as unwritten); what
    made each run (`made_by` for the new ones); the `failures` rows of runs in neither. Returns the
    tables as they now read back from the record."""
    dst = experiment_dir(record, exp.name)
    fresh = set(new["runs"]["run_id"]) if new else set()
    order = {r.run_id: i for i, r in enumerate(exp.runs)}
    frames = {}
    for n in sorted(set(old) | set(new)):
        parts = ([old[n][old[n]["run_id"].isin(order.keys() - fresh)]] if n in old else []) + \
            ([new[n]] if n in new else [])
        merged = pd.concat(parts, ignore_index=True)
        frames[n] = merged.iloc[np.argsort(merged["run_id"].map(order).to_numpy(), kind="stable")]
    made_by = {r: v for r, v in _made_by(dst).items() if r not in fresh} | made_by
    extras = {"spec.yaml": resolved_yaml(exp),
              "provenance.json": provenance_text({r: made_by[r] for r in frames["runs"]["run_id"] if r in made_by})}
    if failures is not None:
        failures = failures[~failures["run_id"].isin(frames["runs"]["run_id"])]
        if len(failures):
            extras["failures.csv"] = failures.to_csv(index=False, lineterminator="\n")
    texts = write_tables(dst, frames, extras, tuple(sorted(set(names) - set(frames))))
    return {n: read_table(io.StringIO(texts[f"{n}.csv"])) for n in frames}


class Recorder:
    """`rvfx run --record`: merges each finished run into the record as the sweep goes, at a cost
    in the runs merged, not in the runs recorded: the record is read once, a finished run's shard
    once, and the record is rewritten when the time since the last merge is at least SPACING times
    what that merge took (so merging takes at most 1/(1+SPACING) of a sweep's time). A process
    killed outright loses from the record the runs finished since the last merge (their shards
    stay in the results folder); Ctrl-C and the sweep's end merge all (`merge`, `finish`)."""

    def __init__(self, registry: dict, results: Path, record: Path, exp, plan):
        self.registry, self.results, self.record, self.exp = registry, Path(results), Path(record), exp
        self.names = sorted(kept_tables(registry).get(exp.name, {"runs"}))
        self.old = _recorded_tables(record, exp.name, self.names) if _complete(registry, record, exp) else {}
        held = set(self.old["runs"]["run_id"]) if self.old else set()
        self.plan = plan             # the sweep's Plan: which shards verified, each other run's problem
        self.pending = [r for r in exp.runs if r.run_id not in held and r.run_id in plan.verified]
        self.runs, self.due = {r.run_id: r for r in exp.runs}, 0.0

    def heard(self, outcome) -> None:
        """A run's Outcome (runner.run_sweep's on_outcome): a finished one is merged, when due."""
        if outcome.ok:
            self.pending.append(self.runs[outcome.run_id])
            if time.monotonic() >= self.due:
                self.merge()

    def merge(self) -> None:
        """Merge the runs finished since the last merge into the record."""
        if not self.pending:
            return
        start = time.monotonic()
        new, made_by = self._tables(self.pending)
        self.pending = []
        if not new:                                   # no shard verifies any more: nothing to merge
            return
        ids = set(new["runs"]["run_id"]) | (set(self.old["runs"]["run_id"]) if self.old else set())
        failures = [failure_row(self.results, r, self.plan.problems.get(r.run_id, "missing")) for r in self.exp.runs
                    if r.run_id not in ids]
        self.old = _write_merged(self.record, self.exp, self.names, self.old, new, made_by,
                                 pd.DataFrame(failures) if failures else None)
        self.due = time.monotonic() + SPACING * (time.monotonic() - start)

    def _tables(self, runs) -> tuple[dict[str, pd.DataFrame], dict]:
        """The kept tables of `runs` alone, as experiment_table reads (or derives) them from a results
        folder holding those runs only, and what made each run."""
        tables, made_by, _ = shard_tables(self.results, runs, self.plan.verified)
        if "runs" not in tables:
            return {}, {}
        with tempfile.TemporaryDirectory() as tmp:
            d = experiment_dir(tmp, self.exp.name)
            d.mkdir()
            for name, df in tables.items():
                df.to_csv(d / f"{name}.csv", index=False, lineterminator="\n")
            (d / "spec.yaml").write_text(resolved_yaml(self.exp), encoding="utf-8")
            return written_tables(Path(tmp), self.exp.name, self.names), made_by

    def finish(self) -> Path | None:
        """Once the sweep has collected its results folder: the full merge (update_record)."""
        self.pending = []
        return update_record(self.registry, self.results, self.record, self.exp)

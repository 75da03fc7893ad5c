"""`export_tables`: the result tables the claims read, written as a results folder to commit (e.g.
figures/paper), so that the report recomputes every verdict on a clone without per-episode logs."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd

from rvfx.experiment.results import TABLES, experiment_dir, load_spec_value, load_table, write_atomic_text
from rvfx.figures import FIGURES
from rvfx.report.registry import RegistryError
from rvfx.report.tables import experiment_table

EXTRAS = ("failures.csv", "spec.yaml", "provenance.json")


def kept_tables(registry: dict) -> dict[str, set]:
    """Per experiment: runs plus the tables its claims read and its figures name (`tables`)."""
    needs: dict[str, set] = {}
    for claim in registry["claims"]:
        if "experiment" in claim:
            needs.setdefault(claim["experiment"], {"runs"}).add(claim.get("table", "runs"))
    for fig_id, entry in registry["figures"].items():
        for exp in FIGURES[fig_id].experiments if entry.get("tables") else ():
            needs.setdefault(exp, {"runs"}).update(entry["tables"])
    return needs


def write_tables(dst: Path, frames: dict[str, pd.DataFrame], extras: dict[str, str]) -> None:
    """Write `frames` as <name>.csv and the `extras` texts into `dst`, drop any other CSV or extra,
    and record each CSV's sha256 in tables.json (written last)."""
    dst.mkdir(parents=True, exist_ok=True)
    texts = {f"{name}.csv": df.to_csv(index=False, lineterminator="\n") for name, df in sorted(frames.items())}
    texts.update(extras)
    for extra in set(EXTRAS) - set(texts):
        (dst / extra).unlink(missing_ok=True)
    checksums = {}
    for name, text in texts.items():
        write_atomic_text(dst / name, text)
        if name.endswith(".csv"):
            checksums[name] = hashlib.sha256(text.encode()).hexdigest()
    for stale in set(dst.glob("*.csv")) - {dst / n for n in checksums}:
        stale.unlink()
    write_atomic_text(dst / TABLES, json.dumps(checksums, indent=1, sort_keys=True) + "\n")


def export_tables(registry: dict, results: Path, out: Path, scale: str | None = None) -> list[Path]:
    """Copy what the claims and figures read (kept_tables) from `results` into `out`, laid out as a
    results folder, so that `rvfx report --results OUT` recomputes every verdict without the
    per-episode tables: per experiment runs.csv and each kept table (DERIVED ones written out), then
    failures.csv, spec.yaml and provenance.json as collected, and tables.json with the sha256 of
    each table written. Experiments without collected tables in `results` are left as they are.
    Nothing is copied (RegistryError naming the first culprit) when, with `scale`, an experiment
    was run at another scale (its spec.yaml says), or when `out` records runs of the same spec that
    `results` lacks (a sweep resumed with `rvfx run --record`, which keeps such a record)."""
    present = {exp: names for exp, names in sorted(kept_tables(registry).items())
               if (experiment_dir(results, exp) / "runs.csv").exists()}
    frames = {}
    for exp, names in present.items():
        src, dst = experiment_dir(results, exp), experiment_dir(out, exp)
        ran_at = load_spec_value(results, exp, ("scale",))
        if scale is not None and ran_at != scale:
            raise RegistryError(f"{src / 'spec.yaml'}: run at scale {ran_at}, not {scale}; nothing exported")
        frames[exp] = {name: experiment_table(results, exp, name) for name in names}
        if (dst / "runs.csv").exists() and (dst / "spec.yaml").exists() \
                and (dst / "spec.yaml").read_bytes() == (src / "spec.yaml").read_bytes():
            lost = set(load_table(out, exp, "runs")["run_id"]) - set(frames[exp]["runs"]["run_id"])
            if lost:
                raise RegistryError(f"{dst} records {len(lost)} run(s) of this spec that {src} lacks; nothing "
                                    f"exported (update a record with `rvfx run configs/{exp}.yaml --record {out}`)")
    written = []
    for exp in present:
        src, dst = experiment_dir(results, exp), experiment_dir(out, exp)
        write_tables(dst, frames[exp],
                     {extra: (src / extra).read_text(encoding="utf-8") for extra in EXTRAS if (src / extra).exists()})
        written.append(dst)
    return written

"""`export_tables`: the result tables the claims read, written as a results folder to commit (e.g.
figures/paper), so that the report recomputes every verdict on a clone without per-episode logs."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from rvfx.experiment.results import TABLES, experiment_dir, load_spec_value, write_atomic_text
from rvfx.report.registry import RegistryError
from rvfx.report.tables import experiment_table


def export_tables(registry: dict, results: Path, out: Path, scale: str | None = None) -> list[Path]:
    """Copy what the claims read from `results` into `out`, laid out as a results folder, so that
    `rvfx report --results OUT` recomputes every verdict without the per-episode tables: per
    experiment a claim names, runs.csv and each claim table (DERIVED ones written out), then
    failures.csv, spec.yaml and provenance.json as collected, and tables.json with the sha256 of
    each table written. Experiments without collected tables in `results` are left as they are.
    With `scale`, every experiment to copy must have been run at that scale (its spec.yaml says),
    or nothing is copied (RegistryError naming the first that was not)."""
    needs: dict[str, set] = {}
    for claim in registry["claims"]:
        if "experiment" in claim:
            needs.setdefault(claim["experiment"], {"runs"}).add(claim.get("table", "runs"))
    present = {exp: names for exp, names in sorted(needs.items())
               if (experiment_dir(results, exp) / "runs.csv").exists()}
    for exp in present:
        ran_at = load_spec_value(results, exp, ("scale",))
        if scale is not None and ran_at != scale:
            raise RegistryError(f"{experiment_dir(results, exp) / 'spec.yaml'}: run at scale {ran_at}, not {scale}; "
                                f"nothing exported")
    written = []
    for exp, names in present.items():
        src, dst = experiment_dir(results, exp), experiment_dir(out, exp)
        dst.mkdir(parents=True, exist_ok=True)
        texts = {f"{name}.csv": experiment_table(results, exp, name).to_csv(index=False, lineterminator="\n")
                 for name in sorted(names)}
        texts.update({extra: (src / extra).read_text(encoding="utf-8")
                      for extra in ("failures.csv", "spec.yaml", "provenance.json") if (src / extra).exists()})
        for extra in {"failures.csv", "spec.yaml", "provenance.json"} - set(texts):
            (dst / extra).unlink(missing_ok=True)
        checksums = {}
        for name, text in texts.items():
            write_atomic_text(dst / name, text)
            if name.endswith(".csv"):
                checksums[name] = hashlib.sha256(text.encode()).hexdigest()
        for stale in set(dst.glob("*.csv")) - {dst / n for n in checksums}:
            stale.unlink()
        write_atomic_text(dst / TABLES, json.dumps(checksums, indent=1, sort_keys=True) + "\n")
        written.append(dst)
    return written

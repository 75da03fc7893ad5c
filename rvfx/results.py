"""Tidy CSV results: one shard per run, written atomically, and their collection.

Layout under OUT/<experiment>/:
    shards/<run_id>/episodes.csv   logged episodes of one run
    shards/<run_id>/summary.csv    one row: learning_time (empty if censored), censored, ...
    shards/<run_id>/timing.csv     wall-clock seconds (the only non-deterministic output)
    shards/<run_id>/<extra>.csv    optional per-run tables, e.g. trajectory.csv (cartpole)
    failed/<run_id>.txt            traceback of a run that raised (retried on the next run)
    episodes.csv  runs.csv  timing.csv  [trajectory.csv]  failures.csv  spec.yaml   (by collect)
A shard directory is built under a temporary name and renamed into place, so a
shard that exists is complete; a partial one is never read.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd


def identity_columns(run) -> dict:
    return {"experiment": run.experiment, "run_id": run.run_id, "agent": run.agent,
            "algorithm": run.algorithm, "env": run.env, "seed": run.seed, **run.swept}


def experiment_dir(out: str | Path, experiment: str) -> Path:
    return Path(out) / experiment


def shard_dir(out, run) -> Path:
    return experiment_dir(out, run.experiment) / "shards" / run.run_id


def is_done(out, run) -> bool:
    return shard_dir(out, run).is_dir()


def _to_csv(df: pd.DataFrame, path: Path) -> None:
    df.to_csv(path, index=False, lineterminator="\n")


def write_atomic_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_shard(out, run, episodes: list[dict], summary: dict, seconds: float,
                extra: dict[str, pd.DataFrame] | None = None) -> None:
    """Write the run's tables (and any `extra` ones) into a temp dir, then rename it into place."""
    final = shard_dir(out, run)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{run.run_id}.", suffix=".tmp"))
    try:
        ident = identity_columns(run)
        _to_csv(pd.DataFrame([{**ident, **row} for row in episodes]), tmp / "episodes.csv")
        _to_csv(pd.DataFrame([{**ident, **summary}]), tmp / "summary.csv")
        _to_csv(pd.DataFrame([{"run_id": run.run_id, "seconds": round(seconds, 3)}]), tmp / "timing.csv")
        for name, table in (extra or {}).items():
            _to_csv(table.assign(**ident)[list(ident) + list(table.columns)], tmp / f"{name}.csv")
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    failed = experiment_dir(out, run.experiment) / "failed" / f"{run.run_id}.txt"
    failed.unlink(missing_ok=True)


def write_failure(out, run, traceback_text: str) -> Path:
    path = experiment_dir(out, run.experiment) / "failed" / f"{run.run_id}.txt"
    write_atomic_text(path, f"run {run.run_id}: {run.agent} on {run.env} seed {run.seed} "
                            f"{run.swept}\n\n{traceback_text}")
    return path


def collect(out, runs, resolved_spec: str | None = None) -> dict[str, Path]:
    """Concatenate the shards of `runs` (in spec order) into the experiment's tables."""
    if not runs:
        return {}
    exp_dir = experiment_dir(out, runs[0].experiment)
    tables: dict[str, list] = {"episodes": [], "runs": [], "timing": []}
    failures = []
    for run in runs:
        d = shard_dir(out, run)
        if d.is_dir():
            for path in sorted(d.glob("*.csv")):
                name = "runs" if path.stem == "summary" else path.stem
                tables.setdefault(name, []).append(pd.read_csv(path))
        else:
            fail = exp_dir / "failed" / f"{run.run_id}.txt"
            failures.append({**identity_columns(run),
                             "status": "failed" if fail.exists() else "missing",
                             "detail": str(fail) if fail.exists() else ""})
    written = {}
    for name, frames in tables.items():
        if frames:
            df = pd.concat(frames, ignore_index=True)
            written[name] = exp_dir / f"{name}.csv"
            write_atomic_text(written[name], df.to_csv(index=False, lineterminator="\n"))
    fail_path = exp_dir / "failures.csv"
    if failures:
        write_atomic_text(fail_path, pd.DataFrame(failures).to_csv(index=False, lineterminator="\n"))
    else:
        fail_path.unlink(missing_ok=True)
    if resolved_spec is not None:
        write_atomic_text(exp_dir / "spec.yaml", resolved_spec)
    return written


def missing_runs(results: str | Path, experiment: str) -> str | None:
    """What the experiment's tables lack ("2 failed, 50 missing of 60 runs"), or None when complete."""
    exp_dir = experiment_dir(results, experiment)
    path, runs = exp_dir / "failures.csv", exp_dir / "runs.csv"
    if not path.exists():
        return None
    status = pd.read_csv(path)["status"].value_counts()
    done = len(pd.read_csv(runs)) if runs.exists() else 0
    counts = ", ".join(f"{n} {s}" for s, n in sorted(status.items()))
    return f"{counts} of {done + int(status.sum())} runs (listed in {path})"


def load_table(results: str | Path, experiment: str, name: str) -> pd.DataFrame:
    path = experiment_dir(results, experiment) / f"{name}.csv"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: run `rvfx run configs/{experiment}.yaml` first")
    return pd.read_csv(path)


def load_spec_value(results: str | Path, experiment: str, keys: tuple):
    """A value of the resolved spec saved beside the tables (e.g. an unswept env parameter)."""
    import yaml
    node = yaml.safe_load((experiment_dir(results, experiment) / "spec.yaml").read_text())
    for k in keys:
        node = node.get(k) if isinstance(node, dict) else None
    return node

"""Tidy CSV results: one shard per run, written atomically, and their collection.

Layout under OUT/<experiment>/:
    shards/<run_id>.json   one run's shard, one JSON object: its tables as CSV text ("tables":
                           episodes.csv, the logged episodes; summary.csv, one row: learning_time
                           (empty if censored), censored, ...; timing.csv, wall-clock seconds, the
                           only non-deterministic output; any extra, e.g. trajectory.csv), each
                           table's rows and sha256 ("files"), the run's full settings and the code
                           that made it
    failed/<run_id>.txt    traceback of a run that raised (retried on the next run)
    episodes.csv  runs.csv  timing.csv  [trajectory.csv]  failures.csv  spec.yaml   (by collect)
A shard is written under a temporary name and renamed into place, and it counts only once it
verifies: every listed table present with its checksum, made under the run's settings. Anything
else (truncated, edited, emptied, made under another default) is named, treated as not done and
rerun; it is never read. A shard of the older layout (shards/<run_id>/, a manifest.json and a CSV
file per table) is read and verified the same way.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import pandas as pd

from rvfx.agents.neural.backend import chosen
from rvfx.envs import ENVS
from rvfx.experiment import folders
from rvfx.experiment.provenance import blas_kernels, code_version, environment
from rvfx.experiment.rows_csv import rows_csv
from rvfx.experiment.spec import as_current

SHARD_FORMAT = 2             # a JSON file a run; 1: a folder a run, its manifest and a CSV file a table
MANIFEST = "manifest.json"   # a format-1 shard's
TABLES = "tables.json"      # beside the collected tables: each one's sha256, as collect wrote it
_SORTED_JSON = json.JSONEncoder(sort_keys=True)    # json.dumps(v, sort_keys=True) without making one per call


class DamagedTable(ValueError):
    """A collected table whose bytes differ from those `collect` wrote (tables.json)."""


def identity_columns(run) -> dict:
    return {"experiment": run.experiment, "run_id": run.run_id, "agent": run.agent,
            "algorithm": run.algorithm, "env": run.env, "seed": run.seed, **run.swept}


NAME_COLUMNS = ("experiment", "run_id", "agent", "algorithm", "env")


def unreadable_tables() -> tuple:
    """The errors of reading a damaged result table or spec.yaml."""
    import yaml
    return pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, yaml.YAMLError, DamagedTable


def read_table(source) -> pd.DataFrame:
    """A CSV table rvfx wrote (a path or a file), its name columns read as text: a run id such as
    218625e581543133 or 0640187978612345 would otherwise be read as a number (inf, or without its
    leading zero) and no longer name its run. Each column's type is inferred from all its rows at once
    (low_memory=False): chunk by chunk, a long table whose swept column is blank for some runs could
    type it differently per chunk, and pandas warns at every read."""
    return pd.read_csv(source, dtype=dict.fromkeys(NAME_COLUMNS, str), low_memory=False)


def experiment_dir(out: str | Path, experiment: str) -> Path:
    return Path(out) / experiment


def shard_path(out, run) -> Path:
    return experiment_dir(out, run.experiment) / "shards" / f"{run.run_id}.json"


def shard_problem(out, run) -> str | None:
    """Why the run's shard cannot be read as its result ("missing", "episodes.csv: checksum
    differs", ...), or None when it verifies against its manifest and the run's settings."""
    return verified_shard(out, run)[0]


def shard_problems(out, runs) -> dict[str, str | None]:
    """{run id: shard_problem} of `runs`, each experiment's shards folder listed once: a run with
    nothing there is "missing" without a look of its own (a fresh sweep of thousands of runs)."""
    listed = {e: names_in(os.path.join(out, e, "shards")) for e in {r.experiment for r in runs}}
    return {r.run_id: "missing" if listed[r.experiment] is not None and f"{r.run_id}.json" not in listed[r.experiment]
            and r.run_id not in listed[r.experiment] else shard_problem(out, r) for r in runs}


def names_in(folder: str | Path) -> set[str] | None:
    """The names in `folder`: empty when there is no such folder, None when it cannot be listed."""
    try:
        return set(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return set()
    except OSError:
        return None


def verified_shard(out, run, check: bool = True) -> tuple[str | None, dict, dict[str, bytes]]:
    """(problem, manifest, files): shard_problem's answer, and when it is None the shard's manifest
    (all but its tables) and the bytes of each table it lists, read once: checked, then parsed from
    these very bytes. Without `check` (a shard this command has verified already) the tables are not
    checked again. (Plain os.path strings: collect asks this of thousands of shards.)"""
    shards = os.path.join(out, run.experiment, "shards")
    try:
        manifest, files = _read_shard(shards, run.run_id)
        listed = manifest["files"]
        problem = _manifest_problem(manifest, run) if check else None
    except FileNotFoundError:
        if not os.path.isdir(os.path.join(shards, run.run_id)):
            return "missing", {}, {}
        return f"no {MANIFEST} (unfinished, or made by an older rvfx)", {}, {}
    except OSError as err:
        return "a link in place of the shard, never read" if err.errno == errno.ELOOP \
            else f"the shard is unreadable ({type(err).__name__})", {}, {}
    except (UnicodeError, ValueError, KeyError, TypeError, AttributeError) as err:
        return f"the shard is unreadable ({type(err).__name__})", {}, {}
    except _NotInShard as err:
        return str(err), {}, {}
    if problem is not None:
        return problem, {}, {}
    for name, meta in listed.items():
        if name not in files:
            return f"{name} missing", {}, {}
        if check and (not isinstance(meta, dict) or hashlib.sha256(files[name]).hexdigest() != meta.get("sha256")):
            return f"{name}: checksum differs from the shard's manifest (damaged or edited)", {}, {}
    return None, manifest, {name: files[name] for name in listed}


class _NotInShard(Exception):
    """A format-1 shard that is a link, or whose manifest lists a name that is not a file of its
    folder (e.g. ../x.csv)."""


def _read_shard(shards: str, run_id: str) -> tuple[dict, dict[str, bytes]]:
    """The manifest and the tables' bytes of a run's shard: its JSON file, else its format-1 folder
    (manifest.json and the CSV files it lists, read only from inside the folder). FileNotFoundError
    where neither is."""
    try:
        manifest = json.loads(read_bytes(os.path.join(shards, f"{run_id}.json")).decode("utf-8"))
        return manifest, {name: text.encode("utf-8") for name, text in manifest.pop("tables").items()}
    except (FileNotFoundError, NotADirectoryError):
        pass
    folder = os.path.join(shards, run_id)
    if os.path.islink(folder):
        raise _NotInShard(f"{folder} is a link, not a shard: never read")
    manifest = json.loads(read_bytes(os.path.join(folder, MANIFEST)).decode("utf-8"))
    files = {}
    for name in manifest["files"]:
        if not isinstance(name, str) or "/" in name or name.startswith("."):
            raise _NotInShard(f"{MANIFEST} lists {name!r}, not a file of the shard")
        with contextlib.suppress(FileNotFoundError, IsADirectoryError, NotADirectoryError):
            files[name] = read_bytes(os.path.join(folder, name))
    return manifest, files


def read_bytes(path: str) -> bytes:
    """The bytes of the file `path`, never through a link in its place (OSError), read through os (a
    Python file object costs three more system calls; collect reads thousands of shards)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _manifest_problem(manifest: dict, run) -> str | None:
    """Why a shard's manifest is not the run's (another format, run or settings), or None."""
    if manifest["format"] not in (1, SHARD_FORMAT):
        return f"shard format {manifest['format']!r}, this rvfx reads 1 and {SHARD_FORMAT}"
    if manifest["run_id"] != run.run_id:
        return f"the shard names run {manifest['run_id']!r}"
    if manifest["settings"] != run.settings and manifest["settings"] != json.loads(json.dumps(run.settings)):
        return "made under other settings (a default changed): " + _settings_diff(manifest["settings"], run.settings)
    return None


def _settings_diff(old: dict, new: dict) -> str:
    keys = sorted({(scope, k) for part in (old, new) for scope in part for k in part[scope]})
    diffs = [f"{scope}.{k}: {old.get(scope, {}).get(k, '-')!r} -> {new.get(scope, {}).get(k, '-')!r}"
             for scope, k in keys if old.get(scope, {}).get(k) != new.get(scope, {}).get(k)]
    return "; ".join(diffs) or "?"


def is_done(out, run) -> bool:
    return shard_problem(out, run) is None


@contextlib.contextmanager
def naming(path: str | Path):
    """Inside it, an OSError that names no file (a full disk's [Errno 28] at a write, a flush or a
    close) is raised again naming `path`: the one line it ends in says which file failed."""
    try:
        yield
    except OSError as err:
        if err.filename is not None:
            raise
        raise OSError(err.errno, err.strerror or str(err), str(path)) from err


def _table_text(table: list[dict] | pd.DataFrame, first: dict | None = None) -> str:
    """A shard's table (its rows, each after the columns of `first`, or a frame) as the CSV text
    pandas writes for it (rows_csv, or pandas itself)."""
    text = rows_csv(table, first) if isinstance(table, list) else None
    if text is None:
        frame = pd.DataFrame([{**(first or {}), **row} for row in table]) if isinstance(table, list) else table
        text = frame.to_csv(index=False, lineterminator="\n")
    return text


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


FILE_MODE = 0o666 & ~_umask()   # what open() would give; mkstemp alone makes 0600


def write_atomic_text(path: Path, text: str) -> None:
    write_atomic(path, lambda f: f.write(text.encode("utf-8")))


def write_atomic(path: Path, write: Callable[[BinaryIO], object], mode: int | None = None) -> None:
    """`write` into a new binary file under a temporary name beside `path`, then rename it into
    place (with `mode`, default what the umask gives): a link at `path` is replaced, never
    written through, and a reader sees the old file or the new one, never a part; an OSError names
    `path` (naming)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with naming(path), os.fdopen(fd, "wb") as f:
            write(f)
        os.chmod(tmp, FILE_MODE if mode is None else mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_shard(out, run, episodes: list[dict], summary: dict, seconds: float,
                extra: dict[str, pd.DataFrame] | None = None) -> None:
    """Write the run's shard: its tables (and any `extra` ones) with their rows and sha256, its
    settings and what made it, as one JSON object in a new file renamed into place. (Plain os
    calls: a sweep of short runs writes a shard every millisecond or two.)"""
    shards = folders.inside(out, run.experiment, "shards", create=False)     # made only where missing:
    shards = str(shards if os.path.isdir(shards) else folders.inside(out, run.experiment, "shards"))
    ident = identity_columns(run)
    tables = {"episodes.csv": (episodes, ident), "summary.csv": ([summary], ident),
              "timing.csv": ([{"run_id": run.run_id, "seconds": round(seconds, 3)}], None)}
    for name, table in (extra or {}).items():
        tables[f"{name}.csv"] = table.assign(**ident)[list(ident) + list(table.columns)], None
    texts = {name: _table_text(*tables[name]) for name in sorted(tables)}
    files = {name: {"rows": text.count("\n") - 1, "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
             for name, text in texts.items()}       # rows below the header: no quoted newlines in rvfx tables
    shard = {"format": SHARD_FORMAT, "run_id": run.run_id, "settings": run.settings, "code": code_version(),
             "blas": blas_kernels(), "kernels": chosen(), "files": files, "tables": texts}
    path = os.path.join(shards, f"{run.run_id}.json")
    tmp = os.path.join(shards, f".{run.run_id}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with naming(path):
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)    # never through a link
            try:
                view = memoryview((_SORTED_JSON.encode(shard) + "\n").encode("utf-8"))
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if os.path.isdir(os.path.join(shards, run.run_id)):                     # a format-1 shard it replaces
        shutil.rmtree(os.path.join(shards, run.run_id), ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(out, run.experiment, "failed", f"{run.run_id}.txt"))


def write_failure(out, run, traceback_text: str) -> Path:
    path = folders.inside(out, run.experiment, "failed") / f"{run.run_id}.txt"
    write_atomic_text(path, f"run {run.run_id}: {run.agent} on {run.env} seed {run.seed} "
                            f"{run.swept}\n\n{traceback_text}")
    return path


def failure_row(out, run, problem: str) -> dict:
    """failures.csv's row for a run without a verified shard: failed (its traceback kept), missing
    or damaged (why)."""
    fail = experiment_dir(out, run.experiment) / "failed" / f"{run.run_id}.txt"
    status = "failed" if fail.exists() else "missing" if problem == "missing" else "damaged"
    detail = str(fail) if fail.exists() else "" if status == "missing" else f"{shard_path(out, run)}: {problem}"
    return {**identity_columns(run), "status": status, "detail": detail}


def shard_tables(out, runs, verified: set | None = None) -> tuple[dict[str, pd.DataFrame], dict, list[dict]]:
    """(tables, made_by, failures): the verified shards of `runs` concatenated per table (summary.csv
    as runs) in their order, what made each (commit, BLAS kernels), and a failure_row per other run.
    The shards of the runs in `verified` (run ids this command has verified) are read without checking
    them again; each other one found sound is added to it. Each shard file is read once; runs whose CSV
    header is the same are parsed together, as one CSV, which gives the frame pd.concat of each one
    parsed alone gives, ~10x faster."""
    chunks: dict[str, list] = {"episodes": [], "runs": [], "timing": []}
    failures, made_by, verified = [], {}, set() if verified is None else verified
    for run in runs:
        problem, manifest, files = verified_shard(out, run, check=run.run_id not in verified)
        if problem is not None:
            failures.append(failure_row(out, run, problem))
            continue
        verified.add(run.run_id)
        for name in sorted(n for n in files if n.endswith(".csv")):
            header, _, body = files[name].partition(b"\n")
            chunks.setdefault("runs" if name == "summary.csv" else name[:-4], []).append((header, body))
        made_by[run.run_id] = {"commit": manifest.get("code", {}).get("commit", ""), "blas": manifest.get("blas", [])}
    tables = {}
    for name, parts in chunks.items():
        groups = []
        for header, body in parts:
            if groups and groups[-1][0] == header:
                groups[-1][1].append(body)
            else:
                groups.append((header, [body]))
        if groups:
            frames = [read_table(io.BytesIO(b"\n".join([header, b"".join(bodies)]))) for header, bodies in groups]
            tables[name] = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    return tables, made_by, failures


def not_results(exp_dir: Path) -> str | None:
    """Why `collect` must not write the tables of `exp_dir`, or None: it holds tables but no shards/
    (a record or an export, e.g. figures/paper), whose tables no shard of its own could rebuild."""
    if (exp_dir / "runs.csv").exists() and not (exp_dir / "shards").exists():
        return (f"{exp_dir} holds tables without shards (a record or an export): collecting there would replace "
                f"them; update a record with `rvfx run SPEC --record {exp_dir.parent}`, or use another folder")
    return None


def collect(out, runs, resolved_spec: str | None = None, verified: set | None = None) -> dict[str, Path]:
    """Concatenate the verified shards of `runs` (in spec order) into the experiment's tables; those
    of the runs in `verified` (verified by this command already) are not checked again.

    Runs without a verified shard are listed in failures.csv (failed, damaged or missing);
    a table no verified shard feeds any more is removed, so nothing stale looks current. A folder
    of tables without shards (a record) is refused, a link in place of a folder too (ForeignFolder).
    """
    if not runs:
        return {}
    exp_dir = folders.experiment_folder(out, runs[0].experiment)
    refused = not_results(exp_dir)
    if refused:
        raise folders.ForeignFolder(refused)
    exp_dir = folders.inside(out, runs[0].experiment)
    tables, made_by, failures = shard_tables(out, runs, verified)
    written, checksums = {}, {}
    for name, df in tables.items():
        written[name] = exp_dir / f"{name}.csv"
        text = df.to_csv(index=False, lineterminator="\n")
        write_atomic_text(written[name], text)
        checksums[written[name].name] = hashlib.sha256(text.encode()).hexdigest()
    fail_path = exp_dir / "failures.csv"
    if failures:
        text = pd.DataFrame(failures).to_csv(index=False, lineterminator="\n")
        write_atomic_text(fail_path, text)
        checksums[fail_path.name] = hashlib.sha256(text.encode()).hexdigest()
    for stale in set(exp_dir.glob("*.csv")) - set(written.values()) - {fail_path}:
        stale.unlink()
    if not failures:
        fail_path.unlink(missing_ok=True)
    write_atomic_text(exp_dir / TABLES, json.dumps(dict(sorted(checksums.items())), indent=1, sort_keys=True) + "\n")
    if resolved_spec is not None:
        write_atomic_text(exp_dir / "spec.yaml", resolved_spec)
    write_atomic_text(exp_dir / "provenance.json", provenance_text(made_by))
    return written


def provenance_text(made_by: dict) -> str:
    """provenance.json: the environment that collects (environment()) and, under "runs", the commit
    and BLAS kernels that made each run (from its shard's manifest), which may differ run to run."""
    return json.dumps({**environment(), "runs": made_by}, indent=1, sort_keys=True) + "\n"


def missing_runs(results: str | Path, experiment: str) -> str | None:
    """What the experiment's tables lack ("2 failed, 50 missing of 60 runs"), or None when complete."""
    exp_dir = experiment_dir(results, experiment)
    path, runs = exp_dir / "failures.csv", exp_dir / "runs.csv"
    if not path.exists():
        return None
    status = read_table(path)["status"].value_counts()
    done = len(read_table(runs)) if runs.exists() else 0
    counts = ", ".join(f"{n} {s}" for s, n in sorted(status.items()))
    return f"{counts} of {done + int(status.sum())} runs (listed in {path})"


def read_checksums(folder: Path) -> dict:
    """The folder's tables.json, {table file: its sha256, or null}, or {} without one; DamagedTable
    naming it when it is not such an object (read back, so untrusted)."""
    path = folder / TABLES
    if not path.exists():
        return {}
    try:
        listed = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:                        # not JSON, or not UTF-8
        listed = None
    if not isinstance(listed, dict) or not all(isinstance(v, str) or v is None for v in listed.values()):
        raise DamagedTable(f"{path.resolve()}: damaged, cannot be read (not a JSON object of table files and "
                           f"their sha256)")
    return listed


def load_table(results: str | Path, experiment: str, name: str) -> pd.DataFrame:
    path = experiment_dir(results, experiment) / f"{name}.csv"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: run `rvfx run {experiment}` (or your spec of it) first")
    record = path.parent / TABLES
    expected = read_checksums(path.parent).get(path.name)
    data = path.read_bytes()                     # read once: checked, then parsed
    if expected is not None and hashlib.sha256(data).hexdigest() != expected:
        raise DamagedTable(f"{path.resolve()}: damaged, cannot be read (its sha256 differs from {record.resolve()}; "
                           f"`rvfx collect` rebuilds it from the verified shards)")
    return read_table(io.BytesIO(data))


def load_or_derive(results: str | Path, experiment: str, name: str, derive) -> pd.DataFrame:
    """The experiment's table `name` as written (collected, or exported to a record), else
    derive(results, experiment) from the tables it is computed from."""
    if (experiment_dir(results, experiment) / f"{name}.csv").exists():
        return load_table(results, experiment, name)
    return derive(results, experiment)


def load_spec_value(results: str | Path, experiment: str, keys: tuple):
    """A value of the resolved spec saved beside the tables (e.g. an unswept env parameter)."""
    import yaml
    node = yaml.safe_load((experiment_dir(results, experiment) / "spec.yaml").read_text())
    for k in keys:
        node = node.get(k) if isinstance(node, dict) else None
    return node


def env_params(results: str | Path, experiment: str):
    """The experiment's environment parameters as its resolved spec (saved beside the tables) set
    them, defaults for the rest: the figures' constants come from here, not from literals."""
    env = dict(load_spec_value(results, experiment, ("env",)) or {})
    params_cls = ENVS[env.pop("name")][1]
    return params_cls(**as_current(params_cls, env))

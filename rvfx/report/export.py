"""`export_tables`: the result tables the claims read, written as a results folder to commit (e.g.
figures/paper), so that the report recomputes every verdict on a clone without per-episode logs."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import sys
from contextlib import ExitStack
from pathlib import Path

import pandas as pd

from rvfx.experiment import folders
from rvfx.experiment.results import (
    FILE_MODE,
    TABLES,
    DamagedTable,
    experiment_dir,
    load_spec_value,
    load_table,
    read_checksums,
)
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


def written_tables(results: Path, experiment: str, names) -> dict[str, pd.DataFrame]:
    """The tables `names` of an experiment's results, as read or derived (experiment_table), leaving
    out any that none of its runs wrote (a diagnostics table only some agents write)."""
    frames = {}
    for name in sorted(names):
        try:
            frames[name] = experiment_table(results, experiment, name)
        except FileNotFoundError:
            if name == "runs":
                raise
    return frames


def unwritten_tables(folder: Path) -> set[str]:
    """The kept tables a record notes that none of its runs wrote (null in its tables.json)."""
    return {n[:-len(".csv")] for n, v in read_checksums(folder).items() if v is None and n.endswith(".csv")}


def write_tables(dst: Path, frames: dict[str, pd.DataFrame], extras: dict[str, str],
                 unwritten: tuple = ()) -> dict[str, str]:
    """Make `dst` hold `frames` as <name>.csv, the `extras` texts and tables.json (each CSV's sha256;
    null for each kept table in `unwritten`, which none of the runs wrote), and no other CSV or
    extra, as one unit: the new folder is built beside the old (.NAME.new) and
    switched in by renames (`_switch`), so an interruption at any point leaves the old folder or the
    new one, and `repair` finishes or undoes it on the next look. Other files of `dst` are kept.
    Returns the texts written, by file name."""
    texts = {f"{name}.csv": df.to_csv(index=False, lineterminator="\n") for name, df in sorted(frames.items())}
    texts.update(extras)
    checksums = {n: hashlib.sha256(t.encode()).hexdigest() for n, t in texts.items() if n.endswith(".csv")}
    checksums.update({f"{name}.csv": None for name in unwritten})
    texts[TABLES] = json.dumps(checksums, indent=1, sort_keys=True) + "\n"
    repair(dst)
    new = _aside(dst, "new")
    try:
        new.mkdir(parents=True)
        for kept in sorted(dst.iterdir()) if dst.is_dir() else ():
            if kept.suffix != ".csv" and kept.name not in (*EXTRAS, TABLES):
                if kept.is_dir() and not kept.is_symlink():
                    shutil.copytree(kept, new / kept.name, symlinks=True)
                else:
                    shutil.copy2(kept, new / kept.name, follow_symlinks=False)
        for name, text in texts.items():                # tables.json last
            _write_file(new / name, text.encode("utf-8"), dst / name)
        _switch(new, dst)
    except BaseException:
        if not _aside(dst, "old").exists():             # killed before the old folder moved: undo
            shutil.rmtree(new, ignore_errors=True)
        raise
    return texts


def _aside(dst: Path, role: str) -> Path:
    """Where write_tables builds the new folder (role "new") and parks the old one ("old")."""
    return dst.with_name(f".{dst.name}.{role}")


def _write_file(path: Path, data: bytes, named: Path) -> None:
    """Write `data` to `path`, an OSError naming `named` (the file it becomes) and what failed."""
    try:
        with open(path, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())                        # on disk before the rename that publishes it
        os.chmod(path, FILE_MODE)
    except OSError as err:
        raise OSError(err.errno, f"{err.strerror or err} (nothing changed: the folder is as it was)",
                      str(named)) from err


def _switch(new: Path, dst: Path) -> None:
    """Put the finished folder `new` in the place of `dst`: park the old one as .NAME.old, rename
    `new` into place, remove the old. Each rename is atomic; `repair` knows each state between."""
    if dst.exists():
        os.rename(dst, _aside(dst, "old"))
    os.rename(new, dst)
    _fsync_dir(dst.parent)                              # the renames too, before the old goes
    shutil.rmtree(_aside(dst, "old"), ignore_errors=True)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def repair(dst: Path) -> str | None:
    """Finish or undo a write_tables cut short (a kill, a full disk, a lost machine) and say which
    on stderr: with the old folder parked, the new one was complete, so it goes in; a new one
    found beside the old (still in place) was not, so it goes. None when there was nothing to do.
    A link or a file in place of any of the three folders is refused (ForeignFolder), nothing moved."""
    new, old = _aside(dst, "new"), _aside(dst, "old")
    has_dst, has_new, has_old = folders.is_folder(dst), folders.is_folder(new), folders.is_folder(old)
    if not has_new and not has_old:
        return None
    if has_old and not has_dst:
        if has_new:
            os.rename(new, dst)
            said = f"{dst}: finished an update cut short (its new tables were complete)"
        else:
            os.rename(old, dst)
            said = f"{dst}: undid an update cut short (its old tables restored)"
    elif has_old:
        said = f"{dst}: finished an update cut short (removed its old tables)"
    else:
        said = f"{dst}: undid an update cut short (removed its unfinished new tables)"
    for leftover in (new, old):
        if leftover.exists():
            shutil.rmtree(leftover)
    print(said, file=sys.stderr, flush=True)
    return said


def export_tables(registry: dict, results: Path, out: Path, scale: str | None = None) -> list[Path]:
    """Copy what the claims and figures read (kept_tables) from `results` into `out`, laid out as a
    results folder, so that `rvfx report --results OUT` recomputes every verdict without the
    per-episode tables: per experiment runs.csv and each kept table (DERIVED ones written out), then
    failures.csv, spec.yaml and provenance.json as collected, and tables.json with the sha256 of
    each table written. Experiments without collected tables in `results` are left as they are.
    Nothing is copied (RegistryError naming the first culprit) when, with `scale`, an experiment
    was run at another scale (its spec.yaml says), or when `out` records runs of the same spec that
    `results` lacks (a sweep resumed with `rvfx run --record`, which keeps such a record)."""
    if out.resolve() == results.resolve():
        raise RegistryError(f"--out {out} is the --results folder itself: an export there would replace its "
                            f"tables with fewer (no episodes.csv); nothing exported, choose another --out")
    present = {exp: names for exp, names in sorted(kept_tables(registry).items())
               if (experiment_dir(results, exp) / "runs.csv").exists()}
    for exp in present:
        ran_at = load_spec_value(results, exp, ("scale",))
        if scale is not None and ran_at != scale:
            raise RegistryError(f"{experiment_dir(results, exp) / 'spec.yaml'}: run at scale {ran_at}, not {scale}; "
                                f"nothing exported")
    with ExitStack() as held:
        for exp in present:
            held.enter_context(record_lock(out, exp))
        return _export(results, out, present)


def _export(results: Path, out: Path, present: dict[str, set]) -> list[Path]:
    """export_tables' work, under the locks of the experiments it writes."""
    frames = {}
    for exp, names in present.items():
        src, dst = experiment_dir(results, exp), experiment_dir(out, exp)
        repair(dst)
        frames[exp] = written_tables(results, exp, names)
        if (dst / "runs.csv").exists() and (dst / "spec.yaml").exists() \
                and (dst / "spec.yaml").read_bytes() == (src / "spec.yaml").read_bytes():
            try:
                lost = set(load_table(out, exp, "runs")["run_id"]) - set(frames[exp]["runs"]["run_id"])
            except DamagedTable as err:
                raise RegistryError(f"{str(err).split(' (')[0]}: its sha256 differs from tables.json beside it; "
                                    f"restore it (git checkout) or move {dst} aside; nothing exported") from None
            if lost:
                raise RegistryError(f"{dst} records {len(lost)} run(s) of this spec that {src} lacks; nothing "
                                    f"exported (update a record with `rvfx run {exp} --record {out}`)")
    written = []
    for exp in present:
        src, dst = experiment_dir(results, exp), experiment_dir(out, exp)
        write_tables(dst, frames[exp],
                     {extra: (src / extra).read_text(encoding="utf-8") for extra in EXTRAS if (src / extra).exists()},
                     tuple(sorted(present[exp] - set(frames[exp]))))
        written.append(dst)
    return written


def record_lock(record: Path, experiment: str):
    """Hold RECORD/.<experiment>.lock (folders.lock) while the experiment's record is read and
    rewritten: beside its folder, which is replaced whole. A second writer is refused (folders.Busy)."""
    return folders.lock(folders.inside(record) / f".{experiment}.lock",
                        f"rvfx, pid {os.getpid()} on {socket.gethostname()}, updating {experiment}",
                        "wait for it to finish, then run again")

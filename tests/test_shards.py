"""Shards prove themselves: damaged or stale shards are named, rerun and never read."""
import hashlib
import io
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pandas as pd
from cli_helpers import as_format_1, edit_shard, invoke

from rvfx.experiment import results
from rvfx.experiment.spec import load_spec


def tables(out: Path) -> dict:
    return {name: (out / "tiny" / name).read_bytes() for name in ("episodes.csv", "runs.csv")}


def shards(out: Path) -> list[Path]:
    return sorted((out / "tiny" / "shards").iterdir())


def test_manifest_lists_every_table_with_rows_checksum_settings_and_code(tiny_spec, tmp_path):
    out = tmp_path / "m"
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0
    run = load_spec(str(tiny_spec)).runs[0]
    manifest = json.loads(results.shard_path(out, run).read_text())
    assert set(manifest["files"]) == set(manifest["tables"]) == {"episodes.csv", "summary.csv", "timing.csv"}
    assert manifest["format"] == results.SHARD_FORMAT == 2
    episodes = pd.read_csv(io.StringIO(manifest["tables"]["episodes.csv"]))
    assert manifest["files"]["episodes.csv"]["rows"] == len(episodes) > 0
    assert manifest["run_id"] == run.run_id
    assert manifest["settings"]["env"]["size"] == 4 and "start_angle" not in manifest["settings"]["env"]
    assert manifest["settings"]["agent"]["v"] == "H**2/25"
    assert manifest["code"]["rvfx"]
    assert manifest["blas"] and all(k.split()[-1] == "Haswell" for k in manifest["blas"]
                                    if platform.machine() == "x86_64" and k.startswith("openblas"))
    assert oct((out / "tiny" / "runs.csv").stat().st_mode & 0o777) == oct(results.FILE_MODE)
    provenance = json.loads((out / "tiny" / "provenance.json").read_text())
    assert provenance["blas"] == manifest["blas"]
    assert provenance["runs"][run.run_id] == {"commit": manifest["code"]["commit"], "blas": manifest["blas"]}


def test_a_shard_of_the_older_layout_is_read_verified_and_replaced_when_damaged(tiny_spec, tmp_path):
    """A folder of CSV files and manifest.json (shard format 1, what an older rvfx wrote) counts as
    done and feeds the same tables; a damaged one is named and rerun, and its folder replaced by a
    shard file; a manifest naming a file outside its folder is not read."""
    out = tmp_path / "o"
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0
    clean = tables(out)
    runs = load_spec(str(tiny_spec)).runs
    old = [as_format_1(results.shard_path(out, run)) for run in runs[:3]]
    assert invoke("collect", tiny_spec, "--out", out).exit_code == 0 and tables(out) == clean
    assert [results.shard_problem(out, run) for run in runs[:3]] == [None] * 3
    (old[0] / "episodes.csv").write_text("damaged\n")
    (old[1] / "summary.csv").unlink()
    manifest = json.loads((old[2] / results.MANIFEST).read_text())
    manifest["files"]["../../runs.csv"] = {"rows": 1, "sha256": "0"}
    (old[2] / results.MANIFEST).write_text(json.dumps(manifest))
    assert [results.shard_problem(out, run) for run in runs[:3]] == [
        "episodes.csv: checksum differs from the shard's manifest (damaged or edited)", "summary.csv missing",
        "manifest.json lists '../../runs.csv', not a file of the shard"]
    result = invoke("run", tiny_spec, "--out", out)
    assert result.exit_code == 0 and "3 run(s) finished, 0 failed" in result.output and tables(out) == clean
    assert all(not d.exists() and results.shard_path(out, run).is_file() for d, run in zip(old, runs))


def test_a_link_in_place_of_a_shard_is_never_read_and_its_target_never_touched(tiny_spec, tmp_path):
    """A link planted at a shard's file, or at an older shard's folder, pointing at a sound shard
    elsewhere: named, not read, the run rerun and a real file written in the link's place; what the
    links point at is unchanged."""
    out, outside = tmp_path / "k", tmp_path / "outside"
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0
    clean = tables(out)
    runs = load_spec(str(tiny_spec)).runs
    outside.mkdir()
    planted = outside / "planted.json"
    planted.write_bytes(results.shard_path(out, runs[0]).read_bytes())
    results.shard_path(out, runs[0]).unlink()
    results.shard_path(out, runs[0]).symlink_to(planted)
    folder = as_format_1(results.shard_path(out, runs[1]))
    folder.rename(outside / "folder")
    folder.symlink_to(outside / "folder")
    before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    assert results.shard_problem(out, runs[0]) == "a link in place of the shard, never read"
    assert results.shard_problem(out, runs[1]) == f"{folder} is a link, not a shard: never read"
    result = invoke("run", tiny_spec, "--out", out)
    assert result.exit_code == 0 and "2 run(s) finished" in result.output and tables(out) == clean
    assert not results.shard_path(out, runs[0]).is_symlink() and results.shard_problem(out, runs[1]) is None
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == before


def test_the_plan_looks_only_at_shards_that_are_there_and_names_each_problem(tiny_spec, tmp_path):
    """shard_problems lists the shards folder once and gives each run shard_problem's own answer: a
    run with nothing there is missing (every run, where there is no folder), a damaged one is named."""
    runs = load_spec(str(tiny_spec)).runs
    out = tmp_path / "p"
    assert results.shard_problems(out, runs) == dict.fromkeys((r.run_id for r in runs), "missing")
    assert invoke("run", tiny_spec, "--set", "seeds=1", "--out", out).exit_code == 0
    done = [r for r in runs if results.is_done(out, r)]
    assert 0 < len(done) < len(runs)
    edit_shard(results.shard_path(out, done[0]), lambda shard: shard["tables"].update({"episodes.csv": "damaged\n"}))
    (out / "tiny" / "shards" / runs[-1].run_id).mkdir()                        # an empty folder: no manifest
    problems = results.shard_problems(out, runs)
    assert problems == {r.run_id: results.shard_problem(out, r) for r in runs}
    assert problems[done[0].run_id] == "episodes.csv: checksum differs from the shard's manifest (damaged or edited)"
    assert problems[done[1].run_id] is None and problems[runs[-1].run_id].startswith("no manifest.json")
    assert sum(p == "missing" for p in problems.values()) == len(runs) - len(done) - 1


def test_truncated_emptied_and_corrupted_shards_are_named_rerun_and_tables_match(tiny_spec, tmp_path):
    out = tmp_path / "d"
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0
    clean = tables(out)
    dirs = shards(out)
    damaged = dirs[:4]
    text = damaged[0].read_text()
    damaged[0].write_text(text[: len(text) // 2])                             # truncated mid-line

    def garbage(shard):                                                       # garbage appended to a table
        shard["tables"]["episodes.csv"] += "1,2,garbage\n"
    edit_shard(damaged[1], garbage)
    damaged[2].write_text("")                                                 # emptied
    edit_shard(damaged[3], lambda shard: shard["tables"].update({"summary.csv": "learning_time,junk\n1,2\n"}))
    kept = {p: p.stat().st_mtime_ns for p in dirs[4:]}

    result = invoke("collect", tiny_spec, "--out", out)
    assert "4 damaged of 8 runs" in result.output
    failures = pd.read_csv(out / "tiny" / "failures.csv")
    assert (failures["status"] == "damaged").sum() == 4
    assert failures["detail"].str.contains("checksum differs").sum() == 2
    assert failures["detail"].str.contains("unreadable \\(JSONDecodeError\\)").sum() == 2
    runs = pd.read_csv(out / "tiny" / "runs.csv")
    assert len(runs) == 4 and "junk" not in runs.columns                       # never read

    assert "8 runs, 4 done, 4 to run" in invoke("run", tiny_spec, "--out", out, "--dry-run").output
    result = invoke("run", tiny_spec, "--out", out)
    assert result.exit_code == 0 and "4 run(s) finished, 0 failed" in result.output
    assert {p: p.stat().st_mtime_ns for p in dirs[4:]} == kept                 # the rest untouched
    assert tables(out) == clean
    assert not (out / "tiny" / "failures.csv").exists()
    assert not [p for p in (out / "tiny" / "shards").iterdir() if p.name.startswith(".")]


def test_a_shard_made_under_another_default_is_rerun(tiny_spec, tmp_path):
    """The guard of added_later parameters: they are left out of the run id at their default,
    so a shard records every setting and resume reruns one made when a default differed."""
    out = tmp_path / "g"
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0
    clean = tables(out)
    run = load_spec(str(tiny_spec)).runs[0]
    edit_shard(results.shard_path(out, run),                 # as if made under an older default
               lambda shard: shard["settings"]["agent"].update({"v": "H**2/100"}))
    problem = results.shard_problem(out, run)
    assert problem.startswith("made under other settings") and "agent.v: 'H**2/100' -> 'H**2/25'" in problem
    result = invoke("run", tiny_spec, "--out", out)
    assert "1 run(s) finished" in result.output
    assert results.shard_problem(out, run) is None and tables(out) == clean


def test_a_table_no_verified_shard_feeds_is_removed(tiny_spec, tmp_path):
    out = tmp_path / "s"
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0
    for path in shards(out):
        path.unlink()
    invoke("collect", tiny_spec, "--out", out)
    assert not (out / "tiny" / "episodes.csv").exists() and not (out / "tiny" / "runs.csv").exists()
    assert len(pd.read_csv(out / "tiny" / "failures.csv")) == 8


def test_a_collected_table_damaged_after_collect_is_refused_by_plot(tiny_spec, tmp_path):
    """collect records each table's sha256 (tables.json); a runs.csv cut mid-line afterwards is
    named and refused, exit 2, one line, instead of being drawn from."""
    out = tmp_path / "c"
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0
    runs = out / "tiny" / "runs.csv"
    checksums = json.loads((out / "tiny" / results.TABLES).read_text())
    assert checksums["runs.csv"] == hashlib.sha256(runs.read_bytes()).hexdigest()
    text = runs.read_text()
    runs.write_text(text[: len(text) - 7])
    result = invoke("plot", "--spec", tiny_spec, "--results", out, "--out", tmp_path / "f")
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(runs) in errors[0] and "damaged" in errors[0]
    assert invoke("collect", tiny_spec, "--out", out).exit_code == 0     # rebuilt from the shards
    assert runs.read_text() == text


def test_a_lock_that_is_a_link_is_refused_and_its_target_kept(tiny_spec, tmp_path):
    """OUT/<experiment>/.lock is opened without following a link and never truncated through one,
    even when every run is done: one line, exit 1, the link's target unchanged."""
    out = tmp_path / "l"
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0
    victim = tmp_path / "precious.txt"
    victim.write_text("the runner's own file\n")
    lock = out / "tiny" / ".lock"
    lock.unlink()
    for make in (lambda: lock.symlink_to(victim), lambda: os.link(victim, lock)):
        make()
        result = invoke("run", tiny_spec, "--out", out)              # 0 runs to do
        errors = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.exit_code == 1 and len(errors) == 1 and str(lock) in errors[0] and "link" in errors[0]
        assert victim.read_text() == "the runner's own file\n"
        lock.unlink()
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0 and lock.is_file() and not lock.is_symlink()


def test_tables_and_figures_replace_a_link_instead_of_writing_through_it(tiny_spec, tmp_path):
    """Every file rvfx writes is made under a temporary name in its folder and renamed into
    place: a link planted at its path is replaced, its target untouched."""
    out, figs = tmp_path / "w", tmp_path / "figs"
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0
    assert invoke("plot", "--spec", tiny_spec, "--results", out, "--out", figs).exit_code == 0
    written = [p for p in (out / "tiny").iterdir() if p.is_file() and not p.name.startswith(".")]
    written += [p for p in figs.rglob("*") if p.is_file()]
    assert {"runs.csv", "spec.yaml", results.TABLES, "deepsea_tabular.png"} <= {p.name for p in written}
    before = {p: p.read_bytes() for p in written}
    victims = {}
    for i, p in enumerate(written):
        victims[p] = tmp_path / f"victim{i}"
        victims[p].write_text("not rvfx's\n")
        p.unlink()
        p.symlink_to(victims[p])
    assert invoke("collect", tiny_spec, "--out", out).exit_code == 0
    assert invoke("plot", "--spec", tiny_spec, "--results", out, "--out", figs).exit_code == 0
    for p, victim in victims.items():
        assert victim.read_text() == "not rvfx's\n", p
        assert p.is_file() and not p.is_symlink(), p
        if p.suffix in (".csv", ".json", ".yaml", ".md", ".pdf"):
            assert p.read_bytes() == before[p], p


def test_shard_folders_and_files_follow_the_umask(tiny_spec, tmp_path):
    """Under umask 002 (a group-shared --out) shards are group-readable and their folder
    group-searchable, so another member of the group reads them as done instead of rerunning."""
    out = tmp_path / "u"
    subprocess.run([sys.executable, "-c", "import sys; from rvfx.cli import main; sys.exit(main())",
                    "run", str(tiny_spec), "--out", str(out)], check=True, capture_output=True,
                   preexec_fn=lambda: os.umask(0o002))
    assert len(shards(out)) == 8
    assert {oct(p.stat().st_mode & 0o777) for p in shards(out)} == {oct(0o664)}
    assert oct((out / "tiny" / "runs.csv").stat().st_mode & 0o777) == oct(0o664)
    assert oct((out / "tiny" / "shards").stat().st_mode & 0o777) == oct(0o775)


def test_a_long_table_with_a_column_blank_for_some_runs_is_read_as_one_type_without_warning(tmp_path):
    """A record's episodes.csv holds runs whose spec sweeps a setting and runs whose spec does not
    (blank): read chunk by chunk, pandas typed that column per chunk and warned at every read."""
    import warnings
    rows = 200_000                                  # past pandas' low-memory chunk
    table = pd.DataFrame({"run_id": [f"{i:016d}" for i in range(2 * rows)],
                          "env.strict_bounds": [None] * rows + [True] * rows})
    (tmp_path / "episodes.csv").write_text(table.to_csv(index=False, lineterminator="\n"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = results.read_table(tmp_path / "episodes.csv")
    assert back["env.strict_bounds"].isna().sum() == rows and (back["env.strict_bounds"].iloc[rows:] == True).all()  # noqa: E712


def test_a_shards_rows_are_written_as_pandas_writes_them():
    """rows_csv spells a shard's rows as pd.DataFrame(rows).to_csv does, byte for byte (shards stay as
    rvfx always wrote them), on 5,000 random tables of the types a run logs: ints, floats (0, -0, inf,
    nan, 1e16, 5e-324, ...), bools, text that needs quoting, None, their NumPy kinds, keys some rows lack,
    and mixtures; it leaves to pandas only a float column holding an int beyond 2**53. With columns
    `first` before each row's own (a run's identity; some rows set one of them too), it spells
    pd.DataFrame([{**first, **row} ...]) the same."""
    import random

    import numpy as np

    from rvfx.experiment.rows_csv import rows_csv
    rng = random.Random(0)
    values = {"int": [0, 1, -1, 7, 10**6, 2**40, -(2**52), 2**53 + 1, 2**64], "npint": [np.int64(-5), np.int64(2**40)],
              "float": [0.0, -0.0, 1.0, 0.1, 1e16, 1e-5, 9.999999999999999e15, 1e-4, 123456789.123, 1e22, 5e-324,
                        float("inf"), -float("inf"), float("nan"), 0.125, -2.5e-7],
              "npfloat": [np.float64(0.1), np.float64(-3e20), np.float64("nan")], "bool": [True, False],
              "npbool": [np.bool_(True)], "str": ["a", "", "x,y", 'q"uote', "new\nline", "é", " sp ", "1.0", "nan"],
              "none": [None]}
    left, compared = 0, 0
    for _ in range(5000):
        kinds = [rng.sample(sorted(values), rng.randint(1, 3)) for _ in range(rng.randint(1, 5))]
        rows = [{f"c{c}": rng.choice(values[rng.choice(ks)]) for c, ks in enumerate(kinds) if rng.random() > 0.1}
                for _ in range(rng.randint(1, 6))]
        if not any(rows):
            continue
        first = {rng.choice(["c0", "c9", "id"]): rng.choice(values[rng.choice(sorted(values))])
                 for _ in range(rng.randint(0, 2))}
        for table, fast in ((rows, rows_csv(rows)), ([{**first, **row} for row in rows], rows_csv(rows, first))):
            if fast is None:
                left += 1
                continue
            compared += 1
            assert fast == pd.DataFrame(table).to_csv(index=False, lineterminator="\n"), (rows, first)
    assert compared > 8000 and left < compared / 5

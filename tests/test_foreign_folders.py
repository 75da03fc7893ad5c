"""rvfx creates, replaces and deletes only inside the folders it was given: a link (or a file) planted
where one of its folders should be is refused in one line, the link's target left byte for byte; a
record is changed only by the commands that keep it whole, one writer at a time; a checkpoint
survives a kill between its two writes."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import invoke

from rvfx.experiment import checkpoint, results
from rvfx.experiment.runner import run_and_store
from rvfx.experiment.spec import load_spec
from rvfx.report.export import record_lock

ONE_RUN = ["--set", "seeds=1", "--set", "grid={env.treasure: [true]}", "--set", "episodes=20"]


def tree_hashes(folder: Path) -> dict:
    """Every file under `folder` (links not followed) by relative path: its sha256, or its link target."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            rel = str(path.relative_to(folder))
            if path.is_symlink():
                found[rel] = "-> " + os.readlink(path)
            elif path.is_file():
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                found[rel] = "dir"
    return found


def victim(tmp_path: Path) -> Path:
    """A folder outside every folder rvfx is given, holding what collect and the stray sweep would remove."""
    d = tmp_path / "victim"
    (d / ".bak.old").mkdir(parents=True)
    (d / ".bak.old" / "inner.txt").write_text("kept\n")
    for name, text in (("keep.csv", "a\n"), (".s.tmp", "temp\n"), ("runs.csv", "run_id\nx\n"), (".x.tmp", "t\n")):
        (d / name).write_text(text)
    return d


def one_error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.mark.parametrize("where", ["", "shards", "failed", "checkpoints"])
def test_a_link_in_place_of_a_results_folder_is_refused_and_its_target_untouched(tiny_spec, tmp_path, where):
    out = tmp_path / "out"
    if where:                                         # a finished sweep, then its subfolder replaced by a link
        assert invoke("run", tiny_spec, "--out", out, *ONE_RUN).exit_code == 0
        (out / "tiny" / where).mkdir(exist_ok=True)
        os.rename(out / "tiny" / where, tmp_path / "moved")
    target = victim(tmp_path)
    before = tree_hashes(target)
    link = out / "tiny" / where if where else out / "tiny"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target, target_is_directory=True)
    for command in (["run", tiny_spec, "--out", out, "--set", "seeds=2"], ["collect", tiny_spec, "--out", out]):
        result = invoke(*command)
        assert result.exit_code == 2 and str(link) in one_error_line(result) and "link" in result.stderr
        assert tree_hashes(target) == before


@pytest.fixture
def claimed_spec(tiny_spec, tmp_path) -> Path:
    """The tiny spec under the name of an experiment the claims read, so that export writes it."""
    spec = tmp_path / "deepsea_tabular.yaml"
    spec.write_text(tiny_spec.read_text().replace("experiment: tiny", "experiment: deepsea_tabular"))
    return spec


def test_a_link_in_place_of_a_record_folder_or_its_parked_copy_is_refused(claimed_spec, tmp_path):
    spec = claimed_spec
    assert invoke("run", spec, "--out", tmp_path / "res", *ONE_RUN).exit_code == 0
    record = tmp_path / "record"
    target = victim(tmp_path)
    before = tree_hashes(target)
    for name in ("deepsea_tabular", ".deepsea_tabular.old", ".deepsea_tabular.new"):
        record.mkdir(exist_ok=True)
        (record / name).symlink_to(target, target_is_directory=True)
        for command in (["run", spec, "--out", tmp_path / "res", *ONE_RUN, "--record", record],
                        ["export", "--results", tmp_path / "res", "--out", record]):
            result = invoke(*command)
            assert result.exit_code == 2 and str(record / name) in one_error_line(result), result.output
            assert tree_hashes(target) == before
        (record / name).unlink()
    (record / ".deepsea_tabular.old").write_text("a file parked where rvfx parks a folder\n")
    result = invoke("run", spec, "--out", tmp_path / "res", *ONE_RUN, "--record", record)
    assert result.exit_code == 2 and "not a folder" in one_error_line(result)


def test_collect_into_a_record_is_refused_and_keeps_its_tables(tiny_spec, tmp_path):
    record = tmp_path / "R"
    assert invoke("run", tiny_spec, "--out", tmp_path / "o", *ONE_RUN, "--record", record).exit_code == 0
    before = tree_hashes(record / "tiny")
    assert "runs.csv" in before
    for command in (["collect", tiny_spec, "--out", record, *ONE_RUN], ["run", tiny_spec, "--out", record, *ONE_RUN]):
        result = invoke(*command)
        assert result.exit_code == 2 and "--record" in one_error_line(result) and str(record / "tiny") in result.stderr
        assert tree_hashes(record / "tiny") == before


def test_a_second_writer_of_a_record_is_refused_in_one_line_and_the_record_kept(claimed_spec, tmp_path):
    record = tmp_path / "R"
    assert invoke("run", claimed_spec, "--out", tmp_path / "a", *ONE_RUN, "--record", record).exit_code == 0
    before = tree_hashes(record / "deepsea_tabular")
    with record_lock(record, "deepsea_tabular"):       # another process's sweep, recording
        for command in (["run", claimed_spec, "--out", tmp_path / "b", *ONE_RUN, "--record", record],
                        ["export", "--results", tmp_path / "a", "--out", record]):
            result = invoke(*command)
            assert result.exit_code == 1 and "in use by" in one_error_line(result)
            assert tree_hashes(record / "deepsea_tabular") == before
    assert invoke("run", claimed_spec, "--out", tmp_path / "b", *ONE_RUN, "--record", record).exit_code == 0


def test_two_concurrent_record_sweeps_end_as_the_two_applied_in_turn(tiny_spec, tmp_path):
    sets = ["--set", "seeds=1", "--set", "episodes=400"]
    ref = tmp_path / "ref"
    for out in ("r1", "r2"):
        assert invoke("run", tiny_spec, "--out", tmp_path / out, *sets, "--record", ref).exit_code == 0
    record = tmp_path / "R"
    cmd = [sys.executable, "-c", "from rvfx.cli import main; main()", "run", str(tiny_spec), *sets,
           "--record", str(record)]
    procs = [subprocess.Popen([*cmd, "--out", str(tmp_path / out)], stdout=subprocess.DEVNULL,
                              stderr=open(tmp_path / f"{out}.err", "w")) for out in ("c1", "c2")]
    ends = [(p.wait(timeout=300), (tmp_path / f"{out}.err").read_text()) for p, out in zip(procs, ("c1", "c2"))]
    refused = [err for code, err in ends if code != 0]
    assert len(refused) <= 1 and all(code in (0, 1) for code, _ in ends), ends
    for err in refused:
        assert [line for line in err.splitlines() if line.startswith("error:")] == [err.splitlines()[-1]]
        assert "in use by" in err
        assert invoke("run", tiny_spec, "--out", tmp_path / "again", *sets, "--record", record).exit_code == 0
    tables = sorted(p.name for p in (ref / "tiny").glob("*.csv"))
    assert tables and all((record / "tiny" / n).read_bytes() == (ref / "tiny" / n).read_bytes() for n in tables)


CKPT_SPEC = """experiment: ckpt
env: {name: deep_sea, size: 4}
agents: {rlsvi: {algorithm: grlsvi}}
episodes: 12
seeds: 1
log: all
scales: {ci: {}, paper: {}}
"""


class Cut(BaseException):
    """The machine going away."""


def test_a_kill_between_the_checkpoint_writes_resumes_at_the_previous_checkpoint(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    spec = tmp_path / "ckpt.yaml"
    spec.write_text(CKPT_SPEC)
    run = load_spec(str(spec)).runs[0]
    assert run_and_store(run, tmp_path / "whole").ok
    monkeypatch.setattr(checkpoint, "CHECKPOINT_EVERY", 0.0)       # a checkpoint after every episode
    real, writes = checkpoint.write_atomic, []

    def killed_before_the_sixth_description(path, write, mode=None):
        writes.append(path)
        if path.suffix == ".json" and len(writes) == 12:           # data of episode 6 renamed, description not
            raise Cut
        return real(path, write, mode)
    monkeypatch.setattr(checkpoint, "write_atomic", killed_before_the_sixth_description)
    out = tmp_path / "cut"
    with pytest.raises(Cut):
        run_and_store(run, out)
    monkeypatch.setattr(checkpoint, "write_atomic", real)
    folder = out / "ckpt" / "checkpoints"
    assert sorted(p.name for p in folder.glob("*.npz")) == [f"{run.run_id}.5.npz", f"{run.run_id}.6.npz"]
    assert checkpoint.resumable(out, [run]) == {run.run_id: 5}
    episodes = []
    assert run_and_store(run, out, episodes.append).ok
    assert episodes == list(range(6, 13))                          # resumed at the last complete checkpoint
    assert "ignoring checkpoint" not in capsys.readouterr().err
    cut, whole = ({name: text for name, text in json.loads(results.shard_path(o, run).read_text())["tables"].items()
                   if name != "timing.csv"} for o in (out, tmp_path / "whole"))
    assert cut == whole
    assert list(folder.iterdir()) == []                            # no checkpoint or temp file left


def test_a_finished_run_leaves_no_checkpoint_temp_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    spec = tmp_path / "ckpt.yaml"
    spec.write_text(CKPT_SPEC)
    run = load_spec(str(spec)).runs[0]
    folder = tmp_path / "out" / "ckpt" / "checkpoints"
    folder.mkdir(parents=True)
    stray = folder / f".{run.run_id}.3.npz.abc123.tmp"                # a writer killed mid-write
    stray.write_bytes(b"partial")
    assert run_and_store(run, tmp_path / "out").ok
    assert not stray.exists() and list(folder.iterdir()) == []


def test_a_key_path_that_is_a_folder_is_named_before_the_sweep_starts(tiny_spec, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    checkpoint.key_path().mkdir(parents=True)
    result = invoke("run", tiny_spec, "--out", tmp_path / "out", *ONE_RUN)
    line = one_error_line(result)
    assert result.exit_code == 2 and f"key {checkpoint.key_path()}: not a regular file" in line
    assert not (tmp_path / "out" / "tiny" / "shards").exists()

"""`rvfx run --record DIR`: a sweep cut off, whose results folder is then lost with the machine,
resumes from its committed record without redoing a recorded run, and the record it ends with is
byte for byte the export of one uninterrupted sweep."""
import errno
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from cli_helpers import CONFIGS, invoke

import rvfx.experiment.runner as runner
import rvfx.report.export as export
import rvfx.report.record as record_module

pytestmark = pytest.mark.usefixtures("claims_read_once")     # ~50 `rvfx run --record`s, none about claims.yaml

SPEC = CONFIGS / "deepsea_tabular_scaling.yaml"
SETS = ["--set", "seeds=2", "--set", "episodes=3000", "--set", "grid={env.size: [3, 4, 5]}"]   # 24 runs
EXP = "deepsea_tabular_scaling"


def _cut_after(monkeypatch, k: int) -> None:
    """Ctrl-C as the sweep starts its (k+1)-th run."""
    real, calls = runner.run_and_store, []

    def cut(run, out, progress=None):
        calls.append(run.run_id)
        if len(calls) > k:
            raise KeyboardInterrupt
        return real(run, out, progress)
    monkeypatch.setattr(runner, "run_and_store", cut)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The export of one uninterrupted sweep."""
    root = tmp_path_factory.mktemp("whole")
    assert invoke("run", SPEC, *SETS, "--out", root / "results").exit_code == 0
    assert invoke("export", "--results", root / "results", "--out", root / "paper").exit_code == 0
    return root / "paper" / EXP


def test_a_cut_sweep_resumes_from_its_record_on_a_new_machine_and_ends_as_one_sweep(exported, tmp_path, monkeypatch):
    record = tmp_path / "paper"
    _cut_after(monkeypatch, 7)
    cut = invoke("run", SPEC, *SETS, "--out", tmp_path / "first", "--record", record)
    assert cut.exit_code == 130, cut.output
    assert sum(1 for _ in open(record / EXP / "runs.csv")) - 1 == 7
    assert "missing" in (record / EXP / "failures.csv").read_text()
    monkeypatch.undo()
    shutil.rmtree(tmp_path / "first")                   # the machine is gone; the record was committed
    resumed = invoke("run", SPEC, *SETS, "--out", tmp_path / "second", "--record", record)
    assert resumed.exit_code == 0, resumed.output
    assert "24 runs, 0 done, 7 recorded in" in resumed.output and "17 to run" in resumed.output
    assert len(list((tmp_path / "second" / EXP / "shards").iterdir())) == 17
    assert sorted(p.name for p in (record / EXP).iterdir()) == sorted(p.name for p in exported.iterdir())
    for name in ("runs.csv", "tables.json", "spec.yaml"):
        assert (record / EXP / name).read_bytes() == (exported / name).read_bytes(), name
    # what made each run, the 7 of the lost machine's too, as the export of one sweep says
    made_by = json.loads((record / EXP / "provenance.json").read_text())["runs"]
    assert made_by == json.loads((exported / "provenance.json").read_text())["runs"] and len(made_by) == 24
    again = invoke("run", SPEC, *SETS, "--out", tmp_path / "third", "--record", record)
    assert again.exit_code == 0 and "24 recorded" in again.output and "0 to run" in again.output
    # an export from a folder that lacks the recorded runs would drop them: refused, nothing written
    before = (record / EXP / "runs.csv").read_bytes()
    sorted((tmp_path / "second" / EXP / "shards").iterdir())[0].unlink()
    assert invoke("collect", SPEC, *SETS, "--out", tmp_path / "second").exit_code == 0
    refused = invoke("export", "--results", tmp_path / "second", "--out", record)
    assert refused.exit_code == 2 and "records 8 run(s) of this spec that" in refused.output
    assert (record / EXP / "runs.csv").read_bytes() == before


def test_a_record_of_another_spec_or_a_damaged_one_is_refused_before_anything_runs(exported, tmp_path):
    record = tmp_path / "paper"
    shutil.copytree(exported, record / EXP)
    other = invoke("run", SPEC, *SETS, "--set", "episodes=2999", "--out", tmp_path / "r", "--record", record)
    assert other.exit_code == 2 and "recorded under another spec or scale" in other.output
    runs = record / EXP / "runs.csv"
    runs.write_text(runs.read_text().replace(",3,", ",4,", 1))
    damaged = invoke("run", SPEC, *SETS, "--out", tmp_path / "r", "--record", record)
    assert damaged.exit_code == 2 and "damaged" in damaged.output
    assert not (tmp_path / "r" / EXP / "shards").exists()
    runs.write_bytes((exported / "runs.csv").read_bytes())
    (record / EXP / "provenance.json").write_text('{"runs": ')
    unreadable = invoke("run", SPEC, *SETS, "--out", tmp_path / "r", "--record", record)
    assert unreadable.exit_code == 2 and "provenance.json: unreadable" in unreadable.output
    assert not (tmp_path / "r" / EXP / "shards").exists()
    runs.write_text(runs.read_text().replace(",3,", ",4,", 1))
    before = runs.read_bytes()       # nor does an export read the damaged record's runs
    refused = invoke("export", "--results", exported.parent.parent / "results", "--out", record)
    assert refused.exit_code != 0 and "runs.csv: damaged" in refused.output
    assert runs.read_bytes() == before


def test_a_sweep_grown_by_more_seeds_records_into_its_record_and_ends_as_one_sweep(exported, tmp_path):
    """A record of 2 seeds takes a spec with 3 (its runs all among the new spec's): only the third
    seed runs, and the record ends as the export of one 3-seed sweep. A spec lacking recorded runs
    is still refused."""
    record, grown = tmp_path / "paper", [s if s != "seeds=2" else "seeds=3" for s in SETS]
    shutil.copytree(exported, record / EXP)
    assert invoke("run", SPEC, *grown, "--out", tmp_path / "whole3").exit_code == 0
    assert invoke("export", "--results", tmp_path / "whole3", "--out", tmp_path / "export3").exit_code == 0
    resumed = invoke("run", SPEC, *grown, "--out", tmp_path / "r", "--record", record)
    assert resumed.exit_code == 0, resumed.output
    assert "36 runs, 0 done, 24 recorded in" in resumed.output and "12 to run" in resumed.output
    for name in ("runs.csv", "tables.json", "spec.yaml"):
        assert (record / EXP / name).read_bytes() == (tmp_path / "export3" / EXP / name).read_bytes(), name
    shrunk = invoke("run", SPEC, *SETS, "--out", tmp_path / "r2", "--record", record)
    assert shrunk.exit_code == 2 and "lacks 12 of its runs" in shrunk.output


def test_a_table_kept_since_the_record_was_made_is_taken_from_the_results_folder_or_rerun(exported, tmp_path):
    """A figure that starts keeping a table (claims.yaml `tables`) must not leave a record whose runs
    lack it: the runs come from a results folder that holds them, else they are rerun."""
    claims = tmp_path / "claims.yaml"
    entry = 'deepsea_tabular_scaling: {paper: "Fig. 5 (fig:tabular_scale)"'
    text = (CONFIGS.parent / "claims.yaml").read_text()
    assert entry in text
    claims.write_text(text.replace(entry, entry + ", tables: [final_returns]"))
    whole = exported.parent.parent / "results"
    for out, done, to_run in ((tmp_path / "new", 0, 24), (whole, 24, 0)):     # machine lost; machine kept
        record = tmp_path / f"paper_{to_run}"
        shutil.copytree(exported, record / EXP)
        res = invoke("run", SPEC, *SETS, "--out", out, "--record", record, "--claims", claims)
        assert res.exit_code == 0, res.output
        assert "lacks final_returns.csv (kept since it was recorded)" in res.output
        assert f"{done} done, 0 recorded in" in res.output and f"{to_run} to run" in res.output
        assert (record / EXP / "runs.csv").read_bytes() == (exported / "runs.csv").read_bytes()
        assert "final_returns.csv" in (record / EXP / "tables.json").read_text()
        again = invoke("run", SPEC, *SETS, "--out", out, "--record", record, "--claims", claims)
        assert "24 recorded" in again.output and "0 to run" in again.output and "lacks" not in again.output
    assert (tmp_path / "paper_0" / EXP / "final_returns.csv").read_bytes() == \
        (tmp_path / "paper_24" / EXP / "final_returns.csv").read_bytes()


NUMBER_LIKE = ["--set", "seeds=1", "--set", "episodes=790", "--set", "grid={env.size: [3]}"]   # 4 runs
NUMBER_LIKE_ID = "99678e2691644303"     # the 4th run's id, which pandas reads as the float inf


def test_a_number_like_run_id_is_recorded_as_itself_and_a_record_misnaming_it_is_mended(tmp_path):
    """A run id of hex digits that reads as a number (99678e2691644303 = 99678 x 10^2691644303) names
    its run in every table: the record holds it and counts it as recorded. A record written before
    (its rows under 'inf') names the stray id, drops its rows, reruns that run alone, and ends as
    the record of one sweep."""
    res = invoke("run", SPEC, *NUMBER_LIKE, "--out", tmp_path / "r", "--record", tmp_path / "paper")
    assert res.exit_code == 0, res.output
    assert NUMBER_LIKE_ID in {p.stem for p in (tmp_path / "r" / EXP / "shards").iterdir()}
    record = tmp_path / "paper" / EXP
    good = {p.name: p.read_bytes() for p in record.iterdir() if p.suffix in (".csv", ".json", ".yaml")}
    assert f",{NUMBER_LIKE_ID}," in good["runs.csv"].decode() and ",inf," not in good["runs.csv"].decode()
    again = invoke("run", SPEC, *NUMBER_LIKE, "--out", tmp_path / "gone", "--record", tmp_path / "paper")
    assert "4 recorded" in again.output and "0 to run" in again.output
    checksums = json.loads((record / "tables.json").read_text())     # the old misnaming, checksums kept true
    for name in checksums:
        path = record / name
        path.write_text(path.read_text().replace(f",{NUMBER_LIKE_ID},", ",inf,"))
        checksums[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    (record / "tables.json").write_text(json.dumps(checksums, indent=1, sort_keys=True) + "\n")
    assert ",inf," in (record / "runs.csv").read_text()
    mended = invoke("run", SPEC, *NUMBER_LIKE, "--out", tmp_path / "new", "--record", tmp_path / "paper")
    assert mended.exit_code == 0, mended.output
    assert "holds rows of 1 run id(s) not in this spec (inf)" in mended.output
    assert "3 recorded" in mended.output and "1 to run" in mended.output
    assert [p.stem for p in (tmp_path / "new" / EXP / "shards").iterdir()] == [NUMBER_LIKE_ID]
    assert {n: (record / n).read_bytes() for n in good if n != "provenance.json"} == \
        {n: b for n, b in good.items() if n != "provenance.json"}


TWO_RUNS = ["--set", "seeds=1", "--set", "grid={env.treasure: [true]}"]     # tiny_spec's rlsvi and psrl


def _record_files(folder) -> dict:
    """A record folder's files by name, provenance.json as what made each run (the rest of it names
    the machine and the moment)."""
    files = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
    files["provenance.json"] = json.loads(files["provenance.json"])["runs"]
    return files


def _beside(record) -> list[str]:
    """What the record folder holds, less its experiments' locks (.NAME.lock, kept between writers)."""
    return sorted(name for name in os.listdir(record) if not (name.startswith(".") and name.endswith(".lock")))


def _killed_at(k: int, spec, out, record) -> int:
    """Exit status of `rvfx run SPEC --record RECORD` in a forked child that os._exit(9)s as the
    record is updated, just before its k-th step: a file written, a folder renamed or removed.
    Every finished run is merged at once (SPACING 0), so the kill lands in every kind of merge."""
    pid = os.fork()
    if pid == 0:
        try:
            calls = []

            def step(real):
                def killed(*args, **kwargs):
                    calls.append(real)
                    if len(calls) == k:
                        os._exit(9)
                    return real(*args, **kwargs)
                return killed
            record_module.SPACING = 0.0
            export._write_file = step(export._write_file)
            export.os.rename = step(os.rename)
            export.shutil.rmtree = step(shutil.rmtree)
            res = invoke("run", spec, *TWO_RUNS, "--out", out, "--record", record)
            os._exit(res.exit_code)
        finally:
            os._exit(3)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_a_record_update_killed_at_any_of_its_steps_is_repaired_and_ends_as_an_uninterrupted_one(tiny_spec, tmp_path):
    whole = invoke("run", tiny_spec, *TWO_RUNS, "--out", tmp_path / "whole", "--record", tmp_path / "ref")
    assert whole.exit_code == 0, whole.output
    reference = _record_files(tmp_path / "ref" / "tiny")
    k = repaired = 0
    while True:
        k += 1
        out, record = tmp_path / f"out{k}", tmp_path / f"rec{k}"
        status = _killed_at(k, tiny_spec, out, record)
        if status == 0:                                 # no step left to kill at: every one was tried
            break
        assert status == 9 and k < 40
        cut = record.exists() and any(p.startswith(".") for p in _beside(record))
        resumed = invoke("run", tiny_spec, *TWO_RUNS, "--out", out, "--record", record)
        assert resumed.exit_code == 0, resumed.output
        said = [line for line in resumed.output.splitlines() if "an update cut short" in line]
        assert len(said) == cut and all(line.startswith(f"{record / 'tiny'}: ") for line in said), k
        repaired += cut
        assert _record_files(record / "tiny") == reference, k
        assert _beside(record) == ["tiny"], k                                 # nothing left beside it
        shutil.rmtree(out)
        shutil.rmtree(record)
    assert k > 20 and repaired > 10   # 3 updates: the first (no old record), one after each run, the sweep's


def test_a_full_disk_as_the_record_updates_names_the_file_and_leaves_the_record_as_it_was(tiny_spec, tmp_path,
                                                                                          monkeypatch):
    record = tmp_path / "paper"
    first = invoke("run", tiny_spec, *TWO_RUNS, "--out", tmp_path / "r", "--record", record)
    assert first.exit_code == 0
    before = _record_files(record / "tiny")
    real = open

    def full_disk(path, mode="r", *args, **kwargs):
        f = real(path, mode, *args, **kwargs)
        if "x" in mode and Path(path).name == "spec.yaml":
            f.close()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return f
    monkeypatch.setattr(export, "open", full_disk, raising=False)
    (tmp_path / "r" / "tiny" / "shards" / sorted(os.listdir(tmp_path / "r" / "tiny" / "shards"))[0]).unlink()
    res = invoke("run", tiny_spec, *TWO_RUNS, "--out", tmp_path / "r", "--record", record)
    assert res.exit_code == 1
    assert res.output.splitlines()[-1] == (f"error: {record / 'tiny' / 'spec.yaml'}: No space left on device "
                                           f"(nothing changed: the folder is as it was)")
    assert _record_files(record / "tiny") == before and _beside(record) == ["tiny"]
    monkeypatch.undo()
    again = invoke("run", tiny_spec, *TWO_RUNS, "--out", tmp_path / "r", "--record", record)
    assert again.exit_code == 0 and "2 recorded" in again.output
    assert _record_files(record / "tiny") == before


BSUITE_SPEC = CONFIGS / "bsuite_cartpole_swingup.yaml"     # kept tables: episodes and diagnostics
NO_SPREAD = ["--set", "agents.ensemble_glorot.prior_spread=false", "--set", "agents.ensemble_haiku.prior_spread=false"]


def test_a_kept_table_only_some_runs_write_is_recorded_whichever_runs_merge_first(tmp_path, monkeypatch):
    """The diagnostics table is written by the ensemble runs only: a merge of the DQN run alone keeps
    the record's diagnostics, and the record ends as the export of one uninterrupted sweep."""
    pytest.importorskip("bsuite")
    exp = "bsuite_cartpole_swingup"
    assert invoke("run", BSUITE_SPEC, "--out", tmp_path / "whole").exit_code == 0
    assert invoke("export", "--results", tmp_path / "whole", "--out", tmp_path / "export").exit_code == 0
    record = tmp_path / "paper"
    _cut_after(monkeypatch, 2)                          # the two ensemble runs, then Ctrl-C
    assert invoke("run", BSUITE_SPEC, "--out", tmp_path / "first", "--record", record).exit_code == 130
    monkeypatch.undo()
    resumed = invoke("run", BSUITE_SPEC, "--out", tmp_path / "second", "--record", record)
    assert resumed.exit_code == 0 and "2 recorded in" in resumed.output, resumed.output
    for name in ("runs.csv", "episodes.csv", "diagnostics.csv", "tables.json"):
        assert (record / exp / name).read_bytes() == (tmp_path / "export" / exp / name).read_bytes(), name


def test_a_kept_table_no_run_writes_is_noted_and_the_record_is_complete(tmp_path):
    """Without prior_spread no run writes diagnostics: the export notes it (null in tables.json), and
    a sweep recording into that export finds every run recorded instead of rerunning them all."""
    pytest.importorskip("bsuite")
    exp = "bsuite_cartpole_swingup"
    assert invoke("run", BSUITE_SPEC, *NO_SPREAD, "--out", tmp_path / "r").exit_code == 0
    assert invoke("export", "--results", tmp_path / "r", "--out", tmp_path / "paper").exit_code == 0
    assert json.loads((tmp_path / "paper" / exp / "tables.json").read_text())["diagnostics.csv"] is None
    assert not (tmp_path / "paper" / exp / "diagnostics.csv").exists()
    again = invoke("run", BSUITE_SPEC, *NO_SPREAD, "--out", tmp_path / "r2", "--record", tmp_path / "paper")
    assert again.exit_code == 0 and "3 recorded in" in again.output and "0 to run" in again.output, again.output

"""`rvfx run --record DIR`: a sweep cut off, whose results folder is then lost with the machine,
resumes from its committed record without redoing a recorded run, and the record it ends with is
byte for byte the export of one uninterrupted sweep."""
import hashlib
import json
import shutil

import pytest
from cli_helpers import CONFIGS, invoke

import rvfx.experiment.runner as runner

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
    shutil.rmtree(sorted((tmp_path / "second" / EXP / "shards").iterdir())[0])
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
    assert NUMBER_LIKE_ID in {p.name for p in (tmp_path / "r" / EXP / "shards").iterdir()}
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
    assert [p.name for p in (tmp_path / "new" / EXP / "shards").iterdir()] == [NUMBER_LIKE_ID]
    assert {n: (record / n).read_bytes() for n in good if n != "provenance.json"} == \
        {n: b for n, b in good.items() if n != "provenance.json"}

"""The report reads each file of a results folder once (ResultsFolder): a table that many claims,
versions and contrasts read, and each experiment's spec.yaml, which the claims, the scale and the
modified runs read; and it verifies a table as load_table does, before keeping it."""
import hashlib
import json
import pathlib
from collections import Counter

import pandas as pd
import pytest
import yaml
from cli_helpers import CONFIGS

from rvfx.experiment.results import DamagedTable
from rvfx.report.claims import evaluate
from rvfx.report.folder import ResultsFolder
from rvfx.report.settings import modified_runs, results_scale

RULES = yaml.safe_load((CONFIGS.parent / "claims.yaml").read_text())["rules"]
FRACTION = {"kind": "fraction", "criterion": "learnt"}


def _write(results: pathlib.Path) -> None:
    """RESULTS/exp: runs.csv (10 runs, 7 learnt), its tables.json, and a spec.yaml."""
    exp = results / "exp"
    exp.mkdir(parents=True)
    runs = pd.DataFrame({"run_id": [f"r{i}" for i in range(10)], "agent": ["a", "b"] * 5,
                         "censored": [i >= 7 for i in range(10)]})
    runs.to_csv(exp / "runs.csv", index=False)
    digest = hashlib.sha256((exp / "runs.csv").read_bytes()).hexdigest()
    (exp / "tables.json").write_text(json.dumps({"runs.csv": digest}))
    (exp / "spec.yaml").write_text("scale: ci\nenv: {name: deep_sea, size: 20}\n")


def _claim(cid: str, **keys) -> dict:
    return {"id": cid, "figure": "f", "paper": "p", "words": "w", "experiment": "exp", "statistic": FRACTION,
            "rule": {"kind": "most"}, **keys}


@pytest.fixture
def reads(monkeypatch):
    """Each file read through pathlib (tables, tables.json, spec.yaml), counted by path."""
    counted = Counter()
    read_bytes, read_text = pathlib.Path.read_bytes, pathlib.Path.read_text

    def counting_bytes(self):
        counted[self.name] += 1
        return read_bytes(self)

    def counting_text(self, *args, **kwargs):
        counted[self.name] += 1
        return read_text(self, *args, **kwargs)
    monkeypatch.setattr(pathlib.Path, "read_bytes", counting_bytes)
    monkeypatch.setattr(pathlib.Path, "read_text", counting_text)
    return counted


def test_claims_their_versions_and_contrasts_read_each_table_and_spec_once(tmp_path, reads):
    _write(tmp_path)
    amended = _claim("amended", amendments=[{"date": "2024-01-01", "reason": "r", "after": "a",
                                             "where": "agent == 'a'"}])
    contrasted = _claim("contrasted", contrast={"why": "w", "where": "agent == 'b'"})
    registry = {"rules": RULES, "claims": [_claim("plain"), amended, contrasted]}
    reads.clear()                 # the files _write read back
    folder = ResultsFolder(tmp_path)
    outcomes = evaluate(registry, folder)
    assert [o.verdict for o in outcomes] == ["holds", "holds", "holds"]
    assert (results_scale(folder), modified_runs(folder)[0].experiment) == ("ci", "exp")
    assert reads == {"runs.csv": 1, "tables.json": 1, "spec.yaml": 1}


def test_a_table_is_verified_against_tables_json_before_it_is_kept(tmp_path):
    _write(tmp_path)
    runs = tmp_path / "exp" / "runs.csv"
    runs.write_text(runs.read_text().replace("r9", "r8"))
    folder = ResultsFolder(tmp_path)
    for _ in range(2):          # not kept: refused again at the next read
        with pytest.raises(DamagedTable, match="runs.csv: damaged"):
            folder.table("exp", "runs")


def test_a_missing_table_is_not_kept_and_a_path_gives_a_folder_of_its_own(tmp_path):
    folder = ResultsFolder.of(tmp_path)
    assert ResultsFolder.of(folder) is folder and folder.path == tmp_path
    with pytest.raises(FileNotFoundError):
        folder.table("exp", "runs")
    _write(tmp_path)
    assert len(folder.table("exp", "runs")) == 10
    assert folder.spec_value("exp", ("env", "size")) == 20 and folder.spec_value("exp", ("env", "size", "x")) is None

"""What may share a results folder: one spec's sweep per experiment folder (or that sweep grown),
and never an export onto the results it reads."""
import hashlib
import json

from cli_helpers import as_format_1, invoke


def test_an_export_onto_its_own_results_folder_is_refused_and_loses_nothing(tiny_spec, tmp_path):
    out = tmp_path / "r"
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0
    before = {p.name: p.read_bytes() for p in (out / "tiny").iterdir() if p.is_file()}
    assert {"episodes.csv", "timing.csv", "runs.csv"} <= before.keys()
    (tmp_path / "link").symlink_to(out)
    for target in (out, tmp_path / "link"):
        res = invoke("export", "--results", out, "--out", target)
        assert res.exit_code == 2
        assert res.output.splitlines() == [f"error: --out {target} is the --results folder itself: an export there "
                                           f"would replace its tables with fewer (no episodes.csv); nothing exported, "
                                           f"choose another --out"]
        assert {p.name: p.read_bytes() for p in (out / "tiny").iterdir() if p.is_file()} == before


def test_a_second_spec_of_the_same_experiment_is_refused_naming_both_unless_it_grows_the_first(tiny_spec, tmp_path):
    out = tmp_path / "r"
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0            # 8 runs
    before = {n: (out / "tiny" / n).read_bytes() for n in ("runs.csv", "spec.yaml", "episodes.csv")}
    other = tmp_path / "other.yaml"
    other.write_text(tiny_spec.read_text().replace("episodes: 50", "episodes: 40"))
    res = invoke("run", other, "--out", out)
    assert res.exit_code == 2
    assert res.output.splitlines() == [f"error: {out / 'tiny'} holds the sweep of another spec named tiny "
                                       f"({out / 'tiny' / 'spec.yaml'}); {other} lacks 8 of its 8 runs, so collecting "
                                       f"it would replace that sweep's tables: use another --out, or move "
                                       f"{out / 'tiny'} aside"]
    fewer = invoke("run", tiny_spec, "--set", "seeds=1", "--out", out)      # half the runs: a subset
    assert fewer.exit_code == 2 and "lacks 4 of its 8 runs" in fewer.output
    assert {n: (out / "tiny" / n).read_bytes() for n in before} == before
    assert not (out / "tiny" / "shards").exists() or len(list((out / "tiny" / "shards").iterdir())) == 8
    grown = tmp_path / "grown.yaml"                                         # the same runs and 4 more
    grown.write_text(tiny_spec.read_text().replace("seeds: 2", "seeds: 3"))
    more = invoke("run", grown, "--out", out)
    assert more.exit_code == 0 and "12 runs, 8 done, 4 to run" in more.output
    assert (out / "tiny" / "runs.csv").read_text().startswith(before["runs.csv"].decode().splitlines()[0])
    assert len((out / "tiny" / "runs.csv").read_text().splitlines()) == 13
    assert invoke("run", grown, "--out", out).exit_code == 0                # the same spec again


def test_a_manifest_naming_a_file_outside_its_shard_is_not_read_and_its_run_reruns(tiny_spec, tmp_path):
    out = tmp_path / "r"
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0
    secret = out / "tiny" / "secret.csv"
    secret.write_text("experiment,run_id\nsecret,secret\n")
    shard = as_format_1(sorted((out / "tiny" / "shards").iterdir())[0])        # the layout whose files have names
    manifest = json.loads((shard / "manifest.json").read_text())
    manifest["files"]["../../secret.csv"] = {"rows": 1, "sha256": hashlib.sha256(secret.read_bytes()).hexdigest()}
    (shard / "manifest.json").write_text(json.dumps(manifest))
    res = invoke("run", tiny_spec, "--out", out)
    assert res.exit_code == 0 and "8 runs, 7 done, 1 to run" in res.output
    assert f"rerunning {shard.name}: manifest.json lists '../../secret.csv', not a file of the shard" in res.output
    assert "secret" not in "".join(p.read_text() for p in (out / "tiny").glob("*.csv") if p != secret)

"""CLI behaviour: determinism across job counts, resume, failures, dry runs, plotting."""
import os
from pathlib import Path

import pandas as pd
from cli_helpers import assert_png, invoke
from click.testing import CliRunner

from rvfx.cli import main
from rvfx.experiment import runner as runner_mod


def read_tables(out: Path):
    exp = out / "tiny"
    return {name: (exp / name).read_bytes() for name in ("episodes.csv", "runs.csv")}


def shard_files(out: Path):
    return sorted((out / "tiny" / "shards").iterdir())


def test_same_spec_and_seed_give_byte_identical_csv_for_any_job_count(tiny_spec, tmp_path):
    assert invoke("run", tiny_spec, "--jobs", 1, "--out", tmp_path / "a").exit_code == 0
    assert invoke("run", tiny_spec, "--jobs", 2, "--out", tmp_path / "b").exit_code == 0
    a, b = read_tables(tmp_path / "a"), read_tables(tmp_path / "b")
    assert a == b
    assert len(a["runs.csv"].splitlines()) == 1 + 2 * 2 * 2      # agents x treasure x seeds


def test_interrupted_sweep_resumes_and_redoes_only_unfinished_runs(tiny_spec, tmp_path):
    out = tmp_path / "r"
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0
    full = read_tables(out)
    shards = shard_files(out)
    kept, lost = shards[:5], shards[5:]
    mtimes = {p: p.stat().st_mtime_ns for p in kept}
    for p in lost:                       # as if killed before these finished ...
        p.unlink()
    half = out / "tiny" / "shards" / ".deadbeef.1234.5678.tmp"   # ... with one half-written
    half.write_text('{"format": 2, "ta')
    result = invoke("run", tiny_spec, "--out", out, "--dry-run")
    assert "8 runs, 5 done, 3 to run" in result.output
    result = invoke("run", tiny_spec, "--out", out)
    assert result.exit_code == 0
    assert "tiny: 3 run(s) finished, 0 failed" in result.output
    assert {p: p.stat().st_mtime_ns for p in kept} == mtimes    # finished runs untouched
    assert read_tables(out) == full


def test_a_failed_run_is_recorded_and_the_rest_go_on(tiny_spec, tmp_path, monkeypatch):
    real = runner_mod.execute

    def flaky(run, *args):
        if run.agent == "psrl" and run.seed == 1 and run.swept["env.treasure"]:
            raise RuntimeError("boom")
        return real(run, *args)

    monkeypatch.setattr(runner_mod, "execute", flaky)
    out = tmp_path / "f"
    result = CliRunner().invoke(main, ["run", str(tiny_spec), "--out", str(out)])
    assert result.exit_code == 1
    assert "1 run(s) failed" in result.output
    failed = list((out / "tiny" / "failed").glob("*.txt"))
    assert len(failed) == 1 and "RuntimeError: boom" in failed[0].read_text()
    assert len(shard_files(out)) == 7
    assert "failed" in (out / "tiny" / "failures.csv").read_text()
    monkeypatch.setattr(runner_mod, "execute", real)           # the retry succeeds
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0
    assert len(shard_files(out)) == 8 and not list((out / "tiny" / "failed").glob("*.txt"))
    assert not (out / "tiny" / "failures.csv").exists()


def test_dry_run_writes_nothing(tiny_spec, tmp_path):
    result = invoke("run", tiny_spec, "--out", tmp_path / "d", "--dry-run")
    assert "8 runs, 0 done, 8 to run" in result.output
    assert not (tmp_path / "d").exists()


def test_set_overrides_and_scale(tiny_spec, tmp_path):
    result = invoke("validate", tiny_spec, "--set", "seeds=3", "--set", "agents.rlsvi.v=1e-2")
    assert "12 runs" in result.output
    out = tmp_path / "s"
    invoke("run", tiny_spec, "--scale", "paper", "--set", "seeds=1", "--out", out)
    runs = (out / "tiny" / "runs.csv").read_text()
    assert ",100," in runs            # paper scale: 100 episodes run


def test_plot_draws_from_csv_alone(tiny_spec, tmp_path):
    out = tmp_path / "p"
    invoke("run", tiny_spec, "--out", out)
    os.rename(out / "tiny", out / "deepsea_tabular")     # the figure reads this experiment
    (out / "deepsea_tabular" / "shards").rename(out / "gone")   # CSV tables only
    result = invoke("plot", "deepsea_tabular", "--results", out, "--out", tmp_path / "figs")
    assert result.exit_code == 0
    png = tmp_path / "figs" / "deepsea_tabular.png"
    assert png.stat().st_size > 10_000


def test_collect_and_plot_warn_of_runs_missing_from_the_tables(tiny_spec, tmp_path, monkeypatch):
    real = runner_mod.execute

    def flaky(run, *args):
        if run.agent == "psrl" and run.seed == 1:
            raise RuntimeError("boom")
        return real(run, *args)

    monkeypatch.setattr(runner_mod, "execute", flaky)
    out = tmp_path / "w"
    assert CliRunner().invoke(main, ["run", str(tiny_spec), "--out", str(out)]).exit_code == 1
    runs = pd.read_csv(out / "tiny" / "runs.csv")
    lost = runs.run_id[(runs.agent == "rlsvi") & (runs.seed == 1)].iloc[0]
    (out / "tiny" / "shards" / f"{lost}.json").unlink()      # a finished run lost as well
    result = CliRunner().invoke(main, ["collect", str(tiny_spec), "--out", str(out)])
    assert "warning: the tables lack 2 failed, 1 missing of 8 runs" in result.output
    os.rename(out / "tiny", out / "deepsea_tabular")
    result = CliRunner().invoke(main, ["plot", "deepsea_tabular", "--results", str(out), "--out", str(tmp_path)])
    assert result.exit_code == 0
    assert "warning: deepsea_tabular drawn without 2 failed, 1 missing of 8 runs" in result.output


def test_plot_of_missing_results_says_what_to_run(tmp_path):
    result = CliRunner().invoke(main, ["plot", "deepsea_tabular", "--results", str(tmp_path)])
    assert result.exit_code == 1
    assert "rvfx run deepsea_tabular --out" in result.output


def test_list_shows_one_line_per_entry_and_one_entry_in_full():
    result = invoke("list")
    from rvfx import shipped
    from rvfx.agents import AGENTS
    from rvfx.envs import ENVS
    from rvfx.figures import FIGURES
    assert result.exit_code == 0
    for name in (*AGENTS, *FIGURES, "deep_sea", "deepsea_tabular_scaling"):
        assert sum(line.split()[0] == name for line in result.output.splitlines() if line.startswith("  ")) >= 1
    assert len(result.output.splitlines()) == 4 + len(AGENTS) + len(FIGURES) + len(ENVS) + len(shipped.experiments())
    assert "width_states" not in result.output                     # parameters only for one entry
    detail = invoke("list", "agents", "ucrl2")
    assert detail.exit_code == 0 and "width_states (next_layer|all" in detail.output
    wrong = invoke("list", "agents", "ucrl")
    assert wrong.exit_code == 2 and "did you mean 'ucrl2'" in wrong.output


def test_any_concurrent_futures_executor_gives_the_same_tables(tiny_spec, tmp_path):
    """The runner only needs the Executor interface (what a Dask client provides)."""
    from concurrent.futures import ThreadPoolExecutor

    from rvfx.experiment import results
    from rvfx.experiment.runner import run_sweep
    from rvfx.experiment.spec import load_spec
    exp = load_spec(str(tiny_spec))
    with ThreadPoolExecutor(2) as pool:
        outcomes = run_sweep(exp.runs, str(tmp_path / "t"), executor=pool)
    assert all(o.ok for o in outcomes) and len(outcomes) == 8
    results.collect(tmp_path / "t", exp.runs)
    assert invoke("run", tiny_spec, "--out", tmp_path / "a").exit_code == 0
    assert read_tables(tmp_path / "t") == read_tables(tmp_path / "a")


def test_a_variant_spec_is_plotted_from_its_own_experiment_folder(tiny_spec, tmp_path):
    """tiny.yaml names its own experiment ("tiny") and the figure deepsea_tabular, which reads the
    experiment deepsea_tabular: `plot --spec` draws it from RESULTS/tiny; without it, nothing to draw."""
    out = tmp_path / "v"
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0
    without = invoke("plot", "deepsea_tabular", "--results", out, "--out", tmp_path / "f0")
    assert without.exit_code == 1
    assert f"skipped 1 figure(s) with no tables in {out}: deepsea_tabular; draw them after " \
           f"`rvfx run deepsea_tabular --out {out}`" in without.output
    everything = invoke("plot", "--results", out, "--out", tmp_path / "f0")
    assert sum(line.startswith("skipped") for line in everything.output.splitlines()) == 1
    result = invoke("plot", "--spec", tiny_spec, "--results", out, "--out", tmp_path / "f1")
    assert result.exit_code == 0, result.output
    assert_png(tmp_path / "f1" / "deepsea_tabular.png")
    assert not (out / "deepsea_tabular").exists()            # the variant's folder was read, not made


def test_version_names_the_installed_package():
    from importlib.metadata import version
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"rvfx, version {version('rvfx')}"


def test_shipped_specs_and_claims_are_found_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                       # no configs/ or claims.yaml here
    result = invoke("validate", "deepsea_tabular")
    assert result.exit_code == 0 and "ok (deepsea_tabular" in result.output
    assert invoke("validate", "no_such_experiment").exit_code == 2
    result = invoke("report", "--results", tmp_path / "none", "--out", tmp_path / "report")
    assert result.exit_code == 0 and (tmp_path / "report" / "report.md").is_file()

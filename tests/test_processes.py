"""Sweeps as processes: one sweep per folder, workers that die with the driver, Ctrl-C that
stops and says how to resume, `--jobs` capped at the runs left, progress counted in episodes."""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import invoke

from rvfx.experiment import results, runner
from rvfx.experiment.executors import LocalPool
from rvfx.experiment.spec import load_spec

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")

LONG = ("--set", "env.size=10", "--set", "episodes=20000")  # about 2 s a run, 8 runs


def start_sweep(spec, out, *args) -> subprocess.Popen:
    """`rvfx run SPEC --out OUT ARGS` as a separate process (stderr kept in OUT.err)."""
    cmd = [sys.executable, "-c", "from rvfx.cli import main; main()", "run", str(spec), "--out", str(out),
           *map(str, args)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(f"{out}.err", "w"))


def children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid:
            kids.append(int(stat.parent.name))
    return kids


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(condition, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {condition.__name__}")


def finished_shards(out: Path, exp) -> list:
    return [r for r in exp.runs if results.is_done(out, r)]


def test_sigkill_of_the_driver_leaves_no_orphaned_worker(tiny_spec, tmp_path):
    proc = start_sweep(tiny_spec, tmp_path / "k", "--jobs", 2, *LONG)
    workers = wait_for(lambda: len(children(proc.pid)) >= 2 and children(proc.pid))
    time.sleep(0.5)                                  # both workers inside a run
    proc.kill()
    proc.wait()
    wait_for(lambda: not any(alive(w) for w in workers), timeout=5)


def test_a_second_sweep_on_the_same_out_is_refused_naming_the_first(tiny_spec, tmp_path):
    out = tmp_path / "l"
    first = start_sweep(tiny_spec, out, "--jobs", 1, *LONG)
    lock = out / "tiny" / ".lock"
    wait_for(lambda: lock.exists() and lock.read_text())
    second = invoke("run", tiny_spec, "--out", out)            # a smaller sweep, same folder
    assert second.exit_code == 1
    assert second.output.splitlines()[-1].startswith(f"error: {out / 'tiny'} is in use by rvfx run, pid {first.pid}")
    first.kill()                                               # the OS releases the lock with it
    first.wait()
    assert invoke("run", tiny_spec, "--out", out).exit_code == 0
    assert len(finished_shards(out, load_spec(str(tiny_spec)))) == 8


def test_ctrl_c_cancels_pending_runs_keeps_finished_ones_and_says_how_to_resume(tiny_spec, tmp_path):
    out = tmp_path / "c"
    sets = ("--set", "env.size=10", "--set", "episodes=10000", "--set", "seeds=1")   # about 1 s a run, 4 runs
    exp = load_spec(str(tiny_spec), "ci", tuple(sets[1::2]))
    proc = start_sweep(tiny_spec, out, "--jobs", 2, *sets)
    wait_for(lambda: finished_shards(out, exp))
    workers = children(proc.pid)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    assert workers and not any(alive(w) for w in workers)
    kept = len(finished_shards(out, exp))
    assert 1 <= kept < 4                                       # pending work was not run
    last = Path(f"{out}.err").read_text().splitlines()[-1]
    assert last == (f"interrupted: {kept} of 4 run(s) finished and kept; to resume, rerun the same command "
                    f"(finished runs are skipped): rvfx run {tiny_spec} --out {out} --jobs 2 {' '.join(sets)}")
    assert not list((out / "tiny").glob("failed/*"))          # stopped runs are not failures
    rerun = invoke("run", tiny_spec, "--out", out, "--jobs", 2, *sets)
    assert f"4 runs, {kept} done, {4 - kept} to run" in rerun.output and rerun.exit_code == 0


def test_jobs_is_capped_at_the_runs_left(tiny_spec, tmp_path, monkeypatch):
    sizes = []
    monkeypatch.setattr(runner, "LocalPool", lambda jobs: sizes.append(jobs) or LocalPool(jobs))
    runs = load_spec(str(tiny_spec)).runs
    assert all(o.ok for o in runner.run_sweep(runs[:3], str(tmp_path / "j"), jobs=1000))
    assert all(o.ok for o in runner.run_sweep(runs[3:4], str(tmp_path / "j"), jobs=1000))
    assert sizes == [3]                                        # one run left: done in this process


def test_on_outcome_hears_each_run_as_it_finishes_in_the_pool_and_in_process(tiny_spec, tmp_path):
    """`rvfx run --record` merges each run into its record from this callback, so it must hear
    every finished run, whichever way the runs ran, and before the sweep returns."""
    runs = load_spec(str(tiny_spec)).runs
    for jobs, part in ((2, runs[:3]), (1, runs[3:5])):
        heard = []
        outcomes = runner.run_sweep(part, str(tmp_path / "o"), jobs=jobs, on_outcome=heard.append)
        assert heard == outcomes and sorted(o.run_id for o in heard) == sorted(r.run_id for r in part)


def test_progress_counts_episodes_of_running_runs_once_a_minute_in_a_log(tiny_spec, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runner, "LOG_EVERY", 0.0)              # a log line at every look, not every minute
    monkeypatch.setattr(runner, "POLL", 0.05)                  # a look every 0.05 s, not every 0.5 s
    # runs long enough (0.5 s even on an idle machine) for the driver to look ~10 times while they run
    exp = load_spec(str(tiny_spec), "ci", ("env.size=10", "episodes=5000"))
    assert all(o.ok for o in runner.run_sweep(exp.runs[:2], str(tmp_path / "p"), jobs=2))
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1].startswith("tiny: 100%") and "10000/10000" in lines[-1] and "2/2 runs" in lines[-1]
    counted = [int(re.search(r"(\d+)/10000", line).group(1)) for line in lines if "0/2 runs" in line]
    assert any(n > 0 for n in counted)                         # episodes counted mid-run, before any finished
    assert all("<" in line for line in lines)                  # elapsed<remaining: an ETA


def test_progress_bar_counts_finished_runs_in_full_and_running_ones_as_reported(tiny_spec):
    runs = load_spec(str(tiny_spec)).runs[:3]                  # 50 episodes each
    progress = runner.SweepProgress("tiny", runs)
    progress.update({runs[0].run_id: 20, runs[1].run_id: 10})
    assert progress.n == 30
    progress.update({runs[1].run_id: 12}, finished=runs[0].run_id)   # stopped early: counts 50
    assert progress.n == 62
    progress.update({runs[1].run_id: 0})                       # retried from scratch: never backwards
    assert progress.n == 62
    progress.close()


def test_a_run_uses_one_blas_thread_even_where_numpy_loaded_first(tmp_path):
    """A process that imported NumPy before rvfx (a notebook, a Dask worker) has a BLAS with one
    thread per core; `execute` holds it at one thread while the run lasts, then gives it back."""
    code = f"""
import os
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.pop(var, None)
import numpy
from threadpoolctl import threadpool_info
def blas_threads():
    return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
before = blas_threads()
from rvfx.experiment import runner
from rvfx.experiment.spec import load_spec
seen = []
live = runner.live
def spy(*args, **kwargs):
    seen.append(blas_threads())
    return live(*args, **kwargs)
runner.live = spy
run = load_spec({str(tmp_path / 'spec.yaml')!r}).runs[0]
runner.execute(run)
print(before, seen[0], blas_threads())
"""
    (tmp_path / "spec.yaml").write_text(
        "experiment: tiny\nenv: {name: deep_sea, size: 4}\nagents: {rlsvi: {algorithm: grlsvi}}\n"
        "seeds: 1\nepisodes: 3\nscales: {ci: {}, paper: {}}\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, during, after = map(int, out.stdout.split())
    if before == 1:
        pytest.skip("this machine's BLAS runs one thread anyway (one core)")
    assert during == 1 and after == before


def blas_kernels(code: str, env: dict) -> subprocess.CompletedProcess:
    """Run `code` in a fresh Python with `env` as its whole BLAS environment."""
    import os
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS", "OMP_", "MKL_"))}
    return subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True,
                          check=True, env={**clean, **env})


@pytest.mark.skipif(__import__("platform").machine() != "x86_64", reason="OpenBLAS kernels of x86-64")
def test_import_rvfx_pins_the_blas_kernels_and_a_run_warns_where_numpy_chose_others(tmp_path):
    """The same seed gives the same CSV on any x86-64 CPU only with the same OpenBLAS kernels:
    `import rvfx` asks for the AVX2 (Haswell) ones before NumPy loads, and a run in a process
    whose NumPy loaded first with others (here SSE3 Prescott, which every x86-64 runs;
    OpenBLAS may name it otherwise) warns."""
    arch = ("from threadpoolctl import threadpool_info; "
            "print([i['architecture'] for i in threadpool_info() if i['internal_api'] == 'openblas'])")
    pinned = blas_kernels(f"import rvfx, numpy; {arch}", {})
    assert pinned.stdout.strip() == "['Haswell']"
    (tmp_path / "spec.yaml").write_text(
        "experiment: tiny\nenv: {name: deep_sea, size: 4}\nagents: {rlsvi: {algorithm: grlsvi}}\n"
        "seeds: 1\nepisodes: 3\nscales: {ci: {}, paper: {}}\n")
    run = f"""
from rvfx.experiment import runner
from rvfx.experiment.spec import load_spec
runner.execute(load_spec({str(tmp_path / 'spec.yaml')!r}).runs[0])
"""
    # NumPy loads Prescott's kernels; rvfx, imported after, asks for Haswell's
    other = blas_kernels("import os, numpy\ndel os.environ['OPENBLAS_CORETYPE']\n" + run,
                         {"OPENBLAS_CORETYPE": "Prescott"})
    assert re.search(r"OpenBLAS runs \w+ kernels, not Haswell", other.stderr)
    assert "OpenBLAS runs" not in blas_kernels("import rvfx, numpy\n" + run, {}).stderr


def test_the_blas_provenance_does_not_depend_on_what_the_process_ran_before():
    """rvfx imports SciPy only where it is used, so a worker may or may not have loaded SciPy's
    BLAS when it writes a run's manifest; the list it records must be the same either way."""
    listed = "from rvfx.experiment.provenance import blas_kernels; print(blas_kernels())"
    fresh = blas_kernels(listed, {}).stdout
    assert "openblas" in fresh and fresh == blas_kernels("import rvfx, scipy.linalg; " + listed, {}).stdout


def _kill_worker_running(monkeypatch, victim, marker: Path | None) -> None:
    """The pool worker that starts `victim` SIGKILLs itself: on the first try only when `marker`
    is given (the file says it has been tried), else on every try. Forked workers inherit this."""
    real = runner.execute

    def execute(run, *args):
        if run.run_id == victim.run_id and (marker is None or not marker.exists()):
            if marker is not None:
                marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return real(run, *args)
    monkeypatch.setattr(runner, "execute", execute)


def test_a_pool_worker_killed_costs_its_run_one_retry_and_the_sweep_ends_as_an_undisturbed_one(tiny_spec, tmp_path,
                                                                                              monkeypatch):
    exp = load_spec(str(tiny_spec))
    victim = exp.runs[2]
    _kill_worker_running(monkeypatch, victim, tmp_path / "tried")
    stray = tmp_path / "k" / "tiny" / "shards" / f".{victim.run_id}.x1y2.tmp"     # a shard cut off by a kill
    stray.mkdir(parents=True)
    (stray / "episodes.csv").write_text("experiment,run_id\n")
    res = invoke("run", tiny_spec, "--out", tmp_path / "k", "--jobs", 2)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "tried").exists()
    retried = [line for line in res.output.splitlines() if "retrying the run" in line]
    assert retried == [f"{victim.run_id}: its worker died (killed by SIGKILL); retrying the run (1 of 1 retries)"]
    assert "8 run(s) finished, 0 failed" in res.output
    monkeypatch.undo()
    assert invoke("run", tiny_spec, "--out", tmp_path / "u").exit_code == 0
    for name in ("episodes.csv", "runs.csv", "spec.yaml"):              # timing.csv (seconds) differs
        assert (tmp_path / "k" / "tiny" / name).read_bytes() == (tmp_path / "u" / "tiny" / name).read_bytes(), name
    folder = tmp_path / "k" / "tiny"
    assert not list(folder.glob("**/.*.tmp")) and not list(folder.glob("failed/*"))


def test_a_run_whose_worker_dies_on_each_try_is_recorded_failed_with_why_and_the_others_finish(tiny_spec, tmp_path,
                                                                                              monkeypatch):
    exp = load_spec(str(tiny_spec))
    victim = exp.runs[5]
    _kill_worker_running(monkeypatch, victim, None)
    res = invoke("run", tiny_spec, "--out", tmp_path / "k", "--jobs", 2)
    assert res.exit_code == 1
    assert "7 run(s) finished, 1 failed" in res.output
    assert sum("retrying the run" in line for line in res.output.splitlines()) == 1
    assert f"  {victim.run_id}: its worker died (killed by SIGKILL) on each of its 2 tries" in res.output
    failed = (tmp_path / "k" / "tiny" / "failed" / f"{victim.run_id}.txt").read_text()
    assert "the run's worker died (killed by SIGKILL) on each of its 2 tries" in failed
    assert [r for r in exp.runs if not results.is_done(tmp_path / "k", r)] == [victim]

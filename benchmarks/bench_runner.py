"""The runner's own costs, beside the runs: `rvfx run` of 1,000 ten-episode runs against the seconds
their own timing.csv records, `--record` (a sweep of 400 runs with and without it), collect (4,000
finished runs, against parsing each shard file alone, the way collect once did) and a dry run of
20,000 runs (run ids computed once per run, against the asdict identity once used). Every time is
measured in this run, on this machine, through the CLI where there is one.
Run: `.venv/bin/python benchmarks/bench_runner.py` (a few minutes: it makes 5,400 runs).
"""
import rvfx  # noqa: F401, I001  (first: BLAS threads and kernels pinned as in the runs)

import dataclasses
import hashlib
import io
import json
import tempfile
import time
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from rvfx.cli import main as rvfx_cli
from rvfx.experiment import results
from rvfx.experiment.spec import RunSpec, load_spec, record_params

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
RECORD_SETS = ("--set", "seeds=20", "--set", "episodes=100", "--set", "grid={env.size: [3, 4, 5, 6, 7]}")  # 400
TINY = """experiment: {name}
env: {{name: deep_sea, size: 4}}
agents: {{rlsvi: {{algorithm: grlsvi}}}}
grid: {{env.size: [{sizes}]}}
seeds: {seeds}
episodes: 10
scales: {{ci: {{}}, paper: {{}}}}
"""


def cli(*args) -> tuple[float, float]:
    """Wall-clock and CPU seconds `rvfx ARGS` takes in this process (it must succeed); the CPU time
    shows the cost where other work shares the machine."""
    start, cpu = time.perf_counter(), time.process_time()
    res = CliRunner().invoke(rvfx_cli, [str(a) for a in args], catch_exceptions=False)
    took = time.perf_counter() - start, time.process_time() - cpu
    assert res.exit_code == 0, res.output
    return took


def naive_tables(out, runs) -> dict[str, pd.DataFrame]:
    """Baseline only: each verified shard's tables parsed alone, then concatenated (collect before)."""
    tables: dict[str, list] = {}
    for run in runs:
        problem, _, files = results.verified_shard(out, run)
        for name in sorted(files) if problem is None else ():
            stem = name.removesuffix(".csv")
            frame = results.read_table(io.BytesIO(files[name]))
            tables.setdefault("runs" if stem == "summary" else stem, []).append(frame)
    return {name: pd.concat(frames, ignore_index=True) for name, frames in tables.items()}


def naive_run_id(run: RunSpec) -> str:
    """Baseline only: the run id recomputed every time it is asked, through dataclasses.asdict."""
    d = {k: v for k, v in dataclasses.asdict(run).items() if k not in ("swept", "plugins", "recorded")}
    d["agent_params"], d["env_params"] = record_params(run.agent_params, run.env_params).identity.values()
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def runner_ratio(tmp: Path) -> None:
    """1,000 ten-episode runs (deep sea N = 4, learn_grlsvi: ~2 ms each) through `rvfx run`: the command's
    wall time against the sum of the seconds their timing.csv records, both measured here. The rest
    is the runner's: each run's shard (one file), the plan and collect, BLAS's check. In
    the temporary folder, then in memory (/dev/shm, where there is one) to tell the disk's part."""
    folders = [("temp folder", tmp)] + ([("in memory", Path("/dev/shm"))] if Path("/dev/shm").is_dir() else [])
    spec = tmp / "ratio.yaml"
    spec.write_text(TINY.format(name="ratio", sizes="4", seeds=1000))
    for where, root in folders:
        with tempfile.TemporaryDirectory(dir=root) as out:
            took, _ = cli("run", spec, "--out", out)
            timed = pd.read_csv(Path(out) / "ratio" / "timing.csv")["seconds"].sum()
        print(f"rvfx run, 1,000 ten-episode runs ({where}): {took:.2f} s, their timing.csv {timed:.2f} s, ratio "
              f"{took / timed:.2f} (target <= 1.3); the runner's {1e3 * (took - timed) / 1000:.2f} ms per run")


def record(tmp: Path) -> None:
    spec = CONFIGS / "deepsea_tabular_scaling.yaml"
    plain, _ = cli("run", spec, *RECORD_SETS, "--out", tmp / "plain")
    recorded, _ = cli("run", spec, *RECORD_SETS, "--out", tmp / "rec", "--record", tmp / "paper",
                   "--claims", CONFIGS.parent / "claims.yaml")
    print(f"rvfx run, 400 runs of deepsea_tabular_scaling: {plain:.1f} s, with --record {recorded:.1f} s, "
          f"ratio {recorded / plain:.2f} (target <= 3)")


def collect(tmp: Path) -> None:
    spec = tmp / "collect.yaml"
    spec.write_text(TINY.format(name="collect", sizes="4", seeds=4000))
    cli("run", spec, "--out", tmp / "out")
    runs = load_spec(str(spec)).runs
    took, cpu = cli("collect", spec, "--out", tmp / "out")
    start = time.perf_counter()
    naive = naive_tables(tmp / "out", runs)
    before = time.perf_counter() - start
    start = time.perf_counter()
    tables = results.shard_tables(tmp / "out", runs)[0]
    now = time.perf_counter() - start
    assert {n: t.to_csv(index=False) for n, t in tables.items()} == {n: t.to_csv(index=False) for n, t in naive.items()}
    print(f"rvfx collect, 4,000 finished runs: {took:.2f} s (target < 5 s), {cpu:.2f} s CPU; its shard reading "
          f"{now:.2f} s vs {before:.2f} s parsing each file alone (same tables), speed-up {before / now:.1f}x")


def dry_run(tmp: Path) -> None:
    spec = tmp / "dry.yaml"
    spec.write_text(TINY.format(name="dry", sizes=", ".join(map(str, range(3, 23))), seeds=1000))   # 20,000
    identities, real = [], RunSpec.identity
    RunSpec.identity = lambda self: identities.append(self) or real(self)
    try:
        took, cpu = cli("run", spec, "--out", tmp / "out", "--dry-run")
    finally:
        RunSpec.identity = real
    print(f"rvfx run --dry-run, 20,000 runs: {took:.2f} s (target < 10 s), {cpu:.2f} s CPU; run ids computed "
          f"{len(identities) / 20_000:.2f} times per run")
    runs = load_spec(str(spec)).runs
    start = time.perf_counter()
    ids = [[r.run_id for r in runs] for _ in range(3)]
    now = time.perf_counter() - start
    start = time.perf_counter()
    naive = [[naive_run_id(r) for r in runs] for _ in range(3)]
    before = time.perf_counter() - start
    assert ids == naive
    print(f"  20,000 runs named 3 times: {now:.2f} s, recomputing each id through asdict {before:.2f} s "
          f"(same ids), speed-up {before / now:.0f}x")


def main():
    print("== the runner (1,000 short runs, record, collect, dry run) ==")
    with tempfile.TemporaryDirectory() as tmp:
        runner_ratio(Path(tmp))
        record(Path(tmp))
        collect(Path(tmp))
        dry_run(Path(tmp))


if __name__ == "__main__":
    main()

"""Bad specs, unusable outputs and damaged tables: each stops with one line on stderr naming the
file (and key), a non-zero exit and no traceback, and leaves earlier results byte for byte."""
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import TINY_SPEC

from rvfx.cli import main
from rvfx.experiment import runner as runner_mod
from rvfx.experiment import yaml_lines

# Line numbers in TINY_SPEC: 5 size, 7 env.treasure, 11 v, 13 psrl's algorithm, 14 seeds, 15 episodes.
SPEC_CASES = {   # id: (text replaced, replacement, line, key, words in the message); line None: not checked
    "v_nan": ("v: H**2/25", "v: .nan", 11, "agents.rlsvi.v", "must be a finite number, got nan"),
    "v_inf": ("v: H**2/25", "v: .inf", 11, "agents.rlsvi.v", "must be a finite number, got inf"),
    "v_negative": ("v: H**2/25", "v: -1", 11, "agents.rlsvi.v", "must be > 0.0, got -1"),
    "v_zero": ("v: H**2/25", "v: 0", 11, "agents.rlsvi.v", "must be > 0.0, got 0"),
    "lam_zero": ("v: H**2/25", "v: H**2/25\n    lam: 0", 12, "agents.rlsvi.lam", "must be > 0.0, got 0"),
    "v_zero_over_zero": ("v: H**2/25", "v: 0/0", 11, "agents.rlsvi.v", "division by zero"),
    "v_negative_at_H": ("v: H**2/25", "v: H**2/25 - 1", 11, "agents.rlsvi.v", "got -0.36 (H**2/25 - 1 at H=4)"),
    "lam_from_bad_v": ("v: H**2/25", "v: 0.5\n    lam: v - 1", 12, "agents.rlsvi.lam", "v=0.5"),
    "epsilon_nan": ("v: H**2/25", "v: H**2/25\n    epsilon: .nan", 12, "agents.rlsvi.epsilon", "finite"),
    "size_exabytes": ("size: 4", "size: 1000000000", 5, "env.size", "GB of memory, mostly 1 next-state"),
    "seeds_billion": ("seeds: 2", "seeds: 1000000000", 14, "seeds", "more than the 100,000 one sweep may hold"),
    "episodes_absurd": ("episodes: 50", "episodes: 1000000000000", 15, "episodes", "pass --allow-long"),
    "episodes_all_logged": ("episodes: 50", "episodes: 10000000000\nlog: all", 15, "episodes",
                            "logged episodes (log: all)"),
    "episodes_beyond_int64": ("episodes: 50", "episodes: 100000000000000000000", 15, "episodes", "64-bit"),
    "grid_value_below_min": ("env.treasure: [true, false]", "env.treasure: [true, false]\n  env.size: [4, 1]",
                             8, "grid.env.size[1]", "must be >= 2, got 1"),
    "grid_value_too_big": ("env.treasure: [true, false]", "env.treasure: [true, false]\n  env.size: [4, 100000]",
                           8, "grid.env.size[1]", "GB of memory"),
    "buffer_too_big": ("algorithm: psrl", "algorithm: ensemble_rlsvi\n    buffer_size: 100000000000", 14,
                       "agents.psrl.buffer_size", "a replay buffer of 100,000,000,000 transitions"),
    "agent_on_wrong_env": ("  name: deep_sea\n  size: 4\ngrid:\n  env.treasure: [true, false]\n",
                           "  name: cartpole_swingup\n", 7, "agents.rlsvi.algorithm",
                           "grlsvi runs on deep_sea or random_mdp or four_state, not cartpole_swingup"),
    "min_replay_over_buffer": ("algorithm: psrl",
                               "algorithm: ensemble_rlsvi\n    buffer_size: 100\n    min_replay: 200",
                               12, "agents.psrl", "min_replay (200) exceeds buffer_size (100)"),
    "duplicate_key": ("size: 4", "size: 4\n  size: 5", 6, "env.size", "duplicate key (first on line 5)"),
    "unknown_key": ("seeds: 2", "seed: 2", 14, "seed", "did you mean 'seeds'"),
    "alias_in_itself": ("seeds: 2", "seeds: 2\ndescription: &d [1, *d]", 15, "description[1]",
                        "an alias inside its own anchor"),
    "alias_bomb": ("seeds: 2", "seeds: 2\nbomb:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                   + "".join(f"  {b}: &{b} [{', '.join([f'*{a}'] * 10)}]\n" for a, b in zip("abcdef", "bcdefg")),
                   None, "bomb.", "more than 100,000 values once aliases are expanded"),
    "nested_too_deeply": ("seeds: 2", "seeds: 2\ndescription: " + "[" * 1000 + "]" * 1000, None, "",
                          "nested too deeply"),
    "yaml_syntax": ("figures: [deepsea_tabular]", "figures: [deepsea_tabular", 3, "", "not valid YAML"),
    "not_a_character": ("seeds: 2", "seeds: 2\n# \uffff", 15, "", "non-printable character '\\uffff' (U+FFFF)"),
    "control_character": ("seeds: 2", "seeds: 2\x07", 14, "", "non-printable character '\\x07' (U+0007)"),
    "merge_key": ("  rlsvi:\n    algorithm: grlsvi\n    v: H**2/25\n  psrl:\n",
                  "  rlsvi: &base\n    algorithm: grlsvi\n    v: H**2/25\n  psrl:\n    <<: *base\n", 13,
                  "agents.psrl.<<", "merge keys (<<) are not supported"),
    "expression_of_1200_terms": ("v: H**2/25", "v: " + "+".join(["1"] * 1200), 11, "agents.rlsvi.v",
                                 "an expression of 2,399 characters, more than the 200 one may hold"),
    "expression_of_100000_minuses": ("v: H**2/25", "v: " + "-" * 100_000 + "1", 11, "agents.rlsvi.v",
                                     "more than the 200 one may hold"),
    "expression_nested_too_deeply": ("v: H**2/25", "v: " + "+".join(["H"] * 30), 11, "agents.rlsvi.v",
                                     "operations nested more than 20 deep"),
    "expression_not_real": ("v: H**2/25", "v: (-H)**0.5", 11, "agents.rlsvi.v",
                            "not a real number (a negative number to a fractional power) ((-H)**0.5 at H=4)"),
    "agent_label_up_the_tree": ("  psrl:", '  "../../../x":', 12, "agents.../../../x",
                                "agent label: expected a name of letters, digits"),
    "agent_label_absolute": ("  psrl:", '  "/tmp/x":', 12, "agents./tmp/x", "agent label: expected a name"),
    "agent_label_hidden": ("  psrl:", '  ".x":', 12, "agents..x", "not starting with '.' or '-'"),
    "agent_label_too_long": ("  psrl:", f"  {'a' * 101}:", 12, f"agents.{'a' * 101}",
                             "a name of 101 characters, more than the 100 one may hold"),
    "experiment_name_of_300_characters": ("experiment: tiny", f"experiment: {'e' * 300}", 1, "experiment",
                                          "a name of 300 characters, more than the 100 one may hold"),
}


def one_line(result, code: int, *fragments: str) -> str:
    """The command's stderr: exactly one line, holding every fragment, no traceback; exit `code`."""
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def snapshot(root: Path) -> dict:
    """Every file's bytes and every folder under `root`; the sweep lock's holder line is left out
    (each sweep writes its pid there, and it is no result)."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None
            for p in sorted(root.rglob("*")) if p.name != ".lock"}


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A tiny finished sweep: its --out folder."""
    root = tmp_path_factory.mktemp("finished")
    (root / "tiny.yaml").write_text(TINY_SPEC)
    assert cli("run", root / "tiny.yaml", "--out", root / "out").exit_code == 0
    return root / "out"


@pytest.fixture
def earlier(finished, tmp_path) -> Path:
    """A copy of the finished sweep, for a case to run against."""
    shutil.copytree(finished, tmp_path / "out")
    (tmp_path / "tiny.yaml").write_text(TINY_SPEC)
    return tmp_path / "out"


@pytest.mark.parametrize("case", SPEC_CASES)
def test_bad_spec_one_line_naming_file_line_and_key(earlier, tmp_path, case):
    old, new, line, key, words = SPEC_CASES[case]
    assert old in TINY_SPEC
    spec = tmp_path / "bad.yaml"
    spec.write_text(TINY_SPEC.replace(old, new))
    before = snapshot(earlier)
    where = [f"{spec}:{line}: {key}"] if line else [f"{spec}:", key]
    one_line(cli("run", spec, "--out", earlier), 2, *where, words)
    assert snapshot(earlier) == before


def _random_bytes(tmp_path):
    spec = tmp_path / "noise.yaml"
    spec.write_bytes(bytes(range(128, 256)) * 4)
    return ["run", spec, "--out", tmp_path / "out"], 2, [f"{spec}:", "not a text file"]


def _missing_spec(tmp_path):
    return ["run", tmp_path / "nope.yaml", "--out", tmp_path / "out"], 2, \
        [f"{tmp_path / 'nope.yaml'}:", "no such file"]


def _directory_spec(tmp_path):
    return ["run", tmp_path, "--out", tmp_path / "out"], 2, [f"{tmp_path}:", "is a directory"]


def _unreadable_spec(tmp_path, monkeypatch):
    def denied(path, *args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
    monkeypatch.setattr(yaml_lines, "open", denied, raising=False)
    return ["run", tmp_path / "tiny.yaml", "--out", tmp_path / "out"], 2, \
        [f"{tmp_path / 'tiny.yaml'}:", "cannot be read: Permission denied"]


def _set_nan(tmp_path):
    return ["run", tmp_path / "tiny.yaml", "--set", "agents.rlsvi.v=.nan", "--out", tmp_path / "out"], 2, \
        ["--set:?: agents.rlsvi.v: must be a finite number"]


def _out_under_a_file(tmp_path):
    table = tmp_path / "out" / "tiny" / "runs.csv"
    return ["run", tmp_path / "tiny.yaml", "--out", table / "sub"], 2, [f"{table} is not a directory"]


def _out_dev_full(tmp_path):
    return ["run", tmp_path / "tiny.yaml", "--out", "/dev/full"], 2, ["/dev/full is not a directory"]


def _read_only_out(tmp_path, monkeypatch):
    def read_only(*args, dir=None, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(Path(dir) / ".probe"))
    monkeypatch.setattr("rvfx.experiment.preflight.tempfile.mkstemp", read_only)
    return ["run", tmp_path / "tiny.yaml", "--set", "seeds=3", "--out", tmp_path / "out"], 2, \
        [f"{tmp_path / 'out' / 'tiny'}", "Read-only file system"]


def _full_disk_at_probe(tmp_path, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr("rvfx.experiment.preflight.os.fsync", full)
    return ["run", tmp_path / "tiny.yaml", "--set", "seeds=3", "--out", tmp_path / "out"], 2, \
        [f"--out {tmp_path / 'out'}: cannot write results in {tmp_path / 'out' / 'tiny'}", "No space left on device"]


def _no_room_for_a_shard(tmp_path, monkeypatch):
    monkeypatch.setattr("rvfx.experiment.preflight.shutil.disk_usage", lambda path: SimpleNamespace(free=1000))
    return ["run", tmp_path / "tiny.yaml", "--set", "seeds=3", "--out", tmp_path / "out"], 2, \
        [f"{tmp_path / 'out' / 'tiny'} has 0.0 MB free, a run's shard needs about"]


def _collect_under_a_file(tmp_path):
    table = tmp_path / "out" / "tiny" / "runs.csv"
    return ["collect", tmp_path / "tiny.yaml", "--out", table / "sub"], 2, [f"{table} is not a directory"]


def _plot_damaged(name: str, damage):
    def case(tmp_path):
        results_dir = tmp_path / "out"
        (results_dir / "tiny").rename(results_dir / "deepsea_tabular")     # the folder the figure reads
        damage(results_dir / "deepsea_tabular" / name)
        return ["plot", "deepsea_tabular", "--results", results_dir, "--out", tmp_path / "figs"], 2, \
            [f"{results_dir / 'deepsea_tabular' / name}: damaged, cannot be read"]
    return case


def _append(data: bytes):
    def damage(path: Path):
        with open(path, "ab") as f:
            f.write(data)
    return damage


def _plot_without_results(tmp_path):
    empty = tmp_path / "elsewhere"
    return ["plot", "deepsea_tabular", "--results", empty, "--out", tmp_path / "figs"], 1, \
        [f"no tables in {empty}: deepsea_tabular", f"`rvfx run deepsea_tabular --out {empty}`"]


def _plot_out_under_a_file(tmp_path):
    results_dir = tmp_path / "out"
    (results_dir / "tiny").rename(results_dir / "deepsea_tabular")
    table = results_dir / "deepsea_tabular" / "runs.csv"
    return ["plot", "deepsea_tabular", "--results", results_dir, "--out", table / "figs"], 1, \
        [f"{table / 'figs'}", "Not a directory"]


def _dev_zero(tmp_path):
    return ["run", "/dev/zero", "--out", tmp_path / "out"], 2, ["/dev/zero:?: is a character device, not a spec file"]


def _spec_of_20_mb(tmp_path):
    spec = tmp_path / "big.yaml"
    spec.write_text((tmp_path / "tiny.yaml").read_text() + "#" * 20_000_000 + "\n")
    size = f"{spec.stat().st_size / 1024:,.0f} KB"
    return ["run", spec, "--out", tmp_path / "out"], 2, [f"{spec}:?: is {size}, more than the 256 KB a spec may hold"]


def _set(*sets: str, fragment: str):
    def case(tmp_path):
        args = [a for item in sets for a in ("--set", item)]
        return ["run", tmp_path / "tiny.yaml", *args, "--out", tmp_path / "out"], 2, [fragment]
    return case


def _blas_dies(tmp_path, monkeypatch):
    """The BLAS probe dies of SIGILL, as under OPENBLAS_CORETYPE=SkylakeX on a CPU without AVX-512."""
    from rvfx.experiment import blas_check
    monkeypatch.setattr(blas_check, "product", lambda: os.kill(os.getpid(), signal.SIGILL))
    return ["run", tmp_path / "tiny.yaml", "--set", "seeds=3", "--out", tmp_path / "out"], 2, \
        [f"NumPy's BLAS dies of SIGILL in a child process under OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']}"]


OTHER_CASES = {
    "spec_of_random_bytes": _random_bytes,
    "missing_spec": _missing_spec,
    "directory_as_spec": _directory_spec,
    "unreadable_spec": _unreadable_spec,
    "set_nan": _set_nan,
    "out_under_a_regular_file": _out_under_a_file,
    "out_dev_full": _out_dev_full,
    "read_only_out": _read_only_out,
    "full_disk_at_probe": _full_disk_at_probe,
    "no_room_for_a_shard": _no_room_for_a_shard,
    "collect_under_a_regular_file": _collect_under_a_file,
    "plot_garbage_appended": _plot_damaged("episodes.csv", _append(b"1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\n")),
    "plot_table_emptied": _plot_damaged("runs.csv", lambda path: path.write_bytes(b"")),
    "plot_random_bytes": _plot_damaged("runs.csv", lambda path: path.write_bytes(bytes(range(128, 256)))),
    "plot_spec_yaml_damaged": _plot_damaged("spec.yaml", _append(b"\nscale: [")),
    "plot_without_results_keeps_results_dir": _plot_without_results,
    "plot_out_under_a_regular_file": _plot_out_under_a_file,
    "dev_zero_as_spec": _dev_zero,
    "spec_of_20_mb": _spec_of_20_mb,
    "set_every_scale": _set("scales=null", fragment="--set:?: scales=null: --set cannot replace every scale"),
    "set_empty_key": _set(".=1", fragment="--set:?: .=1: --set takes dotted.key=value"),
    "set_another_scale": _set("scales.paper.seeds=3",
                              fragment="--set:?: scales.paper.seeds=3: sets the 'paper' scale's override, "
                                       "but this is scale 'ci'"),
    "set_scale_to_a_number": _set("scales.ci=5", fragment="--set:?: scales.ci: expected a mapping of overrides"),
    "set_mapping_with_a_bad_value": _set("env={name: deep_sea, size: 1}", fragment="--set:?: env.size: must be >= 2"),
    "set_grid_with_a_bad_value": _set("grid.env.size=[4, 1]", fragment="--set:?: grid.env.size[1]: must be >= 2"),
    "set_value_not_yaml": _set("seeds=[2", fragment="--set:1: seeds=[2: not valid YAML: expected ',' or ']'"),
    "set_control_character": _set("description=a\x1bb",
                                  fragment="--set:1: description=a\x1bb: non-printable character '\\x1b' (U+001B)"),
    "blas_dies_of_a_signal": _blas_dies,
}


@pytest.mark.parametrize("case", OTHER_CASES)
def test_bad_file_or_output_one_line_naming_the_path(earlier, tmp_path, monkeypatch, case):
    make = OTHER_CASES[case]
    args, code, fragments = (make(tmp_path, monkeypatch) if make.__code__.co_argcount == 2 else make(tmp_path))
    before = snapshot(earlier)
    one_line(cli(*args), code, *fragments)
    assert snapshot(earlier) == before
    assert not list(earlier.rglob("*.tmp"))


def test_disk_full_during_a_run_names_the_file_and_keeps_earlier_results(earlier, tmp_path, monkeypatch):
    """A fault after runs started (here the first new shard's write) ends in one error line, exit 1;
    the half-written shard is removed and the earlier shards and tables are untouched."""
    shard_fds, real_open, real_write = set(), os.open, os.write

    def shard_open(path, flags, *args, **kwargs):            # a new shard file, under its temporary name
        fd = real_open(path, flags, *args, **kwargs)
        if flags & os.O_WRONLY and "/shards/." in str(path):
            shard_fds.add(fd)
        return fd

    def full(fd, data):
        if fd in shard_fds:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)
    monkeypatch.setattr(os, "open", shard_open)
    monkeypatch.setattr(os, "write", full)
    before = snapshot(earlier)
    result = cli("run", tmp_path / "tiny.yaml", "--set", "seeds=3", "--out", earlier)
    assert result.exit_code == 1 and "Traceback" not in result.output
    errors = [line[line.index("error:"):] for line in result.stderr.splitlines() if "error:" in line]  # after any bar
    assert len(errors) == 1 and ".json: No space left on device" in errors[0], result.stderr
    assert str(earlier / "tiny" / "shards") in errors[0]
    assert snapshot(earlier) == before


def test_a_bug_inside_a_run_keeps_its_traceback_in_failed(tmp_path, monkeypatch):
    """The CLI turns OS errors into one line, but an agent's own error (even an OSError) is the
    runner's: stored with its full traceback under failed/, the sweep going on."""
    def buggy(run, *args):
        raise OSError("an agent bug")
    monkeypatch.setattr(runner_mod, "execute", buggy)
    (tmp_path / "tiny.yaml").write_text(TINY_SPEC)
    result = CliRunner().invoke(main, ["run", str(tmp_path / "tiny.yaml"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1 and "8 run(s) failed" in result.stderr
    failed = sorted((tmp_path / "o" / "tiny" / "failed").glob("*.txt"))
    assert len(failed) == 8
    text = failed[0].read_text()
    assert "Traceback (most recent call last)" in text and "OSError: an agent bug" in text


def test_a_real_process_prints_one_line_for_a_spec_of_random_bytes(tmp_path):
    spec = tmp_path / "noise.yaml"
    spec.write_bytes(os.urandom(64) + bytes([0xff]))
    rvfx = Path(sys.executable).parent / "rvfx"
    done = subprocess.run([str(rvfx), "validate", str(spec)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and str(spec) in done.stderr


def test_a_long_sweep_needs_allow_long_and_validate_says_its_cost(tmp_path):
    spec = tmp_path / "long.yaml"
    spec.write_text(TINY_SPEC.replace("episodes: 50", "episodes: 1000000000000"))
    one_line(cli("validate", spec), 2, f"{spec}:15: episodes: the sweep would take up to", "CPU-years")
    result = cli("validate", spec, "--allow-long")
    assert result.exit_code == 0 and "CPU-hours by a coarse estimate" in result.output


def test_list_finds_the_experiments_from_outside_the_repository(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli("list")
    assert result.exit_code == 0 and any(line.split()[:1] == ["deepsea_tabular"] for line in result.output.splitlines())


MEASURE = """
import json, sys, tempfile, tracemalloc
from rvfx.experiment import memory
from rvfx.agents import AGENTS
from rvfx.envs import ENVS
from rvfx.experiment.runner import run_and_store
from rvfx.experiment.spec import load_spec
out = []
for path in sys.argv[1:]:
    run = load_spec(path).runs[0]
    agent, env = AGENTS[run.algorithm][1](**run.settings["agent"]), ENVS[run.env][1](**run.settings["env"])
    z = memory.sizes(run.algorithm, agent, env)
    estimate = memory.peak_bytes(memory.estimate(AGENTS[run.algorithm], agent, env, z, run.episodes, run.log).parts)
    with tempfile.TemporaryDirectory() as d:
        tracemalloc.start()
        assert run_and_store(run, d).ok
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    out.append([estimate, peak])
print(json.dumps(out))
"""

MEMORY_CASES = {   # big enough that the run's own arrays dwarf the interpreter's noise; a few seconds in all
    "tabular grlsvi, N = 100": "env: {name: deep_sea, size: 100}\nagents: {a: {algorithm: grlsvi}}\nepisodes: 3",
    "linear grlsvi, N = M = 100": "env: {name: deep_sea, size: 100}\nagents: {a: {algorithm: linear_grlsvi, M: 100}}"
                                  "\nepisodes: 3",
    "ensemble RLSVI, K = 20, N = 50 pixels": "env: {name: deep_sea, size: 50}\nagents: {a: {algorithm: ensemble_rlsvi}}"
                                             "\nepisodes: 3",
    "DQN on cartpole, batch 4096, K = 3": "env: {name: cartpole_swingup, max_time: 2}\n"
                                          "agents: {a: {algorithm: dqn, K: 3, batch_size: 4096}}\nepisodes: 1",
}


def test_memory_estimate_within_2x_of_the_traced_peak(tmp_path):
    """rvfx.experiment.memory's estimate of a run's peak (the arrays it allocates above the interpreter's)
    against tracemalloc's peak while the run executes and writes its shard, in a fresh process."""
    paths = []
    for i, body in enumerate(MEMORY_CASES.values()):
        paths.append(tmp_path / f"m{i}.yaml")
        paths[-1].write_text(f"experiment: m{i}\n{body}\nseeds: 1\nscales: {{ci: {{}}, paper: {{}}}}\n")
    done = subprocess.run([sys.executable, "-c", MEASURE, *map(str, paths)], capture_output=True, text=True,
                          timeout=300, check=True)
    for name, (estimate, peak) in zip(MEMORY_CASES, json.loads(done.stdout)):
        assert peak > 10 * 2**20, name
        assert 0.5 <= estimate / peak <= 2.0, (name, estimate / 2**20, peak / 2**20)


def rvfx_process(*args, env=None, timeout=120):
    """`rvfx ARGS...` in a process of its own (a hang ends the test at `timeout`, a signal shows)."""
    rvfx = Path(sys.executable).parent / "rvfx"
    return subprocess.run([str(rvfx), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=env)


def test_a_spec_that_is_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    done = rvfx_process("validate", fifo, timeout=60)
    assert done.returncode == 2 and done.stderr.splitlines() == \
        [f"error: {fifo}:?: is a named pipe (FIFO), not a spec file"], done.stderr


def _has_avx512() -> bool:
    return "avx512f" in Path("/proc/cpuinfo").read_text().split() if Path("/proc/cpuinfo").exists() else True


@pytest.mark.skipif(_has_avx512(), reason="this CPU has AVX-512 (avx512f in /proc/cpuinfo): OpenBLAS's SkylakeX "
                                          "kernels run here, so there is no SIGILL to provoke")
def test_skylakex_kernels_on_a_cpu_without_avx512_are_refused_before_any_run(tmp_path):
    """The one test that sets OPENBLAS_CORETYPE, in its own process: the BLAS probe dies of SIGILL,
    and `rvfx run` says so in one line instead of dying with exit 132."""
    (tmp_path / "tiny.yaml").write_text(TINY_SPEC)
    done = rvfx_process("run", tmp_path / "tiny.yaml", "--out", tmp_path / "out",
                        env={**os.environ, "OPENBLAS_CORETYPE": "SkylakeX"})
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.splitlines() == [done.stderr.strip()] and "Traceback" not in done.stderr
    assert "NumPy's BLAS dies of SIGILL in a child process under OPENBLAS_CORETYPE=SkylakeX" in done.stderr
    assert not (tmp_path / "out").exists()


def test_bsuite_logs_refuse_an_agent_label_that_is_no_name(tmp_path):
    """`python -m rvfx.analysis.bsuite` builds OUT/<agent>/seed_<seed>/ from labels read from a
    results table: one that is a path (../../x, /abs) is refused in one line, nothing written."""
    pytest.importorskip("bsuite")
    from rvfx.envs.bsuite import PREFIX, ROWS
    row = {"experiment": "e", "run_id": "0123456789abcdef", "seed": 0, "env.id": "deep_sea/0", ROWS: 1,
           **{PREFIX + k: 1 for k in ("steps", "episode", "total_return", "episode_len", "episode_return")}}
    outside = tmp_path / "outside"
    for label in ("../../outside", str(outside)):
        results = tmp_path / "results"
        (results / "e").mkdir(parents=True, exist_ok=True)
        pd.DataFrame([{**row, "agent": label}]).to_csv(results / "e" / "episodes.csv", index=False)
        out = tmp_path / "logs" / "bsuite"
        done = subprocess.run([sys.executable, "-m", "rvfx.analysis.bsuite", str(results), "e", str(out)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert done.stderr.splitlines() == [f"error: {results / 'e'}: agent {label!r}: expected a name of letters, "
                                            f"digits, '_', '.' and '-', not starting with '.' or '-', got "
                                            f"{label!r}; nothing written to {out}"], done.stderr
        assert not outside.exists() and not (tmp_path / "logs").exists()

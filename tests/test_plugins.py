"""Agents from outside rvfx run in every worker: a `--plugin` module and an installed entry point,
under `--jobs 2` with the spawn start method (macOS's and Windows' default, where workers import
rvfx afresh) and on Dask; a plugin that cannot load is one line, exit 2."""
import importlib.util
import os
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

PLUGIN = '''
"""A uniformly random agent, registered from outside rvfx."""
import dataclasses

import numpy as np

from rvfx.agents import AGENTS, AgentEntry
from rvfx.core.protocols import Environment


@dataclasses.dataclass(frozen=True)
class UniformParams:
    """No parameters."""


class Uniform:
    def __init__(self, num_actions, rng):
        self.num_actions, self.rng = num_actions, rng

    def act(self, observation):
        return int(self.rng.integers(self.num_actions))

    def update_buffer(self, transition):
        pass

    def learn_from_buffer(self):
        pass


ENTRY = AgentEntry(lambda params, env, rng: Uniform(env.num_actions, rng), UniformParams, Environment,
                   "acts uniformly at random")
AGENTS["{name}"] = ENTRY
'''

SPEC = """
experiment: plugged
env: {{name: deep_sea, size: 4}}
agents:
  {name}: {{algorithm: {name}}}
seeds: 3
episodes: 20
scales: {{ci: {{}}, paper: {{}}}}
"""


def rvfx(args, folder, start_method="spawn"):
    """`rvfx ARGS` in a fresh interpreter whose multiprocessing starts workers by `start_method`."""
    code = (f"import multiprocessing as mp; mp.set_start_method({start_method!r}); "
            f"from rvfx.cli import main; main({[str(a) for a in args]!r})")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True)


def plugin_folder(tmp_path, name, entry_point=False):
    """A folder holding the plugin module (and, with `entry_point`, an installed distribution's
    metadata declaring it under rvfx.agents) and a spec that uses it."""
    (tmp_path / f"{name}_plugin.py").write_text(PLUGIN.replace("{name}", name), encoding="utf-8")
    (tmp_path / "plugged.yaml").write_text(SPEC.format(name=name), encoding="utf-8")
    if entry_point:
        info = tmp_path / f"{name}_plugin-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-plugin\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[rvfx.agents]\n{name} = {name}_plugin:ENTRY\n")
    return tmp_path


def uniform_rows(folder) -> pd.DataFrame:
    runs = pd.read_csv(folder / "results" / "plugged" / "runs.csv")
    assert len(runs) == 3 and set(runs["algorithm"]) == {runs["agent"].iloc[0]}
    return runs


def test_a_plugin_module_runs_in_spawned_workers(tmp_path):
    folder = plugin_folder(tmp_path, "uniform_mod")
    result = rvfx(["--plugin", "uniform_mod_plugin", "run", "plugged.yaml", "--jobs", 2], folder)
    assert result.returncode == 0, result.stderr
    spawned = uniform_rows(folder)
    again = rvfx(["--plugin", "uniform_mod_plugin", "run", "plugged.yaml", "--out", "one"], folder, "fork")
    assert again.returncode == 0, again.stderr
    assert (folder / "one" / "plugged" / "runs.csv").read_bytes() == \
        (folder / "results" / "plugged" / "runs.csv").read_bytes()
    assert spawned["final_cum_regret"].notna().all()


def test_an_installed_entry_point_runs_in_spawned_workers_without_naming_it(tmp_path):
    folder = plugin_folder(tmp_path, "uniform_ep", entry_point=True)
    listed = rvfx(["list", "agents", "uniform_ep"], folder)
    assert listed.returncode == 0 and "acts uniformly at random" in listed.stdout
    result = rvfx(["run", "plugged.yaml", "--jobs", 2], folder)
    assert result.returncode == 0, result.stderr
    uniform_rows(folder)


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="needs the dask extra")
def test_a_plugin_module_runs_on_dask_workers(tmp_path):
    folder = plugin_folder(tmp_path, "uniform_dask")
    result = rvfx(["--plugin", "uniform_dask_plugin", "run", "plugged.yaml", "--dask", "local:2"], folder)
    assert result.returncode == 0, result.stderr
    uniform_rows(folder)


def test_a_plugin_that_cannot_load_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "broken_plugin.py").write_text(textwrap.dedent("raise RuntimeError('no licence server')\n"))
    result = rvfx(["--plugin", "broken_plugin", "list"], tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: --plugin broken_plugin: RuntimeError: no licence server"]

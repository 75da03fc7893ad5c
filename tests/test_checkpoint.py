"""A run cut off after a checkpoint resumes there and writes the same bytes as one never cut off."""
import importlib.util
import io

import numpy as np
import pandas as pd
import pytest
from cli_helpers import invoke
from test_agents_on_envs import EXTRA, SMALL_AGENT, small_env

from rvfx.agents import AGENTS, accepts, make_agent
from rvfx.core.live import LiveState, live
from rvfx.core.protocols import run_tables
from rvfx.envs import ENVS
from rvfx.experiment import checkpoint, object_state, results
from rvfx.experiment.runner import run_and_store
from rvfx.experiment.spec import load_spec


def fresh(agent_name, env):
    params = AGENTS[agent_name].params(**SMALL_AGENT.get(agent_name, {}))
    if agent_name in ("ensemble_rlsvi", "dqn") and isinstance(env, ENVS["cartpole_swingup"][0]):
        params = AGENTS[agent_name].params(**SMALL_AGENT[agent_name], diagnostics_every=2)
    return make_agent(agent_name, params, env, np.random.default_rng(1))


def environments(agent_name) -> list[str]:
    """The environments `agent_name` acts on, of those whose extra is installed."""
    return [name for name in ENVS if (name not in EXTRA or importlib.util.find_spec(EXTRA[name]))
            and accepts(agent_name, small_env(name))]


def state_file(agent, env, state) -> bytes:
    """The checkpoint's data file of (agent, env, state), as `save_if_due` writes it."""
    tree, arrays = object_state.encode({"agent": agent, "env": env, "state": state})
    f = io.BytesIO()
    checkpoint._write_data(f, tree, arrays)
    return f.getvalue()


def resumes_identically(agent_name, env_name) -> None:
    """6 episodes straight vs 2, written as data with their live state, restored into a fresh
    agent and environment, then 4 more."""
    env = small_env(env_name)
    agent = fresh(agent_name, env)
    whole = live(agent, env, 6, log_every="all")
    whole_tables = run_tables(agent, env)

    env = small_env(env_name)
    agent = fresh(agent_name, env)
    saved = []
    live(agent, env, 3, log_every="all", after_episode=lambda s: saved.append(state_file(agent, env, s)))
    env = small_env(env_name)
    agent = fresh(agent_name, env)
    state = LiveState()
    checkpoint._restore(io.BytesIO(saved[1]), {"agent": agent, "env": env, "state": state})   # after episode 2
    assert state.episode == 2
    resumed = live(agent, env, 6, log_every="all", state=state)
    assert pd.DataFrame(resumed["episodes"]).equals(pd.DataFrame(whole["episodes"])), env_name   # NaN == NaN
    assert resumed["episodes_run"] == 6
    tables = run_tables(agent, env)                 # drawn once: a greedy rollout moves the generators
    assert tables.keys() == whole_tables.keys()
    for name, table in whole_tables.items():
        assert table.equals(tables[name]), (env_name, name)


@pytest.mark.parametrize("agent_name", AGENTS)
def test_every_agent_and_environment_checkpointed_mid_run_goes_on_identically(agent_name):
    names = environments(agent_name)
    assert names
    for env_name in names:
        resumes_identically(agent_name, env_name)


@pytest.fixture(autouse=True)
def own_key(tmp_path, monkeypatch):
    """Each test has its own checkpoint key (never the user's)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


class Cut(BaseException):
    """The machine going away mid-run (not an error of the run, which run_and_store would record)."""


def cut_at(episode):
    def hook(ell):
        if ell == episode:
            raise Cut
    return hook


def shard_bytes(out, run):
    d = results.shard_dir(out, run)
    return {p.name: p.read_bytes() for p in d.glob("*.csv") if p.name != "timing.csv"}


SPEC = """experiment: ckpt
env: {name: cartpole_swingup, max_time: 1.0}
agents:
  ens: {algorithm: ensemble_rlsvi, K: 2, hidden1: 8, hidden2: 8, batch_size: 8, min_replay: 8,
        diagnostics_every: 3}
episodes: 9
seeds: 1
log: all
scales: {ci: {}, paper: {}}
"""


def test_a_run_cut_after_a_checkpoint_resumes_there_with_identical_tables(tmp_path, monkeypatch, capsys):
    spec = tmp_path / "ckpt.yaml"
    spec.write_text(SPEC)
    run = load_spec(str(spec)).runs[0]
    assert run_and_store(run, tmp_path / "whole").ok
    monkeypatch.setattr(checkpoint, "CHECKPOINT_EVERY", 0.0)        # a checkpoint after every episode
    out = tmp_path / "cut"
    with pytest.raises(Cut):
        run_and_store(run, out, cut_at(6))
    ckpt = checkpoint.Checkpoint(out, run)
    assert checkpoint.resumable(out, [run]) == {run.run_id: 5} and not results.is_done(out, run)
    dry = invoke("run", spec, "--out", out, "--dry-run")
    assert "1 runs, 0 done, 1 to run (1 from a checkpoint)" in dry.output
    episodes = []
    assert run_and_store(run, out, episodes.append).ok
    assert episodes == [6, 7, 8, 9]                                   # episodes 1-5 not redone
    assert shard_bytes(out, run) == shard_bytes(tmp_path / "whole", run)
    assert "episodes.csv" in shard_bytes(out, run) and "diagnostics.csv" in shard_bytes(out, run)
    assert not ckpt.path.exists()                                     # removed with the shard written

    for where in ("middle", "head"):          # a byte of an array, of the zip's first header
        damaged = tmp_path / f"damaged_{where}"
        with pytest.raises(Cut):
            run_and_store(run, damaged, cut_at(4))
        path = checkpoint.Checkpoint(damaged, run).path
        data = bytearray(path.read_bytes())
        data[len(data) // 2 if where == "middle" else 2] ^= 0xFF
        path.write_bytes(bytes(data))
        assert checkpoint.resumable(damaged, [run]) == {}
        episodes = []
        assert run_and_store(run, damaged, episodes.append).ok
        assert episodes == list(range(1, 10))                         # started over
        assert f"ignoring checkpoint {path}: checksum differs (damaged or half-replaced)" in capsys.readouterr().err
        assert shard_bytes(damaged, run) == shard_bytes(tmp_path / "whole", run)


def test_a_checkpoint_of_other_settings_is_not_resumed(tmp_path, monkeypatch, capsys):
    spec = tmp_path / "ckpt.yaml"
    spec.write_text(SPEC)
    run = load_spec(str(spec)).runs[0]
    monkeypatch.setattr(checkpoint, "CHECKPOINT_EVERY", 0.0)
    with pytest.raises(Cut):
        run_and_store(run, tmp_path, cut_at(4))
    other = load_spec(str(spec)).runs[0]
    other.settings["agent"]["K"] = 3                                  # same id, other settings
    assert checkpoint.resumable(tmp_path, [other]) == {}
    assert checkpoint.Checkpoint(tmp_path, other).load(None, None) is None     # refused before either is read
    assert "made for another run or other settings" in capsys.readouterr().err

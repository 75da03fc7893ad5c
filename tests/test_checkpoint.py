"""A run cut off after a checkpoint resumes there and writes the same bytes as one never cut off."""
import hashlib
import importlib.util
import io
import json
import os
import pickle
import re
import zipfile

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
from rvfx.experiment.runner import run_and_store, run_rngs
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
    tables = json.loads(results.shard_path(out, run).read_text())["tables"]
    return {name: text for name, text in tables.items() if name != "timing.csv"}


SPEC = """experiment: ckpt
env: {name: cartpole_swingup, max_time: 0.5}
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
    spec, run, _ = cut_run(tmp_path, monkeypatch, tmp_path)
    other = load_spec(str(spec)).runs[0]
    other.settings["agent"]["K"] = 3                                  # same id, other settings
    assert checkpoint.resumable(tmp_path, [other]) == {}
    assert checkpoint.Checkpoint(tmp_path, other).load(None, None) is None     # refused before either is read
    assert "made for another run or other settings" in capsys.readouterr().err


class Payload:
    """Unpickled, it writes the file `marker` (what a planted pickle would do)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('ran')",)


def tables_of(out) -> dict:
    folder = out / "ckpt"
    return {p.name: p.read_bytes() for p in folder.glob("*.csv") if p.name != "timing.csv"}


def cut_run(tmp_path, monkeypatch, out):
    """The spec's run, cut after its checkpoint of episode 3 (one checkpoint after every episode);
    the runs after it checkpoint as rvfx does (every 10 minutes: never, in these runs of a second)."""
    spec = tmp_path / "ckpt.yaml"
    spec.write_text(SPEC)
    run = load_spec(str(spec)).runs[0]
    every = checkpoint.CHECKPOINT_EVERY
    monkeypatch.setattr(checkpoint, "CHECKPOINT_EVERY", 0.0)
    with pytest.raises(Cut):
        run_and_store(run, out, cut_at(4))
    monkeypatch.setattr(checkpoint, "CHECKPOINT_EVERY", every)
    return spec, run, checkpoint.Checkpoint(out, run)


def refused_then_rerun(spec, out, whole, capsys, why: str) -> None:
    """`rvfx run` names the checkpoint in one line (`why`), starts at episode 1 and writes the
    tables of an undisturbed run."""
    capsys.readouterr()
    result = invoke("run", spec, "--out", out)
    assert result.exit_code == 0, result.output
    lines = [line for line in (result.stderr + capsys.readouterr().err).splitlines() if "checkpoint" in line]
    assert len(lines) == 1 and why in lines[0] and "starting at episode 1" in lines[0], lines
    assert tables_of(out) == tables_of(whole)


def test_a_planted_pickle_with_a_matching_checksum_never_runs(tmp_path, monkeypatch, capsys):
    whole = tmp_path / "whole"
    spec, run, ckpt = cut_run(tmp_path, monkeypatch, tmp_path / "cut")
    assert invoke("run", spec, "--out", whole).exit_code == 0
    out = tmp_path / "planted"
    marker = tmp_path / "payload-ran"
    folder = checkpoint.Checkpoint(out, run).meta.parent
    folder.mkdir(parents=True)
    data = pickle.dumps(Payload(marker))
    (folder / f"{run.run_id}.pkl").write_bytes(data)                  # the format an older rvfx read
    (folder / f"{run.run_id}.json").write_text(json.dumps(
        {"format": 1, "run_id": run.run_id, "settings": run.settings, "episode": 3, "seconds": 1.0,
         "sha256": hashlib.sha256(data).hexdigest()}))
    refused_then_rerun(spec, out, whole, capsys, f"{folder / run.run_id}.json: not signed with this user's key")
    assert not marker.exists()
    assert not list(folder.glob(f"{run.run_id}.*"))                   # the planted files went with the run


def test_a_planted_npz_of_pickled_objects_never_runs_even_signed_with_the_users_key(tmp_path, monkeypatch, capsys):
    """The data file is parsed as numbers only: an object array (np.save's pickle) is refused even
    behind a valid signature, i.e. if the key were stolen."""
    whole = tmp_path / "whole"
    spec, run, ckpt = cut_run(tmp_path, monkeypatch, tmp_path / "planted")
    assert invoke("run", spec, "--out", whole).exit_code == 0
    marker = tmp_path / "payload-ran"
    with zipfile.ZipFile(ckpt.path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    payload = io.BytesIO()
    np.save(payload, np.array([Payload(marker)], dtype=object), allow_pickle=True)
    members["a0.npy"] = payload.getvalue()
    sign(ckpt, members)
    refused_then_rerun(spec, tmp_path / "planted", whole, capsys, "does not fit a fresh run")
    assert not marker.exists()


def sign(ckpt, members: dict, create: bool = False, **changes) -> None:
    """Write `members` as the checkpoint's data file, signed with the user's key (what only the
    user's rvfx can do), the description's fields updated by `changes`."""
    with zipfile.ZipFile(ckpt.path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    signature, _, body = ckpt.meta.read_bytes().partition(b"\n")
    head = json.loads(body)
    head.update(size=ckpt.path.stat().st_size, sha256=hashlib.sha256(ckpt.path.read_bytes()).hexdigest(), **changes)
    body = json.dumps(head, sort_keys=True).encode()
    ckpt.meta.write_bytes(checkpoint.mac(checkpoint.user_key(create), body).encode() + b"\n" + body)


def forge_finished(ckpt) -> dict:
    """The checkpoint's data with its live state made a finished, learned run (regret 0,
    learning time 2, every episode logged), as anyone who can write the folder could."""
    with zipfile.ZipFile(ckpt.path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    tree = json.loads(members["state.json"])
    state = dict(tree["@dict"])["state"]["@attrs"]
    state["episode"] = 8
    learning = state["learning"]["@attrs"]
    learning.update(cum_regret=0.0, episodes=8, value=2)
    members["state.json"] = json.dumps(tree).encode()
    return members


def test_a_forged_checkpoint_cannot_produce_a_shard(tmp_path, monkeypatch, capsys):
    """A forger rewrites the live state (a learned run, regret 0) and the checksums beside it: without
    the user's key the description does not verify, so the run starts over and its shard is the
    honest one. Copied from another user's folder (their key), owned by another user or writable
    by others: refused the same way."""
    whole = tmp_path / "whole"
    spec, run, ckpt = cut_run(tmp_path, monkeypatch, tmp_path / "forged")
    assert invoke("run", spec, "--out", whole).exit_code == 0
    members = forge_finished(ckpt)
    with zipfile.ZipFile(ckpt.path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    signature, _, body = ckpt.meta.read_bytes().partition(b"\n")
    head = json.loads(body)
    head.update(episode=8, size=ckpt.path.stat().st_size, sha256=hashlib.sha256(ckpt.path.read_bytes()).hexdigest())
    ckpt.meta.write_bytes(signature + b"\n" + json.dumps(head, sort_keys=True).encode())
    assert checkpoint.resumable(tmp_path / "forged", [run]) == {}
    refused_then_rerun(spec, tmp_path / "forged", whole, capsys, "not signed with this user's key")
    honest = pd.read_csv(whole / "ckpt" / "runs.csv")
    assert honest["learning_time"].isna().all()                      # what the forgery claimed is not what ran

    # the same forgery, signed with another user's key, copied in
    spec, run, ckpt = cut_run(tmp_path, monkeypatch, tmp_path / "copied")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "other-user"))
    sign(ckpt, forge_finished(ckpt), create=True, episode=8)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    refused_then_rerun(spec, tmp_path / "copied", whole, capsys, "not signed with this user's key")

    def linked(p):
        p.rename(p.with_suffix(".real"))
        p.symlink_to(p.with_suffix(".real"))

    for out, change, why in (("group-writable", lambda p: p.chmod(0o660), "writable by group or others"),
                             ("linked", linked, "a symbolic link")):
        spec, run, ckpt = cut_run(tmp_path, monkeypatch, tmp_path / out)
        sign(ckpt, forge_finished(ckpt), episode=8)                  # even one signed with the user's key
        change(ckpt.meta)
        refused_then_rerun(spec, tmp_path / out, whole, capsys, f"{ckpt.meta}: {why}")
    if os.geteuid() == 0:
        spec, run, ckpt = cut_run(tmp_path, monkeypatch, tmp_path / "chowned")
        os.chown(ckpt.path, 65534, -1)
        refused_then_rerun(spec, tmp_path / "chowned", whole, capsys, f"{ckpt.path}: owned by another user")


def test_a_checkpoint_that_does_not_fit_a_fresh_run_leaves_it_untouched(tmp_path, monkeypatch):
    """Restored state must have the fresh objects' classes, attributes and array shapes; where it
    does not, the message names the place and the fresh agent and environment stay as built."""
    spec, run, ckpt = cut_run(tmp_path, monkeypatch, tmp_path / "out")
    with zipfile.ZipFile(ckpt.path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    first = np.load(io.BytesIO(members["a0.npy"]))
    other_shape = io.BytesIO()
    np.save(other_shape, np.zeros(first.size + 1, first.dtype))

    def tree_with(change) -> bytes:
        tree = json.loads(members["state.json"])
        change(dict(tree["@dict"])["agent"])
        return json.dumps(tree).encode()

    for changed, why in (
            ({"state.json": tree_with(lambda a: a.update({"@object": "os.system"}))},
             "root['agent']: a os.system in the checkpoint, a rvfx.agents.neural.ensemble.EnsembleRLSVI in a fresh"),
            ({"state.json": tree_with(lambda a: a["@attrs"].pop("rng"))},
             "root['agent']: attributes differ (checkpoint only: [], fresh run only: ['rng'])"),
            ({"state.json": tree_with(lambda a: a["@attrs"].update(rng=None))},
             "root['agent'].rng: None in the checkpoint, a numpy.random._generator.Generator in a fresh run"),
            ({"a0.npy": other_shape.getvalue()}, f"of shape {(first.size + 1,)} in the checkpoint")):
        sign(ckpt, {**members, **changed})
        env, agent = built(run)
        before = object_state.encode({"agent": agent, "env": env})
        with pytest.raises(object_state.Mismatch, match=re.escape(why)):
            with ckpt.data(ckpt.head()) as f:
                checkpoint._restore(f, {"agent": agent, "env": env, "state": LiveState()})
        after = object_state.encode({"agent": agent, "env": env})
        assert json.dumps(after[0]) == json.dumps(before[0])
        assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(after[1], before[1], strict=True))


def built(run):
    """A fresh (env, agent) of `run`, as the runner builds them."""
    env_rng, agent_rng = run_rngs(run)
    env = ENVS[run.env][0](run.env_params, env_rng)
    return env, make_agent(run.algorithm, run.agent_params, env, agent_rng)

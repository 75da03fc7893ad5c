"""The kernels an agent's networks run with (rvfx.agents.neural.backend): chosen once per process from
RVFX_KERNELS and what is installed, held by the agent, recorded in each run's manifest, and without
effect on the run's id or on any byte of its tables."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import CONFIGS

from rvfx.agents.neural import backend, fused
from rvfx.agents.neural.ensemble import EnsembleParams, make_ensemble_agent
from rvfx.envs.deep_sea import DeepSea, DeepSeaParams


@pytest.fixture
def fresh_choice():
    """`backend.choose` asked afresh, and forgotten after."""
    backend.choose.cache_clear()
    yield
    backend.choose.cache_clear()


def test_rvfx_kernels_picks_the_kernels_the_agent_holds(monkeypatch, fresh_choice):
    monkeypatch.setenv("RVFX_KERNELS", "numpy")
    assert backend.chosen() is None                     # no network has asked yet
    agent = make_ensemble_agent(EnsembleParams(K=2), DeepSea(DeepSeaParams(size=4), np.random.default_rng(0)),
                                np.random.default_rng(1))
    assert type(agent.kernels) is backend.Numpy and backend.chosen() == "numpy"
    assert agent.net.kernels is agent.kernels is agent.ensemble.opt.kernels
    backend.choose.cache_clear()
    monkeypatch.setenv("RVFX_KERNELS", "numba")
    if fused.available():
        assert backend.choose().name == "numba" and backend.choose() is backend.choose()
    else:
        with pytest.raises(ValueError, match="numba is not installed"):
            backend.choose()


SWEEP = ["run", str(CONFIGS / "deepsea_ensemble.yaml"), "--set", "seeds=2", "--set", "grid={agent.K: [5]}",
         "--set", "episodes=30"]


def test_each_runs_manifest_records_its_kernels_and_nothing_else_changes(tmp_path):
    """The same 2-run neural sweep (past 128 transitions: SGD steps) in a fresh process per kernels: each
    shard's manifest names them; the run ids and every table's bytes are the same."""
    rvfx = str(Path(sys.executable).parent / "rvfx")
    tables, ids = [], []
    for kernels in ("numpy", "numba") if fused.available() else ("numpy",):
        out = tmp_path / kernels
        env = {**os.environ, "RVFX_KERNELS": kernels}
        subprocess.run([rvfx, *SWEEP, "--out", str(out)], env=env, check=True, capture_output=True)
        shards = sorted((out / "deepsea_ensemble" / "shards").iterdir())
        assert len(shards) == 2
        assert {json.loads(s.read_text())["kernels"] for s in shards} == {kernels}
        ids.append([s.name for s in shards])
        tables.append([(out / "deepsea_ensemble" / name).read_bytes() for name in ("episodes.csv", "runs.csv")])
    assert all(i == ids[0] for i in ids) and all(t == tables[0] for t in tables)

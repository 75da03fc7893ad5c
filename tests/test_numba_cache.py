"""The fast extra compiles once per machine: numba's cache goes into a private folder of the user's
(numba_cache.folder: made 0700, refused when a link, another's, open to others, or under a folder
others can write), and a second process running the same sweep compiles nothing."""
import os
import resource
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from cli_helpers import CONFIGS

from rvfx.agents.neural import fused, numba_cache


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_cache_folder_is_made_private_under_the_users_cache(cache_home):
    folder = numba_cache.folder()
    assert folder == cache_home / "rvfx" / "numba" and folder.is_dir() and not folder.is_symlink()
    assert folder.stat().st_mode & 0o777 == 0o700 and folder.stat().st_uid == os.geteuid()


@pytest.mark.parametrize("case", ["open to others", "a link", "under a folder others can write"])
def test_a_cache_folder_others_could_write_is_not_used(tmp_path, monkeypatch, case):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    named = {"open to others": tmp_path / "open", "a link": tmp_path / "link",
             "under a folder others can write": tmp_path / "shared" / "numba"}[case]
    if case == "open to others":
        named.mkdir()
        named.chmod(0o770)
    elif case == "a link":
        named.symlink_to(private, target_is_directory=True)
    else:
        named.parent.mkdir()
        named.parent.chmod(0o777)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(named))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert numba_cache.folder() is None
    assert len(caught) == 1 and f"numba cache {named} " in str(caught[0].message)


SWEEP = ["run", str(CONFIGS / "deepsea_ensemble.yaml"), "--set", "seeds=2", "--set", "grid={agent.K: [5]}",
         "--set", "episodes=30"]


@pytest.mark.skipif(not fused.available(), reason="numba is not installed")
def test_a_second_process_compiles_nothing_and_writes_the_same_tables(tmp_path, cache_home):
    """Two fresh processes run the same 2-run neural sweep, long enough for SGD steps (past 128
    transitions: fused passes and the compiled step): the first fills the cache; the second reads it,
    so it adds nothing to it and spends a fraction of the first's CPU; both write the same bytes."""
    rvfx = str(Path(sys.executable).parent / "rvfx")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "RVFX_KERNELS")}
    env["XDG_CACHE_HOME"] = str(cache_home)
    folder, cpu, tables = cache_home / "rvfx" / "numba", [], []
    for i in range(2):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
        subprocess.run([rvfx, *SWEEP, "--out", str(tmp_path / f"out{i}")], env=env, check=True, capture_output=True)
        cpu.append(resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before)
        tables.append((tmp_path / f"out{i}" / "deepsea_ensemble" / "episodes.csv").read_bytes())
        if i == 0:
            cached = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
            assert any(p.suffix == ".nbi" for p in cached)
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == cached
    assert tables[0] == tables[1]
    assert cpu[1] < cpu[0] / 3, cpu

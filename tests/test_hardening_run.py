"""`rvfx run` refuses what would fail every run before any starts, and names what failed: a bad
RVFX_KERNELS in one line (exit 2, nothing in failed/)."""
import pytest
from cli_helpers import CONFIGS, invoke

SPEC = [CONFIGS / "deepsea_tabular.yaml", "--set", "seeds=1", "--set", "episodes=20"]


@pytest.mark.parametrize("value", ["garbage", "NUMPY", "numba,numpy"])
def test_a_bad_rvfx_kernels_is_refused_before_any_run(tmp_path, monkeypatch, value):
    monkeypatch.setenv("RVFX_KERNELS", value)
    result = invoke("run", *SPEC, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert [line for line in result.output.splitlines() if line.startswith("error")] == [
        f"error: RVFX_KERNELS={value!r}: expected numba or numpy (unset: numba where the fast extra is installed)"]
    assert not (tmp_path / "out" / "deepsea_tabular" / "failed").exists()
    assert not (tmp_path / "out" / "deepsea_tabular" / "shards").exists()


def test_numba_kernels_asked_for_without_numba_are_refused_before_any_run(tmp_path, monkeypatch):
    from rvfx.agents.neural import fused
    monkeypatch.setenv("RVFX_KERNELS", "numba")
    monkeypatch.setattr(fused, "available", lambda: False)
    result = invoke("run", *SPEC, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert result.output.splitlines()[-1].startswith("error: RVFX_KERNELS='numba': numba is not installed")
    assert not (tmp_path / "out" / "deepsea_tabular" / "shards").exists()

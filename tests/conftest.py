import rvfx  # noqa: F401, I001  (first: it pins BLAS threads and kernels before anything loads NumPy)
import copy
import os
import sys
import textwrap
from pathlib import Path

import pytest

from rvfx.experiment import blas_check

TINY_SPEC = """\
experiment: tiny
figures: [deepsea_tabular]
env:
  name: deep_sea
  size: 4
grid:
  env.treasure: [true, false]
agents:
  rlsvi:
    algorithm: grlsvi
    v: H**2/25
  psrl:
    algorithm: psrl
seeds: 2
episodes: 50
scales:
  ci: {}
  paper:
    episodes: 100
"""


@pytest.fixture
def tiny_spec(tmp_path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(textwrap.dedent(TINY_SPEC))
    return path


_BLAS_VERDICTS: dict = {}


@pytest.fixture(autouse=True)
def blas_probed_once_per_environment(monkeypatch):
    """Every `rvfx run` first probes NumPy's BLAS in a fresh interpreter (rvfx.experiment.blas_check),
    about 0.2 s, which the suite's hundred-odd in-process runs need not pay each: the probe really
    runs once per test process for each probe, interpreter and environment, and its verdict (a
    function of those alone) is reused. A test that changes the probe or the environment (a dying
    probe, OPENBLAS_CORETYPE) is probed afresh; the probe itself is tested in real processes."""
    real = blas_check.blas_problem

    def probed_once():
        env = tuple(sorted((k, v) for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"))  # names the test
        key = (blas_check.PROBE, blas_check.TIMEOUT, sys.executable, env)
        if key not in _BLAS_VERDICTS:
            _BLAS_VERDICTS[key] = real()
        return _BLAS_VERDICTS[key]
    monkeypatch.setattr(blas_check, "blas_problem", probed_once)


_REGISTRIES: dict = {}


@pytest.fixture
def claims_read_once(monkeypatch):
    """For tests that run `rvfx run --record` or `rvfx report` many times and are not about
    claims.yaml: each command reads and checks the registry (about 0.3 s); here it is read once per
    test process for each file content and set of registered figures, and each command gets its
    own copy of what the real load_registry returned. A registry that fails to load is not kept."""
    from rvfx.report import registry
    real = registry.load_registry

    def read_once(path):
        try:
            key = (str(Path(path).resolve()), Path(path).read_bytes(), tuple(registry.FIGURES))
        except OSError:
            return real(path)
        if key not in _REGISTRIES:
            _REGISTRIES[key] = real(path)
        return copy.deepcopy(_REGISTRIES[key])
    monkeypatch.setattr(registry, "load_registry", read_once)

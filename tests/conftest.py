import rvfx  # noqa: F401, I001  (first: it pins BLAS threads and kernels before anything loads NumPy)
import copy
import textwrap
from pathlib import Path

import pytest


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

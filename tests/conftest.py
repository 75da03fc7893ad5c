import rvfx  # noqa: F401, I001  (first: it pins BLAS threads and kernels before anything loads NumPy)
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

"""docs/notebooks/*.ipynb execute from the first cell to the last without an error, in a fresh kernel
(the docs extra: nbclient, ipykernel), and the own-agent notebook reaches the scorecard's verdict."""
from pathlib import Path

import pytest

nbclient = pytest.importorskip("nbclient", reason="the docs extra is not installed: pip install 'rvfx[docs]'")
import nbformat  # noqa: E402

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "docs" / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_a_notebook_runs_as_written(path, tmp_path):
    notebook = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()   # raises on a failing cell
    printed = "".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.outputs)
    if path.stem == "own_agent":
        assert "verdict: optimist: polynomial: deep exploration" in printed


def test_there_is_a_notebook():
    assert [p.stem for p in NOTEBOOKS] == ["own_agent"]

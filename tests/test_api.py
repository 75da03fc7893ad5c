"""docs/api.md's code blocks run as written, in order, in a fresh folder (the page is its own test)."""
import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def test_the_api_page_runs_as_written(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), scope)
    assert (tmp_path / "figures" / "deepsea_tabular.png").stat().st_size > 0
    assert len(scope["runs"]) == len(scope["exp"].runs)

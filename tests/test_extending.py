"""docs/extending.md works: its code blocks run in order in one namespace, in a fresh directory
(a block starting `# file: NAME` is written to NAME, importable), and the registries are left as
they were."""
import re
import sys
from pathlib import Path

import pandas as pd

from rvfx.agents import AGENTS
from rvfx.envs import ENVS
from rvfx.experiment.spec import load_spec
from rvfx.figures import FIGURES

DOC = Path(__file__).resolve().parent.parent / "docs" / "extending.md"


def blocks(text: str) -> list[tuple[str, str]]:
    return re.findall(r"^```(python|yaml)\n(.*?)^```", text, re.S | re.M)


def test_the_extending_page_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    saved = [(r, dict(r)) for r in (AGENTS, ENVS, FIGURES)]
    found = blocks(DOC.read_text(encoding="utf-8"))
    assert [lang for lang, _ in found].count("python") >= 4
    namespace: dict = {}
    try:
        for lang, code in found:
            first = code.split("\n", 1)[0]
            if first.startswith("# file:"):
                (tmp_path / first.split(":", 1)[1].strip()).write_text(code, encoding="utf-8")
            else:
                assert lang == "python", code
                exec(compile(code, str(DOC), "exec"), namespace)
        assert load_spec("chain.yaml").cpu_seconds > 0      # the chain's sizes, from its parameters
        runs = pd.read_csv(tmp_path / "results" / "chain" / "runs.csv")
        regret = runs.groupby("agent")["final_cum_regret"].mean()
        assert regret["rlsvi"] < regret["uniform"] and runs.loc[runs["agent"] == "rlsvi", "learning_time"].notna().all()
        assert (tmp_path / "figures" / "chain_regret.png").stat().st_size > 10_000
    finally:
        for registry, items in saved:
            registry.clear()
            registry.update(items)
        sys.modules.pop("chain_figure", None)

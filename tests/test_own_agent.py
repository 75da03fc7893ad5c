"""Bringing your own agent, through the command line as a new user would: the extending page's plugin
module in a fresh working directory (no PYTHONPATH) runs a spec in spawned workers; an unknown
algorithm and a misspelt shipped name each end in one line naming the nearest known ones; the
interop page's Python path puts an rvfx agent on a Gymnasium environment."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from cli_helpers import assert_png, invoke

DOCS = Path(__file__).resolve().parent.parent / "docs"


def doc_block(page: str, first_line: str) -> str:
    """The code block of docs/PAGE whose first line is `first_line`."""
    found = [code for code in re.findall(r"^```(?:python|yaml)\n(.*?)^```", (DOCS / page).read_text(encoding="utf-8"),
                                         re.S | re.M) if code.split("\n", 1)[0] == first_line]
    assert len(found) == 1, first_line
    return found[0]


def rvfx(folder, *args, start_method="spawn"):
    """`rvfx ARGS` in a fresh interpreter in `folder`, PYTHONPATH unset, workers started by `start_method`."""
    code = (f"import multiprocessing as mp; mp.set_start_method({start_method!r}); "
            f"from rvfx.cli import main; main({[str(a) for a in args]!r})")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    """A working directory holding the extending page's plugin module and spec, the spec run there
    with `--plugin optimist --jobs 2` (spawned workers import the module from the working directory)."""
    folder = tmp_path_factory.mktemp("own")
    for name in ("optimist.py", "deepsea_optimist.yaml"):
        (folder / name).write_text(doc_block("extending.md", f"# file: {name}"), encoding="utf-8")
    done = rvfx(folder, "--plugin", "optimist", "run", "deepsea_optimist.yaml", "--jobs", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


def test_a_plugin_in_the_working_directory_runs_in_spawned_workers(own):
    runs = pd.read_csv(own / "results" / "deepsea_optimist" / "runs.csv")
    mine = runs[runs["algorithm"] == "optimist"]
    assert len(mine) == 9 and sorted(mine["env.size"].unique()) == [4, 6, 8]
    assert mine["learning_time"].notna().all()            # count-based optimism learns deep sea at every N


def one_error_line(done) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def test_an_unknown_algorithm_names_the_nearest_registered_ones_and_plugin(own):
    line = one_error_line(rvfx(own, "validate", "deepsea_optimist.yaml"))     # no --plugin
    assert "deepsea_optimist.yaml:" in line and "agents.optimist.algorithm: unknown algorithm 'optimist'" in line
    assert "--plugin MODULE" in line
    (own / "typo.yaml").write_text((own / "deepsea_optimist.yaml").read_text().replace("grlsvi", "grlsvj"))
    line = one_error_line(rvfx(own, "--plugin", "optimist", "validate", "typo.yaml"))
    assert re.search(r"agents\.rlsvi\.algorithm: unknown algorithm .grlsvj. \(did you mean .grlsvi.\?\); "
                     r"registered ones, nearest first: grlsvi, ",
                     line), line


def test_a_misspelt_shipped_name_names_the_nearest_shipped_ones(tmp_path):
    line = one_error_line(rvfx(tmp_path, "run", "deepsea_tabluar"))
    assert line == ("error: deepsea_tabluar: no such file, nor a shipped experiment; nearest shipped: "
                    "deepsea_tabular, deepsea_linear, deepsea_tabular_scaling (`rvfx list experiments` lists them)")
    assert not any(tmp_path.iterdir())                    # nothing written
    help_text = rvfx(tmp_path, "run", "--help").stdout
    assert "Shipped experiments" in help_text and "deepsea_tabular_scaling" in help_text


def test_an_agent_without_a_cost_hook_is_said_so_by_validate(own):
    done = rvfx(own, "--plugin", "optimist", "validate", "deepsea_optimist.yaml")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stdout.splitlines() if "no cost declared" in line]
    assert len(said) == 1 and "by optimist:" in said[0]


def test_an_rvfx_agent_runs_on_a_gymnasium_environment_from_python(capsys):
    pytest.importorskip("gymnasium", reason="the gym extra (pip install 'rvfx[gym]')")
    code = doc_block("interop.md", "import numpy as np")
    namespace: dict = {}
    exec(compile(code, "docs/interop.md", "exec"), namespace)
    episodes = namespace["episodes"]
    assert list(episodes["episode"])[-1] == 20 and (episodes["return"] >= 1).all()    # CartPole pays 1 a step
    assert "return" in capsys.readouterr().out


def test_plot_draws_the_plugin_experiments_standard_panels(own, monkeypatch):
    import rvfx.figures.standard as module
    drawn = []
    real_save = module.save
    monkeypatch.setattr(module, "save", lambda fig, out, name: drawn.append(fig) or real_save(fig, out, name))
    monkeypatch.chdir(own)
    result = invoke("plot", "deepsea_optimist")
    assert result.exit_code == 0, result.output
    assert_png(own / "figures" / "deepsea_optimist_standard.png")
    assert [(ax.get_xlabel(), ax.get_ylabel()) for ax in drawn[0].axes] == [
        ("episode", "cumulative regret"), ("env.size", "learning time (episodes, eq. 7.1)")]
    assert (own / "figures" / "deepsea_optimist_summary.md").read_text().count("\n") == 2 + 6   # 2 agents x 3 N


def test_the_scorecard_scores_the_plugin_agent_beside_the_papers(own):
    done = rvfx(own, "--plugin", "optimist", "scorecard", "optimist")
    assert done.returncode == 0, done.stderr
    verdict = re.search(r"^verdict: optimist: (.*) \(slope (\S+) \[(\S+), (\S+)\], ci scale\)$", done.stdout, re.M)
    assert verdict and verdict[1] == "polynomial: deep exploration", done.stdout
    slope, lo, hi = map(float, verdict.groups()[1:])
    assert lo <= slope <= hi < 4           # count-based optimism grows far more slowly than UCRL2's N^7 or RLSVI's N^5
    assert "| RLSVI, tabular (Fig. 5) | 4.99 [4.96, 5.06] |" in done.stdout
    assert_png(own / "figures" / "scorecard_optimist.png")

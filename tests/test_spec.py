"""Bad specs: one message with file, line and key path; exit code 2; nothing written."""
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from rvfx.cli import main
from rvfx.experiment.spec import load_spec

BASE = """\
experiment: tiny
env:
  name: deep_sea
  size: 4
agents:
  rlsvi:
    algorithm: grlsvi
    v: 0.5
seeds: 1
episodes: 10
scales:
  ci: {}
  paper: {}
"""
ENV_AND_AGENT = "  name: deep_sea\n  size: 4\nagents:\n  rlsvi:\n    algorithm: grlsvi\n    v: 0.5"


def run_bad(tmp_path, text):
    spec = tmp_path / "bad.yaml"
    spec.write_text(text)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(spec), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert not out.exists()
    return result.output.strip()


@pytest.mark.parametrize("old, new, line, key, words", [
    ("  size: 4", "  sise: 4", 4, "env.sise", "did you mean 'size'"),
    ("    v: 0.5", "    v: 0.5\n    lamda: 1", 9, "agents.rlsvi.lamda", "did you mean 'lam'"),
    ("episodes: 10", "episode: 10", 10, "episode", "did you mean 'episodes'"),
    ("  size: 4", "  size: four", 4, "env.size", "expected an integer"),
    ("  size: 4", "  size: 1", 4, "env.size", "must be >= 2"),
    ("seeds: 1", "seeds: 0", 9, "seeds", "must be >= 1"),
    ("    v: 0.5", "    v: H**2/", 8, "agents.rlsvi.v", "not an arithmetic expression"),
    ("    v: 0.5", "    v: N**2", 8, "agents.rlsvi.v", "unknown name 'N'"),
    ("    algorithm: grlsvi", "    algorithm: grslvi", 7, "agents.rlsvi.algorithm", "did you mean 'grlsvi'"),
    ("  name: deep_sea", "  name: deep_sea\n  treasure: no", 4, "env.treasure", "expected true or false"),
    ("  size: 4", "  size: 4\n  size: 5", 5, "env.size", "duplicate key (first on line 4)"),
    ("  ci: {}", "  ci: {seeds: -1}", 12, "seeds", "must be >= 1"),
    ("  paper: {}", "", 11, "scales", "missing the 'paper' scale"),
    ("seeds: 1", "seeds: 1\nfirst_seed: -1", 10, "first_seed", "must be >= 0"),
    ("seeds: 1", "seeds: 1\nfirst_seed: 1.5", 10, "first_seed", "expected an integer"),
    # an agent on an environment that does not offer what it requires, whatever its parameters or by them
    ("    algorithm: grlsvi\n    v: 0.5", "    algorithm: grlsvi_optimism", 7, "agents.rlsvi.algorithm",
     "grlsvi_optimism runs on random_mdp, not deep_sea"),
    (ENV_AND_AGENT, "  name: random_mdp\nagents:\n  rlsvi:\n    algorithm: dqn", 6, "agents.rlsvi.algorithm",
     "dqn runs on deep_sea or cartpole_swingup, not random_mdp"),
    (ENV_AND_AGENT, "  name: cartpole_swingup\nagents:\n  rlsvi:\n    algorithm: ensemble_rlsvi\n"
     "    representation: linear_basis", 6, "agents.rlsvi.algorithm",
     "ensemble_rlsvi runs on deep_sea, not cartpole_swingup"),
])
def test_bad_spec_names_file_line_and_key(tmp_path, old, new, line, key, words):
    assert old in BASE
    message = run_bad(tmp_path, BASE.replace(old, new))
    assert message.count("\n") == 0
    assert re.search(rf"bad\.yaml:{line}: {re.escape(key)}: ", message), message
    assert words in message


def test_missing_file(tmp_path):
    result = CliRunner().invoke(main, ["run", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "nope.yaml" in result.output and "no such file" in result.output
    assert not (tmp_path / "o").exists()


def test_bad_grid_key_and_set(tmp_path):
    assert "grid.env.sizes" in run_bad(tmp_path, BASE + "grid:\n  env.sizes: [4, 5]\n")
    spec = tmp_path / "ok.yaml"
    spec.write_text(BASE)
    result = CliRunner().invoke(main, ["validate", str(spec), "--set", "env.size=zero"])
    assert result.exit_code == 2 and "--set" in result.output and "env.size" in result.output


def test_yaml_traps_are_closed(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(BASE.replace("v: 0.5", "v: 1e-3"))
    exp = load_spec(str(spec))
    assert exp.runs[0].agent_params.v == 1e-3          # a float, not the string '1e-3'


def test_grid_expansion_and_stable_ids(tmp_path):
    spec = tmp_path / "g.yaml"
    spec.write_text(BASE + "grid:\n  env.size: [4, 5, 6]\n  agent.v: [0.1, 1]\n")
    a, b = load_spec(str(spec)).runs, load_spec(str(spec)).runs
    assert len(a) == 6 and [r.run_id for r in a] == [r.run_id for r in b]
    assert len({r.run_id for r in a}) == 6
    assert a[0].swept == {"env.size": 4, "agent.v": 0.1}


def test_first_seed_shifts_the_seeds_and_keeps_ids_at_zero(tmp_path):
    """Seeds run first_seed .. first_seed + seeds - 1; first_seed: 0 names the same runs as none."""
    spec = tmp_path / "s.yaml"
    spec.write_text(BASE.replace("seeds: 1", "seeds: 3"))
    plain = load_spec(str(spec)).runs
    zero = load_spec(str(spec), sets=("first_seed=0",)).runs
    fresh = load_spec(str(spec), sets=("first_seed=100",)).runs
    assert [r.seed for r in plain] == [0, 1, 2] and [r.seed for r in fresh] == [100, 101, 102]
    assert [r.run_id for r in zero] == [r.run_id for r in plain]
    assert not {r.run_id for r in fresh} & {r.run_id for r in plain}


def test_set_reaches_grid_axes(tmp_path):
    spec = tmp_path / "g.yaml"
    spec.write_text(BASE + "grid:\n  env.size: [4, 5, 6]\n")
    runs = load_spec(str(spec), sets=("grid.env.size=[7, 8]", "agents.rlsvi.grid.agent.v=[1, 2]")).runs
    assert [(r.env_params.size, r.agent_params.v) for r in runs] == [(7, 1), (7, 2), (8, 1), (8, 2)]


def test_parameter_added_later_keeps_run_ids_at_its_default(tmp_path):
    """ensemble_rlsvi's sgd_period came after paper results existed: at its default it is left out of
    the run id (old results stay valid, and are exactly what the default runs); set, it names new runs."""
    spec = tmp_path / "e.yaml"
    spec.write_text(BASE.replace("algorithm: grlsvi\n    v: 0.5", "algorithm: ensemble_rlsvi\n    K: 2"))
    default = load_spec(str(spec)).runs[0]
    explicit = load_spec(str(spec), sets=("agents.rlsvi.sgd_period=1",)).runs[0]
    other = load_spec(str(spec), sets=("agents.rlsvi.sgd_period=4",)).runs[0]
    assert "sgd_period" not in default.identity()["agent_params"] and "K" in default.identity()["agent_params"]
    assert default.settings["agent"]["sgd_period"] == 1                  # recorded in full all the same
    assert explicit.run_id == default.run_id
    assert other.agent_params.sgd_period == 4 and other.run_id != default.run_id


def test_a_renamed_value_keeps_its_old_spelling_in_run_ids_and_shard_records(tmp_path):
    """ensemble_rlsvi's representation 'pixels' became 'observation' after results existed: runs
    execute with the new name, but their identity (id, agent seed) and recorded settings spell it
    as before, so the rename reruns nothing: the id is the hash of the old spelling."""
    import hashlib
    import json
    spec = tmp_path / "e.yaml"
    spec.write_text(BASE.replace("algorithm: grlsvi\n    v: 0.5", "algorithm: ensemble_rlsvi\n    K: 2"))
    run = load_spec(str(spec)).runs[0]
    assert run.agent_params.representation == "observation"
    identity = run.identity()
    assert identity["agent_params"]["representation"] == "pixels"
    assert run.settings["agent"]["representation"] == "pixels"
    assert run.run_id == hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    assert load_spec(str(spec), sets=("agents.rlsvi.representation=observation",)).runs[0].run_id == run.run_id
    bad = tmp_path / "bad.yaml"
    bad.write_text(BASE.replace("algorithm: grlsvi\n    v: 0.5",
                                "algorithm: ensemble_rlsvi\n    representation: pixels"))
    result = CliRunner().invoke(main, ["validate", str(bad)])
    assert result.exit_code == 2 and "agents.rlsvi.representation" in result.output
    assert "'pixels' was renamed 'observation'" in result.output
    # an older rvfx's spec.yaml (old spelling) reads in today's names
    from rvfx.agents.neural.ensemble import EnsembleParams
    from rvfx.experiment.spec import as_current
    assert as_current(EnsembleParams, {"representation": "pixels", "K": 2}) == {"representation": "observation", "K": 2}


def test_an_unknown_figure_id_is_named_with_its_line(tmp_path):
    msg = run_bad(tmp_path, "figures: [deepsea_tabulr]\n" + BASE)
    assert "bad.yaml:1: figures[0]: unknown figure (did you mean 'deepsea_tabular'?)" in msg


def test_set_reaches_the_scale_override_and_goes_over_it(tmp_path):
    """`--set scales.ci.KEY=V` changes the ci scale's override (deep-merged like one written in the
    spec); the other --set keys apply after the merge, over it."""
    spec = tmp_path / "s.yaml"
    spec.write_text(BASE.replace("  ci: {}", "  ci: {seeds: 2}"))
    assert len(load_spec(str(spec)).runs) == 2
    assert len(load_spec(str(spec), sets=("scales.ci.seeds=5",)).runs) == 5
    assert len(load_spec(str(spec), sets=("seeds=3", "scales.ci.seeds=5")).runs) == 3
    runs = load_spec(str(spec), sets=("scales.ci.env={size: 6}",)).runs
    assert runs[0].env == "deep_sea" and runs[0].env_params.size == 6
    result = CliRunner().invoke(main, ["validate", str(spec), "--scale", "paper", "--set", "scales.ci.seeds=5"])
    assert result.exit_code == 2
    assert result.output.strip() == ("error: --set:?: scales.ci.seeds=5: sets the 'ci' scale's override, "
                                     "but this is scale 'paper'")


def test_names_of_100_characters_run_and_101_are_refused(tmp_path):
    """An experiment name and an agent label become folder names: up to MAX_NAME (100) characters of
    [A-Za-z0-9_.-] they run and write their tables; one more character is refused at validation."""
    name, label = "e" * 100, "a.b-c_" + "d" * 94
    spec = tmp_path / "s.yaml"
    spec.write_text(BASE.replace("experiment: tiny", f"experiment: {name}").replace("  rlsvi:", f"  {label}:"))
    result = CliRunner().invoke(main, ["run", str(spec), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / name / "runs.csv").read_text().count(f",{label},") == 1
    for old, new, key in [(f"experiment: {name}", f"experiment: {name}e", "experiment"),
                          (f"  {label}:", f"  {label}d:", f"agents.{label}d")]:
        bad = tmp_path / "bad.yaml"
        bad.write_text(spec.read_text().replace(old, new))
        result = CliRunner().invoke(main, ["validate", str(bad)])
        assert result.exit_code == 2
        assert result.output.strip() == f"error: {bad}:{1 if key == 'experiment' else 6}: {key}: " \
            f"{'' if key == 'experiment' else 'agent label: '}a name of 101 characters, more than the 100 one may hold"


def test_libyaml_and_the_pure_python_parser_load_every_shipped_yaml_alike(monkeypatch):
    """yaml_lines composes with libyaml where PyYAML has it: every spec, the claims and every record's
    spec.yaml give the same values and key lines as with PyYAML's own parser."""
    import yaml

    from rvfx.experiment import yaml_lines

    if not yaml.__with_libyaml__:
        pytest.skip("PyYAML built without libyaml")
    root = Path(__file__).resolve().parents[1]
    paths = sorted(root.glob("configs/*.yaml")) + sorted(root.glob("figures/paper/*/spec.yaml"))
    paths.append(root / "claims.yaml")
    fast = [yaml_lines.load(str(p)) for p in paths]
    monkeypatch.setattr(yaml, "__with_libyaml__", False)
    assert [yaml_lines.load(str(p)) for p in paths] == fast
    assert len(paths) > 40

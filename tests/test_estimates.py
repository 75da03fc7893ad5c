"""The CPU estimate of specs whose environment an extra builds (bsuite's deep_sea, Gymnasium's
MountainCar): sized from their ids without the extra, they follow the same speed model as rvfx's
own environments, and `rvfx validate` prints them. The sizes are checked against the extras
themselves in tests/test_bsuite.py and tests/test_gym.py."""
import subprocess
import sys

import numpy as np
import pytest
import yaml
from cli_helpers import CONFIGS, invoke

from rvfx.envs.external import STEP_SECONDS, BsuiteParams, GymParams
from rvfx.experiment import memory
from rvfx.experiment.spec import load_spec

EXTRA_SPECS = ["bsuite_deep_sea", "bsuite_deep_sea_settings", "mountaincar"]


def estimate(path, *sets) -> float:
    return load_spec(str(path), "paper", sets, allow_long=True).cpu_seconds


@pytest.mark.parametrize("name", EXTRA_SPECS)
def test_validate_prints_a_positive_estimate_linear_in_episodes(name):
    """No agent of these specs resamples its history (the one cost the model makes superlinear),
    so twice the episodes is exactly twice the estimate."""
    path = CONFIGS / f"{name}.yaml"
    exp = load_spec(str(path), "paper", allow_long=True)
    assert exp.cpu_seconds > 0
    episodes = exp.runs[0].episodes
    assert estimate(path, f"episodes={2 * episodes}") == 2 * exp.cpu_seconds
    result = invoke("validate", path, "--scale", "paper")
    assert result.exit_code == 0, result.output
    assert f"{len(exp.runs)} runs at scale paper, about {exp.cpu_seconds / 3600:,.3g} CPU-hours" in result.output


@pytest.mark.parametrize("name", ["bsuite_deep_sea", "bsuite_deep_sea_settings"])
def test_bsuite_deep_sea_costs_the_same_sweep_on_rvfx_deep_sea_and_bsuites_steps(name, tmp_path):
    """deep_sea/<k> is rvfx's DeepSea of size 10 + 2k with a cost on every "right": the spec on its
    bsuite ids costs what it costs on those sizes of rvfx's own environment, and bsuite's own step
    (`STEP_SECONDS`) on each of its steps."""
    spec = yaml.safe_load((CONFIGS / f"{name}.yaml").read_text())
    ids = spec["grid"].pop("env.id")
    spec["grid"]["env.size"] = [10 + 2 * int(i.split("/")[1]) for i in ids]
    spec["env"] = {"name": "deep_sea", "move_cost": "every_right"}
    spec["scales"] = {"ci": {}, "paper": {}}
    twin = tmp_path / "twin.yaml"
    twin.write_text(yaml.safe_dump(spec))
    steps = sum(r.episodes * r.env_params.size for r in load_spec(str(twin), "paper", allow_long=True).runs)
    assert estimate(CONFIGS / f"{name}.yaml") == pytest.approx(estimate(twin) + STEP_SECONDS * steps, rel=1e-12)


def test_mountaincar_estimate_is_affine_in_the_episode_cap_and_the_default_cap_is_200():
    """Per episode the model charges steps x per-step + a fixed cost: the estimate at caps 100, 200
    and 400 lies on a line, and the id's registered cap (max_episode_steps: 0) is the spec's 200."""
    path = CONFIGS / "mountaincar.yaml"
    at = {cap: estimate(path, f"env.max_episode_steps={cap}") for cap in (100, 200, 400)}
    assert at[400] - at[200] == pytest.approx(2 * (at[200] - at[100]), rel=1e-12)
    assert at[100] < at[200] < at[400]
    assert estimate(path, "env.max_episode_steps=0") == at[200] == estimate(path)


@pytest.mark.parametrize("params", [
    BsuiteParams("deep_sea/21"), BsuiteParams("deep_sea/01"), BsuiteParams("deep_sea/x"), BsuiteParams("deep_sea"),
    BsuiteParams("deep_sea/0", '{"size": "10"}'), BsuiteParams("deep_sea/0", '{"size": true}'),
    BsuiteParams("deep_sea/0", '{"size": 0}'), BsuiteParams("deep_sea/0", f'{{"size": {2**63}}}'),
    GymParams("MountainCar-v0", '{"max_episode_steps": 2.5}'), GymParams("CartPole-v1")])
def test_ids_and_sizes_the_extra_would_refuse_or_that_need_it_get_no_estimate(params):
    """An id outside bsuite's sweep, a size that is no integer in [1, 2**63), or a Gymnasium id
    whose sizes rvfx does not know: no sizes, hence no estimate (the run names what is wrong)."""
    assert memory.sizes("grlsvi", None, params) is None
    assert memory.cpu_seconds("grlsvi", None, params, 10) is None


def test_kwargs_override_the_sweeps_size_and_cap_as_the_extras_do():
    """bsuite merges kwargs over the sweep's settings; gymnasium.make takes max_episode_steps from
    kwargs unless the spec's own max_episode_steps is set."""
    assert memory.sizes("grlsvi", None, BsuiteParams("deep_sea/20"))["S"] == 50
    assert memory.sizes("grlsvi", None, BsuiteParams("deep_sea/0", '{"size": 7}'))["S"] == 7
    assert memory.sizes("grlsvi", None, BsuiteParams("deep_sea", '{"size": 7}'))["H"] == 7
    cap = {"kwargs": '{"max_episode_steps": 50}'}
    assert memory.sizes("grlsvi", None, GymParams(**cap))["steps"] == 50
    assert memory.sizes("grlsvi", None, GymParams(**cap, max_episode_steps=30))["steps"] == 30
    assert memory.sizes("grlsvi", None, GymParams(time_in_observation=True))["inputs"] == 3


def test_the_estimate_needs_neither_extra():
    """Validating the three specs, in a fresh process, imports neither bsuite nor Gymnasium (nor dm_env)."""
    code = ("import sys\nfrom click.testing import CliRunner\nfrom rvfx.cli import main\n"
            f"for spec in {[str(CONFIGS / f'{n}.yaml') for n in EXTRA_SPECS]!r}:\n"
            "    assert CliRunner().invoke(main, ['validate', '--scale', 'paper', spec]).exit_code == 0\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'bsuite', 'gymnasium', 'dm_env'}))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_validate_of_several_specs_prints_each_and_their_total():
    """`rvfx validate --scale paper configs/*.yaml` ends with the sum of the specs' estimates."""
    names = ["deepsea_linear", "deepsea_linear_scaling", "mountaincar"]
    result = invoke("validate", "--scale", "paper", *(CONFIGS / f"{n}.yaml" for n in names))
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == len(names) + 1 and all(f"ok ({n}," in line for n, line in zip(names, lines))
    total = sum(estimate(CONFIGS / f"{n}.yaml") for n in names)
    assert lines[-1] == f"total: about {total / 3600:,.3g} CPU-hours for the 3 specs at scale paper"


def test_a_keyed_network_input_is_charged_for_the_distinct_inputs_of_its_minibatch():
    """`costs.expected_distinct(B, n)` is the mean number of distinct values among B uniform draws from n: checked
    against 4,000 simulated minibatches per case, within four standard errors."""
    from rvfx.agents.costs import expected_distinct
    rng = np.random.default_rng(0)
    for draws, n in ((128, 1), (128, 25), (128, 400), (128, 10_000), (3, 5)):
        counts = np.array([np.unique(rng.integers(0, n, draws)).size for _ in range(4000)])
        tolerance = 4 * max(counts.std(), 1e-12) / np.sqrt(counts.size)
        assert abs(counts.mean() - expected_distinct(draws, n)) <= tolerance + 1e-12, (draws, n)


def test_a_layered_minibatch_draws_its_distinct_inputs_from_the_states_reachable_in_each_layer():
    """`costs.minibatch_inputs` on a layered environment is the mean number of distinct (layer, state) among B draws
    whose layer is uniform over H and whose state is uniform over the min(S, h + 1) of layer h (deep sea's triangle):
    checked against 4,000 simulated minibatches per case, within four standard errors; without layers, B uniform
    draws from every input."""
    from rvfx.agents.costs import expected_distinct, minibatch_inputs
    rng = np.random.default_rng(0)
    for draws, H, S in ((128, 5, 5), (128, 20, 20), (128, 50, 50), (32, 6, 3), (3, 1, 1)):
        layer = rng.integers(0, H, (4000, draws))
        state = (rng.random((4000, draws)) * np.minimum(S, layer + 1)).astype(int)
        counts = np.array([np.unique(row).size for row in layer * S + state])
        tolerance = 4 * max(counts.std(), 1e-12) / np.sqrt(counts.size)
        z = {"H": H, "S": S, "keys": H * S}
        assert abs(counts.mean() - minibatch_inputs(draws, z)) <= tolerance + 1e-12, (draws, H, S)
    assert minibatch_inputs(128, {"keys": 400}) == expected_distinct(128, 400)

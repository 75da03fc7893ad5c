"""How the experiments under a results folder were run, as the resolved spec.yaml that `rvfx run`
saves beside each one's tables records it: the scale of the results (results_scale), and each
folder whose settings differ from what the shipped spec of its name resolves to at the recorded
scale (modified_runs: a `--set` override, or a spec changed since), so that a modified run is never
reported as the spec's."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from rvfx import shipped
from rvfx.experiment.params import SpecError
from rvfx.experiment.results import experiment_dir
from rvfx.experiment.spec import SCALES, resolved_spec
from rvfx.report.folder import ResultsFolder

NOT_RECORDED = "settings not recorded"


def experiment_folders(results: Path) -> list[str]:
    """The experiments collected under `results`: its folders that hold a runs.csv."""
    return [d.name for d in sorted(Path(results).glob("*")) if (experiment_dir(results, d.name) / "runs.csv").is_file()]


def _recorded(folder: ResultsFolder, experiment: str):
    """The experiment's resolved spec.yaml (read as `load_spec_value` reads it), None when absent."""
    if not (experiment_dir(folder.path, experiment) / "spec.yaml").is_file():
        return None
    return folder.spec_value(experiment)


def results_scale(results: Path | ResultsFolder) -> str:
    """The scale the experiments under `results` were run at, from each one's resolved spec.yaml
    (as `rvfx export --scale` reads it): "ci", "paper", "mixed (...)" naming each experiment's, or
    "no results"; an experiment that records none has the scale "not recorded"."""
    folder, scales = ResultsFolder.of(results), {}
    for name in experiment_folders(folder.path):
        spec = _recorded(folder, name)
        scale = spec.get("scale") if isinstance(spec, dict) else None
        scales[name] = "not recorded" if scale is None else str(scale)
    kinds = set(scales.values())
    if not kinds:
        return "no results"
    if len(kinds) == 1:
        return kinds.pop()
    return "mixed (" + "; ".join(f"{k}: {', '.join(e for e, v in scales.items() if v == k)}"
                                 for k in sorted(kinds)) + ")"


@dataclass(frozen=True)
class Modified:
    """An experiment folder whose runs are not its shipped spec's: each differing setting as
    (dotted key, recorded value, the spec's value), or why the settings cannot be compared."""
    experiment: str
    differences: tuple = ()
    problem: str = ""


ABSENT = object()
"""The value of a key that one side does not set."""


def differences(recorded, expected, key: str = "") -> list:
    """(dotted key, recorded, expected) of every setting where two resolved specs differ; mappings
    are compared key by key, anything else (a list of grid values) as a whole."""
    if isinstance(recorded, dict) and isinstance(expected, dict):
        keys = [*recorded, *(k for k in expected if k not in recorded)]
        return [d for k in keys for d in differences(recorded.get(k, ABSENT), expected.get(k, ABSENT),
                                                     f"{key}.{k}" if key else str(k))]
    return [] if recorded == expected else [(key, recorded, expected)]


def modified_runs(results: Path | ResultsFolder) -> list[Modified]:
    """Every experiment folder under `results` whose recorded settings differ from its shipped
    spec's at the scale it records, or whose settings cannot be compared (none recorded, no
    shipped spec of its name, no scale of the spec's recorded)."""
    folder, found = ResultsFolder.of(results), []
    for name in experiment_folders(folder.path):
        recorded, spec = _recorded(folder, name), shipped.shipped_spec(name)
        scale = recorded.get("scale", ABSENT) if isinstance(recorded, dict) else ABSENT
        if not isinstance(recorded, dict):
            found.append(Modified(name, problem=NOT_RECORDED))
        elif spec is None:
            found.append(Modified(name, problem="no shipped spec of that name to compare its settings with"))
        elif scale not in SCALES:
            found.append(Modified(name, problem=f"its recorded scale ({shown(scale)}) is none of {', '.join(SCALES)}"))
        else:
            try:
                diff = differences(recorded, resolved_spec(str(spec), scale))
            except SpecError as err:
                found.append(Modified(name, problem=f"its shipped spec cannot be resolved: {err.message}"))
                continue
            if diff:
                found.append(Modified(name, tuple(diff)))
    return found


def shown(value) -> str:
    """A setting's value in one short line: YAML flow style, "not set" for ABSENT."""
    if value is ABSENT:
        return "not set"
    text = yaml.safe_dump(value, default_flow_style=True, width=10**9, allow_unicode=True)
    text = text.removesuffix("...\n").strip()
    return text if len(text) <= 80 else text[:79] + "…"

"""YAML experiment spec -> validated ExperimentSpec -> list of RunSpec with stable ids.

A spec is plain data (see configs/): the environment and its parameters, the
agents and theirs, grid axes (`env.<param>` or `agent.<param>`, at the top or per
agent), seeds, episodes, and per-scale overrides under `scales.ci` / `scales.paper`
that are deep-merged over the rest (README, Spec format). Before anything runs, every run is
checked: its numbers finite and within bounds (expressions at the run's own H), its peak memory
within this machine's (rvfx.experiment.memory), the sweep's size, and its estimated CPU time.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import yaml

from rvfx.agents import AGENTS, AgentEntry, environments, known_before_built, needs
from rvfx.envs import ENVS
from rvfx.experiment import memory, yaml_lines
from rvfx.experiment.params import SpecError, build, check_expressions, did_you_mean, name_problem

SCALES = ("ci", "paper")
TOP_KEYS = {"experiment", "description", "figures", "env", "agents", "grid", "seeds", "first_seed",
            "episodes", "stop_at_learning", "log", "scales", "design"}
AGENT_KEYS = {"algorithm", "grid", "episodes", "seeds"}
MAX_RUNS = 100_000              # runs in one sweep (the paper's largest holds 1,393)
YEAR = 365 * 24 * 3600.0
LONG_SECONDS = YEAR             # CPU time beyond which `rvfx run` asks for --allow-long


class Recorded(NamedTuple):
    """A run's parameters as results record them: `identity`, those that name it (its id and agent
    seed), and `settings`, every one (a shard's record, so that resume reruns a shard made under other
    settings, e.g. a changed default); each {"agent": {...}, "env": {...}}."""
    identity: dict
    settings: dict


def recorded_values(params) -> tuple[dict, dict]:
    """(identity, settings) of one parameter dataclass: the one derivation of what names a run and what
    its shard records. Each value is spelt as it was when results were first made: a field's `renamed`
    maps a new name of a value to the one it replaced, so a rename changes no run id, agent seed or
    shard record. The identity leaves out a field marked `added_later` while it is at its default: a
    parameter added after results exist then leaves their run ids unchanged, and those runs are exactly
    what the new default runs."""
    values = dataclasses.asdict(params)
    settings = as_recorded(type(params), values)
    later = {f.name for f in dataclasses.fields(params)
             if f.metadata.get("added_later") and values[f.name] == f.default}
    return {k: v for k, v in settings.items() if k not in later}, settings


def record_params(agent_params, env_params) -> Recorded:
    """A run's Recorded, from its agent's and its environment's parameters (`recorded_values`)."""
    (agent_id, agent), (env_id, env) = recorded_values(agent_params), recorded_values(env_params)
    return Recorded({"agent": agent_id, "env": env_id}, {"agent": agent, "env": env})


@dataclass(frozen=True)
class RunSpec:
    """One run: an agent on an environment instance with one seed."""
    experiment: str
    agent: str                  # the spec's label for the agent
    algorithm: str
    agent_params: Any           # the agent's parameter dataclass
    env: str
    env_params: Any             # the environment's parameter dataclass
    seed: int
    episodes: int
    stop_at_learning: bool
    log: str
    swept: dict                 # dotted grid key -> value, for the identity columns
    plugins: tuple = ()         # `--plugin` modules a worker imports before the run (not in the id)
    recorded: Recorded = dataclasses.field(default=None, compare=False, repr=False)
    """`record_params(agent_params, env_params)`, derived when not given (a grid cell's runs share one)."""

    def __post_init__(self):
        if self.recorded is None:
            object.__setattr__(self, "recorded", record_params(self.agent_params, self.env_params))

    @property
    def settings(self) -> dict:
        """Every resolved parameter, those left out of the id included (`Recorded.settings`)."""
        return self.recorded.settings

    def identity(self) -> dict:
        """What names the run (its id and agent seed): everything but the grid labels and the settings
        left out of the id (`Recorded.identity`)."""
        return {"experiment": self.experiment, "agent": self.agent, "algorithm": self.algorithm,
                "agent_params": self.recorded.identity["agent"], "env": self.env,
                "env_params": self.recorded.identity["env"], "seed": self.seed, "episodes": self.episodes,
                "stop_at_learning": self.stop_at_learning, "log": self.log}

    @functools.cached_property
    def run_id(self) -> str:
        """Hash of the resolved run config: stable across machines, order and job count; computed
        once per RunSpec (a sweep names each run many times)."""
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()[:16]


def as_recorded(params_cls, values: dict) -> dict:
    """`values` with each renamed value in its old spelling (a field's `renamed`: new -> old)."""
    renamed = {f.name: f.metadata["renamed"] for f in dataclasses.fields(params_cls) if "renamed" in f.metadata}
    return {k: renamed[k].get(v, v) if k in renamed else v for k, v in values.items()}


def as_current(params_cls, values: dict) -> dict:
    """The inverse of `as_recorded`: old spellings (e.g. in a spec.yaml saved by an older rvfx)
    in today's names."""
    current = {f.name: {old: new for new, old in f.metadata["renamed"].items()}
               for f in dataclasses.fields(params_cls) if "renamed" in f.metadata}
    return {k: current[k].get(v, v) if k in current else v for k, v in values.items()}


@dataclass
class ExperimentSpec:
    name: str
    description: str
    figures: list
    scale: str
    runs: list
    resolved: dict              # the merged spec, for provenance
    cpu_seconds: float = 0.0    # coarse estimate of the sweep's CPU time (rvfx.experiment.memory.estimate)
    source: str = ""            # the spec as the user named it (a file, or a shipped experiment's name)


def _deep_merge(base: dict, override: dict, lines: dict, prefix_from: str, prefix_to: str = "") -> dict:
    out = copy.deepcopy(base)
    for key, value in override.items():
        to = f"{prefix_to}.{key}" if prefix_to else key
        frm = f"{prefix_from}.{key}"
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value, lines, frm, to)
        else:
            out[key] = copy.deepcopy(value)
            for path in [p for p in lines if p == frm or p.startswith(frm + ".") or p.startswith(frm + "[")]:
                lines[to + path[len(frm):]] = lines[path]
    return out


def _set_dotted(spec: dict, dotted: str, value: Any) -> None:
    """Set `dotted` in the spec; below a `grid` the rest of the path is one grid key
    (`grid.env.size=[5, 6]` sets the axis 'env.size')."""
    keys = dotted.split(".")
    if "grid" in keys[:-1]:
        i = keys.index("grid")
        keys = keys[:i + 1] + [".".join(keys[i + 1:])]
    node = spec
    for k in keys[:-1]:
        node = node.setdefault(k, {})
        if not isinstance(node, dict):
            raise SpecError(dotted, "--set path goes through a non-mapping value", file="--set")
    node[keys[-1]] = value


def _expect(cond: bool, path: str, msg: str) -> None:
    if not cond:
        raise SpecError(path, msg)


def _check_keys(d: dict, allowed, path: str) -> None:
    for key in d:
        if key not in allowed:
            where = f"{path}.{key}" if path else key
            raise SpecError(where, f"unknown key{did_you_mean(key, allowed)}; known: {', '.join(sorted(allowed))}")


def _int_at_least(d: dict, key: str, path: str, minimum: int = 1) -> int:
    v = d.get(key)
    _expect(isinstance(v, int) and not isinstance(v, bool), path, f"expected an integer, got {v!r}")
    _expect(v >= minimum, path, f"must be >= {minimum}, got {v}")
    _expect(v < 2**63, path, f"too large for a 64-bit integer, got {v}")
    return v


def _check_grid(grid, path: str, env_fields, agent_fields) -> dict:
    _expect(isinstance(grid, dict), path, "expected a mapping of 'env.<param>' / 'agent.<param>' to lists")
    for key, values in grid.items():
        kp = f"{path}.{key}"
        scope, _, name = key.partition(".")
        _expect(scope in ("env", "agent"), kp, "grid keys look like 'env.size' or 'agent.v'")
        fields = env_fields if scope == "env" else agent_fields
        _expect(name in fields, kp, f"unknown {scope} parameter{did_you_mean(name, fields)}")
        _expect(isinstance(values, list) and values, kp, "expected a non-empty list of values")
        _expect(len({json.dumps(v) for v in values}) == len(values), kp, "repeated value in grid")
    return grid


@dataclass(frozen=True)
class _Top:
    """A spec's settings above its agents, checked: what every agent's runs share."""
    name: str
    figures: list
    seeds: int
    first_seed: int             # seeds run first_seed .. first_seed + seeds - 1
    episodes: int
    stop: bool
    log: str
    env: str                    # the environment's registered name
    env_cls: type               # its parameter dataclass
    env_raw: dict               # its parameters as the spec sets them
    grid: object                # the top-level grid, checked per agent (its keys may name the agent's parameters)


@dataclass(frozen=True)
class _Agent:
    """One agent label's settings, checked: its registry entry, raw parameters, grid (the top one then
    its own), episodes and seeds."""
    label: str
    spec: dict                  # its mapping in the spec
    entry: AgentEntry
    raw: dict
    grid: dict
    own_grid: dict
    episodes: int
    seeds: int

    @property
    def path(self) -> str:
        return f"agents.{self.label}"

    def where(self, key: str, combo=()) -> str:
        """The spec path that set `key` ("env.size", "agent.v", "episodes") in grid cell `combo`."""
        if key in self.grid:
            path = f"{self.path}.grid.{key}" if key in self.own_grid else f"grid.{key}"
            return f"{path}[{combo[list(self.grid).index(key)][0]}]" if combo else path
        if key == "episodes":
            return f"{self.path}.episodes" if "episodes" in self.spec else "episodes"
        scope, _, pname = key.partition(".")
        return f"{self.path}.{pname}" if scope == "agent" else key


class _Cell(NamedTuple):
    """One grid cell of an agent: its (index, value) per grid key, its parameters built and checked, and
    the spec path of each swept agent parameter."""
    combo: tuple
    env_params: object
    agent_params: object
    agent_paths: dict


def _validate_top(spec, figure_ids) -> _Top:
    """The spec's keys and its settings above the agents, each checked (SpecError naming its key)."""
    _expect(isinstance(spec, dict), "", "a spec is a mapping")
    _check_keys(spec, TOP_KEYS, "")
    for key in ("experiment", "env", "agents", "seeds", "episodes"):
        _expect(key in spec, key, "missing required key")
    name = spec["experiment"]
    _expect(name_problem(name) is None, "experiment", str(name_problem(name)))
    _expect(name.isidentifier(), "experiment", f"expected a name like deepsea_tabular, got {name!r}")
    figures = spec.get("figures", [])
    _expect(isinstance(figures, list) and all(isinstance(f, str) for f in figures), "figures",
            "expected a list of figure ids")
    for i, fig in enumerate(figures if figure_ids is not None else []):
        _expect(fig in figure_ids, f"figures[{i}]", f"unknown figure{did_you_mean(fig, figure_ids)}")
    seeds = _int_at_least(spec, "seeds", "seeds")
    # seeds run first_seed .. first_seed + seeds - 1, so a confirmation can use seeds its screen never
    # drew (an environment's random stream depends on the environment and the seed, not the experiment)
    first_seed = _int_at_least(spec, "first_seed", "first_seed", 0) if "first_seed" in spec else 0
    episodes = _int_at_least(spec, "episodes", "episodes")
    stop = spec.get("stop_at_learning", False)
    _expect(isinstance(stop, bool), "stop_at_learning", f"expected true or false, got {stop!r}")
    log = spec.get("log", "log")
    _expect(log in ("log", "all"), "log", f"expected 'log' or 'all', got {log!r}")
    env = spec["env"]
    _expect(isinstance(env, dict) and "name" in env, "env", "expected a mapping with a 'name'")
    _expect(env["name"] in ENVS, "env.name", f"unknown environment{did_you_mean(str(env['name']), ENVS)}")
    env_cls = ENVS[env["name"]][1]
    env_raw = {k: v for k, v in env.items() if k != "name"}
    build(env_cls, env_raw, "env")
    agents = spec["agents"]
    _expect(isinstance(agents, dict) and agents, "agents", "expected a mapping of agent label to settings")
    return _Top(name, figures, seeds, first_seed, episodes, stop, log, env["name"], env_cls, env_raw,
                spec.get("grid", {}))


def _validate_agent(label: str, agent, top: _Top) -> _Agent:
    """One agent label's settings, checked: its algorithm, parameters, grids, episodes and seeds."""
    ap = f"agents.{label}"
    _expect(name_problem(label) is None, ap, f"agent label: {name_problem(label)}")
    _expect(isinstance(agent, dict) and "algorithm" in agent, ap, "expected a mapping with an 'algorithm'")
    algo = agent["algorithm"]
    _expect(algo in AGENTS, f"{ap}.algorithm", f"unknown algorithm{did_you_mean(str(algo), AGENTS)}")
    entry = AGENTS[algo]
    agent_fields = [f.name for f in dataclasses.fields(entry.params)]
    env_fields = [f.name for f in dataclasses.fields(top.env_cls)]
    raw = {k: v for k, v in agent.items() if k not in AGENT_KEYS}
    build(entry.params, raw, ap)
    own_grid = _check_grid(agent.get("grid", {}), f"{ap}.grid", env_fields, agent_fields)
    grid = dict(_check_grid(top.grid, "grid", env_fields, agent_fields))
    grid.update(own_grid)
    episodes = _int_at_least(agent, "episodes", f"{ap}.episodes") if "episodes" in agent else top.episodes
    seeds = _int_at_least(agent, "seeds", f"{ap}.seeds") if "seeds" in agent else top.seeds
    return _Agent(label, agent, entry, raw, grid, own_grid, episodes, seeds)


def _check_count(a: _Agent, count: int) -> None:
    """The sweep, `count` runs up to and including `a`'s, within MAX_RUNS; else SpecError at its largest factor."""
    if count <= MAX_RUNS:
        return
    factors = {"seeds": a.seeds, **{k: len(v) for k, v in a.grid.items()}}
    big = max(factors, key=factors.get)
    path = (f"{a.path}.seeds" if "seeds" in a.spec else "seeds") if big == "seeds" else a.where(big)
    sizes = " x ".join(f"{n:,} {k}" for k, n in factors.items())
    raise SpecError(path, f"the sweep would hold {count:,} runs or more ({sizes} for {a.label}), "
                          f"more than the {MAX_RUNS:,} one sweep may hold")


def _expand(a: _Agent, top: _Top):
    """Each grid cell of agent `a`, its parameters built (SpecError at the grid value that set a bad one)."""
    keys = list(a.grid)
    for combo in itertools.product(*(list(enumerate(a.grid[k])) for k in keys)):
        env_p, agent_p = dict(top.env_raw), dict(a.raw)
        for key, (_, value) in zip(keys, combo):
            scope, _, pname = key.partition(".")
            (env_p if scope == "env" else agent_p)[pname] = value
        paths = {scope: {k.partition(".")[2]: a.where(k, combo) for k in keys if k.startswith(scope + ".")}
                 for scope in ("env", "agent")}
        yield _Cell(combo, build(top.env_cls, env_p, "env", paths["env"]),
                    build(a.entry.params, agent_p, a.path, paths["agent"]), paths["agent"])


def _estimate(a: _Agent, top: _Top, cell: _Cell) -> float:
    """Check what one grid cell's runs need before anything runs: an environment the agent can act
    in, expressions within their bounds at the run's sizes (v: H**2/25 at H = env.size), and a peak
    memory this machine has. Returns a run's estimated CPU seconds (0 when unknown)."""
    maker = ENVS[top.env][0]
    if known_before_built(maker) and not a.entry.accepts(maker, cell.agent_params):
        algo = a.spec["algorithm"]
        on = " or ".join(environments(algo, cell.agent_params)) or \
            f"an environment that is {needs(algo, cell.agent_params)}"
        raise SpecError(f"{a.path}.algorithm", f"{algo} runs on {on}, not {top.env}")
    try:
        z = memory.entry_sizes(a.entry, cell.agent_params, cell.env_params)
    except ValueError as err:   # an id the environment's own registry refuses (bsuite's sweep)
        raise SpecError(a.where("env.id", cell.combo), str(err)) from None
    check_expressions(cell.agent_params, {k: z[k] for k in ("H", "M") if k in (z or {})}, a.path, cell.agent_paths)
    parts, seconds = memory.estimate(a.entry, cell.agent_params, cell.env_params, z, a.episodes, top.log)
    need, have = memory.peak_bytes(parts) + memory.PROCESS_BYTES, memory.machine_bytes()
    _expect(need <= have, a.where(parts[0].key, cell.combo),
            f"a run would need about {need / 2**30:,.3g} GB of memory, mostly {parts[0].what} "
            f"({parts[0].nbytes / 2**30:,.3g} GB), more than this machine's {have / 2**30:,.3g} GB")
    return seconds or 0.0


def _validate_and_expand(spec: dict, scale: str, figure_ids=None, allow_long: bool = False,
                         plugins: tuple = ()) -> ExperimentSpec:
    """Validate the merged spec, expand it into runs (grid cells x seeds) and estimate its CPU time."""
    top = _validate_top(spec, figure_ids)
    runs, count, seconds = [], 0, {}
    for label, agent in spec["agents"].items():
        a = _validate_agent(label, agent, top)
        count += a.seeds * math.prod(len(v) for v in a.grid.values())
        _check_count(a, count)
        seconds[label] = 0.0
        for cell in _expand(a, top):
            seconds[label] += a.seeds * _estimate(a, top, cell)
            rec = record_params(cell.agent_params, cell.env_params)     # one per cell: a sweep may hold 100,000 runs
            swept = {k: v for k, (_, v) in zip(a.grid, cell.combo)}
            runs += [RunSpec(top.name, label, a.spec["algorithm"], cell.agent_params, top.env, cell.env_params, seed,
                             a.episodes, top.stop, top.log, swept, plugins, rec)
                     for seed in range(top.first_seed, top.first_seed + a.seeds)]
    total = sum(seconds.values())
    if total > LONG_SECONDS and not allow_long:
        label = max(seconds, key=seconds.get)
        raise SpecError(f"agents.{label}.episodes" if "episodes" in spec["agents"][label] else "episodes",
                        f"the sweep would take up to {total / YEAR:,.3g} CPU-years by a coarse estimate "
                        f"(mostly {label}'s runs); pass --allow-long to run it anyway")
    _check_design(spec.get("design"), spec["agents"], [f.name for f in dataclasses.fields(top.env_cls)])
    return ExperimentSpec(top.name, spec.get("description", ""), top.figures, scale, runs, spec, total)


def _check_design(design, agents: dict, env_fields) -> None:
    """An optional `design`: the `factors` (agent.<param> / env.<param>) the agents' settings vary
    and the `controls` (agent labels) outside the factorial, for the figures that estimate effects."""
    if design is None:
        return
    _expect(isinstance(design, dict), "design", "expected a mapping with 'factors' and 'controls'")
    _check_keys(design, {"factors", "controls"}, "design")
    factors, controls = design.get("factors", []), design.get("controls", [])
    _expect(isinstance(factors, list) and factors, "design.factors", "expected a non-empty list")
    for i, key in enumerate(factors):
        scope, _, pname = str(key).partition(".")
        fields = env_fields if scope == "env" else \
            {f.name for a in agents.values() for f in dataclasses.fields(AGENTS[a["algorithm"]].params)}
        _expect(scope in ("env", "agent") and pname in fields, f"design.factors[{i}]",
                f"expected agent.<param> or env.<param>, got {key!r}")
    _expect(isinstance(controls, list), "design.controls", "expected a list of agent labels")
    for i, label in enumerate(controls):
        _expect(label in agents, f"design.controls[{i}]", f"unknown agent{did_you_mean(str(label), agents)}")


def load_spec(path: str, scale: str = "ci", sets: tuple[str, ...] = (), figure_ids=None,
              allow_long: bool = False, plugins: tuple = (), source: str | None = None) -> ExperimentSpec:
    """Read, merge the scale's overrides and `--set key=value`s, validate and expand; a sweep
    estimated beyond LONG_SECONDS of CPU needs `allow_long`.

    Every problem raises SpecError naming the file, the line and the key path. `figure_ids` are
    the ids `figures:` may name (the CLI passes the figure registry's); None leaves them unchecked.
    Each run names the `plugins` its worker imports first; `source` is how messages name the spec
    (`path` when None).
    """
    data, lines = yaml_lines.load(path)
    with _located(path, lines):
        exp = _validate_and_expand(_merged(data, lines, scale, sets), scale, figure_ids, allow_long, plugins)
    return dataclasses.replace(exp, source=str(path) if source is None else source)


def resolved_spec(path: str, scale: str) -> dict:
    """What `rvfx run PATH --scale SCALE` without `--set` saves as its spec.yaml (resolved_yaml):
    the spec merged at SCALE, read but neither validated nor expanded into runs. SpecError as
    load_spec's."""
    data, lines = yaml_lines.load(path)
    with _located(path, lines):
        return {"scale": scale, **_merged(data, lines, scale, ())}


def _merged(data, lines: dict, scale: str, sets) -> dict:
    """The spec `data` with its `scale`'s overrides deep-merged over the rest and the `--set`s
    applied (one of the scale's own first, then the rest)."""
    _expect(scale in SCALES, "", f"unknown scale {scale!r}; use one of {', '.join(SCALES)}")
    sets = [_parse_set(item, scale) for item in sets]
    _expect(isinstance(data, dict), "", "a spec is a mapping")
    scales = data.get("scales", {})
    _expect(isinstance(scales, dict), "scales", "expected a mapping with 'ci' and 'paper'")
    _check_keys(scales, SCALES, "scales")
    for s in SCALES:
        _expect(s in scales, "scales", f"missing the '{s}' scale")
    for key, value in sets:                 # a scale's own override first, then the merge
        if key.startswith("scales."):
            _apply_set(data, key, value, lines)
    for s in SCALES:
        _expect(isinstance(scales[s], dict), f"scales.{s}", "expected a mapping of overrides")
    merged = {k: v for k, v in data.items() if k != "scales"}
    merged = _deep_merge(merged, data["scales"][scale], lines, f"scales.{scale}")
    for key, value in sets:
        if not key.startswith("scales."):
            _apply_set(merged, key, value, lines)
    return merged


@contextlib.contextmanager
def _located(path: str, lines: dict):
    """A SpecError raised inside names the file `path` (or --set) and the line of its key."""
    try:
        yield
    except SpecError as err:
        if err.file is None:
            err.file = "--set" if _from_set(err.path, lines) else path
            err.line = None if err.file == "--set" else _line_of(err.path, lines)
        raise


def _parse_set(item: str, scale: str) -> tuple[str, Any]:
    """(dotted key, value) of one `--set KEY=VALUE`; a key with an empty part, or one that would set
    no key of this run (all the scales, another scale's override), is refused naming `item`."""
    key, eq, text = item.partition("=")
    parts = key.split(".")
    if not eq or not all(parts):
        raise SpecError(item, "--set takes dotted.key=value (each part of the key a name)", file="--set")
    if parts[0] == "scales":
        if len(parts) == 1:
            raise SpecError(item, f"--set cannot replace every scale; set a key of one, e.g. scales.{scale}.seeds=5",
                            file="--set")
        if parts[1] != scale:
            raise SpecError(item, f"sets the {parts[1]!r} scale's override, but this is scale {scale!r}",
                            file="--set")
    try:
        return key, yaml_lines.parse_value(text)
    except SpecError as err:
        raise SpecError(item, err.message, file="--set", line=err.line) from None


def _apply_set(spec: dict, key: str, value: Any, lines: dict) -> None:
    """Set `key` in `spec` and mark it and every key below it as set by --set (line None)."""
    _set_dotted(spec, key, value)
    for p in [p for p in lines if p.startswith(key + ".") or p.startswith(key + "[")]:
        lines[p] = None
    lines[key] = None


def _from_set(path: str, lines: dict) -> bool:
    """Whether the value at `path` (or the nearest key above it that has a line) came from --set."""
    return next((lines[p] is None for p in _parents(path) if p in lines), False)


def _line_of(path: str, lines: dict) -> int | None:
    return next((lines[p] for p in _parents(path) if lines.get(p)), None)


def _parents(path: str):
    """`path` and the paths above it: agents.a.grid.v[1], agents.a.grid.v, agents.a.grid, ..."""
    while path:
        yield path
        path = path[:path.rindex("[")] if path.endswith("]") and "[" in path else path.rpartition(".")[0]


def resolved_yaml(exp: ExperimentSpec) -> str:
    return yaml.safe_dump({"scale": exp.scale, **exp.resolved}, sort_keys=False)

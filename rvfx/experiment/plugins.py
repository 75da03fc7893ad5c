"""Agents, environments and figures from outside rvfx: installed packages' entry points
(groups `rvfx.agents`, `rvfx.envs`, `rvfx.figures`: name = "module:object", the object an
AgentEntry, an (environment class, parameter dataclass) pair, or a Figure) and `--plugin MODULE`
(a module that registers into AGENTS/ENVS/FIGURES when imported, as docs/extending.md shows).

Every process that validates or executes runs loads them: the driver before it reads a spec,
each worker before its run (RunSpec.plugins names the modules), so a plugin agent runs under
any start method (fork, spawn, forkserver) and on Dask. Only what the user installed or named
on the command line is imported: nothing read from a spec or a results folder. A `--plugin` module
is looked for on the import path and then in the working directory (a worker's is its driver's),
so a module beside the spec needs no PYTHONPATH."""
from __future__ import annotations

import importlib
import os
import sys
from importlib.metadata import entry_points

from rvfx.agents import AGENTS, AgentEntry
from rvfx.envs import ENVS

_loaded: set = set()


class PluginError(Exception):
    """A plugin module or entry point that cannot be imported, or registers something malformed."""


def load_plugins(modules: tuple[str, ...] = (), registries: dict | None = None) -> None:
    """Register every installed entry point of `registries` ({group: registry}; agents and
    environments by default) and import `modules`, once per process."""
    registries = registries or {"rvfx.agents": AGENTS, "rvfx.envs": ENVS}
    for group, registry in registries.items():
        if group in _loaded:
            continue
        for ep in entry_points(group=group):
            try:
                entry = ep.load()
            except Exception as err:
                raise PluginError(f"entry point {ep.name} = {ep.value} ({group}): "
                                  f"{type(err).__name__}: {err}") from err
            expected = {"rvfx.agents": "an AgentEntry", "rvfx.envs": "an (environment, parameters) pair"}
            if group == "rvfx.agents" and not isinstance(entry, AgentEntry) or \
                    group == "rvfx.envs" and not (isinstance(entry, tuple) and len(entry) == 2):
                raise PluginError(f"entry point {ep.name} = {ep.value} ({group}): expected {expected[group]}, "
                                  f"got {type(entry).__name__}")
            registry[ep.name] = entry
        _loaded.add(group)
    if modules and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())         # after the installed packages: a local file shadows none of them
    for module in modules:
        if module not in _loaded:
            try:
                importlib.import_module(module)
            except Exception as err:
                raise PluginError(f"--plugin {module}: {type(err).__name__}: {err}") from err
            _loaded.add(module)

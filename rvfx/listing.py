"""What `rvfx list` shows: one line per experiment, figure, agent and environment, drawn from the
registries and the shipped specs, and one entry in full."""
from __future__ import annotations

import yaml

from rvfx import shipped
from rvfx.agents import AGENTS
from rvfx.envs import ENVS
from rvfx.experiment.params import describe
from rvfx.figures import FIGURES


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def _clip(text: str, width: int = 100) -> str:
    """`text` cut at a word boundary to fit one line of `width` characters."""
    return text if len(text) <= width else text[:width - 1].rsplit(" ", 1)[0] + " …"


def _spec_description(name: str) -> str:
    """The shipped spec's `description:` (a YAML read, no validation: listing stays fast)."""
    try:
        data = yaml.safe_load((shipped.CONFIGS / f"{name}.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        return f"(unreadable: {type(err).__name__})"
    return " ".join(str(data.get("description", "")).split()) if isinstance(data, dict) else ""


def entries(what: str) -> dict[str, str]:
    """{name: one-line description} of one registry."""
    if what == "experiments":
        return {n: _clip(_spec_description(n)) for n in shipped.experiments()}
    if what == "figures":
        return {f.id: _clip(f.caption) for f in FIGURES.values()}
    if what == "agents":
        return {n: e.summary for n, e in AGENTS.items()}
    return {n: _first_line(cls.__doc__) for n, (cls, _) in ENVS.items()}


def entry_detail(what: str, name: str) -> str:
    """One entry in full: its description and, for agents and environments, every parameter."""
    if what == "experiments":
        return f"{name} ({shipped.CONFIGS / (name + '.yaml')}):\n  {_spec_description(name)}"
    if what == "figures":
        f = FIGURES[name]
        return f"{name} (from {', '.join(f.experiments)}):\n  {f.caption}"
    summary, params = ((AGENTS[name].summary, AGENTS[name].params) if what == "agents"
                       else (_first_line(ENVS[name][0].__doc__), ENVS[name][1]))
    lines = [f"{name}: {summary}", "parameters:"]
    lines += [f"  {p} ({t}, default {d!r}): {doc}" for p, t, d, doc in describe(params)] or ["  none"]
    return "\n".join(lines)

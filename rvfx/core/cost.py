"""The terms in which an agent declares what a run costs (rvfx.experiment.memory adds them up)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True)
class Part:
    """One term of a run's peak memory, and the parameter that sets its size (a grid-style key:
    "env.size", "agent.buffer_size", "episodes")."""
    what: str
    nbytes: float
    key: str
    temporary: bool = False     # freed before the run goes on: only the largest one counts


class RunCost(NamedTuple):
    """An agent's terms of one run's cost: its peak-memory `parts`, and CPU seconds added per step,
    per episode and per run (each a tuple of terms, added in order)."""
    parts: tuple = ()
    per_step: tuple = ()
    per_episode: tuple = ()
    per_run: tuple = ()

    def plus(self, other: RunCost) -> RunCost:
        """Both costs' terms, this one's first."""
        return RunCost(*(a + b for a, b in zip(self, other)))

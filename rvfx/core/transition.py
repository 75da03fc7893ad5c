"""The transition an environment returns and an agent learns from (Section 5.1)."""
from __future__ import annotations

from typing import Any, NamedTuple


class Transition(NamedTuple):
    """(s_t, a_t, r_t, s'_t, t) as in Section 5.1.

    The episode ends at a terminal state, new_state None (nothing to bootstrap from), or by
    truncation: `truncated` with the real next state in new_state, e.g. a time limit that the
    state does not show, after which a value estimate may still bootstrap from new_state.
    """
    old_state: Any
    action: Any
    reward: float
    new_state: Any
    timestep: int
    truncated: bool = False

    @property
    def ends_episode(self) -> bool:
        return self.new_state is None or self.truncated

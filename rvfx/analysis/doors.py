"""The Fig. 17 doors (configs/cartpole_doors.yaml): each arm's readouts, `rlsvi_rerun`'s per run (learnt,
first episode > 100, episodes > 100, final return) and per arm, and the spec's rule: an arm opens if at
least OPENS of its seeds learn. Agents are named CLASS_ARM as in the rerun (rlsvi_paper, dqn_paper, ...)."""
from __future__ import annotations

import pandas as pd

from rvfx.analysis.rlsvi_rerun import CLASSES, cell_summary

BASELINE = "paper"
ARMS = {   # arm -> the door it tries, in the spec's order (no "|": Markdown cells)
    "paper": "baseline: the paper's task, Fig. 17's 50-50 ensemble (DQN beside it)",
    "no_xdot": "(a) the reward box without the ẋ bound",
    "printed": "(b) the physics as printed (no pole mass in the θ̇² term)",
    "alg8": "(c) Algorithm 8 as written: SGD 1e-3, no target network, per-member buffers",
    "bsuite0": "(d) bsuite's level 0 at 1,000 episodes (boot_dqn 2020's settings)",
    "boot2019_bsuite0": "(e) boot_dqn 2019's settings on bsuite's level 0",
    "boot2019_paper": "(e) boot_dqn 2019's settings on the paper's task",
}
OPENS = 3          # of the spec's SEEDS seeds
SEEDS = 5


def arm_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """`cell_summary` per arm and agent class in the spec's order, with the arm's door and the rule's outcome
    (`outcome`: "opens" once at least OPENS of its runs learnt, "closed" once its runs still to come could not
    reach OPENS, "undecided" before either); a ValueError names an arm the spec does not have."""
    unknown = sorted(set(runs["setting"]) - set(ARMS))
    if unknown:
        raise ValueError(f"cartpole_doors: arm(s) {', '.join(unknown)} not among the spec's ({', '.join(ARMS)})")
    summary = cell_summary(runs)
    arm_order, class_order = {a: i for i, a in enumerate(ARMS)}, {c: i for i, c in enumerate(CLASSES)}
    summary = (summary.assign(_a=summary["setting"].map(arm_order), _c=summary["class"].map(class_order))
               .sort_values(["_a", "_c"], ignore_index=True).drop(columns=["_a", "_c"]))
    outcome = ["opens" if k >= OPENS else "closed" if k + SEEDS - n < OPENS else "undecided"
               for k, n in zip(summary["learnt"], summary["seeds"])]
    return summary.assign(door=summary["setting"].map(ARMS), outcome=outcome)

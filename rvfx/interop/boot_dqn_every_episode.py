"""bsuite's own boot_dqn run script, unchanged, logging every episode (run in the bsuite venv).

    .venv-bsuite/bin/python rvfx/interop/boot_dqn_every_episode.py --bsuite_id=cartpole_swingup/0 ...

runs `bsuite.baselines.jax.boot_dqn.run` as __main__ with its own flags, with one change: bsuite's
`Logging` wrapper writes its row after every episode (its own option `log_every=True`) instead of on
its logarithmic schedule, so that the first episode with return > 100 and the count of such episodes
are read exactly from its CSV log (`rvfx.analysis.bsuite.episode_log`). Logging draws no random
numbers and feeds nothing back to the agent: the run is the run run.py makes. Run by path: the bsuite
venv does not hold rvfx, and this file imports nothing from it.
"""
import runpy
import sys

RUN = "bsuite.baselines.jax.boot_dqn.run"


def log_every_episode() -> None:
    """Make every bsuite Logging wrapper made from now on log each episode."""
    from bsuite.utils import wrappers
    init = wrappers.Logging.__init__

    def every(self, env, logger, log_by_step=False, log_every=False):
        init(self, env, logger, log_by_step=log_by_step, log_every=True)

    wrappers.Logging.__init__ = every


if __name__ == "__main__":
    log_every_episode()
    sys.argv[0] = RUN
    runpy.run_module(RUN, run_name="__main__", alter_sys=True)

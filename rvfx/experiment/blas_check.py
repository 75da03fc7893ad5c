"""Before any run starts: NumPy's BLAS computes a product in a fresh process under this environment.

OpenBLAS runs the kernels OPENBLAS_CORETYPE names (rvfx pins Haswell). A core type this CPU
cannot execute (SkylakeX on a CPU without AVX-512) kills the process with SIGILL at its first
matrix product: every worker would die, and with --jobs 1 the command itself, leaving no record
of why. One tiny product in a subprocess finds it first, at the cost of one interpreter start
(~0.1 s), which `Probe` overlaps with the sweep's planning.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

PROBE = "import numpy as np; a = np.ones((64, 64)); assert (a @ a)[0, 0] == 64"
TIMEOUT = 120                   # seconds; a probe slower than this (a swamped machine) is no verdict


def blas_problem() -> str | None:
    """Why NumPy's BLAS cannot run here (the probe died of a signal), or None."""
    try:
        done = subprocess.run([sys.executable, "-c", PROBE], env=dict(os.environ), capture_output=True,
                              timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode >= 0:
        return None
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    setting = f"OPENBLAS_CORETYPE={coretype}" if coretype else "OPENBLAS_CORETYPE unset"
    return (f"NumPy's BLAS dies of {signal_name(done.returncode)} in a fresh process under {setting}, "
            f"so every run would: set OPENBLAS_CORETYPE to a core type this CPU runs (unset, rvfx pins "
            f"Haswell), then rerun")


class Probe:
    """blas_problem() run in a thread from the moment the Probe is made, so that the interpreter it
    starts overlaps other work; `problem()` waits for its verdict (an error of the thread is raised there)."""

    def __init__(self):
        self.verdict, self.error = None, None
        self.thread = threading.Thread(target=self._probe, name="rvfx BLAS probe", daemon=True)
        self.thread.start()

    def _probe(self) -> None:
        try:
            self.verdict = blas_problem()
        except BaseException as err:         # raised again where the verdict is asked for
            self.error = err

    def problem(self) -> str | None:
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.verdict


def signal_name(returncode: int) -> str:
    """The signal a process died of, from its negative return code (or exit code): -4 -> SIGILL."""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"

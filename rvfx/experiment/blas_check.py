"""Before any run starts: NumPy's BLAS computes a product in a child process.

OpenBLAS runs the kernels OPENBLAS_CORETYPE names (rvfx pins Haswell). A core type this CPU
cannot execute (SkylakeX on a CPU without AVX-512) kills the process with SIGILL at its first
matrix product: every worker would die, and with --jobs 1 the command itself, leaving no record
of why. One tiny product in a child process finds it first. The child is started the way the
runs' workers are (multiprocessing's default: forked on Linux, a few milliseconds, with the BLAS
this process loaded; a fresh interpreter under `spawn`, which imports rvfx and so pins as a worker does).
"""
from __future__ import annotations

import faulthandler
import multiprocessing
import os
import signal

TIMEOUT = 120                   # seconds; a probe slower than this (a swamped machine) is no verdict


def product() -> None:
    """The probe: one small matrix product (exit code 1 if it is wrong, killed by a signal if it cannot run)."""
    import numpy as np
    a = np.ones((64, 64))
    if (a @ a)[0, 0] != 64:
        raise SystemExit(1)


def probe_child() -> None:
    """The child's work: `product`, its death the verdict, not a crash for faulthandler to report."""
    faulthandler.disable()
    product()


def blas_problem() -> str | None:
    """Why NumPy's BLAS cannot run here (the probe died of a signal), or None."""
    child = multiprocessing.get_context().Process(target=probe_child, name="rvfx BLAS probe", daemon=True)
    try:
        child.start()
    except OSError:
        return None
    child.join(TIMEOUT)
    if child.exitcode is None:
        child.kill()
        return None
    if child.exitcode >= 0:
        return None
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    setting = f"OPENBLAS_CORETYPE={coretype}" if coretype else "OPENBLAS_CORETYPE unset"
    return (f"NumPy's BLAS dies of {signal_name(child.exitcode)} in a child process under {setting}, "
            f"so every run would: set OPENBLAS_CORETYPE to a core type this CPU runs (unset, rvfx pins "
            f"Haswell), then rerun")


def signal_name(returncode: int) -> str:
    """The signal a process died of, from its negative return code (or exit code): -4 -> SIGILL."""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"

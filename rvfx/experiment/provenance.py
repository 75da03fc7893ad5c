"""What made a result: the rvfx version and commit, the numerical libraries' versions, and the BLAS
kernels they ran (which change a network's numbers: rvfx/__init__.py pins them)."""
from __future__ import annotations

import functools
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from threadpoolctl import ThreadpoolController


@functools.lru_cache(maxsize=1)
def code_version() -> dict:
    """rvfx's version and, in a git checkout, its commit (with '+dirty' for uncommitted changes)."""
    root = Path(__file__).resolve().parents[2]
    try:
        def git(*args):
            return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                                  timeout=10, check=True).stdout.strip()
        commit = git("rev-parse", "HEAD") + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {"rvfx": metadata.version("rvfx"), "commit": commit}


@functools.lru_cache(maxsize=1)
def blas() -> ThreadpoolController:
    """NumPy's and SciPy's BLAS libraries, found once per process: finding them scans every loaded
    library (~1.5 ms, as much as a tiny run's own work). SciPy is imported here because rvfx imports
    it only where it is used: without this the libraries found would depend on what the process
    happened to run before."""
    import scipy.linalg  # noqa: F401  (loads SciPy's BLAS)
    return ThreadpoolController().select(user_api="blas")


@functools.lru_cache(maxsize=1)
def blas_info() -> tuple[dict, ...]:
    """threadpoolctl's description of each of `blas()`'s libraries (its version and kernels), read once."""
    return tuple(blas().info())


def blas_kernels() -> list[str]:
    """NumPy's and SciPy's BLAS, sorted, as "library version kernels", e.g. "openblas 0.3.31 Haswell"."""
    return sorted(f"{i['internal_api']} {i['version']} {i.get('architecture')}" for i in blas_info())


def library_versions() -> dict:
    """The versions of the libraries that compute and write results, as the imported modules give
    them (the ones this process runs; a lookup in the installed packages' metadata scans them all,
    ~10 ms each)."""
    import numpy
    import pandas
    import scipy
    return {"numpy": numpy.__version__, "scipy": scipy.__version__, "pandas": pandas.__version__}


def environment() -> dict:
    """code_version() plus the Python and library versions and the BLAS kernels that compute and
    write results."""
    return {**code_version(), "python": platform.python_version(), **library_versions(), "blas": blas_kernels()}

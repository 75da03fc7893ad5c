"""What made a result: the rvfx version and commit and the numerical libraries' versions."""
from __future__ import annotations

import functools
import platform
import subprocess
from importlib import metadata
from pathlib import Path


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


def environment() -> dict:
    """code_version() plus the Python and library versions that compute and write results."""
    libs = {name: metadata.version(name) for name in ("numpy", "scipy", "pandas")}
    return {**code_version(), "python": platform.python_version(), **libs}

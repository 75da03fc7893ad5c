"""Where numba keeps the compiled kernels between processes, and why they can be trusted there.

numba's cache holds pickles that it loads and machine code that it runs, so it goes only into a
folder no other user can write: NUMBA_CACHE_DIR when set, else $XDG_CACHE_HOME/rvfx/numba (default
~/.cache/rvfx/numba), made 0700, used only when it is a folder (not a link) of this user's, with no
access for others, under parents that only this user or root can write (a sticky /tmp aside). numba
itself drops an entry whose source file (size, time), numba version or CPU differ. Anywhere else the
kernels are compiled in each process and nothing is read.
"""
from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path


def folder() -> Path | None:
    """The checked cache folder (made if missing), or None with a warning saying why there is none."""
    if not hasattr(os, "geteuid"):
        return None                      # no owners to check (Windows): no cache
    named = os.environ.get("NUMBA_CACHE_DIR")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(named or os.path.join(base, "rvfx", "numba"))
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        own, parents = os.lstat(path), [os.stat(p) for p in path.resolve(strict=True).parents]
    except OSError as err:
        return _none(path, f"cannot be made or read ({err.strerror or err})")
    me = os.geteuid()
    if stat.S_ISLNK(own.st_mode) or not stat.S_ISDIR(own.st_mode) or own.st_uid != me:
        return _none(path, "is not a folder of this user's")
    if own.st_mode & 0o077:
        return _none(path, f"is open to others (mode {stat.S_IMODE(own.st_mode):o}, not 700)")
    if any(p.st_uid not in (0, me) or p.st_mode & 0o022 and not p.st_mode & stat.S_ISVTX for p in parents):
        return _none(path, "lies under a folder another user can write")
    return path


def _none(path: Path, why: str) -> None:
    warnings.warn(f"numba cache {path} {why}: the fast extra's kernels are compiled in each process",
                  RuntimeWarning, stacklevel=3)
    return None

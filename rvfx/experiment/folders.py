"""The folders rvfx writes in, entered without following a link, and their locks: rvfx creates,
replaces and deletes only inside the folders it was given (`--out`, `--record`, export's `--out`).

The folder given is taken as given (it may itself be a link the user chose); every folder rvfx
makes or enters below it (OUT/<experiment>/, its shards/, failed/ and checkpoints/, a record's
experiment folders and their .NAME.new/.NAME.old while they are replaced) must be a real folder:
a link or a file in its place is refused (ForeignFolder, one line naming it) before anything is
written or deleted there.
"""
from __future__ import annotations

import fcntl
import os
import stat
from contextlib import contextmanager
from pathlib import Path

SUBFOLDERS = ("shards", "failed", "checkpoints")


class ForeignFolder(Exception):
    """What rvfx must not write through or over where it keeps a folder of its own: a link, a file,
    or tables it did not make there (a record where results go)."""


class Busy(Exception):
    """Another process holds the lock, or what is there is not a lock."""


def is_folder(path: Path) -> bool:
    """Whether `path` is a real folder (False when absent); ForeignFolder when a link or a file is there."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        raise ForeignFolder(f"{path}: a symbolic link where rvfx keeps a folder of its own; nothing written "
                         f"or deleted: remove the link, or use another folder")
    if not stat.S_ISDIR(st.st_mode):
        raise ForeignFolder(f"{path}: not a folder; nothing written or deleted: move it aside, or use another folder")
    return True


def inside(root, *parts: str, create: bool = True) -> Path:
    """root/parts..., each part a real folder below `root` (the folder rvfx was given), made when
    missing and `create`, never entered through a link (ForeignFolder)."""
    path = Path(root)
    if create:
        path.mkdir(parents=True, exist_ok=True)
    for part in parts:
        path = path / part
        if not is_folder(path) and create:
            try:
                path.mkdir()
            except FileExistsError:            # made meanwhile: a folder, or refused
                is_folder(path)
    return path


def experiment_folder(out, experiment: str) -> Path:
    """OUT/<experiment>, it and its shards/, failed/ and checkpoints/ checked to be real folders
    where present (ForeignFolder); none is made."""
    folder = inside(out, experiment, create=False)
    for sub in SUBFOLDERS:
        is_folder(folder / sub)
    return folder


@contextmanager
def lock(path: Path, holder: str, busy: str):
    """Hold the flock at `path` (a regular file, made if missing, never opened through a link),
    writing `holder` into it; Busy naming who holds it, followed by `busy`, if another process
    does. The OS drops an flock when its holder dies, even by SIGKILL, so a stale lock never blocks."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
    except OSError as err:
        raise Busy(f"{path}: " + ("a symbolic link, not rvfx's lock: remove it" if os.path.islink(path)
                                  else f"cannot be opened as a lock ({err.strerror})")) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise Busy(f"{path}: " + ("not a regular file" if not stat.S_ISREG(st.st_mode) else
                                  "a hard link to another file") + ", not rvfx's lock: remove it")
    with os.fdopen(fd, "r+", encoding="utf-8") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(f"{path.parent} is in use by {f.read().strip() or 'another process'} (lock {path}); "
                       f"{busy}") from None
        f.truncate()
        f.write(holder + "\n")
        f.flush()
        yield


def os_error(err: OSError) -> str:
    """'path: reason' of an OS error (both paths of a failed rename), for a one-line message."""
    names = " -> ".join(str(f) for f in (err.filename, err.filename2) if f is not None)
    return f"{names}: {err.strerror}" if names and err.strerror else str(err)

"""Mid-run checkpoints: a long run cut off (a session's end, a killed machine) resumes at its last
checkpointed episode instead of at episode 1, and nothing read back runs code.

At the end of an episode, at most every CHECKPOINT_EVERY seconds, the state of the run's agent,
environment and `live` loop (their random generators' states included) is written as data
(rvfx.experiment.object_state: a JSON tree and .npy arrays in one uncompressed zip) to
OUT/<experiment>/checkpoints/<run_id>.<episode>.npz, renamed into place, and then described by
<run_id>.json, renamed into place last: the run's id and settings, the episode, the data file's
name, the seconds spent, the data's size and sha256, behind an HMAC-SHA256 line keyed by the
user's own key (KEY, made 0600 on first use). Both files are written 0600. To resume, the
runner builds a fresh agent and environment from the spec and the checkpoint restores its state
into them. Before a byte of either file is
interpreted, each must be a regular file (not a link) owned by this user and writable by no
one else, the description's HMAC must verify and the data's size and sha256 must match it;
then the state must fit the fresh objects (same classes, attributes, array shapes). Anything
else (planted, copied from another user or machine, damaged, half-replaced, other settings,
another format) is named in one line and ignored: the run starts at episode 1. A resumed run
writes the same bytes as an uninterrupted one (tests/test_checkpoint.py). A kill between the two
renames leaves the previous description naming the previous data, still complete: the run resumes
there. The files go once the shard is written or the run has failed. Like shards, checkpoints are identified by the
run's settings, not the code.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import json
import math
import os
import secrets
import stat
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

from rvfx.core.live import LiveState
from rvfx.experiment import folders, object_state
from rvfx.experiment.results import experiment_dir, names_in, write_atomic

CHECKPOINT_EVERY = 600.0     # seconds of a run between checkpoints: at most this much is redone
FORMAT = 3
PRIVATE = 0o600              # checkpoints are the user's own, whatever the umask
MAX_HEAD = 1 << 20           # bytes of a description (it holds the run's settings)
MAX_TREE = 1 << 28           # bytes of the JSON tree of a run's state
DAMAGED = "checksum differs (damaged or half-replaced)"
UNSIGNED = "not signed with this user's key (planted, copied, or made on another machine or by an older rvfx)"


def key_path() -> Path:
    """The user's checkpoint key: $XDG_CONFIG_HOME/rvfx/key (default ~/.config/rvfx/key)."""
    config = os.environ.get("XDG_CONFIG_HOME", "")
    return (Path(config) if os.path.isabs(config) else Path.home() / ".config") / "rvfx" / "key"


class Refused(Exception):
    """Why a checkpoint is not resumed, in a few words."""


def read_private(path: Path, limit: int, others: int = 0o022):
    """(open binary file, size) of `path`: a regular file, not followed if a link, owned by this
    user, with none of the mode bits `others`, of at most `limit` bytes; else Refused(why not)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise Refused("missing") from None
    except OSError as err:
        raise Refused("a symbolic link" if os.path.islink(path) else f"unreadable ({err.strerror})") from None
    st = os.fstat(fd)
    problem = ("not a regular file" if not stat.S_ISREG(st.st_mode)
               else "owned by another user" if st.st_uid != os.geteuid()
               else "writable by group or others" if st.st_mode & others & 0o022
               else "readable by group or others" if st.st_mode & others
               else f"larger than {limit} bytes" if st.st_size > limit else None)
    if problem is not None:
        os.close(fd)
        raise Refused(problem)
    return os.fdopen(fd, "rb"), st.st_size


def user_key(create: bool = False) -> bytes:
    """The user's 32-byte checkpoint key (made, 0600, when `create` and there is none); Refused
    when missing or when others could read or replace it."""
    path = key_path()
    if create and not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".key.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32))
            os.link(tmp, path)                            # never replaces a key made meanwhile
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    try:
        f, _ = read_private(path, 64, others=0o077)
    except Refused as err:
        raise Refused(f"key {path}: {err}") from None
    with f:
        key = f.read()
    if len(key) != 32:
        raise Refused(f"key {path}: not a key of 32 bytes")
    return key


def key_problem() -> str | None:
    """Why the user's checkpoint key cannot be used (a folder or a link in its place, others may
    read it), or None when it is usable or not yet made: checked before a sweep starts, so that the
    key, not each checkpoint, is named."""
    if not os.path.lexists(key_path()):
        return None
    try:
        user_key()
    except Refused as err:
        return f"{err}: fix or remove it (rvfx makes a new one; checkpoints signed by the old are not resumed)"
    return None


def mac(key: bytes, body: bytes) -> str:
    return hmac.new(key, body, hashlib.sha256).hexdigest()


class _Hashing:
    """A write-only binary file that hashes and counts what goes through it (zipfile then writes
    a stream, so a checkpoint is never held whole in memory)."""

    def __init__(self, f):
        self.f, self.sha, self.size = f, hashlib.sha256(), 0

    def write(self, data) -> int:
        self.sha.update(data)
        self.size += len(data)
        return self.f.write(data)

    def flush(self) -> None:
        self.f.flush()


class Checkpoint:
    """The checkpoint of one run: `load` what a cut-off attempt left, `save_if_due` as it goes."""

    def __init__(self, out, run):
        self.out, self.experiment = out, run.experiment
        self.folder = experiment_dir(out, run.experiment) / "checkpoints"
        self.meta = self.folder / f"{run.run_id}.json"
        self.run_id, self.run_settings = run.run_id, run.settings
        self.start, self.earlier = time.perf_counter(), 0.0
        self.due = self.start + CHECKPOINT_EVERY
        self.failed = False

    @functools.cached_property
    def settings(self) -> dict:
        """The run's settings as a description holds them (through JSON: tuples become lists), made
        only once a checkpoint is read or written, which most runs never do."""
        return json.loads(json.dumps(self.run_settings))

    def data_name(self, episode: int) -> str:
        """The data file of the checkpoint after `episode`: each checkpoint's data has a name of its
        own, so the description (renamed last) always names complete data, whenever a kill comes."""
        return f"{self.run_id}.{int(episode)}.npz"

    def data_files(self) -> list[Path]:
        """The run's data files present (an older one whose description was not yet replaced, a
        newer one whose description never came), oldest first."""
        if not os.path.isdir(self.folder):      # most runs never checkpoint: no pattern to compile
            return []
        found = self.folder.glob(f"{self.run_id}.*.npz")
        return sorted((p for p in found if p.name.split(".")[1].isdigit()), key=lambda p: int(p.name.split(".")[1]))

    @property
    def path(self) -> Path:
        """The newest data file present (`data_name` of episode 0 when there is none)."""
        return (self.data_files() or [self.folder / self.data_name(0)])[-1]

    def elapsed(self) -> float:
        """Seconds the run has taken, over every attempt that reached a checkpoint."""
        return self.earlier + time.perf_counter() - self.start

    def exists(self) -> bool:
        return self.meta.exists() or bool(self.data_files())

    def head(self) -> dict:
        """The verified description; Refused (why not) unless its HMAC verifies under the user's
        key and it describes this run with its settings."""
        f, _ = _read(self.meta, MAX_HEAD)
        with f:
            signature, _, body = f.read().partition(b"\n")
        try:
            key = user_key()
        except Refused as err:
            raise Refused(f"{self.meta}: cannot be verified ({err})") from None
        if not hmac.compare_digest(signature, mac(key, body).encode()):
            raise Refused(f"{self.meta}: {UNSIGNED}")
        head = json.loads(body)                           # signed by this user: rvfx wrote it
        if head.get("format") != FORMAT:
            raise Refused(f"{self.meta}: not an rvfx checkpoint of format {FORMAT}")
        if head.get("run_id") != self.run_id or head.get("settings") != self.settings:
            raise Refused(f"{self.meta}: made for another run or other settings")
        if head.get("data") != self.data_name(head.get("episode", -1)):
            raise Refused(f"{self.meta}: names no data file of this run")
        return head

    def data(self, head: dict):
        """The data file, open at its start, once its size and sha256 are the description's."""
        path = self.folder / head["data"]
        f, size = _read(path, int(head["size"]))
        if size != head["size"] or _sha256(f) != head["sha256"]:
            f.close()
            raise Refused(f"{path}: {DAMAGED}")
        f.seek(0)
        return f

    def load(self, agent, env) -> LiveState | None:
        """Restore the checkpoint into the fresh `agent` and `env` (built as for a new run) and
        return the `live` state to go on from; None (agent and env untouched) to start at episode 1."""
        if not self.exists():
            return None
        try:
            head = self.head()
            state = LiveState()
            with self.data(head) as f:
                _restore(f, {"agent": agent, "env": env, "state": state})
        except Refused as err:
            problem = str(err)
        except object_state.Mismatch as err:
            problem = f"{self.folder / head['data']}: does not fit a fresh run: {err}"
        except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, RecursionError) as err:
            problem = f"{self.meta}: unreadable ({type(err).__name__}: {err})"
        else:
            self.earlier = float(head["seconds"])
            return state
        print(f"run {self.run_id}: ignoring checkpoint {problem}; starting at episode 1",
              file=sys.stderr, flush=True)
        return None

    def save_if_due(self, agent, env, state) -> None:
        """Checkpoint after this episode if CHECKPOINT_EVERY seconds have passed since the last.

        A checkpoint that cannot be written (state that is not data, a full disk) is reported
        once and the run goes on without: its result does not depend on them."""
        now = time.perf_counter()
        if self.failed or now < self.due:
            return
        self.due = now + CHECKPOINT_EVERY
        try:
            key = user_key(create=True)
            tree, arrays = object_state.encode({"agent": agent, "env": env, "state": state})
            hashing, data = [], folders.inside(self.out, self.experiment, "checkpoints") / self.data_name(state.episode)
            write_atomic(data, lambda f: hashing.append(_write_data(f, tree, arrays)), mode=PRIVATE)
            body = json.dumps({"format": FORMAT, "run_id": self.run_id, "settings": self.settings,
                               "episode": state.episode, "seconds": round(self.elapsed(), 3), "data": data.name,
                               "size": hashing[0].size, "sha256": hashing[0].sha.hexdigest()},
                              sort_keys=True).encode()
            write_atomic(self.meta, lambda f: f.write(mac(key, body).encode() + b"\n" + body), mode=PRIVATE)
            for older in self.data_files():
                if older != data:
                    older.unlink(missing_ok=True)
        except Exception as err:
            self.failed = True
            print(f"run {self.run_id}: no checkpoints for this run: {type(err).__name__}: {err}",
                  file=sys.stderr, flush=True)

    def remove(self) -> None:
        """Remove the run's checkpoint files, and the temp files of a writer killed midway; never
        through a link in place of the checkpoints folder (nothing is deleted then)."""
        try:
            if not folders.is_folder(self.folder):
                return
        except folders.ForeignFolder as err:
            print(f"run {self.run_id}: checkpoints not removed: {err}", file=sys.stderr, flush=True)
            return
        stale = [*self.data_files(), self.meta, self.folder / f"{self.run_id}.npz", self.folder / f"{self.run_id}.pkl",
                 *self.folder.glob(f".{self.run_id}.*.tmp")]
        for path in stale:
            path.unlink(missing_ok=True)


def _read(path: Path, limit: int):
    try:
        return read_private(path, limit)
    except Refused as err:
        raise Refused(f"{path}: {err}") from None


def _sha256(f) -> str:
    h = hashlib.sha256()
    for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
    return h.hexdigest()


def _write_data(f, tree, arrays) -> _Hashing:
    """The state's zip: state.json (the tree) and a<i>.npy (array i), uncompressed."""
    hashing = _Hashing(f)
    with zipfile.ZipFile(hashing, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("state.json", json.dumps(tree, separators=(",", ":")))
        for i, array in enumerate(arrays):
            with zf.open(f"a{i}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)
    return hashing


def _restore(f, root: dict) -> None:
    """Read the state's zip into the fresh objects of `root` (Mismatch where they differ)."""
    with zipfile.ZipFile(f) as zf:
        members = {info.filename: info for info in zf.infolist()}
        arrays = len(members) - 1
        if set(members) != {"state.json", *(f"a{i}.npy" for i in range(arrays))} or any(
                info.compress_type != zipfile.ZIP_STORED for info in members.values()):
            raise object_state.Mismatch("not a state zip of this rvfx")
        if members["state.json"].file_size > MAX_TREE:
            raise object_state.Mismatch(f"state.json larger than {MAX_TREE} bytes")
        tree = json.loads(zf.read("state.json"))
        top = tree.get("@dict") if type(tree) is dict and len(tree) == 1 else None
        if (type(top) is not list or [pair[0] if type(pair) is list and len(pair) == 2 else None
                                      for pair in top] != list(root)
                or any(type(pair[1]) is not dict or not {"@object", "@alias"} & set(pair[1]) for pair in top)):
            raise object_state.Mismatch("root: not the state of a run's agent, environment and live loop")

        def read_array(i: int, like, path: str) -> np.ndarray:
            if not 0 <= i < arrays:
                raise object_state.Mismatch(f"{path}: no array {i}")
            with zf.open(f"a{i}.npy") as member:
                version = np.lib.format.read_magic(member)
                read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                               else np.lib.format.read_array_header_2_0)
                shape, fortran, dtype = read_header(member)
                if not object_state.numeric(dtype):
                    raise object_state.Mismatch(f"{path}: an array of {dtype}")
                if like is not None and (like.shape, like.dtype) != (shape, dtype):
                    raise object_state.Mismatch(f"{path}: a {dtype} array of shape {shape} in the checkpoint, "
                                                f"{like.dtype} of shape {like.shape} in a fresh run")
                nbytes = math.prod(shape) * dtype.itemsize
                if member.tell() + nbytes != members[f"a{i}.npy"].file_size:
                    raise object_state.Mismatch(f"{path}: array {i} is not of the size its header says")
                data = bytearray(member.read(nbytes))
            return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C")

        restore = object_state.Restore(read_array)
        restore.value(tree, root, "root")
        if len(restore.arrays) != arrays:
            raise object_state.Mismatch(f"root: {arrays - len(restore.arrays)} arrays of the file unused")
        restore.apply()


def resumable(out, runs) -> dict[str, int]:
    """{run id: episode} of the runs whose checkpoint verifies (for `rvfx run`'s first line)."""
    found, listed = {}, {}
    for run in runs:
        if run.experiment not in listed:    # most sweeps have no checkpoints: one look, not one per run
            listed[run.experiment] = names_in(experiment_dir(out, run.experiment) / "checkpoints")
        if listed[run.experiment] is not None and f"{run.run_id}.json" not in listed[run.experiment]:
            continue
        ckpt = Checkpoint(out, run)
        try:
            head = ckpt.head()
            ckpt.data(head).close()
            found[run.run_id] = int(head["episode"])
        except (Refused, OSError, ValueError, KeyError, TypeError):
            pass
    return found

"""Mid-run checkpoints: a long run cut off (a session's end, a killed machine) resumes at its last
checkpointed episode instead of at episode 1.

At the end of an episode, at most every CHECKPOINT_EVERY seconds, the run's agent, environment
and `live` loop state (the random generators inside them included) are pickled, as a stream, to
OUT/<experiment>/checkpoints/<run_id>.pkl, renamed into place, and then described by
<run_id>.json: the run's id and settings, the episode, the seconds spent, the pickle's sha256.
A resumed run writes the same bytes as an uninterrupted one (tests/test_checkpoint.py). A
checkpoint that does not verify (damaged, half-replaced, other settings, another format) is
named and ignored: the run starts at episode 1. Both files go once the shard is written or the
run has failed. Like shards, checkpoints are identified by the run's settings, not the code.
Unpickling runs code: a checkpoint is for resuming one's own runs, never a file to share.
"""
from __future__ import annotations

import hashlib
import json
import pickle
import sys
import time
from pathlib import Path

from rvfx.experiment.results import experiment_dir, sha256, write_atomic, write_atomic_text

CHECKPOINT_EVERY = 600.0     # seconds of a run between checkpoints: at most this much is redone
FORMAT = 1
DAMAGED = "checksum differs (damaged or half-replaced)"


class _Hashing:
    """A binary file that hashes what goes through it (so a pickle is never held whole in memory)."""

    def __init__(self, f, sha):
        self.f, self.sha = f, sha

    def write(self, data) -> int:
        self.sha.update(data)
        return self.f.write(data)

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.sha.update(data)
        return data

    def readline(self) -> bytes:
        data = self.f.readline()
        self.sha.update(data)
        return data


class Checkpoint:
    """The checkpoint of one run: `load` what a cut-off attempt left, `save_if_due` as it goes."""

    def __init__(self, out, run):
        folder = experiment_dir(out, run.experiment) / "checkpoints"
        self.path, self.meta = folder / f"{run.run_id}.pkl", folder / f"{run.run_id}.json"
        self.run_id, self.settings = run.run_id, json.loads(json.dumps(run.settings))
        self.start, self.earlier = time.perf_counter(), 0.0
        self.due = self.start + CHECKPOINT_EVERY
        self.failed = False

    def elapsed(self) -> float:
        """Seconds the run has taken, over every attempt that reached a checkpoint."""
        return self.earlier + time.perf_counter() - self.start

    def exists(self) -> bool:
        return self.path.exists() or self.meta.exists()

    def head(self, hash_pickle: bool = True) -> tuple[dict | None, str | None]:
        """(the description, None) when the checkpoint verifies, else (None, why not).

        Without `hash_pickle` the pickle's sha256 is left for the caller to check as it reads."""
        try:
            head = json.loads(self.meta.read_text(encoding="utf-8"))
            if head.get("format") != FORMAT:
                return None, f"not an rvfx checkpoint of format {FORMAT}"
            if head.get("run_id") != self.run_id or head.get("settings") != self.settings:
                return None, "made for another run or other settings"
            if hash_pickle and sha256(self.path) != head.get("sha256"):
                return None, DAMAGED
        except FileNotFoundError as err:
            return None, f"{Path(err.filename).name} missing"
        except (OSError, UnicodeDecodeError, ValueError) as err:
            return None, f"unreadable ({type(err).__name__})"
        if not self.path.exists():
            return None, f"{self.path.name} missing"
        return head, None

    def load(self):
        """(agent, environment, live state) to resume, or None to start at episode 1."""
        if not self.exists():
            return None
        head, problem = self.head(hash_pickle=False)     # hashed once, below, as it is read
        if head is not None:
            try:
                with open(self.path, "rb") as f:
                    hashing = _Hashing(f, hashlib.sha256())
                    try:
                        agent, env, state = pickle.load(hashing)
                    except Exception as err:     # damaged (told apart below), a class the code no longer has, ...
                        problem = f"does not load ({type(err).__name__}: {err})"
                    while hashing.read(1 << 20):     # the rest, so that the whole file is verified
                        pass
                if hashing.sha.hexdigest() != head["sha256"]:
                    problem = DAMAGED
            except OSError as err:
                problem = f"unreadable ({type(err).__name__})"
        if problem is not None:
            print(f"run {self.run_id}: ignoring checkpoint {self.path}: {problem}; starting at episode 1",
                  file=sys.stderr, flush=True)
            return None
        self.earlier = float(head["seconds"])
        return agent, env, state

    def save_if_due(self, agent, env, state) -> None:
        """Checkpoint after this episode if CHECKPOINT_EVERY seconds have passed since the last.

        A checkpoint that cannot be written (an object that does not pickle, a full disk) is
        reported once and the run goes on without: its result does not depend on them."""
        now = time.perf_counter()
        if self.failed or now < self.due:
            return
        self.due = now + CHECKPOINT_EVERY
        try:
            sha = self._write_pickle((agent, env, state))
            write_atomic_text(self.meta, json.dumps(
                {"format": FORMAT, "run_id": self.run_id, "settings": self.settings, "episode": state.episode,
                 "seconds": round(self.elapsed(), 3), "sha256": sha}, sort_keys=True) + "\n")
        except Exception as err:
            self.failed = True
            print(f"run {self.run_id}: no checkpoints for this run: {type(err).__name__}: {err}",
                  file=sys.stderr, flush=True)

    def _write_pickle(self, obj) -> str:
        """Stream `obj`'s pickle into place; return its sha256."""
        sha = hashlib.sha256()
        write_atomic(self.path, lambda f: pickle.dump(obj, _Hashing(f, sha), protocol=pickle.HIGHEST_PROTOCOL))
        return sha.hexdigest()

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        self.meta.unlink(missing_ok=True)


def resumable(out, runs) -> dict[str, int]:
    """{run id: episode} of the runs whose checkpoint verifies (for `rvfx run`'s first line)."""
    found = {}
    for run in runs:
        ckpt = Checkpoint(out, run)
        head = ckpt.head()[0] if ckpt.exists() else None
        if head is not None:
            found[run.run_id] = int(head["episode"])
    return found

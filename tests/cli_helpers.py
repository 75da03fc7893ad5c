"""Shared by the CLI and figure tests: invoking `rvfx`, the configs folder, checking a PNG."""
import json
from pathlib import Path

from click.testing import CliRunner

from rvfx.cli import main

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def invoke(*args):
    """`rvfx ARGS...` in-process (arguments may be paths or numbers); exceptions propagate."""
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def assert_png(path: Path):
    """A PNG file of real content (more than 10 kB)."""
    path = Path(path)
    assert path.suffix == ".png" and path.stat().st_size > 10_000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def edit_shard(path: Path, edit) -> None:
    """Rewrite the shard file at `path` (OUT/<experiment>/shards/<run_id>.json) after `edit(shard)`
    changes its JSON object: a damaged or planted shard."""
    shard = json.loads(path.read_text())
    edit(shard)
    path.write_text(json.dumps(shard))


def as_format_1(path: Path) -> Path:
    """The shard file at `path` rewritten in the older layout rvfx still reads: a folder named by
    the run id holding each table as a CSV file and manifest.json (the rest of the object)."""
    shard = json.loads(path.read_text())
    folder = path.with_suffix("")
    folder.mkdir()
    for name, text in shard.pop("tables").items():
        (folder / name).write_text(text)
    (folder / "manifest.json").write_text(json.dumps({**shard, "format": 1}))
    path.unlink()
    return folder

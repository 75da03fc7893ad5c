"""Shared by the CLI and figure tests: invoking `rvfx`, the configs folder, checking a PNG."""
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

"""The experiment specs and the claims registry that ship inside the package, so that
`rvfx run deepsea_tabular` and `rvfx report` work from any folder on an installed wheel.

rvfx/configs and rvfx/claims.yaml are links to the repository's configs/ and claims.yaml: a
clone edits the files at the top, a wheel carries copies of them."""
from __future__ import annotations

from pathlib import Path

CONFIGS = Path(__file__).resolve().parent / "configs"
CLAIMS = Path(__file__).resolve().parent / "claims.yaml"


def experiments() -> list[str]:
    """The names of the shipped experiment specs."""
    return sorted(p.stem for p in CONFIGS.glob("*.yaml"))


def spec_path(spec: str) -> Path:
    """SPEC as given when it is a file or looks like a path, else the shipped spec of that name."""
    given = Path(spec)
    if given.exists() or given.suffix or len(given.parts) > 1:
        return given
    return shipped_spec(spec) or given


def shipped_spec(experiment: str) -> Path | None:
    """The shipped spec of the experiment named EXPERIMENT, or None when none ships."""
    path = CONFIGS / f"{experiment}.yaml"
    return path if path.is_file() else None

"""The experiment specs and the claims registry that ship inside the package, so that
`rvfx run deepsea_tabular` and `rvfx report` work from any folder on an installed wheel.

rvfx/configs and rvfx/claims.yaml are links to the repository's configs/ and claims.yaml: a
clone edits the files at the top, a wheel carries copies of them."""
from __future__ import annotations

from pathlib import Path

from rvfx.experiment.params import SpecError

CONFIGS = Path(__file__).resolve().parent / "configs"
CLAIMS = Path(__file__).resolve().parent / "claims.yaml"


def experiments() -> list[str]:
    """The names of the shipped experiment specs."""
    return sorted(p.stem for p in CONFIGS.glob("*.yaml"))


class UnknownSpec(SpecError):
    """A bare name that is neither a file nor a shipped experiment."""

    def __str__(self) -> str:
        return self.message


def nearest_experiments(name: str, n: int = 3) -> list[str]:
    """Up to `n` shipped experiment names nearest to `name` (difflib's similarity), nearest first."""
    import difflib
    ratio = {e: difflib.SequenceMatcher(None, name, e).ratio() for e in experiments()}
    return sorted(ratio, key=lambda e: -ratio[e])[:n]


def spec_path(spec: str) -> Path:
    """SPEC as given when it is a file or looks like a path, else the shipped spec of that name;
    UnknownSpec, naming the nearest shipped ones, for a bare name that is neither."""
    given = Path(spec)
    if given.exists() or given.suffix or len(given.parts) > 1:
        return given
    found = shipped_spec(spec)
    if found is None:
        raise UnknownSpec("", f"{spec}: no such file, nor a shipped experiment; nearest shipped: "
                              f"{', '.join(nearest_experiments(spec))} (`rvfx list experiments` lists them)")
    return found


def shipped_spec(experiment: str) -> Path | None:
    """The shipped spec of the experiment named EXPERIMENT, or None when none ships."""
    path = CONFIGS / f"{experiment}.yaml"
    return path if path.is_file() else None

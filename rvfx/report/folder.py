"""One results folder as a command reads it (ResultsFolder): each table, verified against the folder's
tables.json as load_table verifies it, each experiment's resolved spec.yaml and what its runs lack,
read from disk at their first use and kept, so that the claims, their versions and contrasts, which
read the same tables many times, read each file once."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from rvfx.experiment.results import load_or_derive, load_spec_value, load_table, missing_runs


class ResultsFolder:
    """The tables, specs and missing runs of the folder `path`, each read once and kept. The tables
    are shared with every caller, who derives new frames from them and never edits one. A read that
    fails (a missing file) is not kept: it fails again at the next use, as it would from disk."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._tables: dict[tuple[str, str], pd.DataFrame] = {}
        self._specs: dict = {}
        self._missing: dict[str, str | None] = {}

    @classmethod
    def of(cls, results: str | Path | ResultsFolder) -> ResultsFolder:
        """`results` itself when it is a ResultsFolder, else a new one of that path: a caller that reads
        one folder's files once more (an export, a test) may pass its path."""
        return results if isinstance(results, cls) else cls(results)

    def table(self, experiment: str, name: str, derive=None) -> pd.DataFrame:
        """The experiment's table `name` as written (load_table: its sha256 checked against tables.json);
        with `derive`, derive(self, experiment) when it is not written (load_or_derive's choice)."""
        key = (experiment, name)
        if key not in self._tables:
            self._tables[key] = (load_table(self.path, experiment, name) if derive is None else
                                 load_or_derive(self.path, experiment, name, lambda _, exp: derive(self, exp)))
        return self._tables[key]

    def spec_value(self, experiment: str, keys: tuple = ()):
        """A value of the experiment's resolved spec.yaml (as load_spec_value reads it), the whole spec
        for no keys; the file is parsed at the first call only."""
        if experiment not in self._specs:
            self._specs[experiment] = load_spec_value(self.path, experiment, ())
        node = self._specs[experiment]
        for k in keys:
            node = node.get(k) if isinstance(node, dict) else None
        return node

    def missing_runs(self, experiment: str) -> str | None:
        """What the experiment's tables lack (rvfx.experiment.results.missing_runs), or None."""
        if experiment not in self._missing:
            self._missing[experiment] = missing_runs(self.path, experiment)
        return self._missing[experiment]

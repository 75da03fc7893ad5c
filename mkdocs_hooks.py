"""MkDocs hooks. The docs link files of the repository outside docs/ (the paper-scale figures and
tables in figures/paper/, CHANGELOG.md) by relative paths that also work on GitHub. The site gets
copies of those files at the same paths under its root, and each such link is rewritten to its copy,
so that `mkdocs build --strict` checks every link, the repository's too."""
from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent
OUTSIDE = ("figures/paper/", "CHANGELOG.md")
LINK = re.compile(r"(\]\()([^)\s#]+)")


def _outside_files() -> list[Path]:
    figures = [p for p in sorted((ROOT / "figures" / "paper").rglob("*")) if p.suffix in (".png", ".md", ".csv")]
    return [ROOT / "CHANGELOG.md", *figures]


def on_files(files, config):
    for path in _outside_files():
        files.append(File.generated(config, path.relative_to(ROOT).as_posix(), abs_src_path=str(path)))
    return files


def on_page_markdown(markdown, page, config, files):
    """A link that leaves docs/ for one of the OUTSIDE files points at its copy in the site."""
    here = posixpath.dirname(page.file.src_uri)

    def rewrite(m: re.Match) -> str:
        target = m.group(2)
        if "://" in target:
            return m.group(0)
        in_repo = posixpath.normpath(posixpath.join("docs", here, target))
        if not in_repo.startswith(OUTSIDE):
            return m.group(0)
        return m.group(1) + posixpath.relpath(in_repo, here or ".")

    return LINK.sub(rewrite, markdown)

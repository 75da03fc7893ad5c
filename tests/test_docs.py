"""The user docs (README.md and docs/**/*.md) say what rvfx is and does, not how its results came
about: no dates, no commit hashes, no issue numbers (that history lives in CHANGELOG.md); and the
generated reference pages are what the generator writes today."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
# a commit-like hash: 7 to 40 hex digits, at least one a-f letter and one digit ("deadbeef" is a word)
HASH = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
ISSUE = re.compile(r"(?<![&\w/])#\d+\b")


def user_docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def history(text: str) -> list[tuple[int, str]]:
    """(line, what) of every date, commit-like hash and issue reference in `text`."""
    return [(i, m.group(0)) for i, line in enumerate(text.splitlines(), 1)
            for pattern in (DATE, HASH, ISSUE) for m in pattern.finditer(line)]


def test_the_check_finds_dates_hashes_and_issue_numbers_and_spares_numbers_and_words():
    old = ("Rerun with the per-episode copy (100 of 100 runs, 2026-11-29 01:01-04:44) against the\n"
           "live-weights sweep (commit 620ebca); see #14 and README of commit e44ee08.\n"
           "the run 117e895223720856 was named `inf`")
    assert sorted(w for _, w in history(old)) == sorted(["2026-11-29", "620ebca", "#14", "e44ee08", "117e895223720856"])
    plain = ("v = 1e-3, seeds 100-119, N = 10, 1,000 episodes, a deadbeef word, step 2d, "
             "[link](page.md#fig-4), &#8722;1, 2^(7-3), 0.0138 [0.0134, 0.0142]")
    assert history(plain) == []


@pytest.mark.parametrize("path", user_docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_user_docs_hold_no_run_history(path):
    found = history(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(ROOT)}: run history belongs in CHANGELOG.md: " + ", ".join(
        f"line {i}: {w}" for i, w in found)


def test_the_reference_pages_are_what_the_generator_writes(tmp_path):
    """docs/reference/ cannot drift from the registries: `rvfx docs --check` compares every page."""
    from cli_helpers import invoke

    from rvfx.reference import reference_pages
    pages = reference_pages(ROOT / "configs")
    for name, text in pages.items():
        assert (ROOT / "docs" / "reference" / name).read_text(encoding="utf-8") == text, \
            f"docs/reference/{name} is stale: run rvfx docs"
    assert invoke("docs", "--check").exit_code == 0
    stale = invoke("docs", "--out", tmp_path, "--check")
    assert stale.exit_code == 1 and "agents.md: differs from the code" in stale.output
    assert invoke("docs", "--out", tmp_path).exit_code == 0
    assert invoke("docs", "--out", tmp_path, "--check").exit_code == 0
    agents = (tmp_path / "agents.md").read_text()
    assert "## `grlsvi`" in agents and "| `v` | expr | `'H**2/25'` | > 0.0 |" in agents


def test_the_readme_is_short_and_opens_with_the_results_and_the_two_commands():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300
    head = "\n".join(lines[:60])
    assert "<!-- glance:begin -->" in head and "<!-- glance:end -->" in head
    assert re.search(r"```sh\nmake reproduce +#.*\nmake test +#.*\n```", head)
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make reproduce$", ci, re.M) and re.search(r"^make test$", ci, re.M)
    assert "pip install 'rvfx" not in "\n".join(lines)        # no claim of a registry release


def test_the_docs_site_builds_strictly_and_every_results_page_shows_its_figures_and_verdicts(tmp_path):
    """mkdocs build --strict (a broken link fails it); each results page of the site holds images that
    exist in the site as PNG files, and the verdict tables of its claims."""
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        if os.environ.get("CI") == "true":
            pytest.fail("mkdocs not installed: .ci/run installs the docs extra")
        pytest.skip("mkdocs not installed (pip install -e '.[docs]'); CI runs this test")
    site = tmp_path / "site"
    done = subprocess.run([str(mkdocs), "build", "--strict", "--quiet", "--site-dir", str(site)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for page in sorted((ROOT / "docs" / "results").glob("*.md")):
        html = (site / "results" / page.stem / "index.html").read_text(encoding="utf-8")
        images = re.findall(r'<img [^>]*src="([^"]+)"', html)
        assert images, f"{page.name}: no figure"
        for src in images:
            path = (site / "results" / page.stem / src).resolve()
            assert path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{page.name}: {src}"
        if "report:begin" in page.read_text(encoding="utf-8"):
            assert "<table>" in html and re.search(r"<strong>(holds|differs|inconclusive)</strong>", html)

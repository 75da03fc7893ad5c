"""report.html opened in a real browser (Debian's chromium, headless): every figure loads and every
table is there. The page's inline script records both on <body>; --dump-dom returns the DOM after it ran."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import CONFIGS, invoke


def chromium() -> str:
    """The chromium binary; a skip without one, except in CI (CI=true), where it must be installed."""
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium not installed: .ci/run installs Debian's chromium package")
        pytest.skip("no chromium binary (apt-get install chromium); CI runs this test")
    return path


def dump_dom(html: Path) -> str:
    result = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
                             "--dump-dom", html.resolve().as_uri()], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def body_attribute(dom: str, name: str) -> int:
    match = re.search(rf'<body[^>]*\b{name}="(\d+)"', dom)
    assert match, f"{name} not set on <body>: the page's script did not run"
    return int(match.group(1))


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """A report of a tiny Fig. 4 run with Figs. 2, 4 and 18 drawn (the other claims' results missing)."""
    root = tmp_path_factory.mktemp("browser")
    results, figs = root / "results", root / "figs"
    assert invoke("run", CONFIGS / "deepsea_tabular.yaml", "--out", results, "--set", "seeds=2",
                  "--set", "episodes=200", "--set", "env.size=5").exit_code == 0
    assert invoke("run", CONFIGS / "rlsvi_uncertainty.yaml", "--out", results).exit_code == 0
    for fig in ("deepsea_tabular", "rlsvi_uncertainty", "beta_vs_normal"):
        assert invoke("plot", fig, "--results", results, "--out", figs).exit_code == 0
    assert invoke("report", "--results", results, "--out", figs).exit_code == 0
    return figs / "report.html"


def test_every_figure_loads_and_every_table_is_shown(report):
    text = report.read_text()
    expected_images = body_attribute(text, "data-images-expected")
    expected_tables = body_attribute(text, "data-tables-expected")
    assert expected_images == text.count("<img ") == 3
    assert expected_tables == text.count("<table>") > 3
    dom = dump_dom(report)
    assert body_attribute(dom, "data-images-loaded") == expected_images
    assert body_attribute(dom, "data-tables-found") == expected_tables
    widths = [int(w) for w in re.findall(r'<img [^>]*data-natural-width="(\d+)"', dom)]
    assert len(widths) == expected_images and min(widths) > 0


def test_a_broken_image_is_seen_by_the_browser(report, tmp_path):
    """The check can fail: a figure whose PNG bytes are damaged has natural width 0."""
    text = report.read_text()
    start = text.index("data:image/png;base64,") + len("data:image/png;base64,")
    broken = tmp_path / "broken.html"
    broken.write_text(text[:start] + "AAAA" + text[start + 4:])
    dom = dump_dom(broken)
    assert body_attribute(dom, "data-images-loaded") == body_attribute(text, "data-images-expected") - 1
    assert "0" in re.findall(r'<img [^>]*data-natural-width="(\d+)"', dom)


def test_a_docs_results_page_shows_its_figures_and_verdict_tables(tmp_path):
    """The docs site's tabular results page in a real browser: every figure loads (the site's
    assets/loaded.js records it on <body>) and its verdict tables are there."""
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        if os.environ.get("CI") == "true":
            pytest.fail("mkdocs not installed: .ci/run installs the docs extra")
        pytest.skip("mkdocs not installed (pip install -e '.[docs]'); CI runs this test")
    root, site = CONFIGS.parent, tmp_path / "site"
    built = subprocess.run([str(mkdocs), "build", "--quiet", "--site-dir", str(site)], cwd=root,
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    page = root / "docs" / "results" / "tabular.md"
    dom = dump_dom(site / "results" / "tabular" / "index.html")
    expected = page.read_text().count("![")
    assert body_attribute(dom, "data-images-expected") == expected >= 2
    assert body_attribute(dom, "data-images-loaded") == expected
    assert body_attribute(dom, "data-tables-found") >= page.read_text().count("<!-- report:begin")

"""The files: report.md and report.html written, or checked against a recomputation; the report
blocks, table blocks (a committed table file shown in full) and results-at-a-glance block of the
README and the docs' results pages filled or checked, and the numbers of the result tables they
copy outside them found."""
from __future__ import annotations

import os
import re
from pathlib import Path

from rvfx.experiment.results import write_atomic_text
from rvfx.figures import FIGURES
from rvfx.report.claims import role
from rvfx.report.registry import RegistryError
from rvfx.report.render import (
    README_GROUPS,
    VERDICTS,
    block_markdown,
    layout,
    md_cell,
    no_html,
    render_html,
    render_markdown,
    said,
    summary_line,
)
from rvfx.report.statistics import num

MARKER = re.compile(r"<!-- report:begin (\S+) -->\n(.*?)<!-- report:end -->", re.S)
TABLE = re.compile(r"<!-- table:begin (\S+) -->\n(.*?)<!-- table:end -->", re.S)
GLANCE = re.compile(r"<!-- glance:begin -->\n(.*?)<!-- glance:end -->", re.S)


def readme_blocks(text: str) -> list:
    """(claim id, content) of every <!-- report:begin ID --> ... <!-- report:end --> block."""
    return [(m.group(1), m.group(2)) for m in MARKER.finditer(text)]


def _blocks(registry: dict, outcomes: list) -> dict:
    """What each claim's README block holds."""
    return {o.claim["id"]: block_markdown(o, registry["rules"], README_GROUPS) + "\n" for o in outcomes}


def fill_readme(text: str, registry: dict, outcomes: list) -> str:
    """`text` with every marked block replaced by its claim's block_markdown."""
    blocks = _blocks(registry, outcomes)
    unknown = [cid for cid, _ in readme_blocks(text) if cid not in blocks]
    if unknown:
        raise RegistryError(f"README blocks name no claim: {', '.join(unknown)}")
    return MARKER.sub(lambda m: f"<!-- report:begin {m.group(1)} -->\n{blocks[m.group(1)]}<!-- report:end -->", text)


PAPER_ORDER = {"Table": 0, "Theorem": 1, "Fig.": 2}


def _paper_key(label: str) -> tuple:
    """Table 1, Theorem 1, then the figures in their numbers' order."""
    kind, _, rest = label.partition(" ")
    number = re.match(r"\d+", rest)
    return PAPER_ORDER.get(kind, 3), int(number.group(0)) if number else 0


def figure_sections(pages: dict, registry: dict) -> dict:
    """Per figure: (page, heading) of the first report block of one of its claims in `pages`
    ({path: text}, in order), the heading being the nearest one above the block; an other reading's
    block, shown with its main claim (which may be another figure's), labels none."""
    figure = {c["id"]: c["figure"] for c in registry["claims"] if "reading" not in c}
    found: dict = {}
    for page, text in pages.items():
        heading = ""
        for line in text.splitlines():
            if HEADING.match(line):
                heading = line.lstrip("#").strip()
            for cid in re.findall(r"<!-- report:begin (\S+) -->", line):
                if cid in figure:
                    found.setdefault(figure[cid], (page, heading))
    return found


def _verdicts(group: list) -> str:
    """Each claim's verdict, grouped: "**holds**: optimal, myopic; **differs**: egreedy", claims named
    by their id less its figure prefix (fig4_, table1_, thm1_), "(partial)" after one on partial results;
    a measurement beyond the paper by what its rule finds (met, not met, undecided)."""
    names = {v: [re.sub(r"^(fig|table|thm)\d+_", "", o.claim["id"]) + (" (partial)" if o.problem else "")
                 for o in group if o.verdict == v] for v in VERDICTS}
    return "; ".join(f"**{said(group[0], v)}**: {', '.join(n)}" for v, n in names.items() if n)


def _label(registry: dict, fig: str) -> str:
    return registry["figures"][fig].get("paper", fig).split(" (")[0]


def glance_markdown(registry: dict, outcomes: list, pages: dict, at: Path) -> str:
    """The results-at-a-glance table for the file `at`: the paper's claims counted by verdict, then
    one row per figure or table that holds a claim of the paper (its label, the paper's claim in a
    few words, its claims' verdicts and those of their other readings, a link to its results page),
    then a line with the measurements beyond the paper, when there are any. The few words are the
    heading of the page section that holds its first claim's block: "Fig. 4: PSRL has the lowest
    regret" gives "Fig. 4" and "PSRL has the lowest regret"."""
    sections = figure_sections(pages, registry)
    paper, beyond = layout(outcomes)
    by_figure = _by_main_figure(paper)
    claimed = {o.claim["figure"] for o in outcomes}
    rows = [_glance_row(entry, by_figure.get(fig, []), sections.get(fig, (None, "")), at)
            for fig, entry in registry["figures"].items()
            if fig in by_figure or ("paper" in entry and fig in claimed)]
    lines = [f"**{summary_line(outcomes)}.**", "",
             "| result | the paper's claim | verdicts of its claims | page |", "|---|---|---|---|"]
    lines += [r for _, r in sorted(rows, key=lambda r: r[0])]
    if beyond:
        lines += ["", _beyond_line(registry, beyond)]
    return "\n".join(lines) + "\n"


def _by_main_figure(paper: list) -> dict:
    """The outcomes on the paper by figure, an other reading in the row of its main claim's figure."""
    main_figure = {o.claim["id"]: o.claim["figure"] for o in paper}
    by_figure: dict = {}
    for o in paper:
        main = o.claim["reading"]["of"] if role(o.claim) == "reading" else o.claim["id"]
        by_figure.setdefault(main_figure[main], []).append(o)
    return by_figure


def _glance_row(entry: dict, group: list, section: tuple, at: Path) -> tuple:
    """(sort key, row) of one figure's glance row: its label and the paper's claim in few words (from
    the heading of its `section`, (page, heading)), its claims' verdicts, the link to its page."""
    page, heading = section
    label = entry.get("paper") or group[0].claim["paper"]      # rvfx's own figure: its claim's label
    result, _, words = heading.partition(": ") if ": " in heading else (label.split(" (")[0], "", heading or label)
    link = f"[{Path(page).stem}]({Path(os.path.relpath(page, Path(at).parent)).as_posix()})" if page else "–"
    readings = [o for o in group if role(o.claim) == "reading"]
    verdicts = _verdicts([o for o in group if role(o.claim) == "paper"]) or "–"
    verdicts += f"; other readings: {_verdicts(readings)}" if readings else ""
    return _paper_key(result), f"| {md_cell(result)} | {md_cell(words)} | {verdicts} | {link} |"


def _beyond_line(registry: dict, beyond: list) -> str:
    """The line naming the measurements beyond the paper, by figure in the paper's order."""
    figures: dict = {}
    for o in beyond:
        figures.setdefault(o.claim["figure"], []).append(o)
    return ("Beyond the paper (rvfx's own measurements, not verdicts on the paper, not counted): "
            + "; ".join(f"{_label(registry, fig)}, {_verdicts(group)}" for fig, group in
                        sorted(figures.items(), key=lambda kv: _paper_key(_label(registry, kv[0]))))
            + ".")


def fill_glance(text: str, registry: dict, outcomes: list, pages: dict, at: Path) -> str:
    return GLANCE.sub(lambda m: f"<!-- glance:begin -->\n{glance_markdown(registry, outcomes, pages, at)}"
                                f"<!-- glance:end -->", text)


def _table_file(root: Path, name: str) -> str:
    """The text a table block naming `name` holds (no_html: a table's cells come from data), or
    RegistryError naming the missing file."""
    path = root / name
    if not path.is_file():
        raise RegistryError(f"README table block names no file: {path}")
    text = no_html(path.read_text(encoding="utf-8"))
    return text if text.endswith("\n") else text + "\n"


def fill_tables(text: str, root: Path) -> str:
    """`text` with every <!-- table:begin PATH --> block holding the file PATH (relative to `root`,
    the README's folder) as it is, so that a table shown in the README is the committed one."""
    return TABLE.sub(lambda m: f"<!-- table:begin {m.group(1)} -->\n{_table_file(root, m.group(1))}"
                               f"<!-- table:end -->", text)


# a number, with its sign when one stands before it ("−3.78", not the hyphen of "1,100-1,900")
NUMBER = re.compile(r"(?:(?<![\w.,])[-−+](?=\d))?(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w.]*\w)")


def _plain(token: str) -> str:
    """A printed number as compared: no thousands commas, ASCII minus, no plus."""
    return token.replace(",", "").replace("−", "-").lstrip("+")


def _significant_digits(token: str) -> int:
    digits = _plain(token).lstrip("-")
    if "." in digits:
        return len(digits.replace(".", "").lstrip("0"))
    return len(digits.lstrip("0").rstrip("0"))


def paper_numbers(outcomes: list, figures: Path) -> dict[str, set[str]]:
    """Per figure id, the numbers its paper tables print (commas dropped): every estimate and CI end
    of its claims as the report prints them (as first committed too), and every number of its
    summary tables (`figures`/<figure id>*.md), whether or not its per-run tables are exported."""
    values: dict[str, set] = {}
    for version in [v for o in outcomes for v in (o, o.first) if v]:
        values.setdefault(version.claim["figure"], set()).update(
            num(x) for r in version.rows for _, e in r.estimates for x in (e.value, e.lo, e.hi))
    for table in sorted(figures.glob("*.md")):
        fig = _figure_of_table(table.stem)
        if fig is not None:
            values.setdefault(fig.id, set()).update(NUMBER.findall(table.read_text(encoding="utf-8")))
    return {fig: {_plain(v) for v in vs} for fig, vs in values.items()}


def _figure_of_table(stem: str):
    """The figure whose table `stem` is: the longest figure id equal to it or followed by "_"
    (deepsea_tabular_scaling_slopes is deepsea_tabular_scaling's, not deepsea_tabular's)."""
    ids = [i for i in FIGURES if stem == i or stem.startswith(i + "_")]
    return FIGURES[max(ids, key=len)] if ids else None


HEADING = re.compile(r"^#{1,4} ")
FIGURE_FILE = re.compile(r"figures/paper/([a-z0-9_]+)(\*?)")


def _section_figures(lines: list[str], registry: dict) -> set[str]:
    """The figures a README section is about: those whose files (figures/paper/<id>..., a glob
    such as deepsea_tuning_*.md naming every figure it matches) or claims' blocks it shows."""
    figs = set()
    for line in lines:
        for stem, glob in FIGURE_FILE.findall(line):
            fig = _figure_of_table(stem)
            figs.update([i for i in FIGURES if i.startswith(stem)] if glob else [fig.id] if fig else [])
        for cid in re.findall(r"<!-- report:begin (\S+) -->", line):
            figs.update(c["figure"] for c in registry["claims"] if c["id"] == cid)
    return figs


def _blank(m: re.Match) -> str:
    """A block as empty lines, so that the lines around it keep their numbers."""
    return "\n" * m.group(0).count("\n")


def stray_numbers(text: str, numbers: dict[str, set[str]], registry: dict) -> list[tuple[int, str]]:
    """(line, number) of each number outside the report and table blocks of `text` that a paper
    table of a figure its section is about prints (`numbers`, per figure), as a copy of that table
    would be; only numbers of three significant digits or more ("2.35", "0.220", "1,364"): "0.5" or
    "20" are too common to tell, and a section's own figures only, so that a batch size of 128
    elsewhere is not read as a copy of some table's 128."""
    lines = text.splitlines()
    outside = GLANCE.sub(_blank, TABLE.sub(_blank, MARKER.sub(_blank, text))).splitlines()
    starts = [i for i, line in enumerate(lines) if HEADING.match(line)]
    found = []
    for a, b in zip([0, *starts], [*starts, len(lines)]):
        section = set().union(*(numbers.get(f, set()) for f in _section_figures(lines[a:b], registry)))
        found += [(i + 1, token) for i in range(a, b) for token in NUMBER.findall(outside[i])
                  if _significant_digits(token) >= 3 and _plain(token) in section]
    return found


def _pages(paths: list) -> dict:
    return {Path(p): Path(p).read_text(encoding="utf-8") for p in paths}


def write_files(registry: dict, outcomes: list, out: Path, scale: str, pages: list = (), modified: list = ()) -> list:
    """report.md and report.html in `out` (listing the `modified` runs), and every block of the files
    `pages` (the README, the docs' results pages) filled."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "report.md", out / "report.html"]
    write_atomic_text(written[0], render_markdown(registry, outcomes, out, scale, modified))
    write_atomic_text(written[1], render_html(registry, outcomes, out, scale, modified))
    texts = _pages(pages)
    for page, text in texts.items():
        filled = fill_glance(fill_readme(text, registry, outcomes), registry, outcomes, texts, page)
        filled = fill_tables(filled, page.parent)
        if filled != text:
            write_atomic_text(page, filled)
            written.append(page)
    return written


def check_files(registry: dict, outcomes: list, out: Path, scale: str, pages: list = (), modified: list = ()) -> list:
    """One line per disagreement between the recomputed report and the files in `out` (and the
    blocks of the files `pages`), per number of the paper tables (the report's and those in `out`)
    that a page quotes outside its blocks, and, on paper-scale results, per claim whose rule holds on
    its negative control; empty when they all agree."""
    problems = [f"claims.yaml: {o.claim['id']}: its rule holds on its negative control ({entry['why']}): it cannot "
                f"tell the claim from its contrast" for o in outcomes for entry, c in o.contrasts
                if scale == "paper" and c.verdict == "holds"]
    for name, text in (("report.md", render_markdown(registry, outcomes, out, scale, modified)),
                       ("report.html", render_html(registry, outcomes, out, scale, modified))):
        path = out / name
        if not path.exists():
            problems.append(f"{path}: missing (run rvfx report without --check)")
        elif path.read_text(encoding="utf-8") != text:
            old = path.read_text(encoding="utf-8").splitlines()
            new = text.splitlines()
            i = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
            problems.append(f"{path}:{i + 1}: differs from the recomputed report")
    texts = _pages(pages)
    numbers = paper_numbers(outcomes, out) if texts else {}
    blocks = _blocks(registry, outcomes)
    for readme, text in texts.items():
        for cid, content in readme_blocks(text):
            if cid not in blocks:
                problems.append(f"{readme}: block {cid} names no claim")
            elif content != blocks[cid]:
                problems.append(f"{readme}: block {cid} differs from the results: "
                                f"{_first_difference(content, blocks[cid])}")
        for m in TABLE.finditer(text):
            if m.group(2) != _table_file(readme.parent, m.group(1)):
                problems.append(f"{readme}: table block {m.group(1)} differs from the file (run rvfx report "
                                f"--readme to copy it)")
        for m in GLANCE.finditer(text):
            if m.group(1) != glance_markdown(registry, outcomes, texts, readme):
                problems.append(f"{readme}: the results-at-a-glance block differs from the results: "
                                f"{_first_difference(m.group(1), glance_markdown(registry, outcomes, texts, readme))}")
        problems += [f"{readme}:{line}: {token} is a number of the result tables outside a report block "
                     f"(quote it through <!-- report:begin ID -->, show its table through <!-- table:begin PATH -->, "
                     f"or link the table)"
                     for line, token in stray_numbers(text, numbers, registry)]
    return problems


def _first_difference(old: str, new: str) -> str:
    for a, b in zip(old.splitlines(), new.splitlines()):
        if a != b:
            return f"{a.strip()!r} should be {b.strip()!r}"
    return "length differs"

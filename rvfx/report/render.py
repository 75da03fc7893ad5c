"""The outcomes as text: a claim's verdict and estimate table in Markdown (block_markdown: its
report.md section and its README block), report.md, and report.html, self-contained. Each report is
titled with the scale its results were run at, so that a CI-scale smoke test never reads as the
paper's results; counts only the paper's claims (their current versions, main readings); shows an
amended claim's verdict as first committed beside its current one, and the verdicts that changed;
words a measurement beyond the paper as what its rule finds, in a section of its own; shows another
reading under its main claim; shows each claim's negative controls (its rule on the data the paper
contrasts it with, where it must not hold); and lists the runs made with settings other than their
spec's. Neither format passes HTML through from the tables: report.html escapes, Markdown writes a
`<` that could open a tag as &lt; (no_html)."""
from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rvfx.report.claims import Outcome, role
from rvfx.report.registry import EVALUATIVE
from rvfx.report.rules import ci, describe_rule, nat
from rvfx.report.settings import shown
from rvfx.report.statistics import STATISTICS, describe_statistic, num
from rvfx.report.tables import where_text

VERDICTS = ("holds", "differs", "inconclusive")
MEASURED = {"holds": "met", "differs": "not met", "inconclusive": "undecided"}
"""What a rule finds on a measurement beyond the paper: rvfx's measurement, not a verdict on the paper."""


def said(o: Outcome, verdict: str | None = None) -> str:
    """A verdict of `o` (its own by default) as the report words it."""
    verdict = o.verdict if verdict is None else verdict
    return MEASURED[verdict] if o.beyond else verdict


HTML_OPENING = re.compile(r"<(?=[A-Za-z/!?])")


def no_html(markdown: str) -> str:
    """Markdown holding no raw HTML: each `<` that could open a tag, a comment or an autolink written
    &lt;, so that text read from the tables (a forged agent name) shows as itself, as in report.html."""
    return HTML_OPENING.sub("&lt;", markdown)


def md_cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def _md_text(text: str) -> str:
    """Prose for Markdown: * and _ (as in Q*_2) taken literally."""
    return re.sub(r"([*_])", r"\\\1", text)


def _sentence(text: str) -> str:
    """Prose of claims.yaml ending a sentence: with a full stop unless it has one."""
    return text if text.rstrip().endswith((".", "!", "?")) else text + "."


def _inline(text: str) -> str:
    """Prose as HTML: escaped, with Markdown's `inline code` as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(str(text)))


@dataclass(frozen=True)
class Markup:
    """How the report marks up what it writes: claims.yaml's prose, generated text, a verdict (its
    value, as worded), a name in code, a link to a claim's section."""
    prose: Callable[[str], str]
    plain: Callable[[str], str]
    verdict: Callable[[str, str], str]
    code: Callable[[str], str]
    link: Callable[[str], str]


MARKDOWN = Markup(_md_text, str, lambda v, w: f"**{w}**", lambda s: f"`{s}`", lambda cid: f"[{cid}](#{cid})")
HTML = Markup(_inline, _inline, lambda v, w: f'<b class="{v}">{html.escape(w)}</b>',
              lambda s: f"<code>{html.escape(s)}</code>", lambda cid: f'<a href="#{cid}">{html.escape(cid)}</a>')


def paper_claims(outcomes: list) -> list:
    """The outcomes that are verdicts on the paper: neither beyond it nor another reading."""
    return [o for o in outcomes if role(o.claim) == "paper"]


def counts(outcomes: list) -> dict:
    """Verdicts of the paper's claims, counted."""
    return _counted(paper_claims(outcomes))


def _counted(items: list) -> dict:
    return {v: sum(x.verdict == v for x in items) for v in VERDICTS}


def _figure_label(registry: dict, fig_id: str) -> str:
    entry = registry["figures"][fig_id]
    if "own" in entry:
        return f"rvfx's own: {entry['own']}"
    return entry.get("paper") or entry["diagram"]


def _image(registry: dict, fig_id: str) -> str:
    return registry["figures"][fig_id].get("image", f"{fig_id}.png")


def estimate_rows(o: Outcome, groups: list) -> list:
    """Table rows [group, level, estimate, 95% CI, n, detail, verdict] of some of an outcome's groups."""
    scale = STATISTICS[o.claim["statistic"]["kind"]][3]
    out = []
    for row in groups:
        for i, (level, e) in enumerate(row.estimates):
            last = i == len(row.estimates) - 1
            out.append([row.label if i == 0 else "", level, num(nat(e.value, scale)), ci(e, scale), str(e.n),
                        e.detail, f"{said(o, row.verdict)}: {row.why}" if last else ""])
    return out


def headline(o: Outcome) -> str:
    """The statistic in one line: the estimate with its CI, or how many groups hold."""
    if not o.rows:
        return "no estimate"
    if len(o.rows) > 1:
        return ", ".join(f"{n} {said(o, v)}" for v, n in _counted(o.rows).items() if n) + f" of {len(o.rows)} groups"
    scale = STATISTICS[o.claim["statistic"]["kind"]][3]
    return "; ".join(f"{level + ' ' if level else ''}{num(nat(e.value, scale))} {ci(e, scale)}"
                     for level, e in o.rows[0].estimates)


COLUMNS = ["group", "level", "estimate", "95% CI", "n", "detail", "verdict"]


def estimate_table(o: Outcome, groups: list) -> tuple[list, list]:
    """(header, rows) of the estimates of `groups`, without columns that are empty in every row; a
    measurement beyond the paper heads its last column with what the rule finds, not a verdict."""
    rows = estimate_rows(o, groups)
    columns = COLUMNS[:-1] + ["rule finds" if o.beyond else "verdict"]
    keep = [i for i in range(len(columns)) if any(r[i] for r in rows)]
    return [columns[i] for i in keep], [[r[i] for i in keep] for r in rows]


README_GROUPS = 8
"""A README block lists at most this many groups (Theorem 1 has one per logged L): those that do not
hold, then the last; report.md lists them all."""


AGGREGATES = {"all": "holds when every group holds, differs when any group differs",
              "any": "holds when some group holds, differs when every group differs"}
MEASURED_AGGREGATES = {"all": "met when met in every group, not met when not met in some group",
                       "any": "met when met in some group, not met when not met in every group"}


def aggregation(o: Outcome) -> str:
    """How a claim tested per group got its verdict: the groups' verdicts counted and the aggregate
    rule that combines them; empty for a claim of one group."""
    if len(o.rows) < 2:
        return ""
    c = _counted(o.rows)
    aggregate = o.claim.get("aggregate", "all")
    if o.beyond:
        counts_text = f"{c['holds']} of {len(o.rows)} groups met" + "".join(
            f", {c[v]} {MEASURED[v]}" for v in VERDICTS[1:] if c[v])
        return f"{counts_text}; aggregate \"{aggregate}\": {MEASURED_AGGREGATES.get(aggregate, aggregate)}."
    counts_text = f"{c['holds']} of {len(o.rows)} groups {'holds' if c['holds'] == 1 else 'hold'}" + "".join(
        f", {c[v]} {word if c[v] == 1 else plural}" for v, word, plural in
        (("differs", "differs", "differ"), ("inconclusive", "inconclusive", "inconclusive")) if c[v])
    return f"{counts_text}; aggregate \"{aggregate}\": {AGGREGATES.get(aggregate, aggregate)}."


def _lead(o: Outcome, m: Markup) -> str:
    """What a verdict is, said before it: another reading, or rvfx's measurement beyond the paper."""
    if role(o.claim) == "reading":
        return f"Other reading of {m.code(o.claim['reading']['of'])}"
    return "Measured beyond the paper (rvfx's measurement, not a verdict on the paper)" if o.beyond else ""


def first_committed(o: Outcome, rules: dict, m: Markup) -> str:
    """An amended claim's verdict as first committed, with version 1's statistic and rule (and its
    words, when an amendment re-quoted the paper)."""
    f = o.first
    words = f.claim["words"] != o.claim["words"]
    return (f"As first committed: {m.verdict(f.verdict, said(f))} ({m.plain(headline(f) + _status(f))}). "
            f"{m.prose(statistic_sentence(f.claim))} Rule: {m.plain(describe_rule(f.claim, rules))}."
            + (f" Its words: \"{m.prose(f.claim['words'])}\"" if words else ""))


def contrast_items(o: Outcome, m: Markup) -> list:
    """Each negative control of a claim: the data the paper contrasts it with (the keys that select
    them), the same rule's verdict there, which must not be holds, and why it is the contrast."""
    items = []
    for entry, c in o.contrasts:
        data = "; ".join(f"{k} {where_text(v) if k == 'where' else v}" for k, v in entry.items()
                         if k not in ("why", "statistic") and v is not None)
        if "statistic" in entry:
            data += ("; " if data else "") + describe_statistic(entry["statistic"])
        found = "it must not hold, and does not" if c.verdict != "holds" else \
            "it must not hold, and does: the rule cannot tell the claim from its contrast"
        items.append(f"Negative control ({m.plain(data)}): {m.verdict(c.verdict, said(c))} "
                     f"({m.plain(headline(c) + _status(c))}); {m.plain(found)}. {m.prose(_sentence(entry['why']))}")
    return items


def contrast_summary(o: Outcome) -> str:
    """The verdicts of a claim's negative controls, for the summary table ("–" for none)."""
    return ", ".join(said(c) for _, c in o.contrasts) or "–"


def block_markdown(o: Outcome, rules: dict, limit: int | None = None) -> str:
    """A claim's verdict and statistics: its report section's body, and (with a `limit` on the groups
    listed) its README block. A claim tested per group says how its groups combine (aggregation);
    an amended one, its verdict as first committed."""
    groups = o.rows
    if limit is not None and len(groups) > limit:
        groups = [r for r in o.rows[:-1] if r.verdict != "holds"][:limit - 1] + [o.rows[-1]]
    lead = _lead(o, MARKDOWN)
    lines = [f"{lead + ': ' if lead else ''}**{said(o)}** ({describe_rule(o.claim, rules)})."
             + (f" {o.problem}." if o.problem else "")]
    if aggregation(o):
        lines[0] += " " + aggregation(o)
    if len(groups) < len(o.rows):
        lines[0] += (f" {len(groups)} of {len(o.rows)} groups listed: those that do not hold, and the last; "
                     f"report.md lists all.")
    header, rows = estimate_table(o, groups)
    if rows:
        lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows]
    lines += [x for i in contrast_items(o, MARKDOWN) for x in ("", i)]
    if o.first:
        lines += ["", first_committed(o, rules, MARKDOWN)
                  + (" report.md lists its amendments: why, when, and after seeing which data." if limit else "")]
    return no_html("\n".join(lines))


def statistic_sentence(claim: dict) -> str:
    return (f"Statistic: {describe_statistic(claim['statistic'])}"
            + (f", where {where_text(claim['where'])}" if claim.get("where") else "")
            + (f"; per {', '.join(claim['by'])} ({claim.get('aggregate', 'all')} must hold)" if claim.get("by") else "")
            + ".")


def _status(o: Outcome) -> str:
    return f" ({o.problem.split(':')[0]})" if o.problem else ""


def _number(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def controls_line(outcomes: list) -> str:
    """How many claims meet a negative control, and on how many of them the rule holds there too."""
    with_control = [o for o in outcomes if o.contrasts]
    failed = [o.claim["id"] for o in with_control if any(c.verdict == "holds" for _, c in o.contrasts)]
    return (f"Negative controls: {_number(len(with_control), 'claim is', 'claims are')} also tested on the data the "
            f"paper contrasts {'it' if len(with_control) == 1 else 'them'} with, where the rule must not hold; "
            + (f"it holds there for {', '.join(failed)}" if failed else "it holds there for none"))


def summary_line(outcomes: list) -> str:
    """The paper's claims counted by verdict, then how many other outcomes there are beside them."""
    paper, c = paper_claims(outcomes), counts(outcomes)
    beyond = sum(role(o.claim) == "beyond" for o in outcomes)
    readings = sum(role(o.claim) == "reading" for o in outcomes)
    others = [text for n, text in ((beyond, _number(beyond, "measurement", "measurements") + " beyond the paper"),
                                   (readings, _number(readings, "other reading", "other readings"))) if n]
    return (f"{len(paper)} claims: {c['holds']} hold, {c['differs']} differ, {c['inconclusive']} inconclusive "
            f"({sum(bool(o.problem) for o in paper)} on missing or partial results)"
            + ("; plus " + " and ".join(others) if others else ""))


def _by_figure(outcomes: list) -> dict:
    figs: dict = {}
    for o in outcomes:
        figs.setdefault(o.claim["figure"], []).append(o)
    return figs


def _own_figures(registry: dict, outcomes: list) -> list:
    """Figures that no claim tests, rvfx's own and the paper's diagrams: (id, why)."""
    claimed = _by_figure(outcomes)
    return [(f, e["own"] if "own" in e else f"{e['diagram']}, diagrams that state nothing to test")
            for f, e in registry["figures"].items() if "paper" not in e and f not in claimed]


def readings_of(outcomes: list) -> dict:
    """{main claim id: [the outcomes of its other readings]}."""
    found: dict = {}
    for o in outcomes:
        if role(o.claim) == "reading":
            found.setdefault(o.claim["reading"]["of"], []).append(o)
    return found


def layout(outcomes: list) -> tuple[list, list]:
    """(the paper's claims, the measurements beyond it), in claims.yaml's order, each followed by
    its other readings."""
    readings = readings_of(outcomes)
    placed = [[x for o in outcomes if role(o.claim) == kind for x in (o, *readings.get(o.claim["id"], []))]
              for kind in ("paper", "beyond")]
    return placed[0], placed[1]


def scale_banner(scale: str, modified: list = (), outcomes: list = ()) -> tuple[str, str]:
    """(title suffix, first line) of a report on results run at `scale` ("ci", "paper", or a
    description of mixed or missing scales), so that the reader knows what the verdicts are worth;
    a paper-scale report with `modified` runs (settings.modified_runs) that claims read says so in
    its title, one whose modified folders no claim reads (a sweep still growing) in its first line."""
    if scale == "ci":
        return "CI scale", ("CI scale: a smoke test of the pipeline, not the paper's results (those are the "
                            "paper-scale report in rvfx's repository, figures/paper/report.md).")
    read = [mod for mod in modified if readers_of(mod, outcomes)]
    if scale == "paper" and read:
        return "paper scale, with modified runs", (
            f"Paper scale, except that {_number(len(read), 'experiment', 'experiments')} ran with settings "
            f"other than the spec's (listed under \"{MODIFIED_HEADING}\"): the verdicts that read them are not "
            f"the paper-scale results.")
    if scale == "paper" and modified:
        return "paper scale", (f"Paper scale: every experiment the claims read was run at the budgets of its spec's "
                               f"paper scale; {_number(len(modified), 'other folder', 'other folders')} ran with "
                               f"other settings (listed under \"{MODIFIED_HEADING}\").")
    if scale == "paper":
        return "paper scale", "Paper scale: every experiment was run at the budgets of its spec's paper scale."
    return scale, f"Scale: {scale}; only the paper-scale report is a reproduction of the paper's results."


GENERATED = ("Generated by `rvfx report` from claims.yaml (the claims, their statistics, and the verdict rules "
             "with their justification) and the result tables; do not edit.")
CHANGED_HEADING, MODIFIED_HEADING, BEYOND_HEADING = ("What changed", "Runs with settings other than the spec's",
                                                     "Beyond the paper")
CHANGED_INTRO = ("Amended claims whose current verdict differs from their verdict as first committed, with the "
                 "last amendment's reason")
MODIFIED_INTRO = ("Experiment folders whose recorded settings (the resolved spec.yaml beside their tables) differ "
                  "from what the shipped spec of their name resolves to at the scale they were run at, such as a "
                  "`--set` override, with the claims that read them")
BEYOND_INTRO = ("What rvfx measures that the paper does not claim. What each rule finds (met, not met, undecided) "
                "is rvfx's measurement, not a verdict on the paper, and is not in the counts above.")


def changed(outcomes: list, m: Markup) -> list:
    """One item per amended claim whose verdict differs from the one it had as first committed."""
    items = []
    for o in outcomes:
        if o.first and o.first.verdict != o.verdict:
            last = o.claim["amendments"][-1]
            kind = {"paper": "", "beyond": " (beyond the paper)",
                    "reading": f" (other reading of {o.claim.get('reading', {}).get('of')})"}[role(o.claim)]
            items.append(f"{m.link(o.claim['id'])}{m.plain(kind)}: {m.verdict(o.first.verdict, said(o.first))} → "
                         f"{m.verdict(o.verdict, said(o))}; version {len(o.claim['amendments']) + 1}, "
                         f"{m.plain(last['date'])}: {m.prose(last['reason'])}")
    return items


def amendment_items(o: Outcome, m: Markup) -> list:
    """Each amendment of an amended claim: its version, date, reason, the data it was made after,
    the keys it replaced, and the paper's words when it re-quoted them."""
    return [f"Version {n}, {m.plain(a['date'])}: {m.prose(a['reason'])} Made after seeing: {m.prose(a['after'])}. "
            f"Replaces {', '.join(m.code(k) for k in EVALUATIVE if k in a)}."
            + (f" The paper's words: \"{m.prose(a['words'])}\"" if "words" in a else "")
            for n, a in enumerate(o.claim["amendments"], start=2)]


def reading_items(o: Outcome, readings: dict, m: Markup) -> list:
    """Under a main claim, each of its other readings: verdict, headline, and why the main is main."""
    return [f"Other reading, {m.link(r.claim['id'])}: {m.verdict(r.verdict, said(r))} "
            f"({m.plain(headline(r) + _status(r))}). {m.code(o.claim['id'])} is the main reading: "
            f"{m.prose(_sentence(r.claim['reading']['why_main']))}" for r in readings.get(o.claim["id"], [])]


def readers_of(mod, outcomes: list) -> list:
    """The ids of the claims that read a modified folder (in their current version or as first committed)."""
    return [o.claim["id"] for o in outcomes if mod.experiment in {x.claim.get("experiment") for x in (o, o.first) if x}]


def modified_items(modified: list, outcomes: list, m: Markup) -> list:
    """One item per modified experiment folder: the settings that differ (or why they cannot be
    compared), and the claims that read it (in their current version or as first committed)."""
    items = []
    for mod in modified:
        readers = readers_of(mod, outcomes)
        what = "; ".join(f"{m.code(key)} = {m.plain(shown(got))} (the spec's: {m.plain(shown(want))})"
                         for key, got, want in mod.differences) or m.plain(mod.problem)
        items.append(f"{m.code(mod.experiment)}: {what}. Read by "
                     + (", ".join(m.link(cid) for cid in readers) if readers else "no claim") + ".")
    return items


def _md_list(intro: str, items: list) -> list:
    return [f"{intro}:" + (" none." if not items else ""), *([""] + [f"- {i}" for i in items] if items else [])]


def _md_summary(outcomes: list, header: list) -> list:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in _summary_rows(outcomes, MARKDOWN)]


def _summary_rows(outcomes: list, m: Markup) -> list:
    """[claim, paper, statistic [95% CI], verdict] per outcome, another reading marked as such and
    an amended claim's verdict as first committed beside its current one."""
    rows = []
    for o in outcomes:
        link = m.link(o.claim["id"])
        verdict = m.verdict(o.verdict, said(o)) + m.plain(_status(o))
        if o.first:
            verdict += f" (as first committed: {m.verdict(o.first.verdict, said(o.first))})"
        rows.append([f"↳ {link}, other reading" if role(o.claim) == "reading" else link, m.plain(o.claim["paper"]),
                     m.plain(headline(o)), verdict, m.plain(contrast_summary(o))])
    return rows


SUMMARY_HEADER = ["claim", "paper", "statistic [95% CI]", "verdict", "negative control"]
BEYOND_HEADER = ["claim", "measured against", "statistic [95% CI]", "the rule finds", "negative control"]


def _md_claim(o: Outcome, rules: dict, readings: dict) -> list:
    cl = o.claim
    lines = ["", f"### {cl['id']}", ""]
    if role(cl) == "reading":
        lines += [f"Another reading of the sentence of [{cl['reading']['of']}](#{cl['reading']['of']}), which is "
                  f"the main reading: {_md_text(_sentence(cl['reading']['why_main']))}", ""]
    if "beyond" in cl:
        lines += [f"Beyond the paper: {_md_text(_sentence(cl['beyond']))}", ""]
    lines += [f"{cl['paper']}:", "", f"> {_md_text(cl['words'])}", "", _md_text(statistic_sentence(cl)), "",
              block_markdown(o, rules)]
    if o.first:
        lines += ["", "Amendments:", ""] + [f"- {i}" for i in amendment_items(o, MARKDOWN)]
    lines += [x for i in reading_items(o, readings, MARKDOWN) for x in ("", i)]
    if cl.get("note"):
        lines += ["", f"Note: {_md_text(cl['note'])}"]
    return lines


def render_markdown(registry: dict, outcomes: list, out: Path, scale: str, modified: list = ()) -> str:
    rules, readings = registry["rules"], readings_of(outcomes)
    paper, beyond = layout(outcomes)
    title, first = scale_banner(scale, modified, outcomes)
    lines = [f"# The paper's claims, tested: {title}", "", f"**{first}**", "", GENERATED, "",
             f"**{summary_line(outcomes)}.**", "", f"{controls_line(outcomes)}.", "",
             *_md_summary(paper, SUMMARY_HEADER)]
    lines += ["", f"## {CHANGED_HEADING}", "", *_md_list(CHANGED_INTRO, changed(outcomes, MARKDOWN))]
    lines += ["", f"## {MODIFIED_HEADING}", "", *_md_list(MODIFIED_INTRO, modified_items(modified, outcomes, MARKDOWN))]
    for fig_id, group in _by_figure(paper).items():
        image = _image(registry, fig_id)
        lines += ["", f"## {_figure_label(registry, fig_id)}: `{fig_id}`", "",
                  f"![{fig_id}]({image})" if (out / image).exists() else f"(figure not drawn: `rvfx plot {fig_id}`)"]
        for o in group:
            lines += _md_claim(o, rules, readings)
    if beyond:
        lines += ["", f"## {BEYOND_HEADING}", "", BEYOND_INTRO, "", *_md_summary(beyond, BEYOND_HEADER)]
        for o in beyond:
            lines += _md_claim(o, rules, readings)
    own = _own_figures(registry, outcomes)
    if own:
        lines += ["", "## Figures with no claim: rvfx's own, and the paper's diagrams", ""]
        lines += [f"- `{f}`: {why}" for f, why in own]
    return no_html("\n".join(lines) + "\n")


STYLE = """body{font-family:sans-serif;max-width:70em;margin:auto;padding:1em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:.2em .5em;font-size:90%;
vertical-align:top}img{max-width:100%}.holds{color:#176117}.differs{color:#a11}.inconclusive{color:#8a6d00}
blockquote{margin:.3em 1em;font-style:italic}"""

SCRIPT = """window.addEventListener('load', function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) {
    imgs[i].setAttribute('data-natural-width', imgs[i].naturalWidth);
    if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++;
  }
  document.body.setAttribute('data-images-loaded', ok);
  document.body.setAttribute('data-tables-found', document.querySelectorAll('table').length);
});"""


def _html_table(header: list, rows: list) -> str:
    """A table of already escaped cells."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _html_list(intro: str, items: list) -> str:
    return f"<p>{_inline(intro)}: none.</p>" if not items else \
        f"<p>{_inline(intro)}:</p><ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def _html_claim(o: Outcome, rules: dict, readings: dict) -> tuple[list, int]:
    """(parts, tables) of a claim's section in report.html."""
    cl, esc = o.claim, _inline
    parts = [f'<h3 id="{cl["id"]}">{esc(cl["id"])}: <span class="{o.verdict}">{html.escape(said(o))}</span></h3>']
    if role(cl) == "reading":
        parts.append(f"<p>Another reading of the sentence of {HTML.link(cl['reading']['of'])}, which is the main "
                     f"reading: {esc(_sentence(cl['reading']['why_main']))}</p>")
    if "beyond" in cl:
        parts.append(f"<p>Beyond the paper: {esc(_sentence(cl['beyond']))}</p>")
    parts.append(f"<p>{esc(cl['paper'])}:</p><blockquote>{esc(cl['words'])}</blockquote>"
                 f"<p>{esc(statistic_sentence(cl))}</p>" + (f"<p>{_lead(o, HTML)}.</p>" if "beyond" in cl else "")
                 + f"<p>Rule: {esc(describe_rule(cl, rules))}."
                 + (f" <b>{esc(o.problem)}</b>." if o.problem else "")
                 + (f" {esc(aggregation(o))}" if aggregation(o) else "") + "</p>")
    header, rows = estimate_table(o, o.rows)
    if rows:
        parts.append(_html_table(header, [[esc(c) for c in r] for r in rows]))
    parts += [f"<p>{i}</p>" for i in contrast_items(o, HTML)]
    if o.first:
        parts.append(f"<p>{first_committed(o, rules, HTML)}</p><p>Amendments:</p><ul>"
                     + "".join(f"<li>{i}</li>" for i in amendment_items(o, HTML)) + "</ul>")
    parts += [f"<p>{i}</p>" for i in reading_items(o, readings, HTML)]
    if cl.get("note"):
        parts.append(f"<p>Note: {esc(cl['note'])}</p>")
    return parts, int(bool(rows))


def render_html(registry: dict, outcomes: list, out: Path, scale: str, modified: list = ()) -> str:
    """The report as one HTML file: figures embedded as base64 PNG, no external resources; an inline
    script records on <body> how many images loaded and how many tables exist (for a headless browser)."""
    rules, esc, readings = registry["rules"], _inline, readings_of(outcomes)
    paper, beyond = layout(outcomes)
    title, first = scale_banner(scale, modified, outcomes)
    parts = [_html_table(SUMMARY_HEADER, _summary_rows(paper, HTML)),
             f"<h2>{CHANGED_HEADING}</h2>{_html_list(CHANGED_INTRO, changed(outcomes, HTML))}",
             f"<h2>{esc(MODIFIED_HEADING)}</h2>{_html_list(MODIFIED_INTRO, modified_items(modified, outcomes, HTML))}"]
    images, tables = 0, 1
    for fig_id, group in _by_figure(paper).items():
        image = out / _image(registry, fig_id)
        parts.append(f"<h2>{esc(_figure_label(registry, fig_id))}: <code>{esc(fig_id)}</code></h2>")
        if image.exists():
            data = base64.b64encode(image.read_bytes()).decode("ascii")
            parts.append(f'<img alt="{esc(fig_id)}" src="data:image/png;base64,{data}">')
            images += 1
        else:
            parts.append(f"<p>(figure not drawn: <code>rvfx plot {esc(fig_id)}</code>)</p>")
        for o in group:
            claim_parts, n = _html_claim(o, rules, readings)
            parts, tables = parts + claim_parts, tables + n
    if beyond:
        parts += [f"<h2>{BEYOND_HEADING}</h2><p>{esc(BEYOND_INTRO)}</p>",
                  _html_table(BEYOND_HEADER, _summary_rows(beyond, HTML))]
        tables += 1
        for o in beyond:
            claim_parts, n = _html_claim(o, rules, readings)
            parts, tables = parts + claim_parts, tables + n
    own = _own_figures(registry, outcomes)
    if own:
        parts.append("<h2>Figures with no claim: rvfx's own, and the paper's diagrams</h2><ul>"
                     + "".join(f"<li><code>{esc(f)}</code>: {esc(why)}</li>" for f, why in own) + "</ul>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>rvfx: the paper's claims, tested: {html.escape(title)}</title><style>{STYLE}</style></head>\n"
            f'<body data-images-expected="{images}" data-tables-expected="{tables}">'
            f"<h1>The paper's claims, tested: {esc(title)}</h1><p><b>{esc(first)}</b></p>"
            f"<p>{esc(GENERATED)}</p><p><b>{esc(summary_line(outcomes))}."
            f"</b></p><p>{esc(controls_line(outcomes))}.</p>{''.join(parts)}<script>{SCRIPT}</script></body></html>\n")

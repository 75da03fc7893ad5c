"""The outcomes as text: a claim's verdict and estimate table in Markdown (block_markdown: its
report.md section and its README block), report.md, and report.html, self-contained; each report
titled with the scale its results were run at, so that a CI-scale smoke test never reads as the
paper's results."""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from rvfx.report.claims import Outcome
from rvfx.report.rules import ci, describe_rule, nat
from rvfx.report.statistics import STATISTICS, describe_statistic, num
from rvfx.report.tables import where_text


def md_cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def counts(outcomes: list) -> dict:
    return {v: sum(o.verdict == v for o in outcomes) for v in ("holds", "differs", "inconclusive")}


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
                        e.detail, f"{row.verdict}: {row.why}" if last else ""])
    return out


def headline(o: Outcome) -> str:
    """The statistic in one line: the estimate with its CI, or how many groups hold."""
    if not o.rows:
        return "no estimate"
    if len(o.rows) > 1:
        c = {v: sum(r.verdict == v for r in o.rows) for v in ("holds", "differs", "inconclusive")}
        return ", ".join(f"{n} {v}" for v, n in c.items() if n) + f" of {len(o.rows)} groups"
    scale = STATISTICS[o.claim["statistic"]["kind"]][3]
    return "; ".join(f"{level + ' ' if level else ''}{num(nat(e.value, scale))} {ci(e, scale)}"
                     for level, e in o.rows[0].estimates)


COLUMNS = ["group", "level", "estimate", "95% CI", "n", "detail", "verdict"]


def estimate_table(o: Outcome, groups: list) -> tuple[list, list]:
    """(header, rows) of the estimates of `groups`, without columns that are empty in every row."""
    rows = estimate_rows(o, groups)
    keep = [i for i in range(len(COLUMNS)) if any(r[i] for r in rows)]
    return [COLUMNS[i] for i in keep], [[r[i] for i in keep] for r in rows]


README_GROUPS = 8
"""A README block lists at most this many groups (Theorem 1 has one per logged L): those that do not
hold, then the last; report.md lists them all."""


AGGREGATES = {"all": "holds when every group holds, differs when any group differs",
              "any": "holds when some group holds, differs when every group differs"}


def aggregation(o: Outcome) -> str:
    """How a claim tested per group got its verdict: the groups' verdicts counted and the aggregate
    rule that combines them; empty for a claim of one group."""
    if len(o.rows) < 2:
        return ""
    c = {v: sum(r.verdict == v for r in o.rows) for v in ("holds", "differs", "inconclusive")}
    aggregate = o.claim.get("aggregate", "all")
    counts_text = f"{c['holds']} of {len(o.rows)} groups {'holds' if c['holds'] == 1 else 'hold'}" + "".join(
        f", {c[v]} {word if c[v] == 1 else plural}" for v, word, plural in
        (("differs", "differs", "differ"), ("inconclusive", "inconclusive", "inconclusive")) if c[v])
    return f"{counts_text}; aggregate \"{aggregate}\": {AGGREGATES.get(aggregate, aggregate)}."


def block_markdown(o: Outcome, rules: dict, limit: int | None = None) -> str:
    """A claim's verdict and statistics: its report section's body, and (with a `limit` on the groups
    listed) its README block. A claim tested per group says how its groups combine (aggregation)."""
    groups = o.rows
    if limit is not None and len(groups) > limit:
        groups = [r for r in o.rows[:-1] if r.verdict != "holds"][:limit - 1] + [o.rows[-1]]
    lines = [f"**{o.verdict}** ({describe_rule(o.claim, rules)})." + (f" {o.problem}." if o.problem else "")]
    if aggregation(o):
        lines[0] += " " + aggregation(o)
    if len(groups) < len(o.rows):
        lines[0] += (f" {len(groups)} of {len(o.rows)} groups listed: those that do not hold, and the last; "
                     f"report.md lists all.")
    header, rows = estimate_table(o, groups)
    if rows:
        lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def statistic_sentence(claim: dict) -> str:
    return (f"Statistic: {describe_statistic(claim['statistic'])}"
            + (f", where {where_text(claim['where'])}" if claim.get("where") else "")
            + (f"; per {', '.join(claim['by'])} ({claim.get('aggregate', 'all')} must hold)" if claim.get("by") else "")
            + ".")


def _status(o: Outcome) -> str:
    return f" ({o.problem.split(':')[0]})" if o.problem else ""


def summary_line(outcomes: list) -> str:
    c = counts(outcomes)
    return (f"{len(outcomes)} claims: {c['holds']} hold, {c['differs']} differ, {c['inconclusive']} inconclusive "
            f"({sum(bool(o.problem) for o in outcomes)} on missing or partial results)")


def _md_text(text: str) -> str:
    """Prose for Markdown: * and _ (as in Q*_2) taken literally."""
    return re.sub(r"([*_])", r"\\\1", text)


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


def scale_banner(scale: str) -> tuple[str, str]:
    """(title suffix, first line) of a report on results run at `scale` ("ci", "paper", or a
    description of mixed or missing scales), so that the reader knows what the verdicts are worth."""
    if scale == "ci":
        return "CI scale", ("CI scale: a smoke test of the pipeline, not the paper's results (those are the "
                            "paper-scale report, figures/paper/report.md).")
    if scale == "paper":
        return "paper scale", "Paper scale: every experiment was run at the budgets of its spec's paper scale."
    return scale, f"Scale: {scale}; only the paper-scale report is a reproduction of the paper's results."


GENERATED = ("Generated by `rvfx report` from claims.yaml (the claims, their statistics, and the verdict rules "
             "with their justification) and the result tables; do not edit.")


def render_markdown(registry: dict, outcomes: list, out: Path, scale: str) -> str:
    rules = registry["rules"]
    title, first = scale_banner(scale)
    lines = [f"# The paper's claims, tested: {title}", "", f"**{first}**", "", GENERATED, "",
             f"**{summary_line(outcomes)}.**", "",
             "| claim | paper | statistic [95% CI] | verdict |", "|---|---|---|---|"]
    lines += [f"| [{o.claim['id']}](#{o.claim['id']}) | {md_cell(o.claim['paper'])} | {md_cell(headline(o))} | "
              f"**{o.verdict}**{_status(o)} |" for o in outcomes]
    for fig_id, group in _by_figure(outcomes).items():
        image = _image(registry, fig_id)
        lines += ["", f"## {_figure_label(registry, fig_id)}: `{fig_id}`", "",
                  f"![{fig_id}]({image})" if (out / image).exists() else f"(figure not drawn: `rvfx plot {fig_id}`)"]
        for o in group:
            cl = o.claim
            lines += ["", f"### {cl['id']}", "", f"{cl['paper']}:", "", f"> {_md_text(cl['words'])}", "",
                      _md_text(statistic_sentence(cl)), "", block_markdown(o, rules)]
            if cl.get("note"):
                lines += ["", f"Note: {_md_text(cl['note'])}"]
    own = _own_figures(registry, outcomes)
    if own:
        lines += ["", "## Figures with no claim: rvfx's own, and the paper's diagrams", ""]
        lines += [f"- `{f}`: {why}" for f, why in own]
    return "\n".join(lines) + "\n"


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


def _inline(text: str) -> str:
    """Prose as HTML: escaped, with Markdown's `inline code` as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(str(text)))


def render_html(registry: dict, outcomes: list, out: Path, scale: str) -> str:
    """The report as one HTML file: figures embedded as base64 PNG, no external resources; an inline
    script records on <body> how many images loaded and how many tables exist (for a headless browser)."""
    rules, esc = registry["rules"], _inline
    title, first = scale_banner(scale)
    summary = [[f'<a href="#{o.claim["id"]}">{esc(o.claim["id"])}</a>', esc(o.claim["paper"]), esc(headline(o)),
                f'<b class="{o.verdict}">{o.verdict}</b>{esc(_status(o))}'] for o in outcomes]
    parts, images, tables = [_html_table(["claim", "paper", "statistic [95% CI]", "verdict"], summary)], 0, 1
    for fig_id, group in _by_figure(outcomes).items():
        image = out / _image(registry, fig_id)
        parts.append(f"<h2>{esc(_figure_label(registry, fig_id))}: <code>{esc(fig_id)}</code></h2>")
        if image.exists():
            data = base64.b64encode(image.read_bytes()).decode("ascii")
            parts.append(f'<img alt="{esc(fig_id)}" src="data:image/png;base64,{data}">')
            images += 1
        else:
            parts.append(f"<p>(figure not drawn: <code>rvfx plot {esc(fig_id)}</code>)</p>")
        for o in group:
            cl = o.claim
            parts.append(f'<h3 id="{cl["id"]}">{esc(cl["id"])}: <span class="{o.verdict}">{o.verdict}</span></h3>'
                         f"<p>{esc(cl['paper'])}:</p><blockquote>{esc(cl['words'])}</blockquote>"
                         f"<p>{esc(statistic_sentence(cl))}</p><p>Rule: {esc(describe_rule(cl, rules))}."
                         + (f" <b>{esc(o.problem)}</b>." if o.problem else "")
                         + (f" {esc(aggregation(o))}" if aggregation(o) else "") + "</p>")
            header, rows = estimate_table(o, o.rows)
            if rows:
                parts.append(_html_table(header, [[esc(c) for c in r] for r in rows]))
                tables += 1
            if cl.get("note"):
                parts.append(f"<p>Note: {esc(cl['note'])}</p>")
    own = _own_figures(registry, outcomes)
    if own:
        parts.append("<h2>Figures with no claim: rvfx's own, and the paper's diagrams</h2><ul>"
                     + "".join(f"<li><code>{esc(f)}</code>: {esc(why)}</li>" for f, why in own) + "</ul>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>rvfx: the paper's claims, tested: {html.escape(title)}</title><style>{STYLE}</style></head>\n"
            f'<body data-images-expected="{images}" data-tables-expected="{tables}">'
            f"<h1>The paper's claims, tested: {esc(title)}</h1><p><b>{esc(first)}</b></p>"
            f"<p>{esc(GENERATED)}</p><p><b>{esc(summary_line(outcomes))}."
            f"</b></p>{''.join(parts)}<script>{SCRIPT}</script></body></html>\n")

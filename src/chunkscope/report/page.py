"""The report as one HTML page: every file's source in chunk bands, findings at their lines, summaries, a filter.

Every piece of document text (the source, paths, front matter, messages) is HTML-escaped, a carriage return
included (as ``&#13;``, which the parser keeps; a raw one would become a line feed), so that each chunk's text in
the DOM is exactly its slice. A Content-Security-Policy lets only the page's own style and script run.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from chunkscope.report.assets import CSP, CSS, JS
from chunkscope.report.model import FileView, ReportData, median
from chunkscope.wording import plural

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.lint.findings import Finding


def esc(text: str) -> str:
    """Text for an element's content or a quoted attribute: markup characters and carriage returns escaped."""
    return html.escape(text, quote=True).replace("\r", "&#13;")


def pre(cls: str, inner: str) -> str:
    """A ``<pre>`` holding escaped ``inner``: a line feed right after ``<pre>`` is dropped by every HTML parser, so
    one is added where the text itself starts with one."""
    return f"<pre class=\"{cls}\">{chr(10) if inner.startswith(chr(10)) else ''}{inner}</pre>"


def render_report(data: ReportData) -> str:
    """The whole page."""
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        f"<title>chunkscope report: {esc(data.label)} — {esc(data.root)}</title>",
        f"<style>{CSS}</style></head><body>",
        _header(data),
        "<main>",
    ]
    parts += [_file(i, f, data.limit) for i, f in enumerate(data.files)]
    parts.append(f"</main><script>{JS}</script></body></html>\n")
    return "".join(parts)


def _header(data: ReportData) -> str:
    counts = data.token_counts
    limit = str(data.limit) if data.limit is not None else "—"
    if data.minimum:
        limit += f" (minimum {data.minimum})"
    over = sum(f.over_limit(data.limit) for f in data.files)
    failed = sum(1 for f in data.files if f.error)
    rows = [("files", str(len(data.files))), ("chunks", str(data.chunk_count)),
            (f"tokens ({data.tokenizer}) min / median / max",
             f"{min(counts, default=0)} / {median(counts)} / {max(counts, default=0)}"),
            ("limit", limit), ("over limit", str(over)),
            ("lint", f"{plural(data.errors, 'error')}, {plural(data.warnings, 'warning')}")]
    if failed:
        rows.append(("not chunked", str(failed)))
    if data.problems:
        rows.append(("not read", str(len(data.problems))))
    severities = data.severities
    options = ["<option value=\"\">all files</option>",
               f"<option value=\"*\">files with findings ({sum(1 for f in data.files if f.findings)})</option>"]
    options += [f"<option value=\"{esc(rule)}\">{esc(rule)} ({n})</option>" for rule, n in data.by_rule.items()]
    rule_rows = "".join(f"<tr><td>{esc(rule)}</td><td>{esc(severities.get(rule, ''))}</td><td>{n}</td></tr>"
                        for rule, n in data.by_rule.items())
    problems = "".join(f"<li>{esc(p)}</li>" for p in data.problems)
    return (
        "<header class=\"top\">"
        f"<h1>chunkscope report — <span id=\"strategy\">{esc(data.label)}</span> on {esc(data.root)}</h1>"
        f"<label class=\"filter\">Lint rule <select id=\"rule-filter\">{''.join(options)}</select></label>"
        "<span id=\"shown\" class=\"muted\"></span></header>"
        "<section class=\"tree\"><table class=\"sum\" id=\"tree-summary\">"
        + "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
        + "</table>"
        + (f"<table class=\"sum rules\"><tr><th>rule</th><th>severity</th><th>findings</th></tr>{rule_rows}</table>"
           if rule_rows else "")
        + (f"<ul class=\"problems\">{problems}</ul>" if problems else "")
        + "</section>"
    )


def _file(i: int, f: FileView, limit: int | None) -> str:
    doc = f.doc
    counts = f.token_counts
    title = doc.front_matter.get("title") if isinstance(doc.front_matter, dict) else None
    errors = sum(1 for x in f.findings if x.severity == "error")
    summary = (f"{plural(len(f.chunks), 'chunk')} · tokens {min(counts, default=0)} / {median(counts)} / "
               f"{max(counts, default=0)} (min / median / max) · {f.over_limit(limit)} over limit · "
               f"{plural(errors, 'error')}, {plural(len(f.findings) - errors, 'warning')}")
    head = (f"<section class=\"file\" id=\"file-{i}\" data-path=\"{esc(doc.path)}\" "
            f"data-rules=\"{esc(' '.join(f.rules))}\"><h2>{esc(doc.path)}</h2>"
            + (f"<div class=\"muted\">title: {esc(str(title))}</div>" if title is not None else "")
            + f"<p class=\"fsum\">{esc(summary)}</p>")
    if f.error:
        return head + f"<p class=\"finding error\">not chunked: {esc(f.error)}</p></section>"
    placed, loose = _place_findings(f)
    body: list[str] = [_finding(x) for x in loose]
    text = doc.text
    pos = 0  # the end of the text shown so far
    for k, c in enumerate(sorted(f.chunks, key=lambda c: (c.start, c.end))):
        if c.start > pos:
            body.append(pre("gap", esc(text[pos:c.start])))
        body.append(_chunk(k, c, placed.get(id(c), []), limit))
        pos = max(pos, c.end)
    if pos < len(text):
        body.append(pre("gap", esc(text[pos:])))
    return head + "<div class=\"src\">" + "".join(body) + "</div></section>"


def _place_findings(f: FileView) -> tuple[dict[int, list["Finding"]], list["Finding"]]:
    """Each finding's chunk: the one lint named, else the first whose lines hold the finding's line; findings
    on no chunk's lines stay at the top of the file."""
    by_index = {c.index: c for c in f.chunks}
    placed: dict[int, list[Finding]] = {}
    loose: list[Finding] = []
    for x in f.findings:
        c = by_index.get(x.chunk_index) if x.chunk_index is not None else None
        if c is None:
            c = next((c for c in f.chunks if c.start_line <= x.line <= c.end_line), None)
        if c is None:
            loose.append(x)
        else:
            placed.setdefault(id(c), []).append(x)
    return placed, loose


def _chunk(k: int, c: "Chunk", findings: list["Finding"], limit: int | None) -> str:
    """A chunk's band: a header, then its exact text in one or more ``pre.t`` pieces, each finding between the
    pieces right after its line (the pieces' texts, joined, are the slice)."""
    over = limit is not None and c.tokens > limit
    bits = [f"chunk {c.index}", f"lines {c.start_line}–{c.end_line}",
            f"<span class=\"{'over' if over else 'tok'}\">{c.tokens} tokens{' — over the limit' if over else ''}"
            "</span>"]
    if c.overlap:
        bits.append(f"overlap {c.overlap[1] - c.overlap[0]} chars")
    if c.warnings:
        bits.append(f"<span class=\"warn\">{esc(', '.join(c.warnings))}</span>")
    rules = " ".join(sorted({x.rule for x in findings}))
    out = [f"<div class=\"chunk b{k % 2}\" data-index=\"{c.index}\" data-start=\"{c.start}\" data-end=\"{c.end}\" "
           f"data-tokens=\"{c.tokens}\" data-rules=\"{esc(rules)}\"><div class=\"chead\">{' · '.join(bits)}</div>"]
    # Cut points inside the chunk's text: after the line of each finding (clamped to the chunk).
    cuts: dict[int, list[Finding]] = {}
    for x in findings:
        cuts.setdefault(_line_end(c, x.line), []).append(x)
    ov_end = (min(max(c.overlap[1], c.start), c.end) - c.start) if c.overlap else 0
    prev = 0
    for at in sorted(cuts):
        out.append(_piece(c.text, prev, at, ov_end))
        out += [_finding(x) for x in cuts[at]]
        prev = at
    if prev < len(c.text) or prev == 0:
        out.append(_piece(c.text, prev, len(c.text), ov_end))
    out.append("</div>")
    return "".join(out)


def _line_end(c: "Chunk", line: int) -> int:
    """Offset in the chunk's text just after the line ``line`` of the document (0 before the chunk's first line,
    the text's length after its last)."""
    if line < c.start_line:
        return 0
    at = 0
    for _ in range(line - c.start_line + 1):
        nl = c.text.find("\n", at)
        if nl == -1:
            return len(c.text)
        at = nl + 1
    return at


def _piece(text: str, a: int, b: int, ov_end: int) -> str:
    """``text[a:b]`` as a ``pre.t``; the part shared with the previous chunk marked."""
    if a < ov_end:
        m = min(b, ov_end)
        inner = f"<mark class=\"ovl\" title=\"shared with the previous chunk\">{esc(text[a:m])}</mark>{esc(text[m:b])}"
    else:
        inner = esc(text[a:b])
    return pre("t", inner)


def _finding(x: "Finding") -> str:
    hint = f" <span class=\"muted\">— {esc(x.advice())}</span>"
    return (f"<div class=\"finding {esc(x.severity)}\" data-rule=\"{esc(x.rule)}\">line {x.line}:{x.column} "
            f"<code>{esc(x.rule)}</code> {esc(x.message)}{hint}</div>")

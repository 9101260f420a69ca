"""Markdown structure with exact offsets: blocks, headings, anchors and heading paths.

A document is parsed once with markdown-it-py (CommonMark + tables, ``$$`` math, ``:::`` admonitions, front
matter); the token line maps are turned into character offsets into ``Document.text``, so a ``#`` line inside a
fence is code, never a heading.

`build_outline` (kept as `Document.outline`) gives the part of that answer most strategies need (line table, headings with anchors and paths, fenced
code spans) without the parse when a line scanner can be sure of it (`chunkscope.document.outline_scan`), and from the
parse otherwise; both ways give identical results, and a parsed document always answers from its parse.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Callable

from chunkscope.document.outline_scan import ScannedFence, ScannedHeading, Unsure, line_of, line_starts_of, scan
from chunkscope.site.numbering import heading_number

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

    from chunkscope.document.loader import Document

# Docusaurus' classic explicit id, as its parseMarkdownHeadingId reads it: "{#" then any characters up to the "}"
# that ends the heading, none of them "}" and none followed by "{#"; the id is trimmed. Spaces are kept:
# "## Setup {#my setup}" is built as id="my setup", and an id that trims to nothing ("{# }") is no id (the whole
# text, braces and all, is slugified). Nothing may follow the "}" (the heading's text is already stripped).
_CUSTOM_ID = re.compile(r"\s*\{#((?:.(?!\{#|\}))*.)\}\Z")
# "3.2 Title", "1.1.1. Title", "Chapter 3: Title", "Section 2 - Title": the keyword (if any) and the number.
_ESM_LINE = re.compile(r"^(?:import|export)\b")
_JSX_TAG = re.compile(r"^\s*</?([A-Z][\w.]*)")
_FENCE_OPEN = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")

#: Block kinds, as found in ``Block.kind``.
KINDS = (
    "front_matter", "heading", "paragraph", "fence", "code", "list", "list_item", "table", "blockquote",
    "admonition", "math", "html", "jsx", "mdx_esm", "hr",
)
#: Kinds inside which a chunk boundary breaks meaning (a cut fence or table is garbage to a reader).
ATOMIC_KINDS = frozenset({"fence", "code", "table", "math", "front_matter", "html", "jsx", "mdx_esm"})


@dataclass(slots=True)
class Block:
    """One Markdown block with exact character offsets and 1-based inclusive line numbers."""

    kind: str
    start: int
    end: int
    start_line: int
    end_line: int
    depth: int = 0  # nesting depth: 0 for top-level blocks
    level: int = 0  # heading level (1-6)
    text: str = ""  # heading text as a reader sees it (no markup, no {#id})
    anchor: str = ""  # heading anchor (Docusaurus / GitHub slugger, or the explicit {#id})
    info: str = ""  # fence info string / admonition type and title
    language: str = ""  # fence language
    number: str | None = None  # "3.2" from "## 3.2 Forward Kinematics"


@dataclass(slots=True)
class Heading:
    """A heading and where it sits in the outline."""

    level: int
    text: str
    anchor: str
    start: int
    end: int
    line: int
    number: str | None
    path: tuple[str, ...]  # texts of the enclosing headings, this one last
    index: int  # position among the document's headings


class _LinesAndHeadings:
    """Queries over a line table and a heading list (shared by `Structure` and `Outline`)."""

    line_starts: list[int]
    headings: list[Heading]
    text_length: int
    _heading_starts: list[int]

    def line_of(self, offset: int) -> int:
        """1-based line number of ``offset``."""
        return line_of(self.line_starts, offset)

    def line_start(self, line: int) -> int:
        """Offset of the first character of a 1-based line."""
        return self.line_starts[line - 1]

    def heading_before(self, offset: int) -> Heading | None:
        """The last heading that starts at or before ``offset``."""
        i = bisect_right(self._heading_starts, offset) - 1
        return self.headings[i] if i >= 0 else None

    def heading_of(self, start: int, end: int) -> Heading | None:
        """The heading a chunk ``[start, end)`` belongs to: the one in force at ``start``, or, for a chunk that
        begins before the document's first heading (front matter, an intro), the first heading inside it."""
        h = self.heading_before(start)
        if h is None:
            inside = self.headings_in(start, end)
            h = inside[0] if inside else None
        return h

    def heading_path_at(self, offset: int) -> list[str]:
        """The breadcrumb of headings in force at ``offset``."""
        h = self.heading_before(offset)
        return list(h.path) if h else []

    def headings_in(self, start: int, end: int) -> list[Heading]:
        lo = bisect_right(self._heading_starts, start - 1)
        hi = bisect_right(self._heading_starts, end - 1)
        return self.headings[lo:hi]

    def section_end(self, heading: Heading) -> int:
        """Where a heading's section ends: at the next heading of the same or a higher level."""
        for h in self.headings[heading.index + 1:]:
            if h.level <= heading.level:
                return h.start
        return self.text_length


@dataclass
class Structure(_LinesAndHeadings):
    """The parsed document: every block, the outline, and a line table."""

    line_starts: list[int]
    blocks: list[Block]
    headings: list[Heading]
    text_length: int
    _heading_starts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._heading_starts = [h.start for h in self.headings]

    def blocks_of(self, *kinds: str) -> list[Block]:
        return [b for b in self.blocks if b.kind in kinds]


#: ``$$`` math blocks may hold blank lines (the plugin's default, stated here because the outline scanner relies on it).
MATH_BLANK_LINES = True


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt
    from mdit_py_plugins.container import container_plugin
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    from mdit_py_plugins.front_matter import front_matter_plugin

    md = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
    md.use(front_matter_plugin)
    md.use(dollarmath_plugin, allow_labels=False, allow_space=True, allow_digits=True, double_inline=False,
           allow_blank_lines=MATH_BLANK_LINES)
    # Docusaurus admonitions: ":::note Title" … ":::" — any name is an admonition.
    md.use(container_plugin, name="admonition", marker=":", validate=lambda *_: True)
    # linkify/typographer stay off for exactness.
    return md


@lru_cache(maxsize=1)
def _block_parser() -> MarkdownIt:
    """The same parser without the inline pass: structure needs inline content only for headings, and inline
    parsing of every paragraph is half of markdown-it's time (measured on the Rust book: 0.57 s → 0.27 s)."""
    md = _parser.__wrapped__()
    md.disable("inline")
    return md


def _heading_text_from_block_parse(content: str, env: dict) -> str:
    """A heading's rendered text from its raw inline content, parsing inline only when markup could fire.

    ``env`` is the block parse's environment, so reference links resolve exactly as in a full parse.
    """
    if _INLINE_MARKUP.search(content) is None:
        return content
    tokens = _parser().parseInline(content, env)
    return _inline_plain(tokens[0]) if tokens else ""


_KIND_OF_OPEN = {
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "list_item_open": "list_item",
    "blockquote_open": "blockquote",
    "table_open": "table",
    "paragraph_open": "paragraph",
    "container_admonition_open": "admonition",
}
_KIND_OF_LEAF = {
    "fence": "fence",
    "code_block": "code",
    "math_block": "math",
    "math_block_label": "math",
    "html_block": "html",
    "hr": "hr",
    "front_matter": "front_matter",
}


def first_content(text: str, start: int, end: int) -> int:
    """The first non-space offset of ``text[start:end]`` (``start`` when it is all space): where a chunk's
    content begins, so its heading, line and anchor are those of its text rather than of a leading blank line."""
    i = start
    while i < end and text[i].isspace():
        i += 1
    return i if i < end else start


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink a range to drop leading and trailing whitespace (a chunk never starts or ends in blank lines)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


_ASCII_NOT_SLUG = re.compile(r"[^a-z0-9 _-]")


def slugify(text: str) -> str:
    """GitHub/Docusaurus slug: lowercase, punctuation and symbols dropped, each space a hyphen."""
    if text.isascii():
        # The same rules at C speed: ASCII letters and digits stay, every other ASCII character but "-" and "_"
        # is punctuation, a symbol or a control character.
        return _ASCII_NOT_SLUG.sub("", text.lower()).replace(" ", "-")
    out = []
    for ch in text.lower():
        if ch == " ":
            out.append("-")
        elif ch in "-_" or ch.isalnum():
            out.append(ch)
        else:
            cat = unicodedata.category(ch)
            # Marks (accents written as combining characters) and connector punctuation survive github-slugger.
            if cat[0] == "M" or cat == "Pc":
                out.append(ch)
    return "".join(out)


class Slugger:
    """Unique anchors per document, numbered ``-1``, ``-2`` on repeats like github-slugger."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def slug(self, text: str) -> str:
        base = slugify(text)
        slug = base
        while slug in self.seen:
            self.seen[base] += 1
            slug = f"{base}-{self.seen[base]}"
        self.seen.setdefault(slug, 0)
        return slug


def _inline_plain(tok: Token) -> str:
    """A heading's text as rendered: markup dropped, code spans kept, breaks as spaces."""
    if not tok.children:
        return tok.content
    parts = []
    for c in tok.children:
        if c.type in ("text", "code_inline", "math_inline"):
            parts.append(c.content)
        elif c.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts)


def _name_heading(raw: str, slugger: Slugger) -> tuple[str, str | None, str]:
    """A heading's (text, number, anchor) from its rendered text: an explicit ``{#id}`` is the anchor."""
    m = _CUSTOM_ID.search(raw.rstrip())
    explicit = None
    if m and m.group(1).strip():
        explicit = m.group(1).strip()
        raw = raw[: m.start()]
    title = raw.strip()
    if explicit:
        # Docusaurus takes an explicit id as it is and never tells its slugger: a later "## Install" after
        # "## Setup {#install}" is "install" too (two equal ids), and the numbering of repeats goes on unchanged.
        return title, heading_number(title), explicit
    return title, heading_number(title), slugger.slug(title)


def _line_spans(text: str, starts: list[int]
                ) -> tuple[Callable[[int], int], Callable[[int, int], tuple[int, int]]]:
    """``(line_end, span)`` over ``text``'s lines: how a block's 0-based line range becomes character offsets."""
    n_lines = len(starts)
    tlen = len(text)

    def line_end(idx0: int) -> int:
        """Offset just past the content of 0-based line ``idx0`` (before its line break)."""
        if idx0 + 1 < n_lines:
            e = starts[idx0 + 1]
            if e >= 2 and text[e - 2 : e] == "\r\n":
                return e - 2
            return e - 1
        return tlen

    def span(l0: int, l1: int) -> tuple[int, int]:
        """Offsets of lines ``[l0, l1)``: from the first non-indent character of ``l0`` to the end of the last."""
        l1 = max(l1, l0 + 1)
        s = starts[l0] if l0 < n_lines else tlen
        line_content_end = line_end(l0)
        # Skip indentation so nested blocks start at their first character.
        while s < line_content_end and text[s] in " \t":
            s += 1
        return s, line_end(min(l1, n_lines) - 1)

    return line_end, span


def parse_structure(doc: "Document") -> Structure:
    """Parse ``doc`` once into blocks and headings with exact offsets."""
    text = doc.text
    starts = doc.analysis.line_starts  # the outline's, when it was made first: one line table per document
    n_lines = len(starts)
    tlen = len(text)
    line_end, span = _line_spans(text, starts)

    src = text
    if text and text[-1] not in "\r\n" and text[starts[-1]:].strip(" \t"):
        # End the last line with a line break: it changes no line, but markdown-it's rules index one past an
        # empty container line at the very end of the source (the admonition rule then crashes inside a quote,
        # a fence in a quote ends a line early). With it every line is followed by a line break.
        src = text + "\n"
    env: dict = {}
    tokens = _block_parser().parse(src, env)
    blocks: list[Block] = []
    headings: list[Heading] = []
    stack: list[Block] = []
    slugger = Slugger()
    pending_heading: Block | None = None
    outline: list[tuple[int, str]] = []

    for i, tok in enumerate(tokens):
        t = tok.type
        depth = len(stack)
        if t == "heading_open" and tok.map:
            s, e = span(*tok.map)
            pending_heading = Block("heading", s, e, tok.map[0] + 1, tok.map[1], depth, level=int(tok.tag[1]))
            continue
        if t == "inline" and pending_heading is not None:
            h = pending_heading
            h.text, h.number, h.anchor = _name_heading(_heading_text_from_block_parse(tok.content, env), slugger)
            continue
        if t == "heading_close" and pending_heading is not None:
            h = pending_heading
            pending_heading = None
            blocks.append(h)
            while outline and outline[-1][0] >= h.level:
                outline.pop()
            outline.append((h.level, h.text))
            headings.append(
                Heading(h.level, h.text, h.anchor, h.start, h.end, h.start_line, h.number,
                        tuple(x[1] for x in outline), len(headings))
            )
            continue
        kind = _KIND_OF_OPEN.get(t)
        if kind and tok.map:
            s, e = span(*tok.map)
            b = Block(kind, s, e, tok.map[0] + 1, max(tok.map[1], tok.map[0] + 1), depth)
            if kind == "admonition":
                b.info = tok.info.strip()
                # The container's map stops before its closing ":::" line; take that line in.
                close_line = tok.map[1]
                if close_line < n_lines and text[starts[close_line]:line_end(close_line)].strip().startswith(":::"):
                    b.end = line_end(close_line)
                    b.end_line = close_line + 1
            elif kind == "paragraph":
                body = text[b.start:b.end]
                if _ESM_LINE.match(body) and all(
                    _ESM_LINE.match(ln) or not ln.strip() or ln[:1] in " \t}" for ln in body.splitlines()
                ):
                    b.kind = "mdx_esm"
            blocks.append(b)
            stack.append(b)
            continue
        if t.endswith("_close") and t[:-6] + "_open" in _KIND_OF_OPEN:
            if stack:
                stack.pop()
            continue
        kind = _KIND_OF_LEAF.get(t)
        if kind and tok.map:
            s, e = span(*tok.map)
            b = Block(kind, s, e, tok.map[0] + 1, max(tok.map[1], tok.map[0] + 1), depth)
            if kind == "fence":
                b.info = tok.info.strip()
                b.language = b.info.split(None, 1)[0].split(",", 1)[0].strip("{}.") if b.info else ""
            elif kind == "html" and _JSX_TAG.match(tok.content):
                b.kind = "jsx"
            blocks.append(b)

    return Structure(line_starts=starts, blocks=blocks, headings=headings, text_length=tlen)


# --- the outline: headings and fences, parsed or scanned ---------------------------------------------------------


@dataclass
class Outline(_LinesAndHeadings):
    """What size-driven strategies need of a document: line table, headings (with anchors and paths), fences.

    ``fences`` are the fenced code blocks at any depth as ``(start, end)`` offsets, sorted, with the same offsets
    as their `Block`. ``source`` says how it was made: ``"fast"`` (line scanner) or ``"derived"`` (from the full
    parse, because the document was parsed already or the scanner could not be sure).
    """

    line_starts: list[int]
    headings: list[Heading]
    fences: list[tuple[int, int]]
    text_length: int
    source: str
    _heading_starts: list[int] = field(default_factory=list, repr=False)
    _fence_starts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._heading_starts = [h.start for h in self.headings]
        self._fence_starts = [s for s, _ in self.fences]

    def fence_containing(self, pos: int) -> tuple[int, int] | None:
        """The fence strictly containing ``pos`` (a cut there splits it), if any."""
        i = bisect_right(self._fence_starts, pos) - 1
        if i >= 0:
            s, e = self.fences[i]
            if s < pos < e:
                return self.fences[i]
        return None

    def fence_at(self, pos: int) -> bool:
        return self.fence_containing(pos) is not None


def build_outline(doc: "Document") -> Outline:
    """Make the outline: derived from the parse when the document has one, else scanned, else (when the scanner
    cannot be sure) derived from a parse made now. `Analysis.outline` keeps it; call that instead."""
    if not doc.analysis.structure_parsed:
        try:
            return _outline_from_scan(doc, *scan(doc.text, lambda src: _parser().parse(src), MATH_BLANK_LINES))
        except Unsure:
            pass
    return outline_from_structure(doc.structure, len(doc.text))


def outline_from_structure(st: Structure, text_length: int) -> Outline:
    """The outline a full parse gives (the reference the scanner must equal)."""
    fences = sorted((b.start, b.end) for b in st.blocks if b.kind == "fence")
    return Outline(st.line_starts, st.headings, fences, text_length, "derived")


#: Characters with which an inline rule may fire in a heading ("!" only as "![", which holds a "[").
_INLINE_MARKUP = re.compile(r"[\\`*_\[\]<&$~\n]")


def _heading_plain(content: str, text: str) -> str:
    """What `_inline_plain` gives for a heading whose inline content is ``content``, parsing only if needed."""
    if _INLINE_MARKUP.search(content) is None:
        return content  # no inline rule but plain text can fire: the text is the content
    if "`" in content:
        plain = _code_spans_plain(content)
        if plain is not None:
            return plain
    tokens = _parser().parseInline(content)
    if not tokens:
        return ""
    tok = tokens[0]
    if "[" in content and "]:" in text and any(c.type == "text" and "[" in c.content for c in tok.children or ()):
        # A bracket left as text might be a reference link to a definition elsewhere in the document, which
        # only the full parse knows. (Brackets inside code spans, or consumed by inline links, do not depend
        # on the definitions.)
        raise Unsure("heading with a bracket that may be a reference link")
    return _inline_plain(tok)


def _code_spans_plain(content: str) -> str | None:
    """`_inline_plain` of a heading whose only markup is code spans, or None when there is other markup.

    markdown-it's backtick rule: a run of n backticks opens a code span closed by the next run of exactly n (else
    the run is literal text); inside, a line break is a space and one space is dropped from each end when both
    ends have one and the code is not all spaces. Outside the spans no other inline rule may fire, so the text
    there must hold no markup character.
    """
    out: list[str] = []
    n = len(content)
    i = 0
    while True:
        j = content.find("`", i)
        if j < 0:
            rest = content[i:]
            if _INLINE_MARKUP.search(rest):
                return None
            out.append(rest)
            return "".join(out)
        k = j
        while k < n and content[k] == "`":
            k += 1
        before = content[i:j]
        if _INLINE_MARKUP.search(before):
            return None  # markup before this run: it may change what follows
        out.append(before)
        run = k - j
        close = -1
        m = k
        while True:
            c = content.find("`", m)
            if c < 0:
                break
            e = c
            while e < n and content[e] == "`":
                e += 1
            if e - c == run:
                close = c
                break
            m = e
        if close < 0:
            out.append(content[j:k])  # no closing run: literal backticks
            i = k
            continue
        code = content[k:close].replace("\n", " ")
        if code.startswith(" ") and code.endswith(" ") and any(ch != " " for ch in code):
            code = code[1:-1]
        out.append(code)
        i = close + run


def _outline_from_scan(doc: "Document", scanned_headings: list[ScannedHeading], scanned_fences: list[ScannedFence],
                       scanned_starts: list[int]) -> Outline:
    text = doc.text
    # The scanner's line table is the text's own unless it had to rewrite CR/CRLF line breaks.
    starts = scanned_starts if "\r" not in text else line_starts_of(text)
    _, span = _line_spans(text, starts)
    slugger = Slugger()
    path: list[tuple[int, str]] = []
    headings: list[Heading] = []
    for first, last, level, content in sorted(scanned_headings):
        title, number, anchor = _name_heading(_heading_plain(content, text), slugger)
        start, end = span(first, last + 1)
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        headings.append(Heading(level, title, anchor, start, end, first + 1, number,
                                tuple(x[1] for x in path), len(headings)))
    fences = sorted(span(a, b + 1) for a, b in scanned_fences)
    return Outline(starts, headings, fences, len(text), "fast")

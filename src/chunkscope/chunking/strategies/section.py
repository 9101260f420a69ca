"""Seed 002, "Section-Based Data Model": one chunk per ``##`` section, never split, with citation metadata.

The seed: each chunk is the complete content under a ``##`` heading (until the next ``##`` or the end of the
chapter), carrying ``chapter_id`` (from the file name), ``chapter_title`` (the ``#`` heading),
``section_number`` (0-indexed within the chapter) and ``section_title`` (the ``##`` heading); an optional
50-token overlap is "implemented by appending 50 tokens from next section to current section's content"; CI
validates every chunk at 50..512 tokens.

Choices the seed leaves open, made here:

* The text before the first ``##`` (the ``#`` chapter title and its introduction) is a chunk too: dropping it
  would lose content. Its ``section_title`` is the ``#`` title. ``section_number`` follows the seed's
  pseudocode literally, ``section_number = len(sections)``: the position of the chunk among the chapter's
  chunks, from 0. So a chapter with an introduction numbers it 0 and its ``##`` sections 1, 2, …, which is
  also how a reader counts them in a citation ("Section 2 - Forward Kinematics" is the second ``##``); a
  chapter that opens directly with a ``##`` numbers that section 0.
* A ``#`` heading further down (a second chapter in one file) also starts a chunk: a section never runs
  across a chapter title. Lead-in text before the first ``#`` (MDX imports, a badge) joins the title's chunk.
* Chunks are slices, so the overlap cannot be appended text: a chunk's *end* extends into the next section
  by at most ``overlap_tokens`` tokens, ending after a whole word and never inside a code fence, table or
  ``$$`` block (it stops before one), and never covering the whole next section (the next chunk would be
  a mere copy of this one's tail); an overlap that would hold only the next heading is left out. The
  overlap is shortened so that it never pushes a section that fits over ``max_tokens``, and an oversize
  section gets none (it is over the limit already). The last section of a document has no overlap.
* The strategy never splits: a section over ``max_tokens`` is one chunk flagged ``oversize``.
  ``max_tokens``/``min_tokens`` are the seed's CI validation bounds, reported through `limits` for lint.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from chunkscope.chunking.model import OVERSIZE, Span
from chunkscope.chunking.params import Constraint, Param
from chunkscope.chunking.strategy import Limits, Strategy
from chunkscope.site.numbering import doc_numbering
from chunkscope.site.urls import heading_fragment
from chunkscope.document.structure import Heading
from chunkscope.chunking.strategies._common import Protected, Section, front_matter_title, sections, trim

if TYPE_CHECKING:
    from chunkscope.document.loader import Document
    from chunkscope.tokens import SliceCounter

ENCODINGS = ("cl100k_base", "o200k_base")
# What could open an atomic block other than a fence: a table row, $$ math, HTML/JSX, indented code, MDX ESM.
_MAY_OPEN_ATOMIC = re.compile(r"[|$<]|\n(?: {4}|\t)|\n(?:import|export)\b")
# A word that is only Markdown markup: heading hashes, list bullets and numbers, quote marks, fences, ":::".
_MARKER = re.compile(r"#{1,6}|[-*+>|]|\d{1,9}[.)]|`{3,}\w*|~{3,}\w*|:::\w*|\$\$")


def chapter_sections(doc: "Document", max_level: int) -> list[Section]:
    """Sections cut at every heading of level ``1..max_level``, trimmed, with a lead-in joined to its ``#``.

    A ``#`` heading always cuts (a section never runs across a chapter title); text before the first ``#``
    that is not under any heading (MDX imports, a banner) belongs to that title's section rather than
    standing alone (unless the title has no text of its own: the chunk would end with a heading). Empty
    (whitespace-only) sections are dropped.
    """
    secs = sections(doc, max_level=max_level, min_level=1)
    text = doc.text
    if (len(secs) >= 2 and secs[0].heading is None and secs[1].heading is not None and secs[1].heading.level == 1
            and text[secs[1].heading.end:secs[1].end].strip()):
        secs[1:2] = [Section(secs[0].start, secs[1].end, secs[1].heading)]
        secs.pop(0)
    out = []
    for s in secs:
        a, b = trim(text, s.start, s.end)
        if b > a:
            out.append(Section(a, b, s.heading))
    return out


def chapter_heading_for(doc: "Document", offset: int) -> Heading | None:
    """The ``#`` heading in force at ``offset`` (the last one before it), else the document's first ``#``."""
    h1s = [h for h in doc.outline.headings if h.level == 1]
    best = None
    for h in h1s:
        if h.start <= offset:
            best = h
        else:
            break
    return best or (h1s[0] if h1s else None)


def _atomic_cut(doc: "Document", lo: int, x: int) -> tuple[int, int] | None:
    """The fence, table, ``$$`` or HTML block a cut at ``x`` would split, looking at blocks opened after ``lo``.

    The outline (headings and fences, often had without a full parse) answers when ``[lo, x)`` holds nothing
    that could open another kind of atomic block (``|``, ``$``, ``<``, an indented or import/export line);
    otherwise the full parse does. The answer is the same either way; the outline is just cheaper.
    """
    text = doc.text
    if not doc.analysis.structure_parsed and not _MAY_OPEN_ATOMIC.search(text, lo, x):
        f = doc.outline.fence_containing(x)
        return f if f is not None and text[f[0]:x].strip() and text[x:f[1]].strip() else None
    prot = Protected.of(doc)
    c = prot.containing(x)
    return (c[0], c[1]) if c is not None and prot.cuts(text, x) else None


def overlap_end(doc: "Document", counter: "SliceCounter", start: int, end: int, next_start: int, next_end: int,
                overlap: int, max_tokens: int | None, next_heading: Heading | None = None) -> int:
    """Where a chunk ``[start, end)`` ends once extended into ``[next_start, next_end)`` by <= ``overlap`` tokens.

    The extension ends after a whole word, never inside a protected block (fence, table, math), and keeps the
    whole chunk within ``max_tokens`` when given. It must reach past ``next_heading`` into the text under it:
    a bare heading tells a reader nothing. Returns ``end`` when no useful overlap fits.
    """
    if overlap <= 0 or next_end <= next_start:
        return end
    text = doc.text
    x = counter.end_within(next_start, overlap, next_end)
    if max_tokens is not None:
        x = min(x, counter.end_within(start, max_tokens, next_end))
    # Never the whole next section: the next chunk would be nothing but a copy of this one's tail.
    x = min(x, next_end - 1)
    if x <= next_start:
        return end
    # End after a whole word: back off to the last whitespace unless the cut already sits at one.
    if not text[x].isspace() and not text[x - 1].isspace():
        k = x
        while k > next_start and not text[k - 1].isspace():
            k -= 1
        x = k
    # Never end inside a fence/table/math block: stop before it.
    prot = _atomic_cut(doc, next_start, x)
    if prot is not None:
        x = prot[0]
    _, x = trim(text, next_start, x)
    # Nor on a bare marker ("###", "-", "1.", "```") that opens something the overlap does not reach.
    while x > next_start:
        k = x
        while k > next_start and not text[k - 1].isspace():
            k -= 1
        if not _MARKER.fullmatch(text, k, x):
            break
        _, x = trim(text, next_start, k)
    if next_heading is not None and x <= next_heading.end:
        return end
    return x if x > next_start else end


class SectionStrategy(Strategy):
    name = "section"
    seed = "002"
    description = "One chunk per ## section, never split; chapter/section citation metadata; optional overlap."
    parses_markdown = True
    parameters = (
        Param("level", int, 2, "heading level that starts a section (## = 2); higher headings cut too", 1, 6),
        Param("overlap_tokens", int, 50, "tokens of the next section appended to each chunk (0 = none)", 0, None),
        Param("max_tokens", int, 512, "validation maximum per chunk (a longer section is flagged, never split)",
              1, None),
        Param("min_tokens", int, 50, "validation minimum per chunk (checked by lint)", 0, None),
        Param("encoding", str, "cl100k_base", "tokenizer the limits are counted in", choices=ENCODINGS),
    )
    # No pair for overlap_tokens: the overlap is capped by max_tokens where it is added (`overlap_end`).
    constraints = (Constraint("min_tokens", "<=", "max_tokens", default_follows=True),)
    required_metadata = ("chapter_id", "chapter_title", "section_title")
    search_space = {"level": (2, 3, 4), "overlap_tokens": (0, 50)}
    metadata_fields = ("chapter_number", "section_number", "url_anchor", "token_count", "overlap_tokens",
                       "source_file")
    citation_template = "Source: Chapter {chapter_number}, Section {section_number} - {section_title}"

    def limits(self) -> Limits:
        return Limits(self.params["encoding"], self.params["max_tokens"], self.params["min_tokens"])

    def spans(self, doc: "Document") -> list[Span]:
        counter = self.counter(doc)
        secs = chapter_sections(doc, self.params["level"])
        numbering = doc_numbering(doc)
        overlap = self.params["overlap_tokens"]
        max_tokens = self.params["max_tokens"]
        fm_title = front_matter_title(doc)
        spans: list[Span] = []
        for i, sec in enumerate(secs):
            h1 = chapter_heading_for(doc, sec.start)
            chapter_title = h1.text if h1 and h1.text else (fm_title or numbering.chapter_title)
            # The section's own heading; for the chapter's opening chunk that is the # title itself.
            section_title = sec.heading.text if sec.heading is not None else chapter_title
            end = sec.end
            next_start = sec.end
            warnings: list[str] = []
            if counter.count(sec.start, sec.end) > max_tokens:
                warnings.append(OVERSIZE)
            elif i + 1 < len(secs):
                nxt = secs[i + 1]
                next_start = nxt.start
                end = overlap_end(doc, counter, sec.start, sec.end, nxt.start, nxt.end, overlap, max_tokens,
                                  nxt.heading)
            spans.append(Span(sec.start, end, {
                "chapter_id": numbering.chapter_id,
                "chapter_number": numbering.chapter,
                "chapter_title": chapter_title,
                "section_number": i,
                "section_title": section_title,
                "url_anchor": heading_fragment(sec.heading),
                "token_count": counter.count(sec.start, end),
                "overlap_tokens": counter.count(next_start, end) if end > sec.end else 0,
                "source_file": doc.path,
            }, warnings))
        return spans

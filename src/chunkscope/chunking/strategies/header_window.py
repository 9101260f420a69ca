"""header-window (seed 001): split at H2, then at H3 for long sections, then word windows with overlap.

Seed 001 (ADR-003, "hybrid chunking") sizes chunks in *words*:

1. the chapter is the front matter ``title`` (falling back to the H1 text, then the file name);
2. the body is split at H2 headings (an H1 also ends a section: see `HeaderWindowStrategy.spans`);
3. a section over ``max_words`` (800) is split at its H3 headings;
4. a piece still over ``max_words`` is cut into windows of ``target_words`` (600) with ``overlap_words`` (100)
   words of overlap, never inside a code fence;
5. the seed's mitigation: chunks under ``min_words`` (200) are merged into a neighbour.

The seed's validation list becomes the lint limits: no chunk over 900 words, none under 100 except the last.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, ClassVar

from chunkscope.chunking.model import OVERSIZE, Span
from chunkscope.chunking.params import Constraint, Param
from chunkscope.chunking.strategy import Limits, SearchSpace, Strategy
from chunkscope.chunking.strategies._common import FENCE_KINDS, Protected, front_matter_title, sections, trim

if TYPE_CHECKING:
    from chunkscope.document.loader import Document
    from chunkscope.tokens import SliceCounter

def _skip_space(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos].isspace():
        pos += 1
    return pos


@dataclass(slots=True)
class _Piece:
    """A chunk in the making: its range, where it came from, and what the strategy knows about it."""

    start: int
    end: int
    words: int
    section: str  # seed metadata: the H2 text (or the H3 text for an H3 sub-split that fits)
    group: int  # index of the H1/H2 section it came from: merges prefer the same group
    subsection: str = ""  # the H3 heading the piece sits under when its section was sub-split
    sections: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class HeaderWindowStrategy(Strategy):
    """Seed 001: H2 sections, H3 fallback, word windows with overlap around code fences, small chunks merged."""

    name: ClassVar[str] = "header-window"
    seed: ClassVar[str] = "001"
    parses_markdown: ClassVar[bool] = True
    description: ClassVar[str] = (
        "Split at H2, then H3 for sections over max_words, then windows of target_words with overlap (never "
        "inside a code fence); merge chunks under min_words into a neighbour. Counts words."
    )
    parameters: ClassVar[tuple[Param, ...]] = (
        Param("max_words", int, 800, "a section longer than this is split (at H3, then into windows)", min=1),
        Param("target_words", int, 600, "words per window when a piece is still too long", min=1),
        Param("overlap_words", int, 100, "words shared by consecutive windows", min=0),
        Param("min_words", int, 200, "chunks shorter than this are merged into a neighbour (0: never)", min=0),
        Param("hard_max_words", int, 900, "lint: no chunk may exceed this many words (seed validation)", min=1),
        Param("lint_min_words", int, 100, "lint: no chunk but the last may be shorter than this", min=0),
    )
    constraints: ClassVar[tuple[Constraint, ...]] = (
        Constraint("target_words", "<=", "max_words"),
        Constraint("overlap_words", "<", "target_words"),
        # Merging chunks under min_words would make chunks over max_words the split had just cut.
        Constraint("min_words", "<=", "max_words"),
        Constraint("lint_min_words", "<=", "hard_max_words"),
    )
    #: The word counts move together (a window must stay within its section's limit): one axis of settings.
    search_space: ClassVar[SearchSpace] = {
        ("max_words", "target_words", "overlap_words", "min_words", "lint_min_words"): (
            {"max_words": 150, "target_words": 120, "overlap_words": 20, "min_words": 40, "lint_min_words": 40},
            {"max_words": 300, "target_words": 220, "overlap_words": 40, "min_words": 80, "lint_min_words": 80},
            {"max_words": 500, "target_words": 380, "overlap_words": 60, "min_words": 100},
            {},
        ),
    }
    required_metadata: ClassVar[tuple[str, ...]] = ("chapter", "section")
    metadata_fields: ClassVar[tuple[str, ...]] = ("subsection", "sections", "file_path", "chunk_index")
    citation_template: ClassVar[str] = "{chapter} › {section}"

    @property
    def length_tokenizer(self) -> str:
        return "words"

    def limits(self) -> Limits:
        return Limits("words", self.params["hard_max_words"], self.params["lint_min_words"], last_may_be_short=True)

    @property
    def _ceiling(self) -> int:
        """Largest chunk the strategy makes without flagging it: its own maximum, and never past lint's."""
        return min(self.params["max_words"], self.params["hard_max_words"])

    # --- the seed's algorithm -----------------------------------------------------------------------------------

    def spans(self, doc: "Document") -> list[Span]:
        text = doc.text
        counter = self.counter(doc)
        fences = Protected.of(doc, FENCE_KINDS)
        max_words = self.params["max_words"]
        chapter = chapter_title(doc)
        pieces: list[_Piece] = []
        # H1 cuts too: a new H1 ends every H2 section before it (the seed's ``^## `` regex would glue a second
        # H1 and its text onto the previous H2 section, naming it wrongly).
        for group, sec in enumerate(sections(doc, max_level=2)):
            s, e = trim(text, sec.start, sec.end)
            if s >= e:
                continue
            h = sec.heading
            name = h.text if h is not None and h.text else chapter
            n = counter.count(s, e)
            if n <= max_words:
                pieces.append(_Piece(s, e, n, name, group))
                continue
            for sub in sections(doc, max_level=3, min_level=3, start=sec.start, end=sec.end):
                a, b = trim(text, sub.start, sub.end)
                if a >= b:
                    continue
                h3 = sub.heading.text if sub.heading is not None else ""
                m = counter.count(a, b)
                if m <= max_words:
                    # Seed: ``section=extract_header(subsection) or section_name``.
                    pieces.append(_Piece(a, b, m, h3 or name, group, h3))
                    continue
                # Seed: fixed-split windows keep the H2 section's name; the H3 is kept as ``subsection``.
                for ws, we in self._windows(text, counter, fences, a, b):
                    pieces.append(_Piece(ws, we, counter.count(ws, we), name, group, h3))
        pieces = self._merge(pieces, counter)
        ceiling = self._ceiling
        spans: list[Span] = []
        for i, p in enumerate(pieces):
            warnings = list(p.warnings)
            if p.words > ceiling:
                warnings.append(OVERSIZE)
            meta = {
                "chapter": chapter,
                "section": p.section,
                "subsection": p.subsection,
                "sections": p.sections or [p.section],
                "file_path": doc.path,
                "chunk_index": i,
            }
            spans.append(Span(p.start, p.end, meta, warnings))
        return spans

    def _windows(self, text: str, counter: "SliceCounter", fences: Protected, start: int, end: int) -> list[tuple[int, int]]:
        """Cut ``[start, end)`` into windows of ``target_words`` with ``overlap_words`` overlap, fences whole."""
        target = self.params["target_words"]
        overlap = self.params["overlap_words"]
        max_words = self.params["max_words"]
        out: list[tuple[int, int]] = []
        pos = start
        while pos < end:
            raw = counter.end_within(pos, target, end)
            if raw >= end:
                out.append(trim(text, pos, end))
                break
            cut = raw
            restart: int | None = None
            fence = fences.containing(raw)
            if fence is not None:
                fs, fe, _ = fence
                if counter.count(pos, fe) <= max_words:
                    cut = fe  # the nearest edge that keeps the fence whole with its lead-in, within max_words
                elif fs > pos and text[pos:fs].strip():
                    # End before the fence, and start the next window *at* it (no overlap): an overlap would
                    # run into the same fence and cut before it again.
                    cut = restart = fs
                else:
                    cut = fe  # the fence alone is longer than a window: it becomes its own (flagged) chunk
            a, b = trim(text, pos, cut)
            if a < b:
                out.append((a, b))
            if cut >= end:
                break
            if restart is None:
                restart = counter.start_within(cut, overlap, pos)
                inside = fences.containing(restart)
                if inside is not None:
                    restart = inside[1]  # an overlap never starts inside a fence: start after it instead
                if restart <= pos:
                    restart = cut
            pos = _skip_space(text, restart, end)
        return out

    def _merge(self, pieces: list[_Piece], counter: "SliceCounter") -> list[_Piece]:
        """Seed mitigation: merge chunks under ``min_words`` into a neighbour, never past ``max_words``.

        Decision: merges may cross H2 sections. The seed's own "negative consequence" is that *short sections*
        give chunks below target, and its mitigation merges them with neighbours; its validation ("no chunk
        smaller than 100 words except the last") cannot hold for books of short sections otherwise. To keep the
        ``section`` metadata honest we prefer, in order: the previous piece of the same section, the next piece
        of the same section, the previous piece, the next piece. A merged chunk keeps the section where it
        starts and lists every section it holds in ``sections``.
        """
        min_words = self.params["min_words"]
        ceiling = self._ceiling
        out = list(pieces)
        i = 0
        while i < len(out):
            p = out[i]
            if p.words >= min_words or len(out) == 1:
                i += 1
                continue
            prev = out[i - 1] if i > 0 else None
            nxt = out[i + 1] if i + 1 < len(out) else None
            order = [
                (prev, True) if prev is not None and prev.group == p.group else (None, True),
                (nxt, False) if nxt is not None and nxt.group == p.group else (None, False),
                (prev, True),
                (nxt, False),
            ]
            merged = False
            for other, before in order:
                if other is None:
                    continue
                first, second = (other, p) if before else (p, other)
                words = counter.count(first.start, second.end)
                if words > ceiling:
                    continue
                joined = _join(first, second, words)
                if before:
                    out[i - 1 : i + 1] = [joined]
                    i -= 1  # the joined chunk may still be small: look at it again
                else:
                    out[i : i + 2] = [joined]
                merged = True
                break
            if not merged:
                i += 1
        return out


def _join(first: _Piece, second: _Piece, words: int) -> _Piece:
    """Two consecutive pieces as one; metadata from the first (where the chunk starts)."""
    names = list(dict.fromkeys([*(first.sections or [first.section]), *(second.sections or [second.section])]))
    return _Piece(
        first.start,
        max(first.end, second.end),
        words,
        first.section,
        first.group,
        first.subsection,
        names,
        list(dict.fromkeys([*first.warnings, *second.warnings])),
    )


def chapter_title(doc: "Document") -> str:
    """Seed 001's chapter: the front matter title, else the H1 text, else the file name without extension."""
    title = front_matter_title(doc)
    if title:
        return title
    h1 = next((h for h in doc.structure.headings if h.level == 1 and h.text), None)
    if h1 is not None:
        return h1.text
    return PurePosixPath(doc.path).stem

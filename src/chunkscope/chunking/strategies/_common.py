"""Pieces the strategies share: sections by heading level, protected blocks, split-fence marks of spans, cuts at
word boundaries, a page's front matter title."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Iterable

from chunkscope.chunking.model import SPLIT_FENCE, Span
from chunkscope.document.analysis import MemoSlot
from chunkscope.document.structure import ATOMIC_KINDS, Block, Heading, trim  # noqa: F401 - trim: the strategies import it from here

if TYPE_CHECKING:
    from chunkscope.document.loader import Document


@dataclass(slots=True)
class Section:
    """A run of the body from one heading (or the body start) to the next heading at a cut level."""

    start: int
    end: int
    heading: Heading | None  # None for the text before the first cut-level heading


def sections(doc: "Document", max_level: int, min_level: int = 1, start: int | None = None, end: int | None = None) -> list[Section]:
    """Cut ``[start, end)`` (default: the body) at every heading whose level is in ``[min_level, max_level]``.

    Text before the first such heading becomes a section with ``heading=None`` when it holds anything but
    whitespace. Sections never include trailing whitespace-only gaps of zero length.
    """
    st = doc.structure
    lo = doc.body_start if start is None else start
    hi = len(doc.text) if end is None else end
    cuts = [h for h in st.headings_in(lo, hi) if min_level <= h.level <= max_level]
    out: list[Section] = []
    pos = lo
    current: Heading | None = None
    for h in cuts:
        if h.start > pos and (current is not None or doc.text[pos:h.start].strip()):
            out.append(Section(pos, h.start, current))
        pos = h.start
        current = h
    if hi > pos and (current is not None or doc.text[pos:hi].strip()):
        out.append(Section(pos, hi, current))
    return [s for s in out if s.end > s.start]


#: Code blocks: fenced and indented.
FENCE_KINDS = frozenset({"fence", "code"})


class Protected:
    """Fast lookup of the top-level blocks a boundary must not fall inside (fences, tables, math, …)."""

    def __init__(self, blocks: Iterable[Block], kinds: frozenset[str] = ATOMIC_KINDS) -> None:
        spans = sorted((b.start, b.end, b) for b in blocks if b.kind in kinds)
        # Keep outermost spans only: nested atomic blocks are covered by their parent.
        merged: list[tuple[int, int, Block]] = []
        for s, e, b in spans:
            if merged and s < merged[-1][1]:
                if e > merged[-1][1]:
                    ps, _, pb = merged[-1]
                    merged[-1] = (ps, e, pb)
                continue
            merged.append((s, e, b))
        self.spans = merged
        self._starts = [s for s, _, _ in merged]

    @classmethod
    def of(cls, doc: "Document", kinds: frozenset[str] = ATOMIC_KINDS) -> "Protected":
        """The document's protected spans of these kinds, made once per document and set of kinds."""
        by_kinds = doc.analysis.memo(_PROTECTED, dict)
        p = by_kinds.get(kinds)
        if p is None:
            p = by_kinds[kinds] = cls(doc.structure.blocks, kinds)
        return p

    def containing(self, pos: int) -> tuple[int, int, Block] | None:
        """The protected span strictly containing ``pos`` (a cut at ``pos`` would split it), if any."""
        i = bisect_right(self._starts, pos) - 1
        if i >= 0:
            s, e, b = self.spans[i]
            if s < pos < e:
                return self.spans[i]
        return None

    def fence_at(self, pos: int) -> bool:
        c = self.containing(pos)
        return c is not None and c[2].kind in ("fence", "code")

    def cuts(self, text: str, pos: int) -> bool:
        """A boundary at ``pos`` leaves content of one protected block on both sides. Unlike `containing`, an
        unclosed fence's trailing blank lines (which a trimmed chunk end falls into) do not count."""
        c = self.containing(pos)
        return c is not None and bool(text[c[0]:pos].strip()) and bool(text[pos:c[1]].strip())

    def covered(self, start: int, end: int) -> int:
        """How many characters of ``[start, end)`` lie inside protected blocks."""
        total = 0
        i = max(bisect_right(self._starts, start) - 1, 0)
        for s, e, _ in self.spans[i:]:
            if s >= end:
                break
            total += max(0, min(e, end) - max(s, start))
        return total


def front_matter_title(doc: "Document") -> str:
    """The page's front matter ``title``, stripped; "" when it has none (or one that is no text or number).

    Docusaurus shows that title as the page's H1 when the text opens without one (Jest's and many SDKs' pages
    open with prose under ``title:``), so the strategies name the text before the first heading after it.
    """
    title = doc.front_matter.get("title")
    if isinstance(title, (str, int, float)) and not isinstance(title, bool):
        return str(title).strip()
    return ""


def word_cut(text: str, pos: int, x: int, end: int) -> int:
    """Where a piece of ``text[pos:end]`` that may run to ``x`` ends at a word boundary.

    ``x`` when it falls on whitespace or at ``end``; else the start of the word ``x`` falls in; ``x`` itself (mid
    word) when that word starts at ``pos`` (one word longer than the piece may be). Always past ``pos``, so a loop
    cutting ``text`` with it moves on even when nothing fits.
    """
    x = max(x, pos + 1)
    if x < end and not text[x].isspace():
        k = x
        while k > pos and not text[k - 1].isspace():
            k -= 1
        if k > pos:
            x = k
    return x


def keep_split_fences_no_chunk_holds(spans: list[Span], fence_containing: Callable[[int], tuple[int, int] | None]
                                     ) -> list[Span]:
    """``spans`` without the `SPLIT_FENCE` warnings whose fences another span holds whole.

    A strategy marks a span whose end falls inside a fenced code block; with overlapping spans, the next one may
    hold that block whole. Seed 001's check is that no code block is split *across chunks*, and lint's
    split-fence judges so (one whole copy is enough): the chunk's own mark must agree with it, or the chunk table
    shows an error that ``lint`` does not report. ``fence_containing(pos)``: the strategy's fence strictly
    containing ``pos``, if any.
    """
    bounds = [(sp.start, sp.end) for sp in spans]

    def held(fence: tuple[int, int]) -> bool:
        return any(a <= fence[0] and fence[1] <= b for a, b in bounds)

    out: list[Span] = []
    for sp in spans:
        if SPLIT_FENCE in sp.warnings:
            cut = [f for f in (fence_containing(sp.start), fence_containing(sp.end)) if f is not None]
            if cut and all(held(f) for f in cut):
                sp = replace(sp, warnings=[w for w in sp.warnings if w != SPLIT_FENCE])
        out.append(sp)
    return out


#: Each document's `Protected` spans, by the set of block kinds they protect (strategies ask for two sets).
_PROTECTED: MemoSlot[dict[frozenset[str], Protected]] = MemoSlot("strategies: protected spans by kinds")

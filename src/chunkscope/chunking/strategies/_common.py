"""Pieces the structure-aware strategies share: sections by heading level, protected blocks, greedy packing."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from chunkscope.document.analysis import MemoSlot
from chunkscope.document.structure import ATOMIC_KINDS, Block, Heading, trim  # noqa: F401 - trim: the strategies import it from here

if TYPE_CHECKING:
    from chunkscope.document.loader import Document
    from chunkscope.tokens import SliceCounter


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

    def splits(self, pos: int) -> bool:
        return self.containing(pos) is not None

    def fence_at(self, pos: int) -> bool:
        c = self.containing(pos)
        return c is not None and c[2].kind in ("fence", "code")

    def cuts(self, text: str, pos: int) -> bool:
        """A boundary at ``pos`` leaves content of one protected block on both sides. Unlike `splits`, an
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


def pack(units: Sequence[tuple[int, int]], budget: int, counter: "SliceCounter") -> list[tuple[int, int, bool]]:
    """Greedily join consecutive units into ranges of at most ``budget`` tokens.

    Units are contiguous-or-gapped ranges in document order; a packed range runs from its first unit's start to
    its last unit's end (so the gaps between units, usually whitespace, stay inside the chunk). A unit that alone
    exceeds the budget becomes its own range, flagged ``True`` (oversize).
    """
    out: list[tuple[int, int, bool]] = []
    cur_s = cur_e = None
    for s, e in units:
        if cur_s is None:
            cur_s, cur_e = s, e
            continue
        if counter.count(cur_s, e) <= budget:
            cur_e = e
            continue
        out.append((cur_s, cur_e, counter.count(cur_s, cur_e) > budget))
        cur_s, cur_e = s, e
    if cur_s is not None:
        out.append((cur_s, cur_e, counter.count(cur_s, cur_e) > budget))
    return out


#: Each document's `Protected` spans, by the set of block kinds they protect (strategies ask for two sets).
_PROTECTED: MemoSlot[dict[frozenset[str], Protected]] = MemoSlot("strategies: protected spans by kinds")

"""Seed 000, "Hybrid Section-Aware Chunking": sections at ``##``/``###``/``####``, cut only when over 512 tokens.

The seed's rules, as implemented:

* Sections start at every heading of level 2..``boundary_levels`` (default ``####``); the text before the
  first of them (the ``#`` title and the introduction) is a section of its own. A ``#`` further down also
  starts a section. A section holding nothing but its heading, directly followed by a deeper heading
  (``## 2.3`` then ``### 2.3.1``), is joined to that subsection: a chunk that is only a heading says nothing.
* A section that fits in ``max_tokens`` (a hard limit) is one chunk.
* An overflowing section is cut into units that are packed greedily, in order, into chunks of at most
  ``max_tokens`` (no overlap): code blocks, lists, tables, admonitions and quotes stay whole when they fit;
  paragraphs are cut into sentences (`chunkscope.document.sentences`). A unit too big on its own is cut again: a list
  at its items, a container at its child blocks, code "by function/class" (`code_cuts`): at its top-level
  definitions (``def``/``class``/``fn``/``impl``/``function``/…, with the decorators, attributes and comments
  right above them); a definition still over the limit (a class, an ``impl``) at the definitions one level
  inside it (its methods); only a single function over the limit at blank lines, then at lines. Never inside a
  function's body while a cut between definitions would do.
  Whatever still does not fit (a sentence over the limit) is cut at words and flagged ``oversize``; a chunk
  that cuts a fence, table or ``$$`` block is flagged ``split-fence``.
* "Equations: keep with surrounding explanatory text": there is never a cut between a ``$$`` block and the
  paragraph right before or after it (the closest sentence when the paragraph is split), nor between a
  paragraph ending in ``:`` and the block it introduces, nor after a heading. These bonds give way only
  when the bonded units cannot fit in one chunk together.

Metadata follows the seed's schema: ``chunk_id``, ``chapter``, ``section``, ``subsection``, ``url_anchor``,
``token_count``, ``chunk_index``, ``source_file``. ``chunk_id`` is the seed's ``ch3-s3.2-001`` after the page's
path (``module-1/1.1-basics/frames.md#ch1-s1.1-001``): many pages of a textbook share a chapter and section, and
the seed's form alone repeats across them. Section and subsection follow `chunkscope.site.numbering.SectionNumbers`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Sequence

from chunkscope.document.analysis import MemoSlot
from chunkscope.chunking.model import OVERSIZE, SPLIT_FENCE, Span
from chunkscope.chunking.params import Constraint, Param
from chunkscope.chunking.strategy import Limits, Strategy
from chunkscope.document.sentences import sentence_spans
from chunkscope.site.numbering import doc_numbering, section_numbers
from chunkscope.site.urls import heading_fragment
from chunkscope.document.structure import Block
from chunkscope.chunking.strategies._common import Protected, Section, trim, word_cut
from chunkscope.chunking.strategies.code_cuts import code_lines, definition_cuts, fence_margin
from chunkscope.chunking.strategies.section import ENCODINGS, chapter_sections

if TYPE_CHECKING:
    from chunkscope.document.loader import Document
    from chunkscope.tokens import SliceCounter

#: Blocks whose children are units of their own when the block has to be cut.
_CONTAINERS = frozenset({"list", "list_item", "blockquote", "admonition"})

@dataclass(slots=True)
class _Unit:
    """A range the packer places whole, or cuts further when it does not fit.

    ``chain`` lists the ways still left to cut it, tried in order (``children``, ``sentences``, ``defs``,
    ``blank``, ``lines``); when none yields two pieces the unit is cut at words. ``glue`` forbids a cut
    between this unit and the next one (a heading and its text, an equation and its explanation) as long as
    the two fit in one chunk together.
    """

    start: int
    end: int
    chain: tuple[str, ...] = ()
    block: Block | None = None
    glue: bool = False
    flags: tuple[str, ...] = ()
    final: bool = False  # a piece cut at words: never cut again


@dataclass(slots=True)
class _Memo:
    """What this strategy keeps per document (`Analysis.memo`): it depends on the text and boundary_levels only,
    never on max_tokens, so a re-chunk with a new budget (live tuning) only packs again."""

    #: The sections, by boundary_levels.
    sections: dict[int, list[Section]] = field(default_factory=dict)
    #: By boundary_levels, the units of each overflowing section, by the section's start.
    units: dict[int, dict[int, tuple[_Unit, ...]]] = field(default_factory=dict)
    #: The sentence spans of each ``(start, end)`` range.
    sentences: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)
    #: A paragraph unit's sentence units, by the unit's own fields.
    sentence_units: dict[tuple, list[_Unit]] = field(default_factory=dict)


_MEMO: MemoSlot[_Memo] = MemoSlot("section-sentence: sections, units and sentences")


def _chain_of(block: Block) -> tuple[str, ...]:
    """How a block is cut when it does not fit: containers at their children, code at definitions, …"""
    kind = block.kind
    if kind in _CONTAINERS:
        return ("children", "blank", "lines")
    if kind in ("fence", "code"):
        return ("defs", "blank", "lines")
    if kind == "paragraph":
        return ("sentences",)
    if kind == "heading":
        return ()
    return ("blank", "lines")


class SectionSentenceStrategy(Strategy):
    name = "section-sentence"
    seed = "000"
    description = ("Sections at ##/###/####; an overflowing section is packed from whole blocks and sentences "
                   "into chunks of at most max_tokens; code split at def/class, equations kept with their text.")
    parses_markdown = True
    parameters = (
        Param("max_tokens", int, 512, "hard maximum tokens per chunk", 1, None),
        Param("min_tokens", int, 50, "smallest chunk the seed expects (checked by lint; never merged)", 0, None),
        Param("encoding", str, "cl100k_base", "tokenizer the limits are counted in", choices=ENCODINGS),
        Param("boundary_levels", int, 4, "deepest heading level that starts a section (4 = ####)", 2, 6),
    )
    constraints = (Constraint("min_tokens", "<=", "max_tokens", default_follows=True),)
    required_metadata = ("chapter", "section", "url_anchor")
    search_space = {"max_tokens": (128, 192, 256, 384, 512), "boundary_levels": (2, 3, 4)}
    metadata_fields = ("chunk_id", "subsection", "token_count", "chunk_index", "source_file")
    citation_template = "Chapter {chapter}, Section {section}"

    def limits(self) -> Limits:
        return Limits(self.params["encoding"], self.params["max_tokens"], self.params["min_tokens"])

    def spans(self, doc: "Document") -> list[Span]:
        return _Cutter(doc, self.counter(doc), self.params["max_tokens"], self.params["boundary_levels"]).spans()


def _join_heading_only(text: str, secs: list[Section]) -> list[Section]:
    """Join a section that is only its heading to the deeper section right after it (``## 2.3``+``### 2.3.1``).

    "## A" directly followed by a sibling "## B" stays apart: joining would file A's title over B's text.
    """
    out: list[Section] = []
    i = 0
    while i < len(secs):
        first = last = secs[i]
        while i + 1 < len(secs):
            nxt = secs[i + 1]
            if (last.heading is None or nxt.heading is None or nxt.heading.level <= last.heading.level
                    or text[last.heading.end:last.end].strip()):
                break
            i += 1
            last = nxt
        out.append(Section(first.start, last.end, first.heading))
        i += 1
    return out


class _Cutter:
    """Cuts one document: sections, then units packed into chunks, then metadata."""

    def __init__(self, doc: "Document", counter: "SliceCounter", budget: int, levels: int) -> None:
        self.doc = doc
        self.text = doc.text
        self.st = doc.structure
        self.counter = counter
        self.budget = budget
        self.levels = levels
        self._all_starts: list[int] | None = None
        self._index: dict[int, int] | None = None

    # --- sections and metadata -------------------------------------------------------------------------------

    def spans(self) -> list[Span]:
        doc, text = self.doc, self.text
        # Sections, heading numbers and each section's units depend on the text and boundary_levels only, never
        # on max_tokens: kept per document, so live tuning of the budget only packs again.
        memo = doc.analysis.memo(_MEMO, _Memo)
        secs = memo.sections.get(self.levels)
        if secs is None:
            secs = memo.sections[self.levels] = _join_heading_only(text, chapter_sections(doc, self.levels))
        units_of = memo.units.setdefault(self.levels, {})
        numbering = doc_numbering(doc)
        numbers = section_numbers(doc)
        # chunk_id: seed 000's "ch3-s3.2-001" ("ch" + chapter, or the page's name when the chapter is unknown;
        # "-s" + section, "0" for a chapter's opening; the chunk's running number among this page's chunks with
        # that chapter and section) after the page's tree-relative path and "#". The path is unique within a tree
        # and the seed part unique within the page, so the id is unique within the tree, whichever other files
        # were loaded; "#" is kept out of the seed part so the last "#" always separates the two.
        chap = (f"ch{numbering.chapter}" if numbering.chapter is not None
                else numbering.chapter_id.rsplit("/", 1)[-1]).replace("#", "-")
        prot = Protected.of(doc)
        running: dict[tuple[str, str], int] = {}
        out: list[Span] = []
        for sec in secs:
            pieces: list[tuple[int, int, set[str]]]
            if self.counter.count(sec.start, sec.end) <= self.budget:
                pieces = [(sec.start, sec.end, set())]
            else:
                units = units_of.get(sec.start)
                if units is None:
                    units = units_of[sec.start] = tuple(self._section_units(sec))
                pieces = self._pack(units)  # packing never changes a unit it is given (it makes new ones)
            for idx, (s, e, flags) in enumerate(pieces):
                # The innermost heading the chunk starts under; a lead-in before the title counts as the title's.
                h = self.st.heading_before(s)
                if h is None or h.start < sec.start:
                    h = sec.heading
                section, subsection = numbers.of(h)
                # Counting per section value, not per heading, keeps ids unique when several headings share one
                # section number (the Rust book numbers files, not headings).
                key = (chap, (section if section is not None else "0").replace("#", "-"))
                running[key] = running.get(key, 0) + 1
                warnings = sorted(flags)
                if prot.cuts(text, s) or prot.cuts(text, e):
                    warnings.append(SPLIT_FENCE)
                tokens = self.counter.count(s, e)
                if tokens > self.budget and OVERSIZE not in warnings:
                    warnings.append(OVERSIZE)
                out.append(Span(s, e, {
                    "chunk_id": f"{doc.path}#{key[0]}-s{key[1]}-{running[key]:03d}",
                    "chapter": numbering.chapter,
                    "section": section,
                    "subsection": subsection,
                    "url_anchor": heading_fragment(h),
                    "token_count": tokens,
                    "chunk_index": idx,
                    "source_file": doc.path,
                }, warnings))
        return out

    # --- units -----------------------------------------------------------------------------------------------

    def _outermost(self, lo: int, hi: int) -> list[Block]:
        """The outermost blocks starting in ``[lo, hi)``: the top-level blocks of a section, or, for a section that
        starts at a heading nested in a quote or list item, that container's remaining children first."""
        if self._all_starts is None:
            self._all_starts = [b.start for b in self.st.blocks]
        blocks = self.st.blocks
        picked: list[Block] = []
        for b in blocks[bisect_left(self._all_starts, lo):bisect_left(self._all_starts, hi)]:
            if b.kind == "front_matter":
                continue
            if picked and b.start < picked[-1].end and b.depth > picked[-1].depth:
                continue  # inside the block picked last (blocks come parents first)
            picked.append(b)
        return picked

    def _children(self, block: Block) -> list[Block]:
        """Direct child blocks of a container, in order."""
        blocks = self.st.blocks
        if self._index is None:
            self._index = {id(b): i for i, b in enumerate(blocks)}
        i = self._index[id(block)] + 1
        out: list[Block] = []
        while i < len(blocks) and blocks[i].depth > block.depth:
            if blocks[i].depth == block.depth + 1:
                out.append(blocks[i])
            i += 1
        return out

    def _ends_with_heading(self, u: _Unit) -> bool:
        """Whether a unit ends with a heading (a heading, a piece of one, or a list whose last item is one)."""
        b = u.block
        if b is None:
            return False
        return (self._last_descendant(b) if b.kind in _CONTAINERS else b).kind == "heading"

    def _last_descendant(self, block: Block) -> Block:
        """The last block nested inside ``block`` (itself when it has none)."""
        blocks = self.st.blocks
        if self._index is None:
            self._index = {id(b): i for i, b in enumerate(blocks)}
        i = self._index[id(block)]
        while i + 1 < len(blocks) and blocks[i + 1].depth > block.depth:
            i += 1
        return blocks[i]

    def _section_units(self, sec: Section) -> list[_Unit]:
        blocks = self._outermost(sec.start, sec.end)
        return self._tile(self._sequence(blocks, sec.end, glue_last=False), sec.start, sec.end, absorb=False)

    def _sequence(self, blocks: list[Block], limit: int, glue_last: bool) -> list[_Unit]:
        """Units for sibling blocks, with the bonds between them (heading, equation, colon)."""
        text = self.text
        units: list[_Unit] = []
        for i, b in enumerate(blocks):
            nb = blocks[i + 1] if i + 1 < len(blocks) else None
            if nb is None:
                glue = glue_last
            elif b.kind == "heading":
                glue = True
            elif b.kind == "paragraph":
                # The paragraph introducing an equation, or anything announced by a colon.
                glue = nb.kind == "math" or text[b.start:b.end].rstrip().endswith(":")
            elif b.kind == "math":
                glue = nb.kind == "paragraph"  # the explanation after an equation
            else:
                # A container ending with a heading ("- ### Title" as the list's last item) holds its text next.
                glue = b.kind in _CONTAINERS and self._last_descendant(b).kind == "heading"
            s, e = trim(text, b.start, b.end)
            if e > limit:
                # The block runs past the section (a heading nested inside it cuts it): its children up to the
                # cut stand in for it; a leaf block is cut as plain lines.
                s, e = trim(text, s, limit)
                if e <= s:
                    continue
                kids = [k for k in self._children(b) if k.start < e] if b.kind in _CONTAINERS else []
                if kids:
                    units.extend(self._tile(self._sequence(kids, e, glue), s, e, absorb=True))
                else:
                    units.append(_Unit(s, e, ("blank", "lines"), glue=glue))
            elif e <= s:
                continue
            else:
                units.append(_Unit(s, e, _chain_of(b), b, glue))
        return units

    def _tile(self, units: list[_Unit], lo: int, hi: int, absorb: bool) -> list[_Unit]:
        """Make units cover every non-space character of ``[lo, hi)``, each trimmed.

        ``absorb``: text between units (list markers, a closing ``:::``, a blockquote's ``>``) joins the unit
        before it, and the first unit takes what precedes it. Otherwise (a section's top level) such text is a
        unit of its own: markdown-it drops link reference definitions, which are still text a chunk must hold.
        """
        text = self.text
        out: list[_Unit] = []
        if absorb:
            for i, u in enumerate(units):
                s, e = trim(text, lo if i == 0 else u.start, units[i + 1].start if i + 1 < len(units) else hi)
                if e > s:
                    # (The constructor, not dataclasses.replace: this runs for every unit of every section.)
                    out.append(_Unit(s, e, u.chain, u.block, u.glue, u.flags, u.final))
            return out
        pos = lo
        for u in units:
            gs, ge = trim(text, pos, u.start)
            if ge > gs:
                out.append(_Unit(gs, ge, ("blank", "lines")))
            out.append(u)
            pos = u.end
        gs, ge = trim(text, pos, hi)
        if ge > gs:
            out.append(_Unit(gs, ge, ("blank", "lines")))
        return out

    # --- splitting -------------------------------------------------------------------------------------------

    def _split(self, u: _Unit) -> list[_Unit]:
        """Cut a unit into two or more smaller ones that cover it, the last keeping the unit's bond."""
        for k, how in enumerate(u.chain):
            rest = u.chain[k + 1:]
            if how == "children":
                kids = self._children(u.block) if u.block is not None else []
                parts = self._tile(self._sequence(kids, u.end, glue_last=False), u.start, u.end, absorb=True)
                if len(parts) == 1:
                    # One child (a list item holding one paragraph or one fence): cut the child its own way.
                    only = replace(parts[0], glue=u.glue, flags=tuple(dict.fromkeys((*u.flags, *parts[0].flags))))
                    return self._split(only)
            elif how == "sentences":
                parts = [_Unit(a, z) for a, z in self._sentence_spans(u.start, u.end)]
            else:
                cuts = self._def_cuts(u) if how == "defs" else self._blank_cuts(u) if how == "blank" else \
                    self._lines_in(u.start, u.end)
                bounds = [u.start, *cuts, u.end]
                # A definition still over the budget is cut at the definitions inside it before anything else.
                then = u.chain[k:] if how == "defs" else rest
                parts = [_Unit(a, z, then, u.block) for a, z in zip(bounds, bounds[1:])]
            if len(parts) > 1:
                parts = self._tile(parts, u.start, u.end, absorb=True)
                if len(parts) > 1:
                    for p in parts:
                        p.flags = tuple(dict.fromkeys((*u.flags, *p.flags)))
                    parts[-1].glue = u.glue
                    return parts
        return self._words(u)

    def _open(self, u: _Unit) -> list[_Unit] | None:
        """A container that fits, opened into its children to keep a bond; None when it has fewer than two."""
        if u.chain[:1] != ("children",) or u.block is None:
            return None
        parts = self._tile(self._sequence(self._children(u.block), u.end, glue_last=False), u.start, u.end,
                           absorb=True)
        if len(parts) == 1:
            return self._open(replace(parts[0], glue=u.glue, flags=u.flags))
        if len(parts) < 2:
            return None
        parts[-1].glue = u.glue
        for p in parts:
            p.flags = tuple(dict.fromkeys((*u.flags, *p.flags)))
        return parts

    def _sentence_spans(self, start: int, end: int) -> list[tuple[int, int]]:
        """Sentence bounds in ``[start, end)``: they depend only on the text, never on the parameters, so they are
        kept per document and a re-chunk with new parameters (live tuning) does not segment again."""
        memo = self.doc.analysis.memo(_MEMO, _Memo).sentences
        bounds = memo.get((start, end))
        if bounds is None:
            bounds = memo[(start, end)] = list(sentence_spans(self.text, start, end))
        return bounds

    def _sentences(self, u: _Unit) -> list[_Unit]:
        """A paragraph unit as sentence units (itself, as one sentence, when it has only one).

        Kept per document like the section units (they do not depend on the budget; packing never changes them).
        """
        memo = self.doc.analysis.memo(_MEMO, _Memo).sentence_units
        key = (u.start, u.end, u.chain, u.flags, u.glue, u.final)
        parts = memo.get(key)
        if parts is None:
            parts = memo[key] = self._make_sentences(u)
        return parts

    def _make_sentences(self, u: _Unit) -> list[_Unit]:
        parts = [_Unit(a, z) for a, z in self._sentence_spans(u.start, u.end)]
        parts = self._tile(parts, u.start, u.end, absorb=True) if len(parts) > 1 else []
        if len(parts) <= 1:
            return [replace(u, chain=())]
        for p in parts:
            p.flags = u.flags
        parts[-1].glue = u.glue
        return parts

    def _lines_in(self, start: int, end: int) -> list[int]:
        """Starts of the lines that begin strictly inside ``(start, end)``."""
        ls = self.st.line_starts
        return ls[bisect_right(ls, start):bisect_left(ls, end)]

    def _def_cuts(self, u: _Unit) -> list[int]:
        """Where a code block, or a piece of one, is cut between definitions (`code_cuts`): the outermost level
        that has a boundary, so a piece that is one class is cut at its methods; none in a single function."""
        origin = u.block.start if u.block is not None else u.start
        margin = fence_margin(self.st.line_starts, origin)
        return definition_cuts(code_lines(self.text, self.st.line_starts, u.start, u.end, margin))

    def _blank_cuts(self, u: _Unit) -> list[int]:
        """Starts of the first non-blank lines after blank lines."""
        text, all_starts = self.text, self.st.line_starts
        lines = self._lines_in(u.start, u.end)
        cuts = []
        for k, ls in enumerate(lines):
            prev = lines[k - 1] if k else all_starts[bisect_left(all_starts, ls) - 1]
            nxt = lines[k + 1] if k + 1 < len(lines) else u.end
            if not text[max(prev, u.start):ls].strip() and text[ls:nxt].strip():
                cuts.append(ls)
        return cuts

    def _words(self, u: _Unit) -> list[_Unit]:
        """Cut a unit that cannot fit at word boundaries (mid-word only for a single giant word): oversize."""
        text, counter, budget = self.text, self.counter, self.budget
        flags = tuple(dict.fromkeys((*u.flags, OVERSIZE)))
        pieces: list[_Unit] = []
        pos, end = u.start, u.end
        while pos < end:
            x = word_cut(text, pos, counter.end_within(pos, budget, end), end)
            s, e = trim(text, pos, x)
            if e > s:
                pieces.append(_Unit(s, e, block=u.block, flags=flags, final=True))
            pos = x
            while pos < end and text[pos].isspace():
                pos += 1
        pieces[-1].glue = u.glue
        return pieces

    # --- packing ---------------------------------------------------------------------------------------------

    def _pack(self, units: Sequence[_Unit]) -> list[tuple[int, int, set[str]]]:
        """Greedy packing of units into chunks of at most ``budget`` tokens, honouring bonds while they fit."""
        count, budget = self.counter.count, self.budget
        stream = deque(units)
        chunks: list[tuple[int, int, set[str]]] = []
        cur: list | None = None  # [start, end, flags]
        while stream:
            run = [stream.popleft()]
            while run[-1].glue and stream:
                run.append(stream.popleft())
            s, e = run[0].start, run[-1].end
            flags = {f for u in run for f in u.flags}
            if cur is not None and count(cur[0], e) <= budget:
                cur[1] = e
                cur[2] |= flags
                continue
            # Seed 000 packs the *sentences* of an overflowing section. Paragraphs are opened lazily, only where
            # one does not fit whole: the same chunks as splitting every paragraph first, at a fraction of the
            # cost.
            para = next((i for i, u in enumerate(run) if u.chain == ("sentences",)), None)
            if para is not None and (cur is not None or count(s, e) > budget):
                stream.extendleft(reversed([*run[:para], *self._sentences(run[para]), *run[para + 1:]]))
                continue
            if count(s, e) <= budget:
                if cur is not None:
                    chunks.append((cur[0], cur[1], cur[2]))
                cur = [s, e, flags]
                continue
            # The run cannot be one chunk. Cut what does not fit alone; else open a container to keep the bond
            # (a heading with the first item of a list); else let a bond go.
            pick = next((i for i, u in enumerate(run) if not u.final and count(u.start, u.end) > budget), None)
            if pick is not None:
                stream.extendleft(reversed([*run[:pick], *self._split(run[pick]), *run[pick + 1:]]))
                continue
            opened = next(((i, parts) for i, u in enumerate(run) if (parts := self._open(u))), None)
            if opened is not None:
                i, parts = opened
                stream.extendleft(reversed([*run[:i], *parts, *run[i + 1:]]))
                continue
            if len(run) == 1:  # a word piece still over the limit (a budget below one character's tokens)
                if cur is not None:
                    chunks.append((cur[0], cur[1], cur[2]))
                    cur = None
                chunks.append((s, e, flags))
                continue
            # A bond must go. Keep the longest prefix that fits whole, but never one ending with a heading (it
            # would end a chunk); with no such prefix the first unit goes alone, a heading into a fresh chunk.
            k = next((k for k in range(len(run) - 2, 0, -1)
                      if not self._ends_with_heading(run[k]) and count(s, run[k].end) <= budget), 0)
            if k == 0 and self._ends_with_heading(run[0]) and cur is not None:
                chunks.append((cur[0], cur[1], cur[2]))
                cur = None
            run[k] = replace(run[k], glue=False)
            stream.extendleft(reversed(run))
        if cur is not None:
            chunks.append((cur[0], cur[1], cur[2]))
        return chunks


"""``semantic``: sentences grouped by the meaning of their neighbours, cut where the topic changes, within bounds.

How a document is cut:

* **Units.** The body's top-level blocks, each paragraph cut into sentences (`chunkscope.document.sentences`, as
  ``section-sentence`` cuts them). A code block, table, list, quote or admonition is one unit: it is never cut
  while it fits in ``max_tokens``. A heading is glued to what follows it: a chunk never ends on a heading.
* **Vectors.** Each unit is embedded with ``buffer`` neighbours on each side (the slice of the document from the
  first to the last: LangChain's ``buffer_size``), through a `SentenceVectors` provider and its cache. The units
  and their vectors depend on the text and ``buffer`` only, never on the bounds: re-cutting with new bounds or a
  new breakpoint embeds nothing (they are kept per document, and the embedding cache keeps them across runs).
* **Breakpoints.** Between neighbours, the cosine similarity of their vectors. ``percentile`` (the default, as
  LangChain's SemanticChunker) cuts where the distance (1 - similarity) is above the document's
  ``breakpoint_amount``-th percentile of distances; ``threshold`` (as Chonkie's) cuts where the similarity is
  below ``breakpoint_amount``.
* **Bounds,** in the embedder's own tokens (``tokenizer``: the default model's word pieces, [CLS] and [SEP]
  counted, so 256 is exactly what all-MiniLM-L6-v2 reads). A group over ``max_tokens`` is cut again at its
  weakest link (the least similar neighbours), preferring a cut between units to one after a heading, that to
  one inside a unit, and a cut leaving ``min_tokens`` on both sides to one that does not. A unit that does not fit alone is cut at its child blocks, a code
  block at its definitions (`code_cuts`), then at lines, then at words (flagged ``oversize``). A group under
  ``min_tokens`` joins the neighbour it is most similar to when the two fit together.

Every chunk is an exact slice of the document; whitespace between chunks belongs to none. Each chunk's metadata
``similarity`` is the similarity across the cut before it (None for a document's first chunk and for a cut made
inside a unit).
"""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

import numpy as np

from chunkscope.chunking.model import OVERSIZE, SPLIT_FENCE, Span
from chunkscope.chunking.params import Constraint, Param, ParamError
from chunkscope.chunking.strategies._common import Protected, trim, word_cut
from chunkscope.chunking.strategies.code_cuts import code_lines, definition_cuts, fence_margin
from chunkscope.chunking.strategy import Limits, SearchSpace, Strategy
from chunkscope.document.analysis import MemoSlot
from chunkscope.document.sentences import sentence_spans
from chunkscope.tokens import DEFAULT_EMBED_MODEL, TOKENIZER_NAMES, get_tokenizer

if TYPE_CHECKING:
    from chunkscope.chunking.vectors import SentenceVectors
    from chunkscope.document.loader import Document
    from chunkscope.document.structure import Block
    from chunkscope.tokens import SliceCounter

#: Blocks cut at their child blocks when they do not fit whole.
_CONTAINERS = frozenset({"list", "list_item", "blockquote", "admonition"})
#: How a gap between two pieces may be cut, best first: between units, after a heading, inside a unit.
_FREE, _AFTER_HEADING, _INSIDE = 0, 1, 2
#: ``breakpoint_amount`` when ``breakpoint = "threshold"`` and no amount is given: a cosine similarity.
DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True, slots=True)
class _Unit:
    """A range the vectors are made for: a sentence, a whole block, or text between blocks."""

    start: int
    end: int
    block: "Block | None"  # None for a sentence or loose text
    heading: bool = False


@dataclass(slots=True)
class _Memo:
    """What this strategy keeps per document (`Analysis.memo`): units from the text alone, vectors by model and
    buffer. Never the bounds: a re-cut with new ``min_tokens``/``max_tokens``/breakpoint only groups again."""

    units: list[_Unit] | None = None
    #: Cosine similarity between unit i and unit i+1, by (provider identity, buffer).
    similarity: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)


_MEMO: MemoSlot[_Memo] = MemoSlot("semantic: units and neighbour similarities")

_DEFAULT_VECTORS: "SentenceVectors | None" = None
_DEFAULT_LOCK = threading.Lock()


def _default_vectors() -> "SentenceVectors":
    """One default-model provider per process: a strategy nobody gave vectors shares it (the model loads once)."""
    global _DEFAULT_VECTORS
    with _DEFAULT_LOCK:
        if _DEFAULT_VECTORS is None:
            from chunkscope.chunking.registry import default_sentence_vectors

            _DEFAULT_VECTORS = default_sentence_vectors()
        return _DEFAULT_VECTORS


class SemanticStrategy(Strategy):
    name: ClassVar[str] = "semantic"
    description: ClassVar[str] = (
        "Sentences grouped by embedding similarity between neighbours, cut where the topic changes, between "
        "min_tokens and max_tokens of the embedder's tokens; code blocks, tables and lists kept whole when they fit.")
    parses_markdown: ClassVar[bool] = True
    parameters: ClassVar[tuple[Param, ...]] = (
        Param("breakpoint", str, "percentile", "where the topic changes: percentile (a distance above the "
              "document's breakpoint_amount-th percentile, as LangChain) or threshold (a similarity below "
              "breakpoint_amount, as Chonkie)", choices=("percentile", "threshold")),
        Param("breakpoint_amount", float, 95.0, f"the percentile (0..100) or the similarity (0..1; "
              f"{DEFAULT_THRESHOLD} when breakpoint = threshold and none is given)", 0, 100),
        Param("max_tokens", int, 256, "largest chunk in the tokenizer's tokens, [CLS]/[SEP] included (256: what "
              "all-MiniLM-L6-v2 reads; leave room for an embed_prefix)", 8, None),
        Param("min_tokens", int, 64, "a smaller chunk joins its most similar neighbour when they fit together",
              0, None),
        Param("buffer", int, 1, "neighbours on each side embedded with a sentence (LangChain's buffer_size)", 0, 5),
        Param("tokenizer", str, DEFAULT_EMBED_MODEL, f"tokenizer the bounds are counted in: the embedder's own "
              f"({', '.join(TOKENIZER_NAMES)} or hf:<model dir>)"),
    )
    constraints: ClassVar[tuple[Constraint, ...]] = (Constraint("min_tokens", "<=", "max_tokens",
                                                                default_follows=True),)
    metadata_fields: ClassVar[tuple[str, ...]] = ("similarity",)
    search_space: ClassVar[SearchSpace] = {"max_tokens": (128, 192, 256), "breakpoint_amount": (80.0, 95.0)}
    #: It embeds while it chunks: ``tune`` tries it only when asked (see `chunkscope.chunking.vectors`).
    embeds_while_chunking: ClassVar[bool] = True

    def __init__(self, **params: Any) -> None:
        # A threshold is a similarity: the percentile's default would mean "cut everywhere".
        if params.get("breakpoint") == "threshold" and "breakpoint_amount" not in params:
            params = {**params, "breakpoint_amount": DEFAULT_THRESHOLD}
        self._vectors: SentenceVectors | None = None
        super().__init__(**params)

    def validate(self) -> None:
        tok = self.params["tokenizer"]
        if tok not in TOKENIZER_NAMES and not tok.startswith("hf:"):
            raise ParamError(f"{self.name}: tokenizer must be one of {', '.join(TOKENIZER_NAMES)} or hf:<model dir>, "
                             f"got {tok!r}")
        if self.params["breakpoint"] == "threshold" and self.params["breakpoint_amount"] > 1:
            raise ParamError(f"{self.name}: breakpoint_amount must be a similarity in 0..1 with breakpoint = "
                             f"threshold, got {self.params['breakpoint_amount']}")

    def use_vectors(self, vectors: "SentenceVectors") -> None:
        """Embed with ``vectors`` (the configured embedder's) instead of the default model's."""
        self._vectors = vectors

    @property
    def vectors(self) -> "SentenceVectors":
        """The provider given by `use_vectors`, else the default model's (loaded on first use)."""
        return self._vectors if self._vectors is not None else _default_vectors()

    def limits(self) -> Limits:
        return Limits(self.params["tokenizer"], self.params["max_tokens"], self.params["min_tokens"],
                      last_may_be_short=True)

    def spans(self, doc: "Document") -> list[Span]:
        memo = doc.analysis.memo(_MEMO, _Memo)
        if memo.units is None:
            memo.units = _units(doc)
        units = memo.units
        if not units:
            return []
        sims = _similarities(doc, units, self.vectors, self.params["buffer"], memo)
        return _Grouper(doc, self.counter(doc), units, sims, self.params).spans()


# --- units and vectors (the text and the buffer only) ----------------------------------------------------------


def _units(doc: "Document") -> list[_Unit]:
    """The body's top-level blocks in order, paragraphs as sentences, loose text between blocks as units too."""
    text = doc.text
    out: list[_Unit] = []
    pos = doc.body_start
    for b in doc.structure.blocks:
        if b.kind == "front_matter" or b.start < pos:
            continue  # front matter is metadata; a block inside the last one taken is part of it
        gs, ge = trim(text, pos, b.start)
        if ge > gs:
            out.append(_Unit(gs, ge, None))  # link reference definitions and the like: text a chunk must hold
        s, e = trim(text, b.start, b.end)
        if e > s:
            if b.kind == "paragraph":
                out.extend(_Unit(a, z, None) for a, z in sentence_spans(text, s, e))
            else:
                out.append(_Unit(s, e, b, heading=b.kind == "heading"))
        pos = max(pos, b.end)
    gs, ge = trim(text, pos, len(text))
    if ge > gs:
        out.append(_Unit(gs, ge, None))
    return out


def _similarities(doc: "Document", units: Sequence[_Unit], vectors: "SentenceVectors", buffer: int,
                  memo: _Memo) -> np.ndarray:
    """Cosine similarity of each unit to the next, each unit read with ``buffer`` neighbours on each side."""
    if len(units) < 2:
        return np.zeros(0, dtype=np.float32)
    key = (vectors.identity, buffer)
    sims = memo.similarity.get(key)
    if sims is None:
        n, text = len(units), doc.text
        texts = [text[units[max(0, i - buffer)].start:units[min(n - 1, i + buffer)].end] for i in range(n)]
        vecs = np.asarray(vectors.embed(texts), dtype=np.float32)
        if vecs.shape[0] != n:
            raise ValueError(f"the sentence vectors gave {vecs.shape[0]} rows for {n} texts")
        sims = memo.similarity[key] = np.einsum("ij,ij->i", vecs[:-1], vecs[1:])
    return sims


# --- grouping (the bounds and the breakpoint) ------------------------------------------------------------------


@dataclass(slots=True)
class _Piece:
    """A unit, or a part of one that does not fit alone."""

    start: int
    end: int
    unit: int  # index of the unit it belongs to
    tokens: int  # its content tokens (without the tokenizer's special tokens)
    flags: tuple[str, ...] = ()


class _Grouper:
    """Groups one document's pieces into chunks: breakpoints first, then the bounds."""

    def __init__(self, doc: "Document", counter: "SliceCounter", units: Sequence[_Unit], sims: np.ndarray,
                 params: dict[str, Any]) -> None:
        self.doc = doc
        self.text = doc.text
        self.counter = counter
        self.units = units
        self.sims = sims
        self.max = int(params["max_tokens"])
        self.min = int(params["min_tokens"])
        self.mode = params["breakpoint"]
        self.amount = float(params["breakpoint_amount"])
        # A slice's count is the sum of its words' pieces plus the special tokens ([CLS]/[SEP]): units are cut at
        # whitespace, so groups are summed from their pieces instead of encoding every candidate slice.
        self.specials = counter.tokenizer.count("")

    def spans(self) -> list[Span]:
        pieces = [p for i, u in enumerate(self.units) for p in self._fit(u.start, u.end, i, u.block)]
        gaps = [self._gap(a, b) for a, b in zip(pieces, pieces[1:])]
        cum = [0]
        for p in pieces:
            cum.append(cum[-1] + p.tokens)
        self.cum = cum
        self.gaps = gaps
        cuts = self._breakpoints(gaps)
        groups: list[tuple[int, int]] = []  # [first piece, last piece + 1)
        lo = 0
        for c in [*cuts, len(pieces) - 1]:
            groups.extend(self._bound(lo, c + 1))
            lo = c + 1
        groups = self._merge_small(groups)
        return self._spans(pieces, groups)

    # gaps and breakpoints

    def _gap(self, a: _Piece, b: _Piece) -> tuple[int, float]:
        """How a cut between two neighbouring pieces ranks: its kind (`_FREE`…) and the similarity across it."""
        if a.unit == b.unit:
            return (_INSIDE, 1.0)
        kind = _AFTER_HEADING if self.units[a.unit].heading else _FREE
        return (kind, float(self.sims[a.unit]))

    def _breakpoints(self, gaps: Sequence[tuple[int, float]]) -> list[int]:
        """Indices of the gaps where the topic changes (a cut after that piece)."""
        free = [(k, s) for k, (kind, s) in enumerate(gaps) if kind == _FREE]
        if not free:
            return []
        if self.mode == "threshold":
            return [k for k, s in free if s < self.amount]
        distances = np.array([1.0 - s for _, s in free])
        limit = float(np.percentile(distances, self.amount))
        return [k for (k, _), d in zip(free, distances) if d > limit]

    def _tokens(self, lo: int, hi: int) -> int:
        """Tokens of pieces ``[lo, hi)`` as one chunk."""
        return self.cum[hi] - self.cum[lo] + self.specials

    def _bound(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """Pieces ``[lo, hi)`` as groups of at most max_tokens, cut at the weakest links."""
        if hi - lo <= 1 or self._tokens(lo, hi) <= self.max:
            return [(lo, hi)]
        best = min(range(lo, hi - 1), key=lambda k: self._cut_rank(lo, k, hi))
        return self._bound(lo, best + 1) + self._bound(best + 1, hi)

    def _cut_rank(self, lo: int, k: int, hi: int) -> tuple[int, bool, float, int]:
        kind, sim = self.gaps[k]
        small = self._tokens(lo, k + 1) < self.min or self._tokens(k + 1, hi) < self.min
        # Inside a unit, any cut is as good as another for meaning: keep the pieces even.
        balance = abs(self._tokens(lo, k + 1) - self._tokens(k + 1, hi))
        return (kind, small, sim if kind != _INSIDE else 0.0, balance)

    def _merge_small(self, groups: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Join each group under min_tokens to its most similar neighbour while the two fit in max_tokens."""
        groups = list(groups)
        stuck: set[tuple[int, int]] = set()
        while len(groups) > 1:
            small = [i for i, g in enumerate(groups) if g not in stuck and self._tokens(*g) < self.min]
            if not small:
                break
            i = min(small, key=lambda j: self._tokens(*groups[j]))
            lo, hi = groups[i]
            options = []
            if i > 0 and self._tokens(groups[i - 1][0], hi) <= self.max:
                options.append((self._join_rank(lo - 1), i - 1))
            if i + 1 < len(groups) and self._tokens(lo, groups[i + 1][1]) <= self.max:
                options.append((self._join_rank(hi - 1), i))
            if not options:
                stuck.add(groups[i])
                continue
            _, left = min(options)
            groups[left:left + 2] = [(groups[left][0], groups[left + 1][1])]
        return groups

    def _join_rank(self, k: int) -> tuple[int, float]:
        """Gap ``k`` as a join: inside a unit or after a heading first, then the most similar neighbours."""
        kind, sim = self.gaps[k]
        return (-kind, -sim)

    def _spans(self, pieces: Sequence[_Piece], groups: Sequence[tuple[int, int]]) -> list[Span]:
        prot = Protected.of(self.doc)
        out: list[Span] = []
        for lo, hi in groups:
            s, e = pieces[lo].start, pieces[hi - 1].end
            warnings = sorted({f for p in pieces[lo:hi] for f in p.flags})
            if prot.cuts(self.text, s) or prot.cuts(self.text, e):
                warnings.append(SPLIT_FENCE)
            if OVERSIZE not in warnings and self.counter.count(s, e) > self.max:
                warnings.append(OVERSIZE)
            similarity = None
            if lo > 0 and self.gaps[lo - 1][0] != _INSIDE:
                similarity = round(self.gaps[lo - 1][1], 4)
            out.append(Span(s, e, {"similarity": similarity}, warnings))
        return out

    # units that do not fit alone

    def _fit(self, start: int, end: int, unit: int, block: "Block | None") -> list[_Piece]:
        """``[start, end)`` as pieces of at most max_tokens: itself, or cut at children, definitions, lines, words."""
        tokens = self.counter.count(start, end)
        if tokens <= self.max:
            return [_Piece(start, end, unit, tokens - self.specials)]
        for bounds in self._cuts(start, end, block):
            parts = _tile(self.text, [start, *bounds, end])
            if len(parts) > 1:
                kids = self._children(block) if block is not None and block.kind in _CONTAINERS else []
                out: list[_Piece] = []
                for a, z in parts:
                    kid = next((k for k in kids if k.start < z and a < k.end), None)
                    out.extend(self._fit(a, z, unit, kid))
                return out
        return self._words(start, end, unit)

    def _cuts(self, start: int, end: int, block: "Block | None") -> list[list[int]]:
        """Ways to cut ``[start, end)``, tried in order: child blocks, sentences, definitions, lines."""
        text, ls = self.text, self.doc.structure.line_starts
        ways: list[list[int]] = []
        if block is not None and block.kind in _CONTAINERS:
            ways.append([k.start for k in self._children(block) if start < k.start < end])
        if block is None or block.kind == "paragraph":
            ways.append([a for a, _ in sentence_spans(text, start, end)[1:]])
        if block is not None and block.kind in ("fence", "code"):
            margin = fence_margin(ls, block.start)
            ways.append(definition_cuts(code_lines(text, ls, start, end, margin)))
        ways.append(ls[bisect_right(ls, start):bisect_left(ls, end)])
        return ways

    def _children(self, block: "Block") -> list["Block"]:
        blocks = self.doc.structure.blocks
        return [b for b in blocks if b.depth == block.depth + 1 and block.start <= b.start < block.end]

    def _words(self, start: int, end: int, unit: int) -> list[_Piece]:
        """A line too long alone, cut at spaces (mid-word only for one giant word): flagged oversize."""
        text, out, pos = self.text, [], start
        while pos < end:
            x = word_cut(text, pos, self.counter.end_within(pos, self.max, end), end)
            s, e = trim(text, pos, x)
            if e > s:
                out.append(_Piece(s, e, unit, self.counter.count(s, e) - self.specials, (OVERSIZE,)))
            pos = x
        return out


def _tile(text: str, bounds: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive ranges between ``bounds``, each trimmed; empty ones left out."""
    out = []
    for a, z in zip(bounds, bounds[1:]):
        s, e = trim(text, a, z)
        if e > s:
            out.append((s, e))
    return out

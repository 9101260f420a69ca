"""Seed 004's chunker: a recursive separator splitter with tiktoken lengths, cut on offsets.

Seed 004 (ADR-003) chunks every chapter with LangChain's ``RecursiveCharacterTextSplitter`` built by
``from_tiktoken_encoder`` (512 tokens, 50 overlap, separators ``["\\n\\n", "\\n", ". ", " ", ""]``). This module
gives chunk-for-chunk the same texts as that splitter run on the page body (the text after the YAML front
matter, which is metadata and never chunk text), written from the splitter's documented behaviour, but on
``(start, end)`` ranges into ``Document.text`` instead of strings:

* **Choosing a separator.** For a range, the first separator that occurs inside it is used, and the ones after it
  are kept for recursion. ``""`` always matches (cut between characters) and ends the list. When none occurs and
  ``""`` is absent, the last separator is used anyway (it splits nothing) and there is nothing to recurse with.
* **Splitting.** The range is cut at the start of every (non-overlapping, left to right) match, so each separator
  begins the piece after it; an empty first piece is dropped. Pieces are contiguous.
* **Measuring.** A piece's length is the token count of that piece encoded on its own. A piece with fewer than
  ``chunk_size`` tokens is "good"; good pieces in a row are merged. A piece at or over the size is split again
  with the remaining separators, or, when none remain, becomes a chunk as it is (not stripped).
* **Merging.** Pieces are added to a window while the *sum of their own counts* stays within ``chunk_size``. When
  the next piece would overflow, the window is emitted, then pieces are dropped from its front while the sum
  exceeds ``chunk_overlap`` (or the next piece still would not fit): what remains is the overlap carried into the
  next chunk. An emitted window is the slice from its first to its last piece, with surrounding whitespace
  trimmed; a window of whitespace only is dropped.

Because the sum of separately counted pieces is not the count of the joined text (tokens merge across piece
edges), a merged chunk can be a token or so over ``chunk_size``; such chunks carry the ``oversize`` warning, as
do unsplittable pieces. Counts come from the document's `SliceCounter` (exact), a whole run of pieces at a time;
the pieces of each (range, separator) and their counts are kept in the document's analysis (a memo slot of this
module's, per tokenizer), so re-chunking with a new size or overlap re-uses every count already made.

Headings (the ``heading`` metadata) and fenced code blocks (the ``split-fence`` warning) come from the document's
`Outline`, so chunking never costs a full Markdown parse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from chunkscope.document.analysis import MemoSlot
from chunkscope.chunking.model import OVERSIZE, SPLIT_FENCE, Span
from chunkscope.chunking.params import Constraint, Param, ParamError
from chunkscope.chunking.strategies._common import front_matter_title, keep_split_fences_no_chunk_holds
from chunkscope.chunking.strategy import Limits, Strategy
from chunkscope.site.numbering import doc_numbering
from chunkscope.document.structure import first_content, trim

if TYPE_CHECKING:
    from chunkscope.document.loader import Document

#: Seed 004's separators: paragraphs, lines, sentences, words, characters.
DEFAULT_SEPARATORS = ("\n\n", "\n", ". ", " ", "")
#: Per tokenizer, the `RecursiveSplitter` memo of each (start, end, separator): its pieces and their counts.
_PIECES: MemoSlot[dict[str, dict[tuple[int, int, str], tuple[list[int], list[int]]]]] = MemoSlot(
    "recursive: pieces and counts per tokenizer")


class RecursiveSplitter:
    """The splitting and merging rules of the module docstring over one text, with a token counter.

    ``split(start, end)`` returns ``(start, end, total)`` per chunk, where ``total`` is the splitter's own notion
    of the chunk's size: the sum of its pieces' separate counts (or the piece's count for an unsplit piece).
    """

    __slots__ = ("text", "size", "overlap", "separators", "piece_counts", "memo", "out")

    def __init__(self, text: str, chunk_size: int, chunk_overlap: int, separators: Sequence[str],
                 piece_counts: Callable[[list[int]], list[int]], memo: dict | None = None) -> None:
        self.text = text
        self.size = chunk_size
        self.overlap = chunk_overlap
        self.separators = tuple(separators)
        self.piece_counts = piece_counts
        # (start, end, separator) -> the pieces of that range and their counts. Neither depends on the size or
        # the overlap, so a document re-chunked with new ones measures nothing again.
        self.memo: dict[tuple[int, int, str], tuple[list[int], list[int]]] = {} if memo is None else memo
        self.out: list[tuple[int, int, int]] = []

    def split(self, start: int, end: int) -> list[tuple[int, int, int]]:
        self.out = []
        if end > start:
            self._split(start, end, self.separators)
        return self.out

    def _split(self, start: int, end: int, separators: tuple[str, ...]) -> None:
        text = self.text
        sep = separators[-1]
        rest: tuple[str, ...] = ()
        for i, s in enumerate(separators):
            if not s:
                sep = s
                break
            if text.find(s, start, end) != -1:
                sep, rest = s, separators[i + 1:]
                break

        size = self.size
        key = (start, end, sep)
        measured = self.memo.get(key)
        if measured is None:
            bounds = _piece_bounds(text, sep, start, end)
            measured = self.memo[key] = (bounds, self.piece_counts(bounds))
        bounds, counts = measured
        run: list[tuple[int, int, int]] = []  # good pieces waiting to be merged
        for a, b, n in zip(bounds, bounds[1:], counts):
            if n < size:
                run.append((a, b, n))
                continue
            if run:
                self._merge(run)
                run = []
            if rest:
                self._split(a, b, rest)
            else:
                self.out.append((a, b, n))
        if run:
            self._merge(run)

    def _merge(self, run: list[tuple[int, int, int]]) -> None:
        size, overlap = self.size, self.overlap
        head = 0  # the window is run[head:i]
        total = 0
        for i, (_, _, n) in enumerate(run):
            if total + n > size and i > head:
                self._emit(run[head][0], run[i - 1][1], total)
                # Drop pieces from the front until what is left may be carried over as overlap.
                while total > overlap or (total + n > size and total > 0):
                    total -= run[head][2]
                    head += 1
            total += n
        self._emit(run[head][0], run[-1][1], total)

    def _emit(self, a: int, b: int, total: int) -> None:
        a, b = trim(self.text, a, b)
        if b > a:
            self.out.append((a, b, total))


def _piece_bounds(text: str, sep: str, start: int, end: int) -> list[int]:
    """Where the contiguous pieces of ``[start, end)`` begin, cut at the start of each match of ``sep`` (``""``:
    every character), then ``end``."""
    if not sep:
        return list(range(start, end + 1))
    find = text.find
    step = len(sep)
    out = [start]
    f = find(sep, start, end)
    while f != -1:
        if f > out[-1]:
            out.append(f)
        f = find(sep, f + step, end)
    out.append(end)
    return out


class RecursiveStrategy(Strategy):
    """LangChain's recursive character splitter with tiktoken lengths, exactly as seed 004 configures it."""

    name = "recursive"
    seed = "004"
    description = (
        "Recursive separator splitting (paragraph, line, sentence, word, character) into token-budgeted chunks "
        "with overlap; the same chunks as LangChain's RecursiveCharacterTextSplitter.from_tiktoken_encoder on the "
        "page body."
    )
    parameters = (
        Param("chunk_size", int, 512, "Most tokens in a chunk, as the pieces' separate counts add up", min=1, max=100000),
        Param("chunk_overlap", int, 50, "Tokens of trailing pieces carried into the next chunk (< chunk_size)", min=0),
        Param("encoding", str, "cl100k_base", "tiktoken encoding that measures lengths", choices=("cl100k_base", "o200k_base")),
        Param("separators", list, list(DEFAULT_SEPARATORS), "Separators tried in order; \"\" cuts between characters"),
        # Seed 004's pipeline calls split_text(chapter_markdown) on the whole file, so it embedded the front matter
        # (slug, sidebar_position, title); kept by name for reproducing that pipeline, never the default.
        Param("include_front_matter", bool, False, "Chunk the YAML front matter too, as seed 004's pipeline did "
              "(it splits the whole file)"),
    )
    constraints = (Constraint("chunk_overlap", "<", "chunk_size"),)
    search_space = {"chunk_size": (128, 256, 384, 512), "chunk_overlap": (0, 50)}
    required_metadata = ("chapter_id", "heading")
    metadata_fields = ("module", "week_number", "chunk_index", "token_count")
    citation_template = "{chapter_id} › {heading}"

    def validate(self) -> None:
        p = self.params
        seps = p["separators"]
        if not seps or not all(isinstance(s, str) for s in seps):
            raise ParamError(f"{self.name}: separators must be a non-empty list of strings, got {seps!r}")
        p["separators"] = list(seps)  # never share (or let callers mutate) the declared default

    def limits(self) -> Limits:
        return Limits(self.params["encoding"], self.params["chunk_size"])

    def ranges(self, doc: "Document") -> list[tuple[int, int, int]]:
        """The chunk ranges ``(start, end, summed piece count)`` for the body of ``doc`` (its whole text with
        ``include_front_matter``)."""
        p = self.params
        counter = self.counter(doc)
        memo = doc.analysis.memo(_PIECES, dict).setdefault(self.length_tokenizer, {})
        splitter = RecursiveSplitter(doc.text, p["chunk_size"], p["chunk_overlap"], p["separators"],
                                     counter.piece_counts, memo)
        return splitter.split(0 if p["include_front_matter"] else doc.body_start, len(doc.text))

    def spans(self, doc: "Document") -> list[Span]:
        text = doc.text
        size = self.params["chunk_size"]
        count = self.counter(doc).count
        numbering = doc_numbering(doc)
        ol = doc.outline
        opening = front_matter_title(doc)  # the text before the first heading
        spans: list[Span] = []
        for index, (a, b, _) in enumerate(self.ranges(doc)):
            n = count(a, b)
            h = ol.heading_of(first_content(text, a, b), b)
            warnings = []
            # A boundary strictly inside a fenced code block splits it.
            if ol.fence_at(a) or ol.fence_at(b):
                warnings.append(SPLIT_FENCE)
            if n > size:
                warnings.append(OVERSIZE)
            meta = {
                "chapter_id": numbering.chapter_id,
                "module": numbering.module,
                "week_number": numbering.week,
                "chunk_index": index,
                "heading": h.text if h is not None else opening,
                "token_count": n,
            }
            spans.append(Span(a, b, meta, warnings))
        return keep_split_fences_no_chunk_holds(spans, ol.fence_containing)

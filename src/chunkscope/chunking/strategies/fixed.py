"""Fixed token windows: the baseline seeds 000, 001 and 003 weighed and rejected.

Window ``i`` covers the body's tokens ``[i * (size - overlap), i * (size - overlap) + size)`` (the body: the text
after the YAML front matter, which is metadata and never chunk text); its chunk is the slice of text from the
first of those tokens to the last (token char offsets come from the document's whole-text `SliceCounter`). A
slice re-encoded on its own can tokenize differently at its edges, so each chunk's *exact* count is checked and
its end pulled back until the count fits. A window never starts after the previous chunk's end, so pulling an
end back never leaves text uncovered. The windows ignore Markdown entirely: that is the point of the baseline,
and why chunks that cut a fenced code block carry ``split-fence``. Headings and fences come from the
document's `Outline` (no full Markdown parse).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING

from chunkscope.chunking.model import OVERSIZE, SPLIT_FENCE, Span
from chunkscope.chunking.params import Constraint, Param
from chunkscope.chunking.strategies._common import front_matter_title, keep_split_fences_no_chunk_holds
from chunkscope.chunking.strategy import Limits, Strategy
from chunkscope.site.numbering import doc_numbering
from chunkscope.document.structure import first_content
from chunkscope.tokens import TiktokenSliceCounter

if TYPE_CHECKING:
    from chunkscope.document.loader import Document


class FixedStrategy(Strategy):
    """Fixed-size token windows with overlap, blind to structure."""

    name = "fixed"
    seed = "000/001/003 rejected baseline"
    description = (
        "Fixed windows of chunk_size tokens of the page body, each starting chunk_size - chunk_overlap tokens after "
        "the last; the structure-blind baseline the seeds rejected."
    )
    parameters = (
        Param("chunk_size", int, 512, "Tokens per window (each chunk's exact count stays within it)", min=1, max=100000),
        Param("chunk_overlap", int, 50, "Tokens each window shares with the previous one (< chunk_size)", min=0),
        Param("encoding", str, "cl100k_base", "tiktoken encoding of the windows", choices=("cl100k_base", "o200k_base")),
    )
    constraints = (Constraint("chunk_overlap", "<", "chunk_size"),)
    search_space = {"chunk_size": (128, 256, 384, 512), "chunk_overlap": (0, 50)}
    required_metadata = ("chapter_id",)
    metadata_fields = ("chunk_index", "token_count", "heading")
    citation_template = "{chapter_id} › {heading}"

    def limits(self) -> Limits:
        return Limits(self.params["encoding"], self.params["chunk_size"])

    def ranges(self, doc: "Document") -> list[tuple[int, int]]:
        """``(start, end)`` of every window over the body, each with an exact count within chunk_size."""
        size = self.params["chunk_size"]
        step = size - self.params["chunk_overlap"]
        counter = self.counter(doc)
        if not isinstance(counter, TiktokenSliceCounter):  # `encoding` allows tiktoken's encodings only
            raise TypeError(f"{self.name}: windows need a tiktoken encoding, got {self.length_tokenizer!r}")
        count = counter.count
        starts = counter.starts  # char offset of each whole-document token, then len(text)
        ntok = len(starts) - 1
        tlen = len(doc.text)

        def fit(a: int, b: int) -> int:
            """Pull ``b`` back until the slice's exact count fits; a lone character that cannot fit stays whole."""
            b = max(b, a + 1)
            if count(a, b) > size:
                b = max(counter.end_within(a, size, b), a + 1)
            return b

        out: list[tuple[int, int]] = []
        a = doc.body_start
        first_tok = bisect_left(starts, a)  # the first token starting in the body
        while a < tlen:
            target = starts[min(first_tok + size, ntok)]
            b = fit(a, target)
            if out and b <= out[-1][1]:
                # Nothing new (the window's tokens sit inside characters already cut, or the overlap took all
                # the room): start at the previous end instead, so every chunk moves on.
                a = out[-1][1]
                b = fit(a, target)
            out.append((a, b))
            if b >= tlen:
                break
            first_tok += step
            # Never start after the previous end (a pulled-back end must not leave a gap), nor before the
            # previous start (chunks stay in order after a window was moved on).
            a = max(a, min(starts[min(first_tok, ntok)], b))
        return out

    def spans(self, doc: "Document") -> list[Span]:
        text = doc.text
        size = self.params["chunk_size"]
        count = self.counter(doc).count
        chapter_id = doc_numbering(doc).chapter_id
        ol = doc.outline
        opening = front_matter_title(doc)  # the text before the first heading
        spans: list[Span] = []
        for a, b in self.ranges(doc):
            if text[a:b].isspace():  # a window of blank lines carries nothing to retrieve
                continue
            n = count(a, b)
            h = ol.heading_of(first_content(text, a, b), b)
            warnings = []
            if ol.fence_at(a) or ol.fence_at(b):
                warnings.append(SPLIT_FENCE)
            if n > size:  # only a single character that alone is more tokens than the window
                warnings.append(OVERSIZE)
            meta = {
                "chapter_id": chapter_id,
                "chunk_index": len(spans),
                "token_count": n,
                "heading": h.text if h is not None else opening,
            }
            spans.append(Span(a, b, meta, warnings))
        return keep_split_fences_no_chunk_holds(spans, ol.fence_containing)

"""embed-truncation: a chunk's embed text longer than the embedding model reads (its tail is never embedded).

Word pieces are counted with the model's own tokenizer (bundled for all-MiniLM-L6-v2), so lint needs neither the
model's weights nor torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...tokens import embed_tokenizer
from ..findings import WARNING
from ..rule import Rule

if TYPE_CHECKING:
    from ...chunk import Chunk
    from ..context import LintContext
    from ..findings import Finding


class EmbedCheck:
    """Word-piece counts of chunks' embed texts against the embedding model's ``max_seq_length``.

    Counting every chunk with the model's tokenizer would cost as much as chunking the tree; the word-piece
    tokenizer counts by cached runs (see `WordPieceTokenizer.count_batch`) and chunks that certainly fit are
    skipped (`WordPieceTokenizer.may_exceed`), which keeps lint within 1.5x a chunking run (bench/bench_lint.py).
    """

    def __init__(self, model: str, limit: int | None = None) -> None:
        self.model = model
        self.tok = embed_tokenizer(model)
        self.limit = limit or self.tok.max_seq_length

    def counts(self, chunks: Sequence[Chunk]) -> list[int | None]:
        """Each chunk's word pieces (exactly what `chunk.count_embed_tokens` gives) where it could be truncated:
        the chunk's own ``embed_tokens`` when the caller counted them already, None for a chunk that certainly
        fits. The chunks are left as they are."""
        out = [c.embed_tokens for c in chunks]
        todo = [i for i, c in enumerate(chunks) if out[i] is None and self.tok.may_exceed(c.embed_text, self.limit)]
        if todo:
            for i, n in zip(todo, self.tok.count_batch([chunks[i].embed_text for i in todo])):
                out[i] = n
        return out

    def truncation(self, c: Chunk, pieces: int | None) -> int | None:
        """Where reading stops in ``c``'s embed text (a character offset), or None when the model reads it all."""
        if pieces is None or pieces <= self.limit:
            return None
        return self.tok.truncation_offset(c.embed_text, self.limit)


def _doc_offset(c: Chunk, off: int) -> int | None:
    """Map an offset in the chunk's embed text back to the document (None when it lies in added text)."""
    if c.embed_text_override is None:
        return c.start + off
    p = c.embed_text_override.find(c.text)
    if p < 0 or off < p:
        return None
    return c.start + min(off - p, len(c.text))


class EmbedTruncation(Rule):
    id = "embed-truncation"
    severity = WARNING
    summary = "a chunk's embed text is longer than the embedding model reads (the tail is invisible to retrieval)"
    hint = "use a smaller chunk size, or an embedding model with a longer max_seq_length"
    threshold = "maximum word pieces the embedding model reads, with [CLS] and [SEP]"

    def check(self, ctx: LintContext) -> list[Finding]:
        settings = ctx.settings
        embed = ctx.run.shared(self.id, lambda: EmbedCheck(settings.embed_model, settings.thresholds.get(self.id)))
        out: list[Finding] = []
        for c, pieces in zip(ctx.chunks, embed.counts(ctx.chunks)):
            off = embed.truncation(c, pieces)
            if off is None:
                continue
            msg = (f"chunk {c.index}'s embed text is {pieces} word pieces; {embed.model} reads {embed.limit} "
                   f"(with [CLS]/[SEP])")
            where = _doc_offset(c, off)
            if where is not None:
                lost = max(0.0, min(1.0, (c.end - where) / max(1, c.end - c.start)))
                msg += (f", so the text from line {ctx.lines.line_of(where)} on ({lost:.0%} of the chunk) is not "
                        f"embedded")
            else:
                msg += ", so the end of its embed text is not embedded"
            out.append(ctx.chunk_finding(self, c, msg))
        return out

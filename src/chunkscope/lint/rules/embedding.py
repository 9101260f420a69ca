"""embed-truncation: a chunk's embed text longer than the embedder reads (its tail is never embedded).

Tokens are counted with the configured embedder's own tokenizer (`tokens.embed_tokenizer`): a local model's word
pieces (bundled for all-MiniLM-L6-v2), an ``openai:`` endpoint's cl100k_base tokens, so lint needs neither the
model's weights nor torch nor the network. The limit is the embedder's (`EmbedderSpec.max_tokens`: 256 word pieces
for MiniLM, 8191 tokens for OpenAI's models) unless ``[lint] thresholds.embed-truncation`` sets another.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from chunkscope.embedding.registry import parse_embedder
from chunkscope.tokens import TIKTOKEN_NAMES, embed_tokenizer
from chunkscope.lint.findings import WARNING
from chunkscope.lint.rule import Rule

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.embedding.spec import EmbedderSpec
    from chunkscope.lint.context import LintContext
    from chunkscope.lint.findings import Finding


class EmbedCheck:
    """Token counts of chunks' embed texts, in the embedder's own tokenizer, against what it reads.

    Counting every chunk with the model's tokenizer would cost as much as chunking the tree; the word-piece
    tokenizer counts by cached runs (see `WordPieceTokenizer.count_batch`) and chunks that certainly fit are
    skipped (``may_exceed``), which keeps lint within 1.5x a chunking run (bench/bench_lint.py).

    Args:
        spec: the embedder (``[embedder]``, `Config.embedder_spec`), or what a user writes for one.
        limit: the most tokens it reads; None: its own limit (`EmbedderSpec.max_tokens`).
    """

    def __init__(self, spec: EmbedderSpec | str, limit: int | None = None) -> None:
        if isinstance(spec, str):
            spec = parse_embedder(spec)
        self.model = spec.text
        self.tok = embed_tokenizer(spec)
        self.limit = limit or spec.max_tokens
        # Word pieces count [CLS] and [SEP], which the limit includes; an endpoint's tokens are the text's own.
        self.unit = f"{spec.tokenizer_name} tokens" if spec.tokenizer_name in TIKTOKEN_NAMES else "word pieces"

    def counts(self, chunks: Sequence[Chunk]) -> list[int | None]:
        """Each chunk's tokens (what `chunking.model.count_embed_tokens` gives) where it could be truncated: the
        chunk's own ``embed_tokens`` when the caller counted them already, None for a chunk that certainly
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
    at = c.embed_offset
    if at is None or off < at:
        return None
    return c.start + min(off - at, len(c.text))


def embedder_of(ctx: LintContext) -> EmbedderSpec:
    """The embedder the run's configuration names (``[embedder]``), else the default model."""
    cfg = ctx.config
    return cfg.embedder_spec() if cfg is not None else parse_embedder(ctx.settings.embed_model)


class EmbedTruncation(Rule):
    id = "embed-truncation"
    severity = WARNING
    summary = "a chunk's embed text is longer than the embedder reads (the tail is invisible to retrieval)"
    hint = ("shorten the section, or split it with a subheading, so that each chunk fits what the embedder reads "
            "(or lower the strategy's chunk size, or choose an embedder that reads longer texts, in chunkscope.toml)")
    threshold = ("most tokens the embedder reads, in its own tokenizer ([CLS]/[SEP] included for word pieces; "
                 "default: the embedder's limit)")

    def check(self, ctx: LintContext) -> list[Finding]:
        limit = ctx.settings.thresholds.get(self.id)
        embed = ctx.run.shared(self.id, lambda: EmbedCheck(embedder_of(ctx), limit))
        out: list[Finding] = []
        for c, pieces in zip(ctx.chunks, embed.counts(ctx.chunks)):
            off = embed.truncation(c, pieces)
            if off is None:
                continue
            msg = f"chunk {c.index}'s embed text is {pieces} {embed.unit}; {embed.model} reads {embed.limit}"
            if embed.unit == "word pieces":
                msg += " (with [CLS]/[SEP])"
            where = _doc_offset(c, off)
            if where is not None:
                lost = max(0.0, min(1.0, (c.end - where) / max(1, c.end - c.start)))
                # A few words past the limit round to "0%", which reads as nothing lost.
                share = "under 1%" if 0 < lost < 0.005 else f"{lost:.0%}"
                msg += (f", so the text from line {ctx.lines.line_of(where)} on ({share} of the chunk) is not "
                        f"embedded")
            else:
                msg += ", so the end of its embed text is not embedded"
            out.append(ctx.chunk_finding(self, c, msg))
        return out

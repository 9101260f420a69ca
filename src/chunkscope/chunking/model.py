"""The chunk model: `Chunk` (an exact slice of its document), `Span` (a strategy's decision), `ChunkedDoc`.

Every built-in strategy returns chunks that are slices of their document: ``chunk.text ==
doc.text[chunk.start:chunk.end]``. Strategies decide *spans*; `chunkscope.chunking.strategy.ChunkBuilder`
turns spans into chunks. `count_embed_tokens` fills in what the embedder will read of each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

# The tokenizers load after the first frame: the app's start-up does without chunkscope.tokens.
from chunkscope.paths import DEFAULT_EMBED_MODEL

if TYPE_CHECKING:
    from chunkscope.document.loader import Document
    from chunkscope.embedding.spec import EmbedderSpec


#: Warning ids a strategy attaches itself (lint adds its own rule ids).
SPLIT_FENCE = "split-fence"
OVERSIZE = "oversize"


@dataclass(slots=True)
class Chunk:
    """One chunk of one document.

    ``start``/``end`` are character offsets into ``Document.text`` and ``text`` is exactly that slice. Lines are
    1-based and inclusive. ``overlap`` is the range this chunk shares with the previous one, if any.
    ``embed_tokens`` is counted lazily (see `count_embed_tokens`): word-piece counting costs more than chunking.
    """

    path: str
    index: int
    start: int
    end: int
    start_line: int
    end_line: int
    text: str
    tokens: int
    heading_path: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    overlap: tuple[int, int] | None = None
    embed_text_override: str | None = None
    embed_tokens: int | None = None

    @property
    def embed_text(self) -> str:
        """What is sent to the embedding model: the text, after the strategy's ``embed_prefix`` when one is set
        (the text itself stays the exact slice). ``embed_tokens`` counts this, prefix included."""
        return self.text if self.embed_text_override is None else self.embed_text_override

    @property
    def embed_offset(self) -> int | None:
        """Where the chunk's text starts inside `embed_text`: 0 without a prefix, the prefix's length with one;
        None when a strategy embeds a text that does not hold it. Maps an offset of the embedded text (where the
        model stops reading) back to the document: ``start + offset - embed_offset``."""
        embedded = self.embed_text_override
        if embedded is None:
            return 0
        # A prefix is put in front: the text is the tail. Searching from the left could find it in the prefix
        # (a short chunk whose words the heading repeats).
        if embedded.endswith(self.text):
            return len(embedded) - len(self.text)
        at = embedded.find(self.text)
        return at if at >= 0 else None

    @property
    def words(self) -> int:
        return len(self.text.split())

    def to_dict(self) -> dict[str, Any]:
        """The JSONL record of ``chunkscope chunk``."""
        return {
            "path": self.path,
            "index": self.index,
            "start": self.start,
            "end": self.end,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "text": self.text,
            "tokens": self.tokens,
            "embed_tokens": self.embed_tokens,
            "heading_path": list(self.heading_path),
            "metadata": self.metadata,
            "warnings": list(self.warnings),
            "overlap": list(self.overlap) if self.overlap else None,
            "embed_text": self.embed_text if self.embed_text_override is not None else None,
        }


@dataclass(slots=True)
class Span:
    """A strategy's decision: a range to cut, with the metadata and warnings only the strategy knows."""

    start: int
    end: int
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    embed_text: str | None = None


@dataclass
class ChunkedDoc:
    """The chunks of one document, or why there are none."""

    doc: "Document"
    chunks: list[Chunk]
    error: str | None = None


def count_embed_tokens(chunks: Sequence[Chunk], model: str | EmbedderSpec = DEFAULT_EMBED_MODEL) -> None:
    """Fill ``embed_tokens`` of every chunk that lacks it, in one batch through the embedder's own tokenizer (a
    local model's word pieces, an ``openai:`` endpoint's cl100k_base tokens: `tokens.embed_tokenizer`)."""
    todo = [c for c in chunks if c.embed_tokens is None]
    if not todo:
        return
    from chunkscope.tokens import embed_tokenizer  # here: see the note on the imports above

    counts = embed_tokenizer(model).count_batch([c.embed_text for c in todo])
    for c, n in zip(todo, counts):
        c.embed_tokens = n


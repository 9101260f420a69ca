"""What the embedding model reads of each chunk: where it stops reading, and the text no chunk's embedding reads.

Shared by the app's files view, the source view's shading and ``tune``'s structure score, so that all three
count unread text the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

from chunkscope.document.spans import covered

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.embedding.spec import EmbedderSpec


def embed_cuts(chunks: Sequence["Chunk"], model: "str | EmbedderSpec") -> dict[int, int]:
    """Where the embedding model stops reading, for each chunk it truncates: chunk index → document offset.

    Chunks past the model's ``max_seq_length`` (word pieces with [CLS]/[SEP]) are the ones truncated; chunks that
    certainly fit are not counted (`WordPieceTokenizer.may_exceed`), and counts lint already filled in are reused.
    When a strategy embeds a text of its own (a prefix + the chunk), the cut is mapped back through the chunk's
    place in it; a cut inside the prefix leaves the whole chunk unread. A chunk whose text is not in its embed text
    cannot be mapped and is left out.

    Raises:
        TokenizerError: the model's tokenizer cannot be loaded.
    """
    from chunkscope.tokens import embed_tokenizer

    tok = embed_tokenizer(model)
    limit = tok.max_seq_length
    todo = [c for c in chunks if c.embed_tokens is None and tok.may_exceed(c.embed_text, limit)]
    if todo:
        for c, n in zip(todo, tok.count_batch([c.embed_text for c in todo])):
            c.embed_tokens = n  # exactly what `count_embed_tokens` fills in
    out: dict[int, int] = {}
    for c in chunks:
        if c.embed_tokens is None or c.embed_tokens <= limit:
            continue
        cut = tok.truncation_offset(c.embed_text, limit)
        at = c.embed_offset  # the chunk knows where its text sits (searching could find it inside the prefix)
        if at is not None:
            out[c.index] = c.start + min(max(cut - at, 0), len(c.text))
    return out


def unread_chars(chunks: Sequence["Chunk"], cuts: Mapping[int, int]) -> tuple[int, int]:
    """(characters inside chunks, of those the ones no chunk's embedding reads).

    Text cut off the end of one chunk but read in the next (overlap) is read: "never read" is the text outside
    every chunk's read part.
    """
    chars = covered((c.start, c.end) for c in chunks)
    read = covered((c.start, min(max(cuts.get(c.index, c.end), c.start), c.end)) for c in chunks)
    return chars, chars - read

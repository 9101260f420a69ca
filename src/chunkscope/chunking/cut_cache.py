"""Each file's cut under a strategy, kept between runs: an unchanged file's chunks without cutting it again.

A stored cut is rebuilt into chunks equal (``==``) to a fresh cut of the same file, and no tokenizer is loaded to
do it: the app shows a reopened tree's first file at once, and its tree cut skips the files it finds here. The
key is `stats_cache`'s (docs root, `strategy_key` with chunkscope's own code in it, `file_key`); a chunk's text
is never stored, it is sliced from the document again.

What is kept is exact or not kept: a strategy whose cut depends on more than the file, its parameters and
chunkscope's code (a generated ``llm`` context, an embedder's vectors, a user's function, another package's
strategy) is never stored, and neither is a file whose chunks do not come back equal from the stored form
(metadata a JSON round trip changes). One JSON file per docs root and strategy key, written whole and renamed
into place; each file's chunks are a JSON string of their own inside it, so reading one file's cut decodes only
that file's rows. The oldest files go beyond `KEEP`. A cache that cannot be read or written is a miss, never an
error.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from chunkscope.chunking.model import Chunk
from chunkscope.chunking.root_files import RootFiles
from chunkscope.chunking.stats_cache import file_key, strategy_key
from chunkscope.chunking.strategy import Strategy
from chunkscope.document.loader import Document
from chunkscope.paths import cache_home

#: Bumped when what is stored changes meaning.
FORMAT = 1
#: How many strategy keys of one docs root are kept (`RootFiles._prune`): each value typed while tuning is a key of
#: its own, and a cut file is ten times a counts file (650 KB for the Rust book's 2,500 chunks).
KEEP = 8
#: Strategies of chunkscope's own whose cut depends on more than the file and their parameters.
_NOT_EXACT = ("chunkscope.chunking.strategies.custom", "chunkscope.chunking.strategies.semantic")

#: One file's stored cut: its `file_key` and its rows as a JSON string (decoded only when the file is asked for).
StoredCut = tuple[str, str]


def cacheable(strategy: Strategy) -> bool:
    """Whether cuts under ``strategy`` can be stored and given back exactly."""
    from chunkscope.chunking.vectors import UsesSentenceVectors

    module = type(strategy).__module__
    if not module.startswith("chunkscope.") or module in _NOT_EXACT:
        return False  # code the key does not cover: a plugin's imports, a user's function, a model's vectors
    # An "llm" prefix comes from a context cache that `chunkscope contexts` fills in between runs.
    return not strategy.uses_contexts and not isinstance(strategy, UsesSentenceVectors)


def encode(doc: Document, chunks: Sequence[Chunk]) -> StoredCut | None:
    """``chunks`` (a fresh cut of ``doc``) in their stored form, or None when they would not come back equal."""
    rows: list[list[Any]] = []
    for c in chunks:
        over = c.embed_text_override
        # The embedded text usually ends with the chunk's own text (a prefix before it): only the head is kept.
        embedded = None if over is None else [over[:len(over) - len(c.text)]] if over.endswith(c.text) else ["", over]
        rows.append([c.start, c.end, c.start_line, c.end_line, c.tokens, c.heading_path, c.metadata, c.warnings,
                     None if c.overlap is None else list(c.overlap), embedded])
    try:
        blob = json.dumps(rows, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return None  # metadata JSON cannot hold (a set, an object, NaN)
    stored = (file_key(doc), blob)
    # Equal after the round trip, or not kept: a tuple in the metadata comes back a list, a non-string key a string.
    return stored if decode(doc, stored) == list(chunks) else None


def decode(doc: Document, stored: StoredCut) -> list[Chunk] | None:
    """The chunks of ``doc`` from their stored form; None when it does not fit the document (a damaged file)."""
    try:
        rows = json.loads(stored[1])
        text, n = doc.text, len(doc.text)
        chunks: list[Chunk] = []
        for i, (start, end, start_line, end_line, tokens, heading_path, metadata, warnings, overlap, embedded) \
                in enumerate(rows):
            numbers = (start, end, start_line, end_line, tokens)
            if not (all(isinstance(v, int) for v in numbers) and 0 <= start < end <= n
                    and isinstance(heading_path, list) and isinstance(metadata, dict) and isinstance(warnings, list)):
                return None
            piece = text[start:end]
            chunks.append(Chunk(
                path=doc.path, index=i, start=start, end=end, start_line=start_line, end_line=end_line, text=piece,
                tokens=tokens, heading_path=heading_path, metadata=metadata, warnings=warnings,
                overlap=None if overlap is None else (overlap[0], overlap[1]),
                embed_text_override=None if embedded is None else embedded[0] + piece if len(embedded) == 1
                else embedded[1]))
        return chunks
    except (ValueError, TypeError, IndexError, KeyError):
        return None


class CutCache(RootFiles):
    """The stored cuts of one docs root (a folder under the cache folder, ``chunk-cuts`` by default)."""

    def __init__(self, root: str | Path, folder: Path | None = None) -> None:
        super().__init__(root, folder if folder is not None else cache_home() / "chunk-cuts", key=strategy_key,
                         fmt=FORMAT, keep=KEEP,
                         tmp_prefix=".cuts-")

    def lookup(self, strategy: Strategy, docs: Iterable[Document]) -> dict[str, list[Chunk]]:
        """The stored cuts of those ``docs`` that are unchanged since they were cut (by path)."""
        if not cacheable(strategy):
            return {}
        stored = self._read(strategy)
        out: dict[str, list[Chunk]] = {}
        for doc in docs:
            entry = stored.get(doc.path)
            if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], str)) \
                    or entry[0] != file_key(doc):
                continue
            chunks = decode(doc, (entry[0], entry[1]))
            if chunks is not None:
                out[doc.path] = chunks
        return out

    def store(self, strategy: Strategy, cuts: Mapping[str, StoredCut], *, keep: Collection[str] | None = None) -> None:
        """Keep ``cuts`` (by path, from `encode`) for the next run, beside the cuts stored before; a write that fails
        is skipped.

        Args:
            keep: the paths whose earlier cuts stay (a tree's files: the cuts of files gone from it go); None: every
                earlier cut stays (one file cut while the rest of the tree waits).
        """
        if not cacheable(strategy):
            return
        before = self._read(strategy)
        files: dict[str, Any] = {p: e for p, e in before.items() if keep is None or p in keep}
        files.update({path: list(stored) for path, stored in cuts.items()})
        self._write(strategy, files)

    def keep_fresh(self, strategy: Strategy, cuts: Iterable[tuple[Document, Sequence[Chunk]]], *,
                   keep: Collection[str] | None = None) -> None:
        """`store` the fresh cuts of these documents that come back equal from their stored form (`encode`), the
        others left out; ``keep`` as for `store` (with it, the file is written even when no cut is new)."""
        encoded: dict[str, StoredCut] = {}
        for doc, chunks in cuts:
            stored = encode(doc, chunks)
            if stored is not None:
                encoded[doc.path] = stored
        if encoded or keep is not None:
            self.store(strategy, encoded, keep=keep)

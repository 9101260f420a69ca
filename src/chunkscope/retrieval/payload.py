"""A point's payload — what a vector store keeps beside each chunk's vector — and the storage estimate built on it.

One definition serves the store (what it writes), `chunkscope stats` and the sweep (what they estimate), so the
estimate is the size of what would really be stored. Plain JSON, no Qdrant: the base install uses it too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.embedding.spec import EmbedderSpec

#: Bytes per vector component (float32), as the seeds' estimate counts: vectors × dimensions × 4.
FLOAT_BYTES = 4
#: The store keeps, beside each payload, the signature that tells it whether a point is up to date: a SHA-1 hex,
#: then "/" and the mean chunk length (in terms, six digits) its keyword weights were computed with
#: (`chunkscope.retrieval.sparse`), so a partial load can reuse it. Fixed width, so storage estimates stay exact.
SIGNATURE_KEY = "sig"
_SIGNATURE_PLACEHOLDER = "0" * 40 + "/000000"


def signature(digest: str, avgdl: float) -> str:
    return f"{digest}/{min(int(avgdl), 999_999):06d}"


def signature_avgdl(sig: str) -> float | None:
    """The mean length a stored signature records (None for one without it)."""
    _, sep, tail = sig.partition("/")
    return float(tail) if sep and tail.isdigit() and int(tail) > 0 else None


class _NotPlain(Exception):
    """A value JSON would change (a tuple, a non-str key, an unknown object)."""


def _plain_copy(value: Any) -> Any:
    """A copy of a value made only of what JSON keeps as it is (str, int, float, bool, None, lists, str-keyed
    dicts); `_NotPlain` for anything else."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if kind is list:
        return [_plain_copy(v) for v in value]
    if kind is dict and all(type(k) is str for k in value):
        return {k: _plain_copy(v) for k, v in value.items()}
    raise _NotPlain


def _jsonable(value: Any) -> Any:
    """Payloads are JSON: tuples become lists, unknown objects their str. A value already plain JSON is copied
    as it is, which is what the round-trip through JSON text would give, without writing and reading the text."""
    try:
        return _plain_copy(value)
    except (_NotPlain, RecursionError):  # RecursionError: a cycle, which json.dumps reports as such
        return json.loads(json.dumps(value, default=str))


#: The payload key holding the strategy's own metadata. A namespace of its own, so a strategy's field never
#: overwrites a core one nor is overwritten by it (section-sentence's ``chunk_index`` is the index within its
#: section; the core ``chunk_index`` is the index within the document).
META_KEY = "meta"
#: The payload key listing the names of the strategy's metadata fields (indexed: a filter on a key tells in one
#: index look-up whether a point has that metadata field, see `chunkscope.retrieval.engine.build_filter`).
META_KEYS_KEY = "meta_keys"


def chunk_payload(chunk: "Chunk", extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The point payload: the core fields, the strategy's metadata under `META_KEY` (read it back with
    `payload_metadata`) and its field names under `META_KEYS_KEY`."""
    payload: dict[str, Any] = {
        "path": chunk.path,
        "start": chunk.start,
        "end": chunk.end,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "heading_path": list(chunk.heading_path),
        "heading": chunk.heading_path[-1] if chunk.heading_path else "",
        "citation": "",
        "url": "",
        "text": chunk.text,
        "tokens": chunk.tokens,
        "embed_tokens": chunk.embed_tokens,
        "chunk_index": chunk.index,
        "warnings": list(chunk.warnings),
    }
    if extra:
        payload.update(_jsonable(dict(extra)))
    payload[META_KEY] = _jsonable(chunk.metadata or {})
    payload[META_KEYS_KEY] = sorted(payload[META_KEY])
    return payload


def payload_metadata(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The strategy's metadata of a stored payload, as `chunk_payload` wrote it (the chunk's ``metadata``)."""
    meta = payload.get(META_KEY)
    return dict(meta) if isinstance(meta, Mapping) else {}


def payload_bytes(payload: Mapping[str, Any]) -> int:
    """The size of a payload as JSON text (UTF-8), which is how vector stores keep it."""
    return len(json.dumps(payload, ensure_ascii=False).encode("utf-8"))


@dataclass(frozen=True, slots=True)
class StorageEstimate:
    """What a collection of chunks would take: float32 vectors plus their JSON payloads as the store writes them
    (citation and URL, which need the published site and the citation template, are counted empty)."""

    vectors: int
    vector_bytes: int
    payload_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.vector_bytes + self.payload_bytes


def storage_estimate(chunks: Iterable["Chunk"], dim: int, embed_model: "str | EmbedderSpec | None" = None) -> StorageEstimate:
    """The storage a collection of ``chunks`` with ``dim``-dimensional vectors would take.

    The payload holds the embedder's token count, so chunks that lack it get it counted first (in
    ``embed_model``'s word pieces, the default model's when None), as indexing would.
    """
    from chunkscope.chunking.model import count_embed_tokens
    from chunkscope.tokens import DEFAULT_EMBED_MODEL

    chunks = list(chunks)
    count_embed_tokens(chunks, embed_model or DEFAULT_EMBED_MODEL)
    size = sum(payload_bytes({**chunk_payload(c), SIGNATURE_KEY: _SIGNATURE_PLACEHOLDER}) for c in chunks)
    return StorageEstimate(len(chunks), len(chunks) * dim * FLOAT_BYTES, size)

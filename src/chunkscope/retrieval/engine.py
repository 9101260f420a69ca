"""The vector-store engine interface: what chunkscope asks of Qdrant, whichever Qdrant runs it.

An `Engine` holds collections of points, each point an id, a named dense vector (`DENSE`, cosine), the BM25
terms of its embed text (`KEYWORD`, sparse, weighted by Qdrant's IDF modifier) and a JSON payload. Two engines
implement it (`chunkscope.retrieval.engines`): Qdrant Edge in the process (the default) and qdrant-client for a
Qdrant server. Both answer the same requests the same way: every search is exact (a rank, an eval metric, a miss
reason or a neighbourhood is defined on exact neighbours), and equal scores are ordered by point id (`ordered`);
hybrid search fuses the two exact rankings by reciprocal rank fusion with `RRF_K` (`fuse`).

Filters are plain data (`Cond`), translated by each engine into its own filter models.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from chunkscope.retrieval.payload import META_KEY, META_KEYS_KEY
from chunkscope.retrieval.sparse import SparseVector

#: The names of a point's two vectors: the embedder's, and the BM25 terms of its embed text.
DENSE, KEYWORD = "dense", "bm25"
#: How deep each side of a hybrid search ranks before they are fused (reciprocal rank fusion), whatever k up to it.
#: A fused score depends on the depth (a point at rank 70 of one side gets that side's share only when the side is
#: ranked past 70), so one depth for every search makes one fused ranking: a list of k hits is the first k of a
#: deeper search's, and a chunk has one rank and one score in a result list, in the app's expectation line, in
#: ``eval`` and ``probe``, which search as deep as `chunkscope.evaluation.verdicts.DEFAULT_DEPTH` for a miss's
#: rank (this is never less: tests/test_hybrid_one_score.py). Against 50, it costs about 1 ms of CPU per hybrid
#: query (exact, k = 5, 1,430 to 20,000 points).
FUSION_DEPTH = 100
#: Reciprocal rank fusion's constant: a point at 0-based rank r of one side scores 1 / (RRF_K + r). 2 is what
#: qdrant-client's local mode and a server use by default, so fused scores keep the values they always had.
RRF_K = 2
#: Points a search asks beyond ``k``, so that points tied with the k-th are all seen and the id decides.
TIE_MARGIN = 8


class StoreError(Exception):
    """The store cannot be used (locked, unreachable, refused, damaged); one line, shown to the user as is."""


class StoreLocked(StoreError):
    """Another process holds the store's folder."""


class StoreDamaged(StoreError):
    """A collection's files cannot be read: the store moves them aside and starts the collection again."""


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --- filters ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cond:
    """A filter node: ``match`` (the payload ``key`` equals one of ``values``, or for a list holds one), ``all``
    (every ``parts`` holds), ``any`` (at least one does) or ``none`` (none does)."""

    kind: Literal["match", "all", "any", "none"]
    key: str = ""
    values: tuple[Any, ...] = ()
    parts: tuple["Cond", ...] = ()


def parse_filter_value(value: Any) -> list[Any]:
    """Values a ``key=value`` filter matches: ``"3"`` matches 3 and "3", ``"true"`` True and "true"."""
    if not isinstance(value, str):
        return [value]
    v = value.strip()
    if re.fullmatch(r"[+-]?\d+", v):
        return [int(v), v]
    if v.lower() in ("true", "false"):
        return [v.lower() == "true", v]
    return [v]


def build_filter(filters: Mapping[str, Any] | None, paths: Collection[str] | None = None,
                 has_meta: Callable[[str], bool | None] | None = None) -> Cond | None:
    """A filter requiring every key to match, and, with ``paths``, a point's path to be one of them.

    A key names the strategy's metadata first (``chunk --format jsonl`` shows it under ``metadata``): it matches
    the point's ``meta.<key>`` when the point has that field (its `META_KEYS_KEY` list, indexed, says so), and the
    core field ``<key>`` (``path``, ``heading``, ...) when it has not. So ``chunk_index=0`` filters
    section-sentence's index within a section, the one its chunks show, and ``path=a.md`` still filters the
    document. ``has_meta(key)`` may say that every point has that metadata field (True) or none has (False): the
    filter is then the one plain condition an index answers, rather than the both-ways one (None: some have).
    """
    if not filters and paths is None:
        return None
    must: list[Cond] = []
    for key, value in (filters or {}).items():
        values = tuple(parse_filter_value(value))
        meta = Cond("match", f"{META_KEY}.{key}", values)
        core = Cond("match", key, values)
        known = has_meta(key) if has_meta is not None else None
        if known is None:
            lacks = Cond("none", parts=(Cond("match", META_KEYS_KEY, (key,)),))
            must.append(Cond("any", parts=(meta, Cond("all", parts=(lacks, core)))))
        else:
            must.append(meta if known else core)
    if paths is not None:
        must.append(Cond("match", "path", tuple(sorted(paths))))
    return Cond("all", parts=tuple(must))


# --- points -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PointData:
    """A point to write: its id, the embedder's vector, the BM25 terms, the payload."""

    id: str
    dense: Sequence[float]
    sparse: SparseVector
    payload: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Found:
    """A point a search or a read returned: its id, score (0 for a read), payload and dense vector if asked."""

    id: str
    score: float
    payload: Mapping[str, Any]
    dense: Sequence[float] | None = None


def ordered(found: Sequence[Found], limit: int) -> list[Found]:
    """Best score first, equal scores by point id, the first ``limit``: the same order on every engine."""
    return sorted(found, key=lambda f: (-f.score, f.id))[:limit]


def fuse(sides: Sequence[Sequence[Found]], limit: int) -> list[Found]:
    """Reciprocal rank fusion of ranked lists: a point at 0-based rank r of a side scores 1 / (`RRF_K` + r), summed
    over the sides (Qdrant's own formula, so the values are those its fusion gives).

    Done here rather than by the engine's fusion query: the engine ranks each side with equal scores in an order of
    its own (a duplicated chunk ties with its copy), which would change the fused ranks from one engine to another;
    each side here is already in `ordered`'s order, so hybrid answers are the same on every engine. The fused
    points come without payloads (the sides are asked without them: only the ``limit`` kept need one).
    """
    scores: dict[str, float] = {}
    for side in sides:
        for rank, f in enumerate(side):
            scores[f.id] = scores.get(f.id, 0.0) + 1.0 / (RRF_K + rank)
    return ordered([Found(pid, score, {}) for pid, score in scores.items()], limit)


class Engine(ABC):
    """A Qdrant holding chunkscope's collections (see the module docstring).

    Every method raises `StoreError` (one line) when the engine fails; `StoreDamaged` when a collection's files
    cannot be read.
    """

    #: Where the store lives, for messages: a folder or a url.
    location: str

    @abstractmethod
    def collections(self) -> list[str]:
        """The names of every collection (chunkscope's and any other)."""

    @abstractmethod
    def dense_size(self, name: str) -> int | None:
        """The dense vector size of ``name`` when it exists with chunkscope's layout (both vectors), else None
        (absent, or another layout)."""

    @abstractmethod
    def exists(self, name: str) -> bool:
        """Whether ``name`` exists."""

    @abstractmethod
    def create(self, name: str, dim: int) -> None:
        """Create ``name``: `DENSE` (cosine, ``dim``) and `KEYWORD` (sparse, IDF modifier)."""

    @abstractmethod
    def drop(self, name: str) -> None:
        """Delete ``name`` and its points (nothing when it does not exist)."""

    @abstractmethod
    def count(self, name: str, where: Cond | None = None) -> int:
        """The exact number of points of ``name`` (those ``where`` holds, when given)."""

    @abstractmethod
    def upsert(self, name: str, points: Sequence[PointData]) -> None:
        """Write ``points`` (replacing those with the same ids), durably before returning."""

    @abstractmethod
    def delete(self, name: str, ids: Sequence[str] = (), where: Cond | None = None) -> None:
        """Delete the points with these ids, or those ``where`` holds."""

    @abstractmethod
    def scroll(self, name: str, where: Cond | None, fields: Sequence[str] | None, *, with_dense: bool = False,
               offset: str | None = None, limit: int = 2048) -> tuple[list[Found], str | None]:
        """A page of points (their ``fields`` of the payload, all of it for None; the dense vector if asked) from
        ``offset``, and the offset of the next page (None after the last)."""

    @abstractmethod
    def search(self, name: str, vector: Sequence[float] | SparseVector, limit: int, where: Cond | None, *,
               with_payload: bool = True) -> list[Found]:
        """The ``limit`` best points by exact search, ordered by `ordered`: by a dense vector (cosine, `DENSE`) or
        by a sparse one (BM25, `KEYWORD`); with their payloads unless told not to (empty payloads then)."""

    @abstractmethod
    def payloads(self, name: str, ids: Sequence[str]) -> dict[str, Mapping[str, Any]]:
        """The payloads of the points with these ids (those that exist)."""

    @abstractmethod
    def close(self) -> None:
        """Release the engine (its folders' locks included); safe to call twice."""

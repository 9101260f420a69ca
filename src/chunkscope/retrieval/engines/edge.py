"""Qdrant Edge: Qdrant's own engine in the process, one shard folder per collection.

Edge has no collections, so each collection is a shard in a folder of its own under the store's folder
(``<folder>/<collection>/``): opening a tree opens only the collections it asks for. A shard is opened on first
use and kept open (holding its folder's lock) until the engine closes. A shard another process holds is
`StoreLocked`; one whose files cannot be read is moved aside to ``<folder>/.damaged/`` and started again
(`StoreDamaged` is reported through ``on_notice``; the points come back from the embedding cache on the next
index, with no embedding).
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkscope.retrieval.engine import (
    DENSE,
    KEYWORD,
    TIE_MARGIN,
    Cond,
    Engine,
    Found,
    PointData,
    StoreError,
    StoreLocked,
    one_line,
    ordered,
)
from chunkscope.retrieval.payload import META_KEY, META_KEYS_KEY
from chunkscope.retrieval.sparse import SparseVector

if TYPE_CHECKING:
    import qdrant_edge as qe

#: The shard's own configuration file, which says the vectors' layout without opening it.
CONFIG_FILE = "edge_config.json"
#: Where damaged shards are moved (a dot folder: never taken for a collection).
DAMAGED = ".damaged"
#: Payload fields with an index: a one-file filter (a partial load, a rebuild) and chapter filters stay fast.
INDEXED_FIELDS = {
    "path": "Keyword",
    META_KEYS_KEY: "Keyword",
    f"{META_KEY}.chapter_id": "Keyword",
    f"{META_KEY}.chapter": "Integer",
}


#: Free room kept on the store's disk beyond what a write is estimated to take: a new shard fills about 45 MB where
#: the file system allocates its files' pages (tmpfs), and its storage files grow by 32 MB pages. Edge maps its
#: files into memory, and a write into a mapped page the disk cannot hold kills the process (SIGBUS) instead of
#: raising, so a full disk must be seen before Edge writes.
DISK_MARGIN = 64 * 2**20


def _is_lock_error(exc: BaseException) -> bool:
    """Edge reports a shard held by another process as its WAL failing to lock (``WouldBlock``)."""
    text = str(exc)
    return "WouldBlock" in text or "Resource temporarily unavailable" in text


class EdgeEngine(Engine):
    """Collections as Qdrant Edge shards under ``folder``.

    Args:
        folder: the store's folder (created when missing).
        on_notice: told, in one line, when a damaged collection was moved aside.
    """

    def __init__(self, folder: Path, on_notice: Callable[[str], None]) -> None:
        import qdrant_edge as qe

        self.qe = qe
        self.folder = folder
        self.location = str(folder)
        self.on_notice = on_notice
        self._shards: dict[str, qe.EdgeShard] = {}
        # One call into a shard at a time: a UI searches while a worker indexes.
        self._lock = threading.RLock()
        self._closed = False
        folder.mkdir(parents=True, exist_ok=True)

    # -- shards --

    def _dir(self, name: str) -> Path:
        return self.folder / name

    def _config(self, name: str) -> dict[str, Any] | None:
        try:
            data = json.loads((self._dir(name) / CONFIG_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _shard(self, name: str) -> "qe.EdgeShard":
        """The open shard of ``name`` (opened now if needed); StoreError when it does not exist."""
        if self._closed:
            raise StoreError(f"{self.location}: the store is closed")
        shard = self._shards.get(name)
        if shard is not None:
            return shard
        if self._config(name) is None:
            if self._dir(name).exists():
                self._move_aside(name, "missing its configuration")
            raise StoreError(f"{self.location}: no collection {name}")
        try:
            shard = self.qe.EdgeShard.load(str(self._dir(name)))
        except Exception as exc:  # noqa: BLE001 - Edge raises plain Exceptions
            if _is_lock_error(exc):
                raise StoreLocked(
                    f"{self._dir(name)}: the vector store is in use by another chunkscope process or window; "
                    "close it, or use a Qdrant server (QDRANT_URL)") from None
            self._move_aside(name, f"unreadable ({one_line(exc)})")
            raise StoreError(f"{self.location}: no collection {name}") from None
        self._shards[name] = shard
        return shard

    def _move_aside(self, name: str, problem: str) -> None:
        """Move a damaged shard out of the way: the collection is then created afresh and re-indexed."""
        target = self.folder / DAMAGED / f"{name}.{time.strftime('%Y%m%d-%H%M%S')}"
        n = 1
        while target.exists():
            n += 1
            target = target.with_name(f"{target.name}-{n}")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(self._dir(name)), str(target))
        self.on_notice(f"vector store collection {name} was {problem}; moved it to {target} and will rebuild it "
                       "from the embedding cache")

    # -- collections --

    def collections(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        return sorted(p.name for p in self.folder.iterdir() if p.is_dir() and not p.name.startswith("."))

    def exists(self, name: str) -> bool:
        return self._dir(name).is_dir()

    def dense_size(self, name: str) -> int | None:
        if not self.exists(name):
            return None
        with self._lock:
            try:
                self._shard(name)  # a damaged or locked shard says so now, not at the first search
            except StoreLocked:
                raise
            except StoreError:
                return None
        config = self._config(name) or {}
        dense = (config.get("vectors") or {}).get(DENSE) or {}
        sparse = config.get("sparse_vectors") or {}
        size = dense.get("size")
        return int(size) if isinstance(size, int) and KEYWORD in sparse else None

    def create(self, name: str, dim: int) -> None:
        qe = self.qe
        config = qe.EdgeConfig(
            vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
            # Qdrant weighs each term by its inverse document frequency over the collection at search time: with
            # the term-frequency weights stored per point, the dot product is BM25 (chunkscope.retrieval.sparse).
            sparse_vectors={KEYWORD: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            # Payloads in memory: a sync reads every point's signature, and every hit its payload.
            payload_memory=qe.Memory.Cached,
        )
        with self._lock:
            self._check_room(0)
            try:
                shard = qe.EdgeShard.create(str(self._dir(name)), config)
                for field, kind in INDEXED_FIELDS.items():
                    shard.update(qe.UpdateOperation.create_field_index(field, getattr(qe.PayloadSchemaType, kind)))
            except Exception as exc:  # noqa: BLE001
                raise StoreError(f"{self.location}: cannot create collection {name} ({one_line(exc)})") from None
            self._shards[name] = shard

    def _check_room(self, nbytes: int) -> None:
        """StoreError, in one line naming the folder, when its disk lacks room for ``nbytes`` and the margin."""
        try:
            free = shutil.disk_usage(self.folder).free
        except OSError:
            return  # not measurable here: Edge's own error (or none) follows
        needed = nbytes + DISK_MARGIN
        if free < needed:
            raise StoreError(f"no space left in {self.folder}: {free / 2**20:.1f} MB free, about "
                             f"{needed / 2**20:.0f} MB needed")

    def drop(self, name: str) -> None:
        with self._lock:
            if not self.exists(name):
                return
            try:
                # Holding the shard first: another process's collection is refused, never pulled from under it.
                self._shard(name).close()
            except StoreLocked:
                raise
            except StoreError:
                pass  # damaged and moved aside: nothing left to drop
            self._shards.pop(name, None)
            shutil.rmtree(self._dir(name), ignore_errors=True)

    def count(self, name: str, where: Cond | None = None) -> int:
        with self._lock:
            request = self.qe.CountRequest(exact=True, filter=self._filter(where))
            return int(self._call(name, "counting", lambda s: s.count(request)))

    # -- points --

    def _call(self, name: str, doing: str, fn: Callable[["qe.EdgeShard"], Any]) -> Any:
        shard = self._shard(name)
        try:
            return fn(shard)
        except Exception as exc:  # noqa: BLE001 - Edge raises plain Exceptions
            raise StoreError(f"{self.location}: {doing} {name} failed ({one_line(exc)})") from None

    def _sparse(self, v: SparseVector) -> "qe.SparseVector":
        return self.qe.SparseVector(indices=list(v.indices), values=list(v.values))

    def upsert(self, name: str, points: Sequence[PointData]) -> None:
        qe = self.qe
        batch = [qe.Point(p.id, {DENSE: list(p.dense), KEYWORD: self._sparse(p.sparse)}, dict(p.payload))
                 for p in points]
        # Each point is written twice (the write-ahead log, then the segment): its vectors and its payload.
        self._check_room(2 * sum(4 * len(p.dense) + 8 * len(p.sparse.indices) + len(json.dumps(p.payload, default=str))
                                 for p in points))
        with self._lock:
            # The write-ahead log makes each update durable (a kill -9 replays it on the next open).
            self._call(name, "writing to", lambda s: s.update(qe.UpdateOperation.upsert_points(batch)))

    def delete(self, name: str, ids: Sequence[str] = (), where: Cond | None = None) -> None:
        qe = self.qe
        with self._lock:
            if ids:
                self._call(name, "deleting from", lambda s: s.update(qe.UpdateOperation.delete_points(list(ids))))
            if where is not None:
                flt = self._filter(where)
                self._call(name, "deleting from", lambda s: s.update(qe.UpdateOperation.delete_points_by_filter(flt)))

    def scroll(self, name: str, where: Cond | None, fields: Sequence[str] | None, *, with_dense: bool = False,
               offset: str | None = None, limit: int = 2048) -> tuple[list[Found], str | None]:
        qe = self.qe
        request = qe.ScrollRequest(offset=offset, limit=limit, filter=self._filter(where),
                                   with_payload=True if fields is None else list(fields),
                                   with_vector=[DENSE] if with_dense else False)
        with self._lock:
            records, next_offset = self._call(name, "reading", lambda s: s.scroll(request))
        out = []
        for r in records:
            vector = r.vector.get(DENSE) if with_dense and isinstance(r.vector, dict) else None
            out.append(Found(str(r.id), 0.0, r.payload or {}, vector))
        return out, None if next_offset is None else str(next_offset)

    # -- searching --

    def search(self, name: str, vector: Sequence[float] | SparseVector, limit: int, where: Cond | None, *,
               with_payload: bool = True) -> list[Found]:
        qe = self.qe
        if isinstance(vector, SparseVector):
            if not vector.indices:
                return []  # a question of stop words only matches nothing
            query = qe.Query.Nearest(self._sparse(vector), using=KEYWORD)
        else:
            query = qe.Query.Nearest(list(vector), using=DENSE)
        # TIE_MARGIN more than asked: points tied with the last one are all seen, and `ordered` picks by id. The
        # search itself reads no payload: the margin's points are dropped, and a payload (the chunk's whole text)
        # is the dear part of a hit, so only the ``limit`` kept are read, in one look-up after the order is known.
        request = qe.QueryRequest(limit=limit + TIE_MARGIN, query=query, filter=self._filter(where),
                                  with_payload=False, params=qe.SearchParams(exact=True))
        with self._lock:  # one hold for both: a write between them could take a hit's point away
            points = self._call(name, "search in", lambda s: s.query(request))
            found = ordered([Found(str(p.id), float(p.score), {}) for p in points], limit)
            if not with_payload or not found:
                return found
            payloads = self.payloads(name, [f.id for f in found])
        return [Found(f.id, f.score, payloads.get(f.id, {})) for f in found]

    def payloads(self, name: str, ids: Sequence[str]) -> dict[str, Mapping[str, Any]]:
        with self._lock:
            records = self._call(name, "reading", lambda s: s.retrieve(list(ids), with_payload=True, with_vector=False))
        return {str(r.id): r.payload or {} for r in records}

    def _filter(self, cond: Cond | None) -> "qe.Filter | None":
        if cond is None:
            return None
        node = self._cond(cond)
        return node if isinstance(node, self.qe.Filter) else self.qe.Filter(must=[node])

    def _cond(self, cond: Cond) -> Any:
        qe = self.qe
        if cond.kind == "all":
            return qe.Filter(must=[self._cond(c) for c in cond.parts])
        if cond.kind == "any":
            return qe.Filter(should=[self._cond(c) for c in cond.parts])
        if cond.kind == "none":
            return qe.Filter(must_not=[self._cond(c) for c in cond.parts])
        if len(cond.values) > 1 and all(isinstance(v, str) for v in cond.values):
            return qe.FieldCondition(key=cond.key, match=qe.MatchAny(any=list(cond.values)))
        matches = [qe.FieldCondition(key=cond.key, match=qe.MatchValue(v)) for v in cond.values]
        return matches[0] if len(matches) == 1 else qe.Filter(should=matches)

    def close(self) -> None:
        with self._lock:
            shards, self._shards = self._shards, {}
            self._closed = True
            for shard in shards.values():
                try:
                    shard.close()
                except Exception:  # noqa: BLE001 - closing at interpreter exit
                    pass


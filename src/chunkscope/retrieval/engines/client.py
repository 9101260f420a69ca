"""qdrant-client's engine: a Qdrant server by url, or qdrant-client's own local mode.

The server is the path users grow into; it answers every request exactly as the embedded engine does (exact
search passed explicitly: a server builds an HNSW index by itself past its threshold). qdrant-client's local mode
(a folder, or ``:memory:``) is Qdrant's pure-Python test double; chunkscope keeps it for one reason: while Qdrant
Edge is beta, ``[qdrant] engine = "local"`` is the way back should an Edge release misbehave on someone's machine
(see `chunkscope.retrieval.store.Store`). Its scan is brute force, so its answers are exact too.

qdrant-client is imported here only, and only when this engine is made.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Mapping, Sequence
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
from chunkscope.safe_text import redact_url, redact_urls
from chunkscope.wording import ALLOW_TREE_CONFIG
from chunkscope.retrieval.sparse import SparseVector

if TYPE_CHECKING:
    from qdrant_client import QdrantClient, models

#: Payload fields that get an index on a server (local mode has no payload indexes).
INDEXED_FIELDS = {
    "path": "KEYWORD",
    META_KEYS_KEY: "KEYWORD",
    f"{META_KEY}.chapter_id": "KEYWORD",
    f"{META_KEY}.chapter": "INTEGER",
}


class ClientEngine(Engine):
    """Collections in a Qdrant reached through qdrant-client: use `server`, `local` or `memory` to make one."""

    def __init__(self, client: "QdrantClient", location: str, *, server: bool) -> None:
        from qdrant_client import models

        self.models = models
        self.client: QdrantClient | None = client
        self.location = location
        self.server = server
        # One client call at a time: a UI searches while a worker indexes, and local mode's in-memory arrays are not
        # safe to grow and read at once.
        self._lock = threading.RLock()

    @classmethod
    def server_at(cls, url: str, api_key_env: str | None, timeout: float) -> "ClientEngine":
        """A Qdrant server, checked now (one line when it is unreachable or refuses the key). ``api_key_env`` None:
        no key goes to this server (`chunkscope.config.trust`)."""
        from qdrant_client import QdrantClient

        api_key = (os.environ.get(api_key_env) if api_key_env else None) or None
        with warnings.catch_warnings():
            # "Api key is used with an insecure connection" is qdrant-client's; the user chose the url.
            warnings.simplefilter("ignore")
            try:
                client = QdrantClient(url=url, api_key=api_key, timeout=max(1, int(round(timeout))),
                                      check_compatibility=False)
            except Exception as exc:  # noqa: BLE001 - a malformed url
                raise StoreError(f"{redact_url(url)}: not a usable Qdrant url ({redact_urls(one_line(exc))})") from None
        del api_key
        engine = cls(client, redact_url(url), server=True)  # the location is shown: never its credentials
        try:
            engine._check_server(key_withheld=api_key_env is None)
        except StoreError:
            engine.close()
            raise
        return engine

    @classmethod
    def local(cls, folder: Path) -> "ClientEngine":
        """qdrant-client's local mode in ``folder`` (the fallback engine while Edge is beta)."""
        from qdrant_client import QdrantClient

        folder.mkdir(parents=True, exist_ok=True)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # its warning about large local collections; the bench measures it
                client = QdrantClient(path=str(folder))
        except RuntimeError as exc:
            if "already accessed" in str(exc):
                raise StoreLocked(f"{folder}: the vector store is in use by another chunkscope process or window; "
                                  "close it, or use a Qdrant server (QDRANT_URL)") from None
            raise StoreError(f"{folder}: cannot open the local vector store ({one_line(exc)})") from None
        except Exception as exc:  # noqa: BLE001 - a damaged store folder
            raise StoreError(f"{folder}: cannot open the local vector store ({one_line(exc)})") from None
        return cls(client, str(folder), server=False)

    @classmethod
    def memory(cls) -> "ClientEngine":
        """qdrant-client's in-memory mode: it stands in for a server in tests (the same client calls)."""
        from qdrant_client import QdrantClient

        return cls(QdrantClient(":memory:"), ":memory:", server=True)

    def _check_server(self, *, key_withheld: bool = False) -> None:
        """Fail now, in one line, rather than on the first upsert."""
        from qdrant_client.http.exceptions import UnexpectedResponse

        try:
            self._c().get_collections()
        except UnexpectedResponse as exc:
            code = exc.status_code
            if code in (401, 403) and key_withheld:
                raise StoreError(f"{self.location}: the Qdrant server wants an API key (HTTP {code}), and none is sent "
                                 f"to a URL named only by a docs tree's chunkscope.toml; {ALLOW_TREE_CONFIG}") from None
            if code in (401, 403):
                raise StoreError(f"{self.location}: the Qdrant server refused the API key (HTTP {code}); "
                                 "set QDRANT_API_KEY") from None
            raise StoreError(f"{self.location}: not a Qdrant server, or it failed (HTTP {code})") from None
        except Exception as exc:  # noqa: BLE001 - httpx errors vary with versions
            import httpx

            reason = redact_urls(one_line(exc))
            # The connection was taken, then dropped or answered with something other than HTTP (an SSH banner).
            if isinstance(getattr(exc, "source", exc), (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)):
                raise StoreError(f"{self.location}: a server answered, but it does not speak HTTP, so it is not Qdrant "
                                 f"({reason}); Qdrant's HTTP port is 6333 by default") from None
            raise StoreError(f"{self.location}: Qdrant server unreachable ({reason})") from None

    def _c(self) -> "QdrantClient":
        if self.client is None:
            raise StoreError(f"{self.location}: the store is closed")
        return self.client

    def _call(self, name: str, doing: str, fn: Any) -> Any:
        client = self._c()
        try:
            with self._lock:
                return fn(client)
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise StoreError(f"{self.location}: {doing} {name} failed ({one_line(exc)})") from None

    # -- collections --

    def collections(self) -> list[str]:
        return sorted(c.name for c in self._call("", "listing", lambda c: c.get_collections()).collections)

    def exists(self, name: str) -> bool:
        return bool(self._call(name, "looking for", lambda c: c.collection_exists(name)))

    def dense_size(self, name: str) -> int | None:
        if not self.exists(name):
            return None
        params = self._call(name, "reading", lambda c: c.get_collection(name)).config.params
        dense = params.vectors.get(DENSE) if isinstance(params.vectors, dict) else None
        sparse = params.sparse_vectors or {}
        return int(dense.size) if dense is not None and KEYWORD in sparse else None

    def create(self, name: str, dim: int) -> None:
        m = self.models

        def make(client: "QdrantClient") -> None:
            client.create_collection(
                name,
                vectors_config={DENSE: m.VectorParams(size=dim, distance=m.Distance.COSINE)},
                # Qdrant weighs each term by its inverse document frequency over the collection at search time.
                sparse_vectors_config={KEYWORD: m.SparseVectorParams(modifier=m.Modifier.IDF)},
            )
            if self.server and self.location != ":memory:":
                for field, kind in INDEXED_FIELDS.items():
                    client.create_payload_index(name, field, field_schema=getattr(m.PayloadSchemaType, kind))

        self._call(name, "creating collection", make)

    def drop(self, name: str) -> None:
        self._call(name, "dropping", lambda c: c.delete_collection(name))

    def count(self, name: str, where: Cond | None = None) -> int:
        flt = self._filter(where)
        return int(self._call(name, "counting", lambda c: c.count(name, count_filter=flt, exact=True)).count)

    # -- points --

    def _sparse(self, v: SparseVector) -> "models.SparseVector":
        return self.models.SparseVector(indices=list(v.indices), values=list(v.values))

    def upsert(self, name: str, points: Sequence[PointData]) -> None:
        m = self.models
        batch = [m.PointStruct(id=p.id, payload=dict(p.payload),
                               vector={DENSE: list(p.dense), KEYWORD: self._sparse(p.sparse)}) for p in points]
        self._call(name, "writing to", lambda c: c.upsert(name, points=batch, wait=True))

    def delete(self, name: str, ids: Sequence[str] = (), where: Cond | None = None) -> None:
        m = self.models
        if ids:
            selector = m.PointIdsList(points=list(ids))
            self._call(name, "deleting from", lambda c: c.delete(name, points_selector=selector, wait=True))
        if where is not None:
            by_filter = m.FilterSelector(filter=self._filter(where))
            self._call(name, "deleting from", lambda c: c.delete(name, points_selector=by_filter, wait=True))

    def scroll(self, name: str, where: Cond | None, fields: Sequence[str] | None, *, with_dense: bool = False,
               offset: str | None = None, limit: int = 2048) -> tuple[list[Found], str | None]:
        flt = self._filter(where)
        records, next_offset = self._call(name, "reading", lambda c: c.scroll(
            name, scroll_filter=flt, limit=limit, offset=offset,
            with_payload=True if fields is None else list(fields), with_vectors=[DENSE] if with_dense else False))
        out = []
        for r in records:
            vector = r.vector.get(DENSE) if with_dense and isinstance(r.vector, dict) else None
            out.append(Found(str(r.id), 0.0, r.payload or {}, vector))
        return out, None if next_offset is None else str(next_offset)

    # -- searching --

    def search(self, name: str, vector: Sequence[float] | SparseVector, limit: int, where: Cond | None, *,
               with_payload: bool = True) -> list[Found]:
        if isinstance(vector, SparseVector):
            if not vector.indices:
                return []  # a question of stop words only matches nothing
            query: Any = self._sparse(vector)
            using = KEYWORD
        else:
            query, using = list(vector), DENSE
        flt = self._filter(where)
        exact = self.models.SearchParams(exact=True)
        with warnings.catch_warnings():
            # Local and in-memory modes say exactness has no effect there (they always scan); a server needs it.
            warnings.filterwarnings("ignore", message="Local mode performs exact")
            # TIE_MARGIN more than asked: points tied with the last one are all seen, and `ordered` picks by id.
            points = self._call(name, "search in", lambda c: c.query_points(
                name, query=query, using=using, limit=limit + TIE_MARGIN, query_filter=flt, search_params=exact,
                with_payload=with_payload, with_vectors=False)).points
        return ordered([Found(str(p.id), float(p.score), p.payload or {}) for p in points], limit)

    def payloads(self, name: str, ids: Sequence[str]) -> dict[str, Mapping[str, Any]]:
        records = self._call(name, "reading", lambda c: c.retrieve(name, ids=list(ids), with_payload=True,
                                                                    with_vectors=False))
        return {str(r.id): r.payload or {} for r in records}

    def _filter(self, cond: Cond | None) -> "models.Filter | None":
        if cond is None:
            return None
        node = self._cond(cond)
        return node if isinstance(node, self.models.Filter) else self.models.Filter(must=[node])

    def _cond(self, cond: Cond) -> Any:
        m = self.models
        if cond.kind == "all":
            return m.Filter(must=[self._cond(c) for c in cond.parts])
        if cond.kind == "any":
            return m.Filter(should=[self._cond(c) for c in cond.parts])
        if cond.kind == "none":
            return m.Filter(must_not=[self._cond(c) for c in cond.parts])
        if len(cond.values) > 1 and all(isinstance(v, str) for v in cond.values):
            return m.FieldCondition(key=cond.key, match=m.MatchAny(any=list(cond.values)))
        matches = [m.FieldCondition(key=cond.key, match=m.MatchValue(value=v)) for v in cond.values]
        return matches[0] if len(matches) == 1 else m.Filter(should=matches)

    def close(self) -> None:
        with self._lock:
            client, self.client = self.client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing twice or at interpreter exit
                pass

"""The vector store: one Qdrant collection per (docs tree, strategy + parameters, model), kept in step with the chunks.

By default the store is Qdrant's embedded local mode (``QdrantClient(path=...)``) in a per-docs-tree workspace
under chunkscope's cache folder, never inside the docs tree; with ``url=`` it is a Qdrant server, the API key
read from an environment variable only. Both go through the same client calls.

Point ids are uuid5 of (owning tree, doc path, start, end, sha256(text)), so re-indexing overwrites and never
duplicates, and two trees never share an id.
`Store.sync` writes only points that are missing or whose payload changed, in batches of `BATCH` in chunk
order, and deletes points of chunks that no longer exist only after every write succeeded: stopping between
batches (a cancelled `CancelToken` or Ctrl-C) leaves a collection whose points are each complete, and the next sync
finishes the job.

Ownership: a collection's points belong to one docs tree (its resolved root, `owner_key`), so two trees sharing a
store (a configured local path, or a server) never delete, rewrite or return each other's points. A sync given a
``scope`` (the paths of a partial load, e.g. one file) writes and deletes only points of those paths.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
import uuid
import warnings
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Collection, Mapping, Sequence

from chunkscope.extras import STORE_MODULES, require_extra
from chunkscope.progress import CancelToken, Phase, Progress, ProgressFn
from chunkscope.retrieval.search_modes import DEFAULT_SEARCH_MODE, check_search_mode, passes_threshold
from chunkscope.retrieval.sparse import Bm25Encoder, average_length
from chunkscope.retrieval.payload import SIGNATURE_KEY, chunk_payload, signature, signature_avgdl
from chunkscope.paths import cache_home

if TYPE_CHECKING:
    import numpy as np

    from chunkscope.chunking.chunk import Chunk, Strategy
    from chunkscope.embedding.embedder import Embedder

#: Points written per upsert call (and per embedding batch): small enough that stopping is prompt.
BATCH = 64
#: Qdrant's namespace for chunkscope point ids (a fixed random uuid: ids are stable across versions).
POINT_NAMESPACE = uuid.UUID("6a1c0a52-7f0b-4f39-9d0c-2b7f3f0e8c11")
#: Payload fields that get an index on a Qdrant server (local mode has no payload indexes).
INDEXED_FIELDS = {"path": "keyword", "chapter_id": "keyword", "chapter": "integer"}
#: The names of a point's two vectors: the embedder's, and the BM25 terms of its embed text.
DENSE, KEYWORD = "dense", "bm25"
#: How deep each side of a hybrid search ranks before Qdrant fuses them (reciprocal rank fusion).
FUSION_DEPTH = 50
#: Fields every point carries besides the strategy's metadata.
CORE_FIELDS = (
    "path", "start", "end", "start_line", "end_line", "heading_path", "heading", "citation", "url", "text",
    "tokens", "embed_tokens", "chunk_index", "warnings",
)



class StoreError(Exception):
    """The store cannot be used (locked, unreachable, refused); one line, shown to the user as is."""


# --- results --------------------------------------------------------------------------------------------------


@dataclass
class IndexReport:
    """What one `Store.sync` did."""

    collection: str = ""
    chunks: int = 0  # chunks asked for
    embedded: int = 0  # texts run through the model (embedding cache misses)
    cached: int = 0  # texts whose vector came from the embedding cache
    upserted: int = 0  # points written (new, or payload changed)
    deleted: int = 0  # stale points removed
    unchanged: int = 0  # points already present and identical
    truncated: int = 0  # chunks of the collection longer than the model reads
    seconds: float = 0.0
    cancelled: bool = False  # stopped between batches; the next sync completes the collection

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Hit:
    """One retrieved chunk. ``kept`` is False when its score is under the threshold (shown, but filtered out)."""

    rank: int
    score: float
    kept: bool
    path: str
    start: int
    end: int
    start_line: int
    end_line: int
    heading_path: list[str]
    citation: str
    url: str
    text: str
    chunk_index: int
    metadata: dict[str, Any] = field(default_factory=dict)
    tokens: int | None = None
    embed_tokens: int | None = None
    id: str = ""

    @property
    def heading(self) -> str:
        return self.heading_path[-1] if self.heading_path else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "score": round(float(self.score), 6),
            "kept": self.kept,
            "path": self.path,
            "start": self.start,
            "end": self.end,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "heading_path": list(self.heading_path),
            "citation": self.citation,
            "url": self.url,
            "chunk_index": self.chunk_index,
            "tokens": self.tokens,
            "embed_tokens": self.embed_tokens,
            "metadata": self.metadata,
            "text": self.text,
        }

    @classmethod
    def from_payload(cls, rank: int, score: float, kept: bool, payload: Mapping[str, Any], point_id: Any = "") -> "Hit":
        meta_keys = payload.get("meta_keys") or []
        return cls(
            rank=rank,
            score=float(score),
            kept=kept,
            path=str(payload.get("path", "")),
            start=int(payload.get("start", 0)),
            end=int(payload.get("end", 0)),
            start_line=int(payload.get("start_line", 0)),
            end_line=int(payload.get("end_line", 0)),
            heading_path=list(payload.get("heading_path") or []),
            citation=str(payload.get("citation") or ""),
            url=str(payload.get("url") or ""),
            text=str(payload.get("text", "")),
            chunk_index=int(payload.get("chunk_index", 0)),
            metadata={k: payload[k] for k in meta_keys if k in payload},
            tokens=payload.get("tokens"),
            embed_tokens=payload.get("embed_tokens"),
            id=str(point_id),
        )


@dataclass(frozen=True, slots=True)
class StoredPoint:
    """A point as a pass over the whole collection sees it: its id, its chunk's place, a hash of its text."""

    #: The payload fields it is read from.
    FIELDS: ClassVar[tuple[str, ...]] = ("path", "chunk_index", "start", "end", "start_line", "text")

    id: str
    path: str
    chunk_index: int
    start: int
    end: int
    start_line: int
    #: sha256 of the chunk's text without its outer whitespace: equal for two copies of the same text.
    text_sha: str

    @classmethod
    def from_record(cls, point_id: Any, payload: Mapping[str, Any]) -> "StoredPoint":
        text = str(payload.get("text", "")).strip()
        return cls(str(point_id), str(payload.get("path", "")), int(payload.get("chunk_index", 0)),
                   int(payload.get("start", 0)), int(payload.get("end", 0)), int(payload.get("start_line", 0)),
                   hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())


# --- names and ids --------------------------------------------------------------------------------------------


def _slug(text: str, limit: int = 40) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[-limit:].strip("-") or "x"


def workspace_dir(docs_root: str | os.PathLike[str]) -> Path:
    """The per-docs-tree folder under the cache (``workspaces/<slug-of-abs-root>-<short hash>``)."""
    root = str(Path(docs_root).expanduser().resolve())
    return cache_home() / "workspaces" / f"{_slug(root)}-{hashlib.sha1(root.encode()).hexdigest()[:8]}"


def params_hash(params: Mapping[str, Any]) -> str:
    return hashlib.sha1(json.dumps(dict(params), sort_keys=True, default=str).encode()).hexdigest()[:10]


def owner_key(docs_root: str | os.PathLike[str]) -> str:
    """The docs tree owning a collection: ``<slug of the resolved root's tail>-<sha1(root)[:10]>``."""
    root = str(Path(docs_root).expanduser().resolve())
    return f"{_slug(root, 24)}-{hashlib.sha1(root.encode()).hexdigest()[:10]}"


def collection_name(strategy: str, params: Mapping[str, Any], model_id: str, owner: str = "") -> str:
    """``cs_<strategy>_<sha1(params)[:10]>_<model slug>_<owner>``: a parameter change, another model or another
    docs tree (``owner``, from `owner_key`) gets a collection of its own."""
    name = f"cs_{_slug(strategy, 48)}_{params_hash(params)}_{_slug(model_id, 48)}"
    return f"{name}_{owner}" if owner else name


def point_id(path: str, start: int, end: int, text: str, owner: str = "") -> str:
    """A content-addressed id; ``owner`` keeps the same file and text of two trees two distinct points."""
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    key = f"{path}\x00{start}\x00{end}\x00{sha}"
    return str(uuid.uuid5(POINT_NAMESPACE, f"{owner}\x00{key}" if owner else key))


def payload_sig(payload: Mapping[str, Any], embed_text: str, model_id: str, avgdl: float) -> str:
    """What a stored point must match to be left alone: its payload, the text embedded, the model, and the
    collection's mean length its keyword weights were computed with (see `chunkscope.retrieval.sparse`), which the
    signature also records in the clear (`chunkscope.retrieval.payload.signature`)."""
    h = hashlib.sha1(json.dumps(payload, sort_keys=True).encode())
    h.update(b"\x00" + hashlib.sha256(embed_text.encode("utf-8")).digest() + model_id.encode())
    return signature(h.hexdigest(), avgdl)


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


def build_filter(filters: Mapping[str, Any] | None, paths: Collection[str] | None = None):
    """A Qdrant filter requiring every key to match (a key's alternatives, e.g. 3 or "3", are OR-ed), and, with
    ``paths``, a point's path to be one of them (a partial load's files)."""
    if not filters and paths is None:
        return None
    from qdrant_client import models

    must: list[Any] = []
    for key, value in (filters or {}).items():
        conds = [models.FieldCondition(key=key, match=models.MatchValue(value=v)) for v in parse_filter_value(value)]
        must.append(conds[0] if len(conds) == 1 else models.Filter(should=conds))
    if paths is not None:
        must.append(models.FieldCondition(key="path", match=models.MatchAny(any=sorted(paths))))
    return models.Filter(must=must)


# --- the store ------------------------------------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _close_client(client: Any) -> None:
    try:
        client.close()
    except Exception:  # noqa: BLE001 - closing twice or at interpreter exit
        pass


class Store:
    """A Qdrant instance (embedded local folder or server) holding chunkscope collections.

    Args:
        docs_root: the docs tree the store serves (names the local workspace).
        url: a Qdrant server (``http://localhost:6333``); default: embedded local mode.
        path: the local storage folder (default ``workspace_dir(docs_root)/"qdrant"``).
        api_key_env: the environment variable holding the server's API key (read only; never logged).
        timeout: seconds for server requests.

    Raises:
        MissingExtra: qdrant-client is not installed.
        StoreError: the local folder is used by another process, or the server is unreachable or refuses us.
    """

    def __init__(self, docs_root: str | os.PathLike[str], *, url: str | None = None, path: str | os.PathLike[str] | None = None,
                 api_key_env: str = "QDRANT_API_KEY", timeout: float = 3.0) -> None:
        if url and path:
            raise StoreError("give either a Qdrant url or a local store path, not both")
        require_extra(STORE_MODULES)  # MissingExtra, before any other work
        from qdrant_client import QdrantClient

        self.docs_root = Path(docs_root)
        self.url = url
        self.timeout = timeout
        self._dims: dict[str, int] = {}
        self._owners: dict[str, str] = {}  # collection -> owner_key of the tree whose points it holds
        self._own_workspace = False  # the tree's default local workspace (set below), not a shared store
        # One client call at a time: a UI searches while a worker indexes, and local mode's in-memory arrays are
        # not safe to grow and read at once. A search waits at most for one batch's upsert.
        self._lock = threading.RLock()
        if url:
            self.mode = "server"
            self.path = None
            self.location = url
            api_key = os.environ.get(api_key_env) or None
            with warnings.catch_warnings():
                # "Api key is used with an insecure connection" is qdrant-client's; the user chose the url.
                warnings.simplefilter("ignore")
                try:
                    self.client = QdrantClient(url=url, api_key=api_key, timeout=max(1, int(round(timeout))),
                                               check_compatibility=False)
                except Exception as exc:  # noqa: BLE001 - a malformed url
                    raise StoreError(f"{url}: not a usable Qdrant url ({_one_line(exc)})") from None
            del api_key
            try:
                self._check_server()
            except StoreError:
                _close_client(self.client)
                raise
        else:
            self.mode = "local"
            # Only the tree's own workspace is known to hold nothing but this tree's collections.
            self._own_workspace = path is None
            self.path = Path(path) if path is not None else workspace_dir(docs_root) / "qdrant"
            self.location = str(self.path)
            self.path.mkdir(parents=True, exist_ok=True)
            try:
                with warnings.catch_warnings():
                    # qdrant-client warns about large local collections on open; the bench measures that instead.
                    warnings.simplefilter("ignore")
                    self.client = QdrantClient(path=str(self.path))
            except RuntimeError as exc:
                if "already accessed" in str(exc):
                    raise StoreError(
                        f"{self.path}: the local vector store is in use by another chunkscope process "
                        "or window; close it, or use a Qdrant server (QDRANT_URL)"
                    ) from None
                raise StoreError(f"{self.path}: cannot open the local vector store ({_one_line(exc)})") from None
            except Exception as exc:  # noqa: BLE001 - a damaged store folder
                raise StoreError(f"{self.path}: cannot open the local vector store ({_one_line(exc)})") from None
        # Close the client (and release the local folder's lock) when the Store is dropped or at interpreter exit,
        # before module teardown makes qdrant-client's own __del__ fail noisily.
        self._finalizer = weakref.finalize(self, _close_client, self.client)

    def _check_server(self) -> None:
        """Fail now, in one line, rather than on the first upsert."""
        from qdrant_client.http.exceptions import (
            ResponseHandlingException,
            UnexpectedResponse,
        )

        try:
            self.client.get_collections()
        except UnexpectedResponse as exc:
            code = exc.status_code
            if code in (401, 403):
                raise StoreError(f"{self.url}: the Qdrant server refused the API key (HTTP {code}); "
                                 "set QDRANT_API_KEY") from None
            raise StoreError(f"{self.url}: not a Qdrant server, or it failed (HTTP {code})") from None
        except (ResponseHandlingException, OSError) as exc:
            raise StoreError(f"{self.url}: Qdrant server unreachable ({_one_line(exc)})") from None
        except Exception as exc:  # noqa: BLE001 - httpx errors vary with versions
            raise StoreError(f"{self.url}: Qdrant server unreachable ({_one_line(exc)})") from None

    def __repr__(self) -> str:
        return f"Store({self.mode}: {self.location})"

    def close(self) -> None:
        """Release the store (the local folder's lock included); safe to call twice."""
        fin = getattr(self, "_finalizer", None)
        with self._lock:
            if fin is not None:
                fin()
            self.client = None

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _c(self):
        if getattr(self, "client", None) is None:
            raise StoreError(f"{self.location}: the store is closed")
        return self.client

    # -- collections --

    def use(self, strategy: "Strategy | str", embedder: "Embedder", params: Mapping[str, Any] | None = None, *,
            owner: str | os.PathLike[str] | None = None) -> str:
        """The name of the collection of a docs tree + a strategy and its parameters + the embedder's model,
        created if needed. Every other method takes that name: a store holds no "current" collection.

        Args:
            owner: the root of the docs tree whose points the collection holds (default: the store's ``docs_root``).
        """
        if isinstance(strategy, str):
            name, p = strategy, dict(params or {})
        else:
            name, p = strategy.name, dict(strategy.params)
        # One collection per owning tree, rather than one shared collection with an owner key in every payload:
        # every operation on a collection (stale deletion, a rebuild's drop, a model-size mismatch's recreate,
        # count, search) then touches only that tree's points by construction, with no filter a forgotten call
        # could omit; and local mode, which filters in Python point by point, keeps unfiltered searches fast.
        key = owner_key(self.docs_root if owner is None else owner)
        collection = collection_name(name, p, embedder.model_id, key)
        self._owners[collection] = key
        if self._own_workspace:
            self._drop_unowned(collection_name(name, p, embedder.model_id))
        self.ensure_collection(collection, embedder.dim)
        return collection

    def _drop_unowned(self, name: str) -> None:
        """Drop a collection named before trees owned their points, from the tree's own workspace: its points are
        this tree's, now kept under the owned name, and a local store loads every point of every collection on
        open. (In a shared store such a collection may be another tree's, so it is left alone.)"""
        try:
            with self._lock:
                if self._c().collection_exists(name):
                    self._c().delete_collection(name)
        except StoreError:
            raise
        except Exception:  # noqa: BLE001 - a tidy-up only; the owned collection works either way
            pass

    def ensure_collection(self, name: str, dim: int) -> bool:
        """Create ``name`` (cosine, ``dim``) unless it exists; True when created. A size mismatch is recreated."""
        from qdrant_client import models

        client = self._c()
        try:
            if client.collection_exists(name):
                if self._has_layout(name, dim):
                    self._dims[name] = dim
                    return False
                # Another size (a model folder changed in place) or a collection made before keyword search
                # (one unnamed vector, no sparse one): its points cannot serve every search mode; index afresh.
                client.delete_collection(name)
            client.create_collection(
                name,
                vectors_config={DENSE: models.VectorParams(size=dim, distance=models.Distance.COSINE)},
                # Qdrant weighs each term by its inverse document frequency over the collection at search time:
                # with the term-frequency weights stored per point, the dot product is BM25 (chunkscope.retrieval.sparse).
                sparse_vectors_config={KEYWORD: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            )
            if self.mode == "server":
                for fname, kind in INDEXED_FIELDS.items():
                    client.create_payload_index(name, fname, field_schema=getattr(models.PayloadSchemaType, kind.upper()))
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise StoreError(f"{self.location}: cannot create collection {name} ({_one_line(exc)})") from None
        self._dims[name] = dim
        return True

    def _has_layout(self, name: str, dim: int) -> bool:
        """Whether the collection has this chunkscope's vectors: a named dense one of ``dim`` and the keyword one."""
        params = self._c().get_collection(name).config.params
        dense = params.vectors.get(DENSE) if isinstance(params.vectors, dict) else None
        sparse = params.sparse_vectors or {}
        return dense is not None and int(dense.size) == dim and KEYWORD in sparse

    def collections(self) -> list[str]:
        """chunkscope's collections in this store."""
        return sorted(c.name for c in self._c().get_collections().collections if c.name.startswith("cs_"))

    def drop(self, name: str) -> None:
        self._c().delete_collection(name)
        self._dims.pop(name, None)

    def count(self, name: str) -> int:
        return int(self._c().count(name, exact=True).count)

    def delete_paths(self, paths: Collection[str], name: str) -> None:
        """Remove the points of ``paths`` from the collection (a partial load's rebuild), leaving every other."""
        from qdrant_client import models

        if not paths:
            return
        try:
            with self._lock:
                self._c().delete(name, points_selector=models.FilterSelector(filter=build_filter(None, paths)), wait=True)
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise StoreError(f"{self.location}: deleting from {name} failed ({_one_line(exc)})") from None

    def _owner(self, name: str) -> str:
        """The owner key of a collection selected by `use` (else the store's own tree)."""
        return self._owners.get(name) or owner_key(self.docs_root)

    def point_sigs(self, name: str, paths: Collection[str] | None = None) -> dict[str, str]:
        """Every point id in the collection (only those of ``paths``, when given) with its stored signature."""
        out: dict[str, str] = {}
        if paths is not None and not paths:
            return out
        offset = None
        scope = build_filter(None, paths)
        while True:
            with self._lock:
                records, offset = self._c().scroll(name, scroll_filter=scope, limit=2048, offset=offset,
                                                   with_payload=["sig"], with_vectors=False)
            for r in records:
                out[str(r.id)] = str((r.payload or {}).get("sig", ""))
            if offset is None:
                return out

    # -- indexing --

    def sync(self, chunks: Sequence["Chunk"], embedder: "Embedder", collection: str, *,
             on_progress: ProgressFn | None = None, cancel: CancelToken | None = None,
             extra: Callable[["Chunk"], Mapping[str, Any]] | None = None, scope: Collection[str] | None = None,
             label: str = "") -> IndexReport:
        """Make the collection hold exactly ``chunks``: write missing or changed points, then delete stale ones.

        Args:
            chunks: every chunk of the docs tree for this strategy, in order.
            embedder: gives the vectors (its cache makes already-seen texts free).
            collection: the name `use` gave.
            on_progress: a `Phase.INDEX` report after every batch (points written of points to write; ``cached``
                counts those whose vector came from the embedding cache). ``label`` names the job in it.
            cancel: checked between batches; when cancelled, the sync stops, stale points are kept, and the report
                says ``cancelled``.
            extra: per-chunk payload additions (citation, url) from the retrieval layer.
            scope: the paths ``chunks`` stand for (a partial load: one file of the tree); points of other paths
                are neither compared nor deleted. None: ``chunks`` are the whole tree.
        """
        from qdrant_client import models

        t0 = time.perf_counter()
        name = collection
        if name not in self._dims:
            self.ensure_collection(name, embedder.dim)
        # Keyword weights are normalised by a mean chunk length fixed when the collection is first written (the
        # chunks given then) and read back from any point afterwards: an edit, or indexing one file, then rewrites
        # only the points that changed, and an unchanged tree costs no term extraction at all. (The mean drifts
        # from the tree's as it grows; BM25's length normalisation is a soft one, and a rebuild refreshes it.)
        bm25 = Bm25Encoder()
        avgdl = self._stored_avgdl(name) or average_length(len(bm25.terms(c.embed_text)) for c in chunks)
        if scope is not None:
            chunks = [c for c in chunks if c.path in scope]  # never write what the scope would not delete
        report = IndexReport(collection=name, chunks=len(chunks))
        existing = self.point_sigs(name, scope)
        owner = self._owner(name)
        wanted: dict[str, tuple["Chunk", dict[str, Any], str]] = {}
        for c in chunks:
            pid = point_id(c.path, c.start, c.end, c.text, owner)
            if pid in wanted:
                continue  # a strategy emitting the same span twice: one point
            payload = chunk_payload(c, extra(c) if extra else None)
            sig = payload_sig(payload, c.embed_text, embedder.model_id, avgdl)
            payload[SIGNATURE_KEY] = sig
            wanted[pid] = (c, payload, sig)
        todo = [(pid, c, payload) for pid, (c, payload, sig) in wanted.items() if existing.get(pid) != sig]
        # Over every chunk of the collection, not only those written now: a re-run that embeds nothing must not
        # report that nothing is truncated.
        limit = getattr(embedder, "max_seq_length", None)
        if limit:
            report.truncated = sum(1 for c, _, _ in wanted.values() if c.embed_tokens is not None and c.embed_tokens > limit)
        report.unchanged = len(wanted) - len(todo)
        total = len(todo)

        started = Progress(Phase.INDEX, 0, total, unit="points", label=label)

        def progress() -> None:
            if on_progress is not None:
                on_progress(started.advanced(report.upserted, cached=report.cached))

        progress()
        for i in range(0, total, BATCH):
            if cancel is not None and cancel.cancelled:
                report.cancelled = True
                break
            batch = todo[i:i + BATCH]
            embedded = embedder.embed([c.embed_text for _, c, _ in batch], token_counts=[c.embed_tokens for _, c, _ in batch])
            vecs, st = embedded.vectors, embedded.stats
            report.embedded += st.misses
            report.cached += st.hits
            points = []
            for (pid, c, payload), v in zip(batch, vecs):
                sv = bm25.document(bm25.terms(c.embed_text), avgdl)
                points.append(models.PointStruct(id=pid, payload=payload, vector={
                    DENSE: v.tolist(), KEYWORD: models.SparseVector(indices=sv.indices, values=sv.values)}))
            try:
                with self._lock:
                    self._c().upsert(name, points=points, wait=True)
            except StoreError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise StoreError(f"{self.location}: writing to {name} failed ({_one_line(exc)})") from None
            report.upserted += len(batch)
            progress()
        if not report.cancelled:
            stale = [pid for pid in existing if pid not in wanted]
            for i in range(0, len(stale), 1024):
                with self._lock:
                    self._c().delete(name, points_selector=models.PointIdsList(points=stale[i:i + 1024]), wait=True)
            report.deleted = len(stale)
        report.seconds = time.perf_counter() - t0
        return report

    def _stored_avgdl(self, name: str) -> float | None:
        """The mean length the collection's keyword weights were computed with (any point says it)."""
        with self._lock:
            records, _ = self._c().scroll(name, limit=1, with_payload=[SIGNATURE_KEY], with_vectors=False)
        return signature_avgdl(str((records[0].payload or {}).get(SIGNATURE_KEY, ""))) if records else None

    # -- searching --

    def search(self, vector: "np.ndarray | Sequence[float] | None", k: int = 5, threshold: float | None = None,
               filters: Mapping[str, Any] | None = None, *, collection: str,
               paths: Collection[str] | None = None, mode: str = DEFAULT_SEARCH_MODE,
               text: str | None = None) -> list[Hit]:
        """The ``k`` best chunks, best first; hits under ``threshold`` are returned too, with ``kept=False``.

        Args:
            vector: the question's dense vector (``dense`` and ``hybrid``).
            filters: payload keys to values (``{"chapter": "3"}``; see `parse_filter_value`); all must match.
            paths: only chunks of these documents (a partial load's files).
            mode: ``dense`` (cosine), ``keyword`` (BM25, scored by Qdrant) or ``hybrid`` (both, fused by Qdrant
                with reciprocal rank fusion); see `chunkscope.retrieval.search_modes`.
            text: the question's words (``keyword`` and ``hybrid``).

        The threshold is a cosine score: it applies to ``dense`` only. BM25 scores and fused ranks are on other
        scales, so in the other modes every hit is kept.
        """
        from qdrant_client import models

        check_search_mode(mode)
        name = collection
        k = max(1, int(k))
        if paths is not None and not paths:
            return []
        vec = None
        if mode != "keyword":
            if vector is None:
                raise ValueError(f"{mode} search needs the question's vector")
            vec = vector.tolist() if hasattr(vector, "tolist") else list(vector)
        sparse = None
        if mode != "dense":
            if text is None:
                raise ValueError(f"{mode} search needs the question's text")
            q = Bm25Encoder().query(text)
            sparse = models.SparseVector(indices=q.indices, values=q.values)
        scope = build_filter(filters, paths)
        try:
            with self._lock:
                if mode == "dense":
                    points = self._c().query_points(name, query=vec, using=DENSE, limit=k, query_filter=scope,
                                                    with_payload=True, with_vectors=False).points
                elif mode == "keyword":
                    points = [] if not sparse.indices else self._c().query_points(
                        name, query=sparse, using=KEYWORD, limit=k, query_filter=scope, with_payload=True,
                        with_vectors=False).points
                else:
                    depth = max(FUSION_DEPTH, k)
                    prefetch = [models.Prefetch(query=vec, using=DENSE, limit=depth, filter=scope)]
                    if sparse.indices:  # a question of stop words only has no keyword side
                        prefetch.append(models.Prefetch(query=sparse, using=KEYWORD, limit=depth, filter=scope))
                    points = self._c().query_points(name, prefetch=prefetch,
                                                    query=models.FusionQuery(fusion=models.Fusion.RRF), limit=k,
                                                    with_payload=True, with_vectors=False).points
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise StoreError(f"{self.location}: search in {name} failed ({_one_line(exc)})") from None
        hits = []
        for rank, p in enumerate(points, 1):
            kept = passes_threshold(p.score, threshold, mode)
            hits.append(Hit.from_payload(rank, p.score, kept, p.payload or {}, p.id))
        return hits

    # -- the collection as a whole (chunkscope.retrieval.neighbours) --

    def points(self, name: str, paths: Collection[str] | None = None) -> tuple[list[StoredPoint], "np.ndarray"]:
        """Every point of the collection (of ``paths`` only, when given) with its dense vector, one row each."""
        import numpy as np

        out: list[StoredPoint] = []
        rows: list[Any] = []
        offset = None
        scope = build_filter(None, paths)
        try:
            while True:
                with self._lock:
                    records, offset = self._c().scroll(name, scroll_filter=scope, limit=1024, offset=offset,
                                                       with_payload=list(StoredPoint.FIELDS), with_vectors=[DENSE])
                for r in records:
                    vec = r.vector.get(DENSE) if isinstance(r.vector, dict) else None
                    if vec is not None:
                        out.append(StoredPoint.from_record(r.id, r.payload or {}))
                        rows.append(vec)
                if offset is None:
                    break
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise StoreError(f"{self.location}: reading {name} failed ({_one_line(exc)})") from None
        dim = self._dims.get(name, 0)
        return out, (np.asarray(rows, dtype=np.float32) if rows else np.zeros((0, dim), dtype=np.float32))

    def nearest(self, name: str, vectors: "np.ndarray", limit: int,
                paths: Collection[str] | None = None) -> list[list[tuple[str, float]]]:
        """The ``limit`` nearest points (id, cosine) of each vector, best first: one batch query (Qdrant's
        ``query_batch_points``), so a server answers them in one request.

        By vector rather than by point id: a query by id makes Qdrant leave that point out through a filter,
        which local mode checks point by point in Python (all 715 points of the Rust book: 4.3 s by id, 1.6 s
        by vector); the caller drops each point from its own list instead.
        """
        from qdrant_client import models

        scope = build_filter(None, paths)
        requests = [models.QueryRequest(query=v.tolist(), using=DENSE, limit=limit, filter=scope,
                                        with_payload=False, with_vector=False) for v in vectors]
        try:
            with self._lock:
                answers = self._c().query_batch_points(name, requests=requests)
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise StoreError(f"{self.location}: search in {name} failed ({_one_line(exc)})") from None
        return [[(str(p.id), float(p.score)) for p in a.points] for a in answers]

"""The vector store: one Qdrant collection per (docs tree, strategy + parameters, model), behind one interface.

`Store` is what the rest of chunkscope holds. It names collections (`chunkscope.retrieval.ids`), keeps each tree
to its own points, and turns searches into `Hit`s; the engine behind it (`chunkscope.retrieval.engine.Engine`)
is Qdrant itself:

- by default Qdrant Edge in the process (`engines.edge`), one shard folder per collection in a per-docs-tree
  workspace under chunkscope's cache folder (never inside the docs tree), or in a configured folder;
- with ``url=`` a Qdrant server through qdrant-client (`engines.client`), the API key read from an environment
  variable only;
- with ``engine="local"`` qdrant-client's local mode, kept as a fallback while Edge is beta (see `ENGINES`).

The store never embeds: the caller gives it points with their vectors (`chunkscope.retrieval.indexing`).
Ownership: a collection's points belong to one docs tree (its resolved root, `owner_key`), so two trees sharing a
store (a configured folder, or a server) never delete, rewrite or return each other's points.
"""

from __future__ import annotations

import hashlib
import shutil
import time
import warnings
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Collection, Mapping, Sequence

from chunkscope.extras import STORE_MODULES, require_extra
from chunkscope.retrieval.engine import (
    FUSION_DEPTH,
    Cond,
    Engine,
    Found,
    PointData,
    StoreError,
    StoreLocked,
    build_filter,
    fuse,
)
from chunkscope.retrieval.ids import COLLECTION_PREFIX, collection_name, owner_key, workspace_dir
from chunkscope.retrieval.payload import META_KEYS_KEY, SIGNATURE_KEY, payload_metadata, signature_avgdl
from chunkscope.retrieval.search_modes import DEFAULT_SEARCH_MODE, check_search_mode, passes_threshold
from chunkscope.retrieval.sparse import Bm25Encoder

if TYPE_CHECKING:
    import os

    import numpy as np

    from chunkscope.chunking.strategy import Strategy

#: The embedded engines: ``edge`` (Qdrant Edge, the default) and ``local`` (qdrant-client's local mode). Local
#: mode stays selectable while Edge is beta (pinned to the minor version tested): should an Edge release fail on a
#: platform, ``local`` still works, with the same answers (both search exactly), only slower. It is also what the
#: benchmark measures Edge against. ``memory`` is qdrant-client's in-memory mode, standing in for a server in tests.
ENGINES = ("edge", "local", "memory")
#: The qdrant-client package, needed for a server and the local fallback only.
CLIENT_MODULES = (("qdrant_client", "qdrant-client"),)
#: The file that marks a folder as in use by one store (held while the store is open).
LOCK_FILE = ".chunkscope.lock"


class StoreInUse(StoreLocked):
    """The store's folder is held by another process (or another store of this one)."""


# --- results --------------------------------------------------------------------------------------------------


@dataclass
class IndexReport:
    """What one index pass (`chunkscope.retrieval.indexing.index_chunks`) did."""

    collection: str = ""
    chunks: int = 0  # chunks asked for
    embedded: int = 0  # texts run through the model (embedding cache misses)
    cached: int = 0  # texts whose vector came from the embedding cache
    upserted: int = 0  # points written (new, or payload changed)
    deleted: int = 0  # stale points removed
    unchanged: int = 0  # points already present and identical
    truncated: int = 0  # chunks of the collection longer than the model reads
    seconds: float = 0.0
    cancelled: bool = False  # stopped between batches; the next pass completes the collection
    #: Where the embedded texts ran ("cpu (ONNX Runtime)", "cuda:0 (torch)", an endpoint's host); None when every
    #: vector came from the cache.
    device: str | None = None

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
            metadata=payload_metadata(payload),
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


# --- the store ------------------------------------------------------------------------------------------------


def _is_local_mode_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a store of qdrant-client's local mode (its ``meta.json`` and ``collection/``)."""
    return (folder / "meta.json").is_file() or (folder / "collection").is_dir()


class Store:
    """A Qdrant (embedded in the process, or a server) holding chunkscope collections.

    Args:
        docs_root: the docs tree the store serves (names the workspace).
        url: a Qdrant server (``http://localhost:6333``); default: embedded.
        path: the embedded store's folder (default ``workspace_dir(docs_root)/"edge"``, or ``/"qdrant"`` for
            ``engine="local"``).
        api_key_env: the environment variable holding the server's API key (read only; never logged); None
            when no key may go to ``url`` (`chunkscope.config.reader.QdrantTarget.api_key_env`).
        timeout: seconds for server requests.
        engine: the embedded engine, one of `ENGINES` (ignored with ``url``).
        on_notice: told each one-line notice (the command line prints it as a warning); by default each is
            issued as a RuntimeWarning.

    Raises:
        MissingExtra: Qdrant Edge (or, for a server, qdrant-client) is not installed.
        StoreError: the folder is used by another process, or the server is unreachable or refuses us.
    """

    def __init__(self, docs_root: str | os.PathLike[str], *, url: str | None = None,
                 path: str | os.PathLike[str] | None = None, api_key_env: str | None = "QDRANT_API_KEY",
                 timeout: float = 3.0, engine: str = "edge", on_notice: Callable[[str], None] | None = None) -> None:
        if url and path:
            raise StoreError("give either a Qdrant url or a local store path, not both")
        if engine not in ENGINES:
            raise StoreError(f"unknown vector store engine {engine!r} (choose one of {', '.join(ENGINES)})")
        require_extra(STORE_MODULES)  # MissingExtra, before any other work
        self.docs_root = Path(docs_root)
        self.url = url
        self.timeout = timeout
        #: One-line notices of what the store did on its own (a damaged collection moved aside, an old store
        #: format replaced); each is also told to ``on_notice``.
        self.notices: list[str] = []
        self._on_notice = on_notice
        self._dims: dict[str, int] = {}
        self._owners: dict[str, str] = {}  # collection -> owner_key of the tree whose points it holds
        # Only the tree's own workspace is known to hold nothing but this tree's collections.
        self._own_workspace = not url and path is None
        self._folder_lock: Any = None
        self.path: Path | None = None
        self.engine: Engine
        if url:
            require_extra(CLIENT_MODULES)
            from chunkscope.retrieval.engines.client import ClientEngine

            self.mode = "server"
            self.engine = ClientEngine.server_at(url, api_key_env, timeout)
        elif engine == "memory":
            require_extra(CLIENT_MODULES)
            from chunkscope.retrieval.engines.client import ClientEngine

            self.mode = "memory"
            self.engine = ClientEngine.memory()
        else:
            self.mode = engine
            default = workspace_dir(docs_root) / ("edge" if engine == "edge" else "qdrant")
            self.path = Path(path).expanduser() if path is not None else default
            self.engine = self._open_embedded(engine, self.path)
        self.location = self.engine.location
        # Release the engine (and its folder's locks) when the Store is dropped or at interpreter exit.
        self._finalizer = weakref.finalize(self, _release, self.engine, self._folder_lock)

    def _open_embedded(self, engine: str, folder: Path) -> Engine:
        if engine == "local":
            require_extra(CLIENT_MODULES)
            from chunkscope.retrieval.engines.client import ClientEngine

            return ClientEngine.local(folder)
        from chunkscope.retrieval.engines.edge import EdgeEngine

        folder.mkdir(parents=True, exist_ok=True)
        self._lock_folder(folder)
        try:
            self._replace_local_mode(folder)
            return EdgeEngine(folder, self._notice)
        except BaseException:
            _release(None, self._folder_lock)
            raise

    def _lock_folder(self, folder: Path) -> None:
        """Hold the folder for this store: a second process (or store) is told at once, in one line. Edge locks
        each shard as it opens it; the folder's lock says so before any work, as qdrant-client's local mode did."""
        from filelock import FileLock, Timeout

        lock = FileLock(str(folder / LOCK_FILE), timeout=0, thread_local=False)
        try:
            lock.acquire()
        except Timeout:
            raise StoreInUse(f"{folder}: the local vector store is in use by another chunkscope process or window; "
                             "close it, or use a Qdrant server (QDRANT_URL)") from None
        except OSError as exc:
            raise StoreError(f"{folder}: cannot open the local vector store ({exc.strerror or exc})") from None
        self._folder_lock = lock

    def _replace_local_mode(self, folder: Path) -> None:
        """A store written by qdrant-client's local mode (chunkscope before Qdrant Edge): its collections are
        rebuilt in Edge from the embedding cache on the next index (no embedding). The tree's own workspace kept
        it in a folder of its own (``qdrant``), removed; in a configured folder it is moved aside."""
        if self._own_workspace:
            legacy = folder.parent / "qdrant"
            if legacy.is_dir() and _is_local_mode_folder(legacy):
                shutil.rmtree(legacy, ignore_errors=True)
                self._notice(f"{legacy}: the vector store of an older chunkscope (qdrant-client's local mode) was "
                             "removed; its collections are rebuilt from the embedding cache on the next index")
            return
        if _is_local_mode_folder(folder):
            aside = folder / f".local-mode-{time.strftime('%Y%m%d-%H%M%S')}"
            aside.mkdir()
            for name in ("meta.json", "collection", ".lock"):
                if (folder / name).exists():
                    shutil.move(str(folder / name), str(aside / name))
            self._notice(f"{folder}: the vector store of an older chunkscope (qdrant-client's local mode) was moved "
                         f"to {aside.name}; its collections are rebuilt from the embedding cache on the next index")

    def _notice(self, message: str) -> None:
        self.notices.append(message)
        if self._on_notice is not None:
            self._on_notice(message)
        else:
            warnings.warn(message, RuntimeWarning, stacklevel=3)

    def __repr__(self) -> str:
        return f"Store({self.mode}: {self.location})"

    def close(self) -> None:
        """Release the store (its folder's lock included); safe to call twice."""
        self._finalizer()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- collections --

    def use(self, strategy: "Strategy | str", embedder: Any, params: Mapping[str, Any] | None = None, *,
            owner: str | os.PathLike[str] | None = None) -> str:
        """The name of the collection of a docs tree + a strategy and its parameters + the embedder's model
        (``embedder.model_id``, ``embedder.dim``), created if needed. Every other method takes that name: a store
        holds no "current" collection.

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
        # could omit.
        key = owner_key(self.docs_root if owner is None else owner)
        collection = collection_name(name, p, embedder.model_id, key)
        self._owners[collection] = key
        if self._own_workspace:
            self._drop_unowned(collection_name(name, p, embedder.model_id))
        self.ensure_collection(collection, embedder.dim)
        return collection

    def _drop_unowned(self, name: str) -> None:
        """Drop a collection named before trees owned their points, from the tree's own workspace: its points are
        this tree's, now kept under the owned name. (In a shared store such a collection may be another tree's,
        so it is left alone.)"""
        try:
            if self.engine.exists(name):
                self.engine.drop(name)
        except StoreLocked:
            raise
        except StoreError:
            pass  # a tidy-up only; the owned collection works either way

    def owner(self, name: str) -> str:
        """The owner key of a collection selected by `use` (else the store's own tree)."""
        return self._owners.get(name) or owner_key(self.docs_root)

    def ensure_collection(self, name: str, dim: int) -> bool:
        """Create ``name`` (cosine, ``dim``) unless it exists; True when created. A size mismatch is recreated."""
        size = self.engine.dense_size(name)
        if size == dim:
            self._dims[name] = dim
            return False
        if self.engine.exists(name):
            # Another size (a model folder changed in place), a collection made before keyword search, or a
            # damaged one moved aside: its points cannot serve every search mode; index afresh.
            self.engine.drop(name)
        self.engine.create(name, dim)
        self._dims[name] = dim
        return True

    def collections(self) -> list[str]:
        """chunkscope's collections in this store."""
        return [c for c in self.engine.collections() if c.startswith(COLLECTION_PREFIX)]

    def drop(self, name: str) -> None:
        self.engine.drop(name)
        self._dims.pop(name, None)

    def count(self, name: str) -> int:
        return self.engine.count(name)

    # -- points --

    def write(self, name: str, points: Sequence[PointData]) -> None:
        """Write points with their vectors (replacing those with the same ids)."""
        if points:
            self.engine.upsert(name, points)

    def delete_ids(self, name: str, ids: Sequence[str]) -> None:
        for i in range(0, len(ids), 1024):
            self.engine.delete(name, ids[i:i + 1024])

    def delete_paths(self, paths: Collection[str], name: str) -> None:
        """Remove the points of ``paths`` from the collection (a partial load's rebuild), leaving every other."""
        if paths:
            self.engine.delete(name, where=build_filter(None, paths))

    def point_sigs(self, name: str, paths: Collection[str] | None = None) -> dict[str, str]:
        """Every point id in the collection (only those of ``paths``, when given) with its stored signature."""
        out: dict[str, str] = {}
        if paths is not None and not paths:
            return out
        scope = build_filter(None, paths)
        offset: str | None = None
        while True:
            records, offset = self.engine.scroll(name, scope, [SIGNATURE_KEY], offset=offset)
            for r in records:
                out[r.id] = str(r.payload.get(SIGNATURE_KEY, ""))
            if offset is None:
                return out

    def stored_avgdl(self, name: str) -> float | None:
        """The mean length the collection's keyword weights were computed with (any point says it)."""
        records, _ = self.engine.scroll(name, None, [SIGNATURE_KEY], limit=1)
        return signature_avgdl(str(records[0].payload.get(SIGNATURE_KEY, ""))) if records else None

    # -- searching --

    def search(self, vector: "np.ndarray | Sequence[float] | None", k: int = 5, threshold: float | None = None,
               filters: Mapping[str, Any] | None = None, *, collection: str,
               paths: Collection[str] | None = None, mode: str = DEFAULT_SEARCH_MODE,
               text: str | None = None) -> list[Hit]:
        """The ``k`` best chunks by exact search, best first (equal scores by point id); hits under ``threshold``
        are returned too, with ``kept=False``.

        Args:
            vector: the question's dense vector (``dense`` and ``hybrid``).
            filters: metadata keys to values (``{"chapter": "3"}``; see `engine.build_filter`); all must match.
            paths: only chunks of these documents (a partial load's files).
            mode: ``dense`` (cosine), ``keyword`` (BM25, scored by Qdrant) or ``hybrid`` (both rankings, fused
                by reciprocal rank fusion: `engine.fuse`); see `chunkscope.retrieval.search_modes`.
            text: the question's words (``keyword`` and ``hybrid``).

        The threshold is a cosine score: it applies to ``dense`` only. BM25 scores and fused ranks are on other
        scales, so in the other modes every hit is kept.
        """
        check_search_mode(mode)
        k = max(1, int(k))
        if paths is not None and not paths:
            return []
        where = build_filter(filters, paths, lambda key: self._has_meta(collection, key))
        sides: list[list[Found]] = []
        depth = k if mode != "hybrid" else max(FUSION_DEPTH, k)
        if mode != "keyword":
            if vector is None:
                raise ValueError(f"{mode} search needs the question's vector")
            sides.append(self.engine.search(collection, [float(x) for x in vector], depth, where,
                                            with_payload=mode != "hybrid"))
        if mode != "dense":
            if text is None:
                raise ValueError(f"{mode} search needs the question's text")
            sides.append(self.engine.search(collection, Bm25Encoder().query(text), depth, where,
                                            with_payload=mode != "hybrid"))
        found = sides[0]
        if mode == "hybrid":
            # Payloads of the k fused points only: the sides rank 50 each, and reading a payload is the dear part.
            found = fuse(sides, k)
            payloads = self.engine.payloads(collection, [f.id for f in found])
            found = [Found(f.id, f.score, payloads.get(f.id, {})) for f in found]
        return [Hit.from_payload(rank, f.score, passes_threshold(f.score, threshold, mode), f.payload, f.id)
                for rank, f in enumerate(found, 1)]

    def _has_meta(self, name: str, key: str) -> bool | None:
        """Whether every point of ``name`` has the metadata field ``key`` (True), none has (False), or some (None):
        two counts an index answers, so a filter is a plain condition in the usual cases."""
        having = self.engine.count(name, Cond("match", META_KEYS_KEY, (key,)))
        if having == 0:
            return False
        return True if having == self.engine.count(name) else None

    # -- the collection as a whole (chunkscope.retrieval.neighbours) --

    def points(self, name: str, paths: Collection[str] | None = None) -> tuple[list[StoredPoint], "np.ndarray"]:
        """Every point of the collection (of ``paths`` only, when given) with its dense vector, one row each."""
        import numpy as np

        out: list[StoredPoint] = []
        rows: list[Sequence[float]] = []
        scope = build_filter(None, paths)
        offset: str | None = None
        while True:
            records, offset = self.engine.scroll(name, scope, StoredPoint.FIELDS, with_dense=True, offset=offset,
                                                 limit=1024)
            for r in records:
                if r.dense is not None:
                    out.append(StoredPoint.from_record(r.id, r.payload))
                    rows.append(r.dense)
            if offset is None:
                break
        dim = self._dims.get(name, 0)
        return out, (np.asarray(rows, dtype=np.float32) if rows else np.zeros((0, dim), dtype=np.float32))


def _release(engine: Engine | None, folder_lock: Any) -> None:
    try:
        if engine is not None:
            engine.close()
    finally:
        if folder_lock is not None:
            folder_lock.release()

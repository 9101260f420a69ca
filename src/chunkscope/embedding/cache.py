"""The embedding cache: every vector ever computed, in one SQLite file, safe to share between threads and processes.

`EmbeddingCache` keeps vectors keyed by ``(embedder identity, sha256(text))`` in WAL mode with a busy timeout and one
short transaction per write, so re-embedding unchanged text costs a lookup, and two processes indexing at once
only wait for each other. A file that is not a sane cache is moved aside to ``*.corrupt-<timestamp>`` and rebuilt,
with a warning (python ``warnings`` and ``EmbeddingCache.warnings``). A vector that is not finite or is all zeros
is never answered (it is recomputed and replaced). A folder that cannot be written (a full disk, a read-only
cache) is an `EmbedError` naming the folder.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chunkscope.embedding.encoders import EmbedError

log = logging.getLogger(__name__)

#: Bump when the cache table changes shape; an older file is then moved aside and rebuilt.
CACHE_SCHEMA = 1
CACHE_FILE = "embeddings.sqlite3"
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: How long a writer waits for another process's transaction before giving up (ms).
BUSY_TIMEOUT_MS = 30_000


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    """SQLITE_CORRUPT / SQLITE_NOTADB surface as the bare DatabaseError; busy, locked and I/O errors as
    OperationalError, which must never make us throw a good cache away."""
    return type(exc) is sqlite3.DatabaseError


class EmbeddingCache:
    """Vectors by (model id, sha256 of the text) in SQLite; safe to share between threads and processes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.warnings: list[str] = []
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._open()
        except (OSError, sqlite3.OperationalError) as exc:
            self._close_conn()
            raise self._unusable(exc) from None

    def _unusable(self, exc: BaseException) -> EmbedError:
        """A one-line error naming the cache's folder: a full disk or a read-only folder is the user's to fix."""
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).strip().splitlines()[0]
        return EmbedError(f"embedding cache {self.path.parent}: cannot use it ({reason})")

    # Opening is serialised across processes with a file lock so that two processes finding the same corrupt
    # file do not both move it aside (the second would move the first one's fresh rebuild).
    def _open(self) -> None:
        from filelock import FileLock

        with FileLock(str(self.path) + ".lock", timeout=BUSY_TIMEOUT_MS / 1000):
            problem = self._check_file()
            if problem is None:
                try:
                    self._conn = self._connect()
                    problem = self._check_schema(self._conn)
                except sqlite3.DatabaseError as exc:
                    if not _is_corruption(exc):
                        raise  # read-only, full, locked: the file is fine, the folder is the problem
                    problem = f"not a readable SQLite database ({exc})"
            if problem is not None:
                self._close_conn()
                self._move_aside(problem)
                self._conn = self._connect()
                self._create(self._conn)

    def _check_file(self) -> str | None:
        """Cheap checks before SQLite touches the file: a cache that is garbage must not be 'repaired'."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return None
        if size == 0:
            return None  # an empty file is a valid, empty SQLite database
        with self.path.open("rb") as fh:
            head = fh.read(len(_SQLITE_MAGIC))
        if head != _SQLITE_MAGIC:
            return "not an SQLite database (bad header)"
        return None

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False,
                               isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":  # e.g. a file system without shared memory; still correct, just slower
            log.debug("embedding cache %s: journal mode %s", self.path, mode)
        # NORMAL is durable enough for a cache (a lost last transaction is re-embedded) and much faster than FULL.
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    def _check_schema(self, conn: sqlite3.Connection) -> str | None:
        # quick_check reads every page: it catches a truncated or scribbled file now rather than mid-index.
        res = conn.execute("PRAGMA quick_check(1)").fetchone()
        if not res or res[0] != "ok":
            return f"damaged ({res[0] if res else 'no answer'})"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            self._create(conn)
            return None
        if "meta" not in tables or "vectors" not in tables:
            return "not an embedding cache (unexpected tables)"
        row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None or row[0] != str(CACHE_SCHEMA):
            return f"cache schema {row[0] if row else '?'} is not {CACHE_SCHEMA}"
        return None

    @staticmethod
    def _create(conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, sha TEXT NOT NULL, dim INTEGER NOT NULL,"
                " tokens INTEGER, vec BLOB NOT NULL, PRIMARY KEY (model, sha)) WITHOUT ROWID"
            )
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(CACHE_SCHEMA),))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _move_aside(self, problem: str) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while target.exists():
            n += 1
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
        if self.path.exists():
            os.replace(self.path, target)
        # A WAL or shared-memory file belongs to the old database; left behind it would be replayed into the new.
        for suffix in ("-wal", "-shm", "-journal"):
            side = Path(str(self.path) + suffix)
            if side.exists():
                os.replace(side, Path(str(target) + suffix))
        msg = f"embedding cache {self.path} was {problem}; moved it to {target.name} and started a new one"
        self.warnings.append(msg)
        warnings.warn(msg, RuntimeWarning, stacklevel=4)

    def _close_conn(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    def _recover(self, exc: sqlite3.DatabaseError) -> None:
        """The file went bad while open (another program scribbled on it): rebuild, losing only cached work."""
        self._close_conn()
        from filelock import FileLock

        with FileLock(str(self.path) + ".lock", timeout=BUSY_TIMEOUT_MS / 1000):
            self._move_aside(f"damaged while in use ({exc})")
            self._conn = self._connect()
            self._create(self._conn)

    def close(self) -> None:
        with self._lock:
            self._close_conn()

    def __enter__(self) -> "EmbeddingCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads and writes --

    def get_many(self, model: str, shas: Sequence[str], dim: int | None = None) -> dict[str, tuple[np.ndarray, int | None]]:
        """Cached (vector, word-piece count) for the given hashes; rows of the wrong size count as absent."""
        out: dict[str, tuple[np.ndarray, int | None]] = {}
        for sha, d, toks, blob in self._select("sha, dim, tokens, vec", model, shas):
            if (dim is not None and d != dim) or len(blob) != 4 * d:
                continue
            vec = np.frombuffer(blob, dtype="<f4").astype(np.float32)
            if not (np.isfinite(vec).all() and vec.any()):
                continue  # a bad vector cached by an older chunkscope: asked for again, replaced
            out[sha] = (vec, toks)
        return out

    def get_tokens(self, model: str, shas: Sequence[str]) -> dict[str, int]:
        """The word-piece counts stored with cached vectors, without the vectors (hashes with none are left out)."""
        return {sha: toks for sha, toks in self._select("sha, tokens", model, shas) if toks is not None}

    def _select(self, columns: str, model: str, shas: Sequence[str]) -> list[tuple[Any, ...]]:
        """``columns`` of the rows of ``model`` with the given hashes; a file gone bad meanwhile is rebuilt (empty)."""
        if not shas:
            return []
        with self._lock:
            for attempt in (0, 1):
                try:
                    assert self._conn is not None, "cache is closed"
                    rows: list[tuple[Any, ...]] = []
                    for i in range(0, len(shas), 500):  # SQLite's bound-parameter limit
                        part = list(shas[i:i + 500])
                        q = f"SELECT {columns} FROM vectors WHERE model=? AND sha IN ({','.join('?' * len(part))})"
                        rows.extend(self._conn.execute(q, (model, *part)))
                    return rows
                except sqlite3.OperationalError as exc:
                    raise self._unusable(exc) from None
                except sqlite3.DatabaseError as exc:
                    if attempt or not _is_corruption(exc):
                        raise
                    self._recover(exc)
        return []

    def put_many(self, model: str, rows: Iterable[tuple[str, np.ndarray, int | None]]) -> None:
        """Store vectors; one short transaction so a concurrent process waits milliseconds, never sees half."""
        data = [(model, sha, int(v.shape[0]), toks, np.ascontiguousarray(v, dtype="<f4").tobytes()) for sha, v, toks in rows]
        if not data:
            return
        with self._lock:
            for attempt in (0, 1):
                try:
                    assert self._conn is not None, "cache is closed"
                    self._conn.execute("BEGIN IMMEDIATE")
                    try:
                        self._conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)", data)
                        self._conn.execute("COMMIT")
                    except BaseException:
                        if self._conn.in_transaction:  # a failed COMMIT may have ended it already
                            self._conn.execute("ROLLBACK")
                        raise
                    return
                except sqlite3.OperationalError as exc:  # a full disk, a read-only file, a lock held too long
                    raise self._unusable(exc) from None
                except sqlite3.DatabaseError as exc:
                    if attempt or not _is_corruption(exc):
                        raise
                    self._recover(exc)

    def count(self, model: str | None = None) -> int:
        with self._lock:
            assert self._conn is not None, "cache is closed"
            if model is None:
                return self._conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
            return self._conn.execute("SELECT COUNT(*) FROM vectors WHERE model=?", (model,)).fetchone()[0]

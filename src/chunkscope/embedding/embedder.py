"""Sentence embeddings with a persistent, process-safe cache, over any embedding model.

`Embedder` is what the rest of chunkscope embeds with: it de-duplicates texts, serves what it can from the
`EmbeddingCache` (keyed by the embedder's identity, so switching embedders never mixes vectors), runs the rest
through its `Encoder` in batches it can report on and stop between, and returns every call's statistics with
its vectors. Its encoders are made by the embedder's backend (`chunkscope.embedding.registry`): one for a
question, the quickest to load, and one for many texts when that differs (a GPU). Every vector is checked
(`chunkscope.embedding.encoders.check_vectors`) before it is cached or returned. Nothing reaches the network but an
endpoint the user named.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from chunkscope.embedding.cache import CACHE_FILE, EmbeddingCache
from chunkscope.embedding.encoders import DEFAULT_TIMEOUT, EmbedError, Encoder, EncoderOptions, check_vectors
from chunkscope.embedding.model_info import model_dimension, model_identity
from chunkscope.embedding.registry import parse_embedder
from chunkscope.embedding.spec import EmbedderSpec, EmbedderSpecError
from chunkscope.extras import (
    DEFAULT_MODEL_MODULES,
    EMBED_MODULES,
    RETRIEVAL_EXTRA,
    STORE_MODULES,
    MissingExtra,
    missing_retrieval,
    require_extra,
)
from chunkscope.paths import TokenizerError, cache_home
from chunkscope.progress import CancelToken, Cancelled, Phase, Progress, ProgressFn

if TYPE_CHECKING:
    from chunkscope.config.reader import Config
    from chunkscope.tokens.registry import EndpointTokenizer, WordPieceTokenizer

__all__ = [
    "CACHE_FILE", "Cancelled", "DEFAULT_MODEL_MODULES", "EMBED_MODULES", "EmbedError", "EmbedStats", "Embedded",
    "Embedder", "EmbedderSpecError", "embedder_for", "EmbeddingCache", "MissingExtra", "RETRIEVAL_EXTRA", "STORE_MODULES",
    "missing_retrieval", "model_dimension", "model_identity", "require_extra", "text_sha",
]

#: Texts to embed at once from which the bulk encoder (a GPU, when there is one) is worth loading.
BULK_MIN_TEXTS = 64


@dataclass(slots=True)
class EmbedStats:
    """What one `Embedder.embed` call did."""

    texts: int = 0  # texts asked for (duplicates included)
    hits: int = 0  # unique texts found in the cache
    misses: int = 0  # unique texts run through the model
    truncated: int = 0  # texts longer than the model reads (max_seq_length word pieces)
    seconds: float = 0.0
    device: str | None = None  # where the misses were embedded ("cpu (ONNX Runtime)", "cuda:0 (torch)", a host)

    def add(self, other: "EmbedStats") -> None:
        self.texts += other.texts
        self.hits += other.hits
        self.misses += other.misses
        self.truncated += other.truncated
        self.seconds += other.seconds
        self.device = other.device or self.device

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Embedded:
    """What one `Embedder.embed` call returns: the vectors (one row per text) and what the call did."""

    vectors: np.ndarray
    stats: EmbedStats


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _SpecTokenizer:
    """The spec's tokenizer, loaded on the first text that needs cutting (an endpoint's cl100k encoding)."""

    def __init__(self, spec: EmbedderSpec) -> None:
        self.spec = spec

    def truncation_offset(self, text: str, max_tokens: int | None = None) -> int:
        from chunkscope.tokens import embed_tokenizer

        return embed_tokenizer(self.spec).truncation_offset(text, max_tokens)


class Embedder:
    """An embedding model with a persistent vector cache.

    Args:
        model: what `parse_embedder` reads: ``"all-MiniLM-L6-v2"`` (default), ``"st:PATH"`` (or a bare folder
            path), ``"openai:MODEL"``; or an `EmbedderSpec`.
        device: ``"cpu"``, ``"cuda"``… for a local model; default: the default model's questions on ONNX Runtime's
            CPU and its bulk embedding on a CUDA GPU when there is one (`chunkscope.embedding.device`); another
            local model on CUDA when torch sees a GPU.
        cache_dir: folder of the vector cache (default ``cache_home()/"embeddings"``).
        url: the endpoint of an ``openai:`` model (default OpenAI's own).
        api_key_env: the environment variable holding that endpoint's key (default ``OPENAI_API_KEY``).
        use_cache: False computes every vector afresh and stores nothing.
        batch_size: texts per model call.
        threads: intra-op threads of a local model (None: the runtime's default, one per core).
        runtime: ``"onnx"`` or ``"torch"`` for the default model (None: chunkscope chooses).
        timeout: seconds an endpoint may take to answer one request.

    Raises:
        EmbedderSpecError: the model is written wrongly.
        MissingExtra: what runs the model is not installed (raised here).
        EmbedError: the model folder does not exist (raised here); the model cannot be loaded, the endpoint
            refuses or answers vectors that fail `check_vectors`, or the cache cannot be written (when embedding).
    """

    def __init__(self, model: str | EmbedderSpec | None = None, device: str | None = None,
                 cache_dir: str | os.PathLike[str] | None = None, *, url: str | None = None,
                 api_key_env: str | None = None, use_cache: bool = True, batch_size: int = 32,
                 threads: int | None = None, runtime: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        spec = model if isinstance(model, EmbedderSpec) else parse_embedder(model, url, api_key_env=api_key_env)
        self.spec = spec
        self.model = spec.text
        self.options = EncoderOptions(device=device, batch_size=batch_size, threads=threads, runtime=runtime,
                                      timeout=timeout, tokenizer=_SpecTokenizer(spec))
        require_extra(spec.required_modules(self.options))
        spec.check_ready()
        self.model_dir: Path | None = spec.model_dir
        self.model_id = spec.identity
        #: What the model reads of one text, in the tokens of `tokenizer`.
        self.max_seq_length = spec.max_tokens
        self.requested_device = device
        self.batch_size = batch_size
        self.threads = threads
        #: Runs a question (and any few texts): the quickest to load.
        self.encoder: Encoder = spec.make_encoder(self.options)
        self._bulk: Encoder | None = None
        self._bulk_chosen = False
        self._last: Encoder = self.encoder
        self.cache_dir = Path(cache_dir) if cache_dir is not None else cache_home() / "embeddings"
        self.use_cache = use_cache
        self._cache: EmbeddingCache | None = None
        self._lock = threading.Lock()  # the app's search and a background index may embed at once
        #: Every call's stats added up (each call also returns its own, in `Embedded.stats`).
        self.total_stats = EmbedStats()

    def __repr__(self) -> str:
        return f"Embedder({self.model_id!r}, loaded={self.loaded})"

    # -- what the model is; none of these loads it --

    @property
    def dim(self) -> int:
        return self.encoder.dim()

    @property
    def default_threshold(self) -> float | None:
        """The score threshold that belongs to this model (see `EmbedderSpec.default_threshold`)."""
        return self.spec.default_threshold

    @property
    def tokenizer(self) -> "WordPieceTokenizer | EndpointTokenizer":
        """The tokenizer counting what the model reads, with its limit (`chunkscope.tokens.embed_tokenizer`: word
        pieces, or an endpoint's tiktoken tokens)."""
        from chunkscope.tokens import embed_tokenizer

        return embed_tokenizer(self.spec)

    def count_tokens(self, texts: Sequence[str]) -> list[int | None]:
        """Tokens per text as the model counts them ([CLS]/[SEP] included); None each when they cannot be
        counted (a model folder without tokenizer.json).

        A text the vector cache holds takes the count stored with its vector (the same tokenizer counted it when
        it was embedded): indexing a tree whose vectors are cached counts none of its chunks again.
        """
        texts = list(texts)
        if not self.use_cache or not texts:
            return self._count(texts)
        shas = [text_sha(t) for t in texts]
        try:
            stored = self.cache.get_tokens(self.model_id, shas) if self.cache is not None else {}
        except EmbedError:
            stored = {}  # an unusable cache only costs the counting; `embed` says what is wrong with it
        out: list[int | None] = [stored.get(s) for s in shas]
        todo = [i for i, n in enumerate(out) if n is None]
        for i, n in zip(todo, self._count([texts[i] for i in todo])):
            out[i] = n
        return out

    def _count(self, texts: list[str]) -> list[int | None]:
        """`count_tokens` by the tokenizer alone."""
        if not texts:
            return []
        try:
            return list(self.tokenizer.count_batch(texts))
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
        return self.encoder.loaded or (self._bulk is not None and self._bulk.loaded)

    @property
    def device(self) -> str | None:
        """Where the model last ran (None before it is loaded)."""
        return self._last.device if self._last.loaded else self.encoder.device

    def _encoders(self) -> list[Encoder]:
        return [self.encoder] + ([self._bulk] if self._bulk is not None else [])

    @property
    def load_seconds(self) -> float:
        return sum(e.load_seconds for e in self._encoders())

    @property
    def encode_seconds(self) -> float:
        """Seconds spent inside the model (all calls): what indexing would cost without chunkscope around it."""
        return sum(e.encode_seconds for e in self._encoders())

    # -- running the model --

    def load(self) -> "Embedder":
        """Load the model now (a TUI does this in a worker so the first query is quick)."""
        self.encoder.load()
        return self

    def encode(self, texts: Sequence[str], *, bulk: bool = False) -> np.ndarray:
        """Run the model on ``texts`` (no cache): normalized float32, one row per text, every one checked
        (`check_vectors`). ``bulk``: one of many batches, run where bulk embedding is fastest (a GPU when the
        backend has one); a question never is. `embed` calls this, so a subclass that overrides it (a test
        double) sees every text embedded."""
        encoder = self._bulk_encoder() if bulk else self.encoder
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = encoder.encode(texts)
        check_vectors(vecs, len(texts), encoder.known_dim, encoder.where())
        self._last = encoder
        return vecs

    def _bulk_encoder(self) -> Encoder:
        """The encoder for many texts: the spec's bulk one (a GPU) when it has one, chosen once."""
        with self._lock:
            if not self._bulk_chosen:
                self._bulk = self.spec.make_bulk_encoder(self.options)
                self._bulk_chosen = True
        return self._bulk or self.encoder

    def embed(self, texts: Sequence[str], *, on_progress: ProgressFn | None = None, cancel: CancelToken | None = None,
              token_counts: Sequence[int | None] | None = None, label: str = "") -> Embedded:
        """Normalized float32 vectors for ``texts``, from the cache where possible, with what the call did.

        ``cancel`` is checked between model batches; stopping raises `Cancelled` (work done so far is cached, so a
        rerun starts where this one stopped). ``on_progress`` gets a `Phase.EMBED` report per batch of new texts
        (``label`` names the job). ``token_counts``, when the caller already knows each text's word-piece count
        (chunks carry ``embed_tokens``), saves a tokenizer pass.
        """
        t0 = time.perf_counter()
        stats = EmbedStats(texts=len(texts))
        texts = list(texts)
        # Identical texts are embedded once.
        by_sha: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            by_sha.setdefault(text_sha(t), []).append(i)
        shas = list(by_sha)
        cache = self.cache
        # The size is checked when it is known without asking the model (an endpoint's unknown model would need
        # a paid request to learn it); the first vectors made then tell it.
        found = cache.get_many(self.model_id, shas, self.encoder.known_dim) if cache is not None else {}
        vec_of: dict[str, np.ndarray] = {}
        tokens_of: dict[str, int | None] = {}
        for sha, (vec, toks) in found.items():
            vec_of[sha] = vec
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
            report = Progress(Phase.EMBED, 0, len(todo), unit="texts", label=label)
            if on_progress is not None:
                on_progress(report)  # before the first batch, which may wait seconds for the model to load
            bulk = len(todo) >= BULK_MIN_TEXTS
            encoder = self._bulk_encoder() if bulk else self.encoder
            stats.device = encoder.device  # None until the first batch loads it; set again below
            step = max(self.batch_size * 2, 1)
            for j in range(0, len(todo), step):
                if cancel is not None and cancel.cancelled:
                    self._finish(stats, t0)
                    raise Cancelled(f"stopped after embedding {report.done} of {len(todo)} texts")
                part = todo[j:j + step]
                vecs = self.encode([texts[by_sha[s][0]] for s in part], bulk=bulk)  # checked before it is kept
                stats.device = encoder.device
                vec_of.update(zip(part, vecs))
                if cache is not None:
                    cache.put_many(self.model_id, ((s, v, tokens_of.get(s)) for s, v in zip(part, vecs)))
                report = report.advanced(report.done + len(part))
                if on_progress is not None:
                    on_progress(report)
        stats.truncated = sum(len(by_sha[s]) for s, n in tokens_of.items() if n is not None and n > self.max_seq_length)
        self._finish(stats, t0)
        if not texts:
            return Embedded(np.zeros((0, self.encoder.known_dim or 0), dtype=np.float32), stats)
        out = np.empty((len(texts), len(next(iter(vec_of.values())))), dtype=np.float32)
        for sha, rows in by_sha.items():
            out[rows] = vec_of[sha]
        return Embedded(out, stats)

    def _finish(self, stats: EmbedStats, t0: float) -> None:
        stats.seconds = time.perf_counter() - t0
        with self._lock:
            self.total_stats.add(stats)

    def embed_query(self, text: str, *, cache: bool = False) -> np.ndarray:
        """One query vector (1-D). Uncached by default: a query is short and a cache write costs more than it."""
        if cache:
            return self.embed([text]).vectors[0]
        return self.encode([text])[0]

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        for encoder in self._encoders():
            encoder.close()

    def __enter__(self) -> "Embedder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def embedder_for(config: "Config", model: str | None = None, url: str | None = None) -> Embedder:
    """The configured embedder (``[embedder]``: model, url, device, batch_size, runtime, timeout), with
    ``model``/``url`` (a caller's explicit choice: command-line flags, a grid's value) over the file's
    (`Config.embedder_spec`)."""
    e = config.embedding
    return Embedder(config.embedder_spec(model, url), device=e.get("device"), batch_size=int(e.get("batch_size", 32)),
                    runtime=e.get("runtime"), timeout=float(e.get("timeout", DEFAULT_TIMEOUT)))

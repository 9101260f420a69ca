"""Sentence embeddings with a persistent, process-safe cache, over any embedding model.

`Embedder` is what the rest of chunkscope embeds with: it de-duplicates texts, serves what it can from the
`EmbeddingCache` (keyed by the embedder's identity, so switching embedders never mixes vectors), runs the rest
through its `Encoder` in batches it can report on and stop between, and returns every call's statistics with
its vectors. The encoder is the model runtime: the packaged all-MiniLM-L6-v2 on ONNX Runtime (torch only for
the one-time export) or torch, any local sentence-transformers model, or an OpenAI-compatible endpoint — see
`chunkscope.embedding.encoders` and `chunkscope.embedding.spec`. Nothing reaches the network but an endpoint the user named.
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
from chunkscope.embedding.spec import EmbedderSpec, EmbedderSpecError, parse_embedder
from chunkscope.embedding.encoders import EmbedError, Encoder, SentenceTransformerEncoder, onnx_runtime_available
from chunkscope.extras import (
    DEFAULT_MODEL_MODULES,
    EMBED_MODULES,
    RETRIEVAL_EXTRA,
    STORE_MODULES,
    MissingExtra,
    missing_retrieval,
    require_extra,
)
from chunkscope.embedding.model_info import model_dimension, model_identity
from chunkscope.paths import TokenizerError, cache_home
from chunkscope.progress import CancelToken, Cancelled, Phase, Progress, ProgressFn

if TYPE_CHECKING:
    from chunkscope.config.reader import Config

__all__ = [
    "CACHE_FILE", "Cancelled", "DEFAULT_MODEL_MODULES", "EMBED_MODULES", "EmbedError", "EmbedStats", "Embedded",
    "Embedder", "EmbedderSpecError", "embedder_for", "EmbeddingCache", "MissingExtra", "RETRIEVAL_EXTRA", "STORE_MODULES",
    "missing_retrieval", "model_dimension", "model_identity", "require_extra", "text_sha",
]


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


@dataclass(frozen=True, slots=True)
class Embedded:
    """What one `Embedder.embed` call returns: the vectors (one row per text) and what the call did."""

    vectors: np.ndarray
    stats: EmbedStats


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def runs_on_onnx(spec: EmbedderSpec, runtime: str | None, device: str | None) -> bool:
    """Whether the model runs on ONNX Runtime: the default model, unless torch is asked for (``runtime`` or a GPU
    ``device``, which torch keeps) or ONNX Runtime is not installed."""
    if spec.kind != "minilm" or runtime == "torch":
        return False
    return runtime == "onnx" or (onnx_runtime_available() and device in (None, "cpu"))


def make_encoder(spec: EmbedderSpec, *, model_dir: Path | None, dim: int | None, max_seq_length: int,
                 device: str | None = None, batch_size: int = 32, threads: int | None = None,
                 runtime: str | None = None) -> Encoder:
    """The encoder for ``spec``.

    ``runtime`` picks how the default model runs: ``"onnx"`` or ``"torch"``; None: ONNX Runtime when it is
    installed and no GPU device was asked for (torch then keeps the GPU), else torch.
    """
    if spec.kind == "openai":
        from chunkscope.embedding.backends.openai import OpenAIEncoder  # httpx only for those who use an endpoint

        return OpenAIEncoder(spec, batch_size=max(batch_size, 64))
    assert model_dir is not None
    if runs_on_onnx(spec, runtime, device):
        from chunkscope.embedding.backends.onnx_minilm import OnnxMiniLMEncoder

        return OnnxMiniLMEncoder(spec, model_dir, max_seq_length=max_seq_length, batch_size=batch_size,
                                 threads=threads)
    return SentenceTransformerEncoder(spec, model_dir, dim=dim, max_seq_length=max_seq_length, device=device,
                                      batch_size=batch_size, threads=threads)


class Embedder:
    """An embedding model with a persistent vector cache.

    Args:
        model: what `parse_embedder` reads: ``"all-MiniLM-L6-v2"`` (default), ``"st:PATH"`` (or a bare folder
            path), ``"openai:MODEL"``; or an `EmbedderSpec`.
        device: ``"cpu"``, ``"cuda"``… for a local model run by torch; default: CUDA when torch sees a GPU.
        cache_dir: folder of the vector cache (default ``cache_home()/"embeddings"``).
        url: the endpoint of an ``openai:`` model (default OpenAI's own).
        api_key_env: the environment variable holding that endpoint's key (default ``OPENAI_API_KEY``).
        use_cache: False computes every vector afresh and stores nothing.
        batch_size: texts per model call.
        threads: intra-op threads of a local model (None: the runtime's default, one per core).
        runtime: ``"onnx"`` or ``"torch"`` for the default model (None: ONNX Runtime when installed).

    Raises:
        EmbedderSpecError: the model is written wrongly.
        MissingExtra: what runs the model is not installed (raised here).
        EmbedError: the model folder does not exist (raised here); the model cannot be loaded or the endpoint
            refuses (first encode).
    """

    def __init__(self, model: str | EmbedderSpec | None = None, device: str | None = None,
                 cache_dir: str | os.PathLike[str] | None = None, *, url: str | None = None,
                 api_key_env: str | None = None, use_cache: bool = True, batch_size: int = 32,
                 threads: int | None = None, runtime: str | None = None) -> None:
        spec = model if isinstance(model, EmbedderSpec) else parse_embedder(model, url, api_key_env=api_key_env)
        self.spec = spec
        self.model = spec.text
        if spec.kind == "openai":
            require_extra((("httpx", "httpx"),))
            self.model_dir: Path | None = None
            dim = spec.known_dim
        else:
            modules = () if runs_on_onnx(spec, runtime, device) else EMBED_MODULES
            require_extra((*modules, *(DEFAULT_MODEL_MODULES if spec.is_default else ())))
            try:
                self.model_dir = spec.model_dir
            except TokenizerError as exc:
                raise EmbedError(str(exc)) from None
            assert self.model_dir is not None
            if not (self.model_dir / "config.json").is_file() and not (self.model_dir / "modules.json").is_file():
                raise EmbedError(f"{spec.model}: {self.model_dir} holds no sentence-transformers model (no config.json)")
            dim = model_dimension(self.model_dir)
        self.model_id = spec.identity
        #: What the model reads of one text, in the tokens of `tokenizer`.
        self.max_seq_length = spec.max_tokens
        self.requested_device = device
        self.batch_size = batch_size
        self.threads = threads
        self.encoder: Encoder = make_encoder(spec, model_dir=self.model_dir, dim=dim,
                                             max_seq_length=self.max_seq_length, device=device,
                                             batch_size=batch_size, threads=threads, runtime=runtime)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else cache_home() / "embeddings"
        self.use_cache = use_cache
        self._cache: EmbeddingCache | None = None
        self._stats_lock = threading.Lock()  # the app's search and a background index may embed at once
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
    def tokenizer(self):
        """The tokenizer counting what the model reads, with its limit (`chunkscope.tokens.embed_tokenizer`: word
        pieces, or an endpoint's tiktoken tokens)."""
        from chunkscope.tokens import embed_tokenizer

        return embed_tokenizer(self.spec)

    def count_tokens(self, texts: Sequence[str]) -> list[int | None]:
        """Tokens per text as the model counts them ([CLS]/[SEP] included); None each when they cannot be
        counted (a model folder without tokenizer.json)."""
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
        return self.encoder.loaded

    @property
    def device(self) -> str | None:
        """Where the model runs once loaded (None before)."""
        return self.encoder.device

    @property
    def load_seconds(self) -> float:
        return self.encoder.load_seconds

    @property
    def encode_seconds(self) -> float:
        """Seconds spent inside the model (all calls): what indexing would cost without chunkscope around it."""
        return self.encoder.encode_seconds

    # -- running the model --

    def load(self) -> "Embedder":
        """Load the model now (a TUI does this in a worker so the first query is quick)."""
        self.encoder.load()
        return self

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Run the model on ``texts`` (no cache): normalized float32, one row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.encoder.encode(texts)

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
            step = max(self.batch_size * 2, 1)
            for j in range(0, len(todo), step):
                if cancel is not None and cancel.cancelled:
                    self._finish(stats, t0)
                    raise Cancelled(f"stopped after embedding {report.done} of {len(todo)} texts")
                part = todo[j:j + step]
                vecs = self.encode([texts[by_sha[s][0]] for s in part])
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
        with self._stats_lock:
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
        self.encoder.close()

    def __enter__(self) -> "Embedder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def embedder_for(config: "Config", model: str | None = None, url: str | None = None) -> Embedder:
    """The configured embedder (``[embedder]``: model, url, device, batch_size, runtime), with ``model``/``url``
    (a caller's explicit choice: command-line flags, a grid's value) over the file's (`Config.embedder_spec`)."""
    e = config.embedding
    return Embedder(config.embedder_spec(model, url), device=e.get("device"), batch_size=int(e.get("batch_size", 32)),
                    runtime=e.get("runtime"))

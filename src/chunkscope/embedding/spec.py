"""Which embedding model a user's pipeline runs, said once: the ``[embedder]`` table, ``--embedder``/``--embed-url``.

An `EmbedderSpec` is pure data, cheap to make and safe to import anywhere (no torch, no HTTP): the tokenizer that
counts what the model reads, the limit it truncates at, the score threshold that belongs to it, and the *identity*
that keys the embedding cache and the collection names, so that switching embedders never mixes vectors.

Three kinds:

- ``all-MiniLM-L6-v2``: the packaged default, offline (ONNX Runtime when it is installed, else torch).
- ``st:PATH_OR_NAME``: any sentence-transformers model, from a local folder (or a bare folder path, as before).
- ``openai:MODEL``: an OpenAI-compatible ``/v1/embeddings`` endpoint at ``url`` (OpenAI's by default; Azure,
  Ollama, vLLM, LM Studio and the like), with the key read from an environment variable, never from a file.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from chunkscope.paths import DEFAULT_EMBED_MODEL, TokenizerError, is_default_model, model_max_seq_length, resolve_model_dir

OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
#: What OpenAI's embedding models read (cl100k_base tokens); text beyond it is refused by the API, so the
#: embedder cuts it there and lint's `embed-truncation` warns at the same count.
OPENAI_MAX_TOKENS = 8191
#: Sizes of OpenAI's own models (others are learnt from the first reply).
OPENAI_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}

#: The score under which a hit counts as not retrieved, per model. Seed 004's bot filters at 0.7 with
#: text-embedding-3-small; for MiniLM see `MINILM_THRESHOLD`.
DEFAULT_THRESHOLDS = {"openai:text-embedding-3-small": 0.7}
#: all-MiniLM-L6-v2's cosine scores run lower than OpenAI's. Measured by bench/bench_threshold.py on the 50
#: Rust book questions (bench/rust_book_queries.jsonl, strategy recursive): the right answer at rank 1 scored
#: 0.455-0.841 (median 0.572, 30 questions), so seed 004's 0.7 would keep only 23% of them. 0.45 is the highest
#: threshold that keeps at least 95% of right rank-1 answers (it kept all 30) while dropping 20% of the wrong
#: rank-1 hits (most wrong hits are near misses from the right chapter, 0.355-0.747, which no threshold separates).
MINILM_THRESHOLD = 0.45

KINDS = ("minilm", "st", "openai")


class EmbedderSpecError(ValueError):
    """An embedder that cannot be used as written; one line for the user."""


@dataclass(frozen=True)
class EmbedderSpec:
    """One embedding model, as the user named it.

    Attributes:
        kind: ``minilm`` (the packaged default), ``st`` (a local sentence-transformers folder) or ``openai``.
        model: the model's name (``text-embedding-3-small``) or folder.
        url: the endpoint's base URL (``openai`` only), up to and including ``/v1``.
        api_key_env: the environment variable holding the key (``openai`` only).
        max_tokens_override: a limit the user set for an endpoint whose model is not OpenAI's own.
    """

    kind: str
    model: str
    url: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    max_tokens_override: int | None = None

    # -- what the model is --

    @property
    def text(self) -> str:
        """The spec as a user writes it (``openai:text-embedding-3-small``)."""
        if self.kind == "minilm":
            return DEFAULT_EMBED_MODEL
        return f"{self.kind}:{self.model}"

    @property
    def is_default(self) -> bool:
        return self.kind == "minilm"

    @property
    def model_dir(self) -> Path | None:
        """The local folder of a local model (raises `TokenizerError` when it does not exist)."""
        if self.kind == "openai":
            return None
        return resolve_model_dir(DEFAULT_EMBED_MODEL if self.kind == "minilm" else self.model)

    @property
    def identity(self) -> str:
        """Keys the embedding cache and collection names: two embedders whose vectors differ never share one.

        MiniLM keeps its plain name whichever runtime runs it (ONNX and torch agree to cosine 0.9999, see
        bench/bench_onnx.py), so caches and collections made before stay valid. A local folder is named after
        itself plus a hash of its files (see `chunkscope.embedding.model_info.model_identity`). An endpoint's model is named with
        its host: the same model name served by two servers (an Ollama ``nomic-embed-text`` and a vLLM one) may
        be two different models.
        """
        if self.kind == "minilm":
            return DEFAULT_EMBED_MODEL
        if self.kind == "st":
            from chunkscope.embedding.model_info import model_identity

            return model_identity(self.model, resolve_model_dir(self.model))
        assert self.url is not None
        if self.url.rstrip("/") == OPENAI_URL:
            return f"openai-{self.model}"
        host = urlsplit(self.url).netloc or self.url
        digest = hashlib.sha1(self.url.rstrip("/").encode()).hexdigest()[:8]
        return f"openai-{self.model}-{host}-{digest}"

    @property
    def tokenizer_name(self) -> str:
        """The `chunkscope.tokens` tokenizer that counts what this model reads.

        An endpoint's models are counted in cl100k_base, OpenAI's; for another server's model (an Ollama
        ``nomic-embed-text``) that is an estimate, said in the docs.
        """
        if self.kind == "minilm":
            return DEFAULT_EMBED_MODEL
        if self.kind == "st":
            return f"hf:{self.model}"
        return "cl100k_base"

    @property
    def max_tokens(self) -> int:
        """What the model reads of one text, in `tokenizer_name` tokens ([CLS]/[SEP] included for word pieces)."""
        if self.max_tokens_override:
            return self.max_tokens_override
        if self.kind == "openai":
            return OPENAI_MAX_TOKENS
        try:
            return model_max_seq_length(self.model_dir)  # type: ignore[arg-type]
        except TokenizerError:
            return 256 if self.kind == "minilm" else 512

    @property
    def default_threshold(self) -> float | None:
        """The score threshold that belongs to this model; None when nobody measured one (no threshold)."""
        if self.kind == "minilm":
            return MINILM_THRESHOLD
        return DEFAULT_THRESHOLDS.get(self.text)

    @property
    def known_dim(self) -> int | None:
        """The vector size when it is known without asking the model."""
        if self.kind == "openai":
            return OPENAI_DIMS.get(self.model)
        return None


def parse_embedder(text: str | None, url: str | None = None, *, api_key_env: str | None = None,
                   max_tokens: int | None = None) -> EmbedderSpec:
    """An `EmbedderSpec` from what a user wrote (``None`` or empty: the default model).

    Raises:
        EmbedderSpecError: an unknown kind, an empty model name, a URL given to a local model, a bad URL.
    """
    raw = (text or "").strip() or DEFAULT_EMBED_MODEL
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise EmbedderSpecError(f"max_tokens must be a positive whole number, got {max_tokens!r}")
    if is_default_model(raw):
        kind, model = "minilm", DEFAULT_EMBED_MODEL
    elif raw.startswith("st:"):
        kind, model = "st", raw[3:].strip()
        if is_default_model(model):
            kind, model = "minilm", DEFAULT_EMBED_MODEL
    elif raw.startswith("openai:"):
        kind, model = "openai", raw[7:].strip()
    elif ":" in raw.split("/")[0] and not Path(raw).expanduser().exists() and len(raw.split(":")[0]) > 1:
        prefix = raw.split(":", 1)[0]
        raise EmbedderSpecError(f"unknown embedder kind {prefix!r} in {raw!r}; use all-MiniLM-L6-v2, st:PATH or "
                                "openai:MODEL")
    else:
        kind, model = "st", raw  # a bare folder path, as chunkscope.toml's [embedding] model always allowed
    if not model:
        raise EmbedderSpecError(f"{raw!r}: no model name after {kind}:")
    if kind != "openai":
        if url:
            raise EmbedderSpecError(f"a URL ({url}) is for openai:MODEL endpoints; {raw} is a local model")
        return EmbedderSpec(kind, model, max_tokens_override=max_tokens)
    base = (url or OPENAI_URL).strip().rstrip("/")
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise EmbedderSpecError(f"{base!r} is not an http(s) URL for an embeddings endpoint")
    return EmbedderSpec(kind, model, base, api_key_env or DEFAULT_API_KEY_ENV, max_tokens)

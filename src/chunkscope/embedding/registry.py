"""The embedding backends chunkscope knows, by name, and the reader of what a user writes to pick one.

A backend is one `chunkscope.embedding.spec.EmbedderSpec` subclass in its own module under
`chunkscope.embedding.backends`; adding one (Ollama's own API, fastembed, Cohere) is that module plus one entry in
`BACKENDS`. A backend with a ``prefix`` is picked by it (``openai:MODEL``); the packaged default by its name, and
any other text is a local folder (``st:`` may be left out, as chunkscope.toml's ``[embedding] model`` always
allowed).
"""

from __future__ import annotations

from pathlib import Path

from chunkscope.embedding.backends.minilm import MiniLMSpec
from chunkscope.embedding.backends.openai import OpenAISpec
from chunkscope.embedding.backends.sentence_transformers import SentenceTransformerSpec
from chunkscope.embedding.spec import EmbedderSpec, EmbedderSpecError
from chunkscope.paths import DEFAULT_EMBED_MODEL, is_default_model
from chunkscope.safe_text import redact_url

#: Every backend by its `EmbedderSpec.kind`.
BACKENDS: dict[str, type[EmbedderSpec]] = {cls.kind: cls for cls in (MiniLMSpec, SentenceTransformerSpec, OpenAISpec)}


def _spelled() -> str:
    prefixed = [f"{cls.prefix}{'PATH' if cls is SentenceTransformerSpec else 'MODEL'}" for cls in BACKENDS.values()
                if cls.prefix]
    return ", ".join([DEFAULT_EMBED_MODEL, *prefixed])


def parse_embedder(text: str | None, url: str | None = None, *, api_key_env: str | None = None,
                   max_tokens: int | None = None) -> EmbedderSpec:
    """An `EmbedderSpec` from what a user wrote (``None`` or empty: the default model).

    Raises:
        EmbedderSpecError: an unknown backend, an empty model name, a URL given to a local model, a bad URL.
    """
    raw = (text or "").strip() or DEFAULT_EMBED_MODEL
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise EmbedderSpecError(f"max_tokens must be a positive whole number, got {max_tokens!r}")
    backend: type[EmbedderSpec] = SentenceTransformerSpec  # a bare folder path
    model = raw
    if is_default_model(raw):
        backend, model = MiniLMSpec, DEFAULT_EMBED_MODEL
    else:
        named = next((cls for cls in BACKENDS.values() if cls.prefix and raw.startswith(cls.prefix)), None)
        if named is not None:
            backend, model = named, raw[len(named.prefix or ""):].strip()
        elif ":" in raw.split("/")[0] and not Path(raw).expanduser().exists() and len(raw.split(":")[0]) > 1:
            prefix = raw.split(":", 1)[0]
            raise EmbedderSpecError(f"unknown embedder kind {prefix!r} in {raw!r}; use {_spelled()}")
        if backend is SentenceTransformerSpec and is_default_model(model):
            backend, model = MiniLMSpec, DEFAULT_EMBED_MODEL  # st:all-MiniLM-L6-v2 is the packaged model
    if not model:
        raise EmbedderSpecError(f"{raw!r}: no model name after {backend.prefix}")
    if url and not backend.takes_url:
        served = " or ".join(f"{cls.prefix}MODEL" for cls in BACKENDS.values() if cls.takes_url)
        raise EmbedderSpecError(f"a URL ({redact_url(url)}) is for {served} endpoints; {raw} is a local model")
    return backend.from_user(model, url, api_key_env, max_tokens)

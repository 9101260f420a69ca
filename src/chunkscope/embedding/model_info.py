"""Facts about a local embedding model read from its files, without loading it: its vector size and identity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chunkscope.paths import DEFAULT_EMBED_MODEL, is_default_model


def read_json(path: Path) -> Any:
    """A JSON file's content; None when it cannot be read or parsed (a model folder's optional files)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def model_dimension(model_dir: Path) -> int | None:
    """The sentence embedding size, read from the model's module configs (no torch): last Dense, else pooling."""
    modules = read_json(model_dir / "modules.json")
    dim = None
    if isinstance(modules, list):
        for m in modules:
            if not isinstance(m, dict):
                continue
            kind = str(m.get("type", ""))
            cfg = read_json(model_dir / str(m.get("path", "")) / "config.json") or {}
            if kind.endswith("Pooling") and isinstance(cfg.get("word_embedding_dimension"), int):
                modes = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v is True]
                # Concatenated pooling modes multiply the size; plain mean/cls/max pooling keep it.
                dim = cfg["word_embedding_dimension"] * max(1, len(modes))
            elif kind.endswith("Dense") and isinstance(cfg.get("out_features"), int):
                dim = cfg["out_features"]
    if dim is None:
        cfg = read_json(model_dir / "config.json") or {}
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
    import hashlib  # here: the app's start-up reads model folders without hashing them

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

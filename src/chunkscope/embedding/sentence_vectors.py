"""Sentence vectors for the `semantic` strategy (`chunkscope.chunking.vectors.SentenceVectors`) from an `Embedder`.

The embedder is made on the first text a strategy asks about, never when the strategy is built: listing or
validating a `semantic` preset costs nothing and needs no retrieval extra, and a missing extra is one line
(`MissingExtra`) when chunking starts. Every text goes through the embedding cache, so cutting the same
document again, with any bounds, embeds nothing new.

The views resolve a strategy again on every parameter change; `configured_vectors` gives each one the embedder
of its embedder configuration that this process already holds (`shared_embedder`), so a re-cut embeds with the
same embedder, and the app's questions with it too, instead of a fresh one each time.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Hashable
from typing import TYPE_CHECKING, Callable, Sequence

from chunkscope.chunking.vectors import UsesSentenceVectors
from chunkscope.extras import require_extra

if TYPE_CHECKING:
    import numpy as np

    from chunkscope.chunking.strategy import Strategy
    from chunkscope.config.reader import Config
    from chunkscope.embedding.embedder import Embedder, EmbedStats


class EmbedderVectors:
    """`SentenceVectors` from an embedder made on first use by ``make`` (or the one given)."""

    def __init__(self, make: "Callable[[], Embedder] | Embedder") -> None:
        self._make = make
        self._embedder: Embedder | None = None
        self._lock = threading.Lock()

    @property
    def embedder(self) -> "Embedder":
        """The embedder, made now if it was not yet (raises `MissingExtra` without the retrieval extra)."""
        with self._lock:
            if self._embedder is None:
                from chunkscope.embedding.embedder import Embedder

                self._embedder = self._make if isinstance(self._make, Embedder) else self._make()
            return self._embedder

    @property
    def identity(self) -> str:
        return self.embedder.model_id

    @property
    def stats(self) -> "EmbedStats":
        """Every call's statistics added up: what the cache served (hits) and what the model ran (misses)."""
        return self.embedder.total_stats

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        return self.embedder.embed(texts).vectors


def default_sentence_vectors() -> EmbedderVectors:
    """The default model's sentence vectors (what `chunkscope.chunking.registry.default_sentence_vectors` loads)."""
    from chunkscope.embedding.embedder import Embedder

    return EmbedderVectors(Embedder)


def supply_vectors(strategy: "Strategy", make: "Callable[[], Embedder]") -> None:
    """Give a strategy that embeds as it chunks (`UsesSentenceVectors`: ``semantic``) the embedder ``make`` makes
    on first use; any other strategy is left as it is. What the views call where they resolve a strategy with the
    user's embedder (``[embedder]``, ``--embedder``): a strategy nobody gives one embeds with the default model."""
    if isinstance(strategy, UsesSentenceVectors):
        strategy.use_vectors(EmbedderVectors(make))


#: The embedder of each embedder configuration that something in this process still uses (see `shared_embedder`).
#: Held weakly: a configuration nobody uses any more (a closed app's, a finished command's) frees its model, and a
#: caller that makes its embedders another way never leaves one behind for the next caller.
_SHARED: "weakref.WeakValueDictionary[Hashable, Embedder]" = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


def shared_embedder(config: "Config", model: str | None = None, url: str | None = None) -> "Embedder":
    """The embedder of ``config`` (``model``/``url`` over its ``[embedder]``, as `embedder_for`), the same object
    for the same embedder configuration (its spec, the rest of ``[embedder]`` and the cache folder) as long as
    something holds it: a strategy given it, the app's query session.

    Any holder may close it (the app's query session does on its way out): closing only lets go of its cache
    connection and its loaded model, which the next call by any other holder opens again.

    Raises what `embedder_for` raises (`EmbedderSpecError`, `MissingExtra`), and keeps nothing then.
    """
    from chunkscope.embedding.embedder import embedder_for
    from chunkscope.paths import cache_home

    # The spec is what the model is (name, endpoint, key, limit); the table adds how it runs (device, batch size,
    # runtime, timeout); the cache folder follows CHUNKSCOPE_CACHE, which a test changes between runs.
    key = (config.embedder_spec(model, url), json.dumps(config.embedding, sort_keys=True, default=str),
           str(cache_home()))
    with _SHARED_LOCK:
        embedder = _SHARED.get(key)
        if embedder is None:
            return _SHARED.setdefault(key, embedder_for(config, model, url))
    # What `Embedder` checks when it is made, checked again for each new user of a kept one: a strategy resolved
    # now still fails in one line, as with an embedder of its own, when its extra or its model folder is gone.
    require_extra(embedder.spec.required_modules(embedder.options))
    embedder.spec.check_ready()
    return embedder


def configured_vectors(strategy: "Strategy", config: "Config", model: str | None = None,
                       url: str | None = None) -> None:
    """`supply_vectors` with the process's embedder of that configuration (`shared_embedder`), made on first use:
    what the views call each time they resolve a strategy (the command line's strategies, the app's re-cuts)."""
    supply_vectors(strategy, lambda: shared_embedder(config, model, url))

"""The rerank stage's parts every backend shares: the spec, the error, the reranked hit, the `Reranker` base.

`Reranker.rerank` is the stage: the candidates the search kept (a bot filters by its threshold before it
reranks) among the first ``depth`` are ordered by the reranker's score, and everything else follows in search
order, unscored. Each result is a `RerankedHit`, keeping the search's rank and score beside the reranker's.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from chunkscope.retrieval.rerankers import DEFAULT_RERANK_DEPTH, DEFAULT_RERANK_KEY_ENV, DEFAULT_RERANK_TIMEOUT
from chunkscope.retrieval.store import Hit


class RerankError(Exception):
    """The reranker cannot be loaded or run, or its endpoint refused or answered nonsense; one line, naming it."""


@dataclass(frozen=True)
class RerankSpec:
    """Which reranker, as the user named it: ``st:PATH`` or ``http:MODEL`` (with ``url``)."""

    model: str
    url: str | None = None
    depth: int = DEFAULT_RERANK_DEPTH
    timeout: float = DEFAULT_RERANK_TIMEOUT
    api_key_env: str = DEFAULT_RERANK_KEY_ENV
    #: Why no API key may go to ``url`` (`chunkscope.config.trust.secret_refusal`); None: it may.
    key_refusal: str | None = None

    @property
    def kind(self) -> str:
        """The backend's prefix: ``st`` or ``http``."""
        return self.model.partition(":")[0]

    @property
    def name(self) -> str:
        """What follows the prefix: the folder, or the endpoint's model name."""
        return self.model.partition(":")[2]

    @property
    def label(self) -> str:
        """A short name for table columns: the folder's last part, or the endpoint's model."""
        return f"rerank={self.name.rstrip('/').rsplit('/', 1)[-1] if self.kind == 'st' else self.name}"


@dataclass
class RerankedHit(Hit):
    """A hit after the rerank stage: ``rank`` and ``score`` are the reranker's (the search's for a candidate it
    did not re-score: ``rerank_score`` None), ``search_rank`` and ``search_score`` the search's."""

    search_rank: int = 0
    search_score: float = 0.0
    rerank_score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        rs = self.rerank_score
        return {**super().to_dict(), "search_rank": self.search_rank, "search_score": round(self.search_score, 6),
                "rerank_score": None if rs is None else round(rs, 6)}


_HIT_FIELDS = tuple(f.name for f in fields(Hit))


def _reranked(hit: Hit, rank: int, score: float | None) -> RerankedHit:
    """``hit`` at its new ``rank``; ``score`` None for a candidate left in search order."""
    values = {name: getattr(hit, name) for name in _HIT_FIELDS}
    values.update(rank=rank, score=hit.score if score is None else score)
    if isinstance(hit, RerankedHit):  # reranked twice: the search's rank and score stay the search's
        return RerankedHit(**values, search_rank=hit.search_rank, search_score=hit.search_score, rerank_score=score)
    return RerankedHit(**values, search_rank=hit.rank, search_score=hit.score, rerank_score=score)


class Reranker(ABC):
    """A reranker: `scores` of documents for a query (higher is better); `rerank` orders a search's hits.

    Subclasses implement `_score` (one call for a query's candidates) and may hold a model or a connection
    (`close`). Scores of one query are kept, so the deeper second search a miss's rank needs costs no new call.
    """

    def __init__(self, spec: RerankSpec) -> None:
        self.spec = spec
        self._memo_query: str | None = None
        self._memo: dict[str, float] = {}

    def where(self) -> str:
        """The reranker for messages: the model, and the endpoint's URL for one (never a key)."""
        return self.spec.model

    @abstractmethod
    def _score(self, query: str, documents: Sequence[str]) -> list[float]:
        """One score per document (not yet checked), from one call of the backend."""

    def scores(self, query: str, documents: Sequence[str]) -> list[float]:
        """One finite score per document, in their order.

        Raises:
            RerankError: the backend failed, or gave a count or a value that is no score (NaN, infinity).
        """
        if query != self._memo_query:
            self._memo_query, self._memo = query, {}
        todo = list(dict.fromkeys(d for d in documents if d not in self._memo))
        if todo:
            got = self._score(query, todo)
            if len(got) != len(todo):
                raise RerankError(f"{self.where()}: asked for {len(todo)} scores, got {len(got)}")
            bad = [s for s in got if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s)]
            if bad:  # checked whole before any is kept: nothing of a bad reply is used
                raise RerankError(f"{self.where()}: a score is not a finite number ({bad[0]!r})")
            self._memo.update(zip(todo, map(float, got)))
        return [self._memo[d] for d in documents]

    def rerank(self, query: str, hits: Sequence[Hit], depth: int | None = None) -> list[RerankedHit]:
        """``hits`` (the search's, best first) with the kept ones among the first ``depth`` ordered by the
        reranker's score (ties keep the search's order), then the rest in search order; ranks renumbered."""
        depth = self.spec.depth if depth is None else depth
        pool = [h for h in hits[:depth] if h.kept]
        chosen = {id(h) for h in pool}
        scored = sorted(zip(pool, self.scores(query, [h.text for h in pool])), key=lambda p: -p[1]) if pool else []
        rest = [h for h in hits if id(h) not in chosen]
        out = [_reranked(h, i, s) for i, (h, s) in enumerate(scored, 1)]
        return out + [_reranked(h, len(out) + i, None) for i, h in enumerate(rest, 1)]

    def close(self) -> None:
        """Free the model or the connection (a closed reranker loads again on its next use)."""

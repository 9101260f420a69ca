"""``http:MODEL``: a rerank endpoint of the shape Cohere, Jina, Voyage, Hugging Face TEI and vLLM share.

POST ``{url}/rerank`` with ``{"model", "query", "documents", "top_n"}``; the reply is
``{"results": [{"index", "relevance_score"}]}``. Every index must be in range and given once, every score a
finite number, one per document; anything else is one line naming the endpoint, and nothing of it is used.

The API key is read from the environment (``[rerank] api_key_env``, `DEFAULT_RERANK_KEY_ENV` by default) when
the request is made and sent only where the trust rules allow (`chunkscope.config.trust`; the spec carries the
verdict as ``key_refusal``). Timeouts, retries on 429/5xx with backoff, and the server's own reason in a refusal
follow the embedding endpoint's rules (`chunkscope.embedding.backends.openai`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

from chunkscope.embedding.backends.http_retry import (RetryPolicy, bearer_headers, endpoint_url, post_with_retries,
                                                      refusal_line)
from chunkscope.retrieval.rerankers.base import Reranker, RerankError, RerankSpec
from chunkscope.safe_text import redact_url


def rerank_url(base: str) -> str:
    """``…/rerank`` of a base URL, keeping any query string."""
    return endpoint_url(base, "/rerank")


class HttpReranker(Reranker):
    """A rerank endpoint, asked once per question for all of its candidates."""

    def __init__(self, spec: RerankSpec, *, max_retries: int = 4, backoff: float = 0.5) -> None:
        super().__init__(spec)
        self.url = rerank_url(spec.url or "")
        self.max_retries = max_retries
        self.backoff = backoff
        self._client: Any = None
        self._lock = threading.Lock()
        #: Requests retried (rate limits, server errors, timeouts) over this reranker's life.
        self.retries = 0

    def where(self) -> str:
        return f"{self.spec.model} at {redact_url(self.url)}"

    def _headers(self) -> dict[str, str]:
        return bearer_headers(self.spec.api_key_env, self.spec.key_refusal)

    def _post(self, body: dict[str, Any]) -> Any:
        import httpx

        with self._lock:
            if self._client is None:
                t = self.spec.timeout
                self._client = httpx.Client(timeout=httpx.Timeout(t, connect=min(10.0, t)))
        return post_with_retries(
            self._client, self.url, body, headers=self._headers, where=self.where(), timeout=self.spec.timeout,
            timeout_setting="[rerank] timeout", retries=RetryPolicy(self.max_retries, self.backoff, max_delay=30.0),
            error=RerankError, refusal=self._refusal, on_retry=self._count_retry)

    def _count_retry(self) -> None:
        self.retries += 1

    def _refusal(self, status: int, reply: Any, attempts: int) -> str:
        return refusal_line(self.where(), status, reply, attempts, key_refusal=self.spec.key_refusal,
                            api_key_env=self.spec.api_key_env,
                            not_found=f"no rerank endpoint or no model {self.spec.name!r} there")

    def _score(self, query: str, documents: Sequence[str]) -> list[float]:
        body = {"model": self.spec.name, "query": query, "documents": list(documents), "top_n": len(documents)}
        reply = self._post(body)
        try:
            results = reply.json()["results"]
            pairs = [(r["index"], r["relevance_score"]) for r in results]
        except (ValueError, KeyError, TypeError):
            raise RerankError(f"{self.where()}: the reply is not a rerank response "
                              '({"results": [{"index", "relevance_score"}]})') from None
        n = len(documents)
        scores: list[float | None] = [None] * n
        for index, score in pairs:
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
                raise RerankError(f"{self.where()}: index {index!r} is out of range for {n} documents")
            if scores[index] is not None:
                raise RerankError(f"{self.where()}: index {index} is given twice")
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                raise RerankError(f"{self.where()}: the score of document {index} is not a finite number ({score!r})")
            scores[index] = float(score)
        missing = [i for i, s in enumerate(scores) if s is None]
        if missing:
            raise RerankError(f"{self.where()}: asked for {n} scores, got {n - len(missing)}")
        return [s for s in scores if s is not None]

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

"""The rerank stage: the search's top ``depth`` candidates re-scored by a cross-encoder or a rerank endpoint.

Many chatbots re-score what their vector search found before the top k go to the LLM; a chunk "ranked 7th" by
the search may be 2nd in such a bot. The stage itself is `chunkscope.retrieval.rerankers.base.Reranker.rerank`;
the retriever calls it after its search (`chunkscope.retrieval.retriever.Retriever.search`), and a miss it
caused is judged ``reranked-out`` with both ranks (`chunkscope.evaluation.verdicts`).

Backends (`RERANKERS`, chosen by the model's prefix): ``st:PATH``, a local sentence-transformers CrossEncoder
folder (`chunkscope.retrieval.rerankers.cross_encoder`), and ``http:MODEL``, a rerank endpoint of the common
shape (Cohere, Jina, Voyage, TEI, vLLM; `chunkscope.retrieval.rerankers.http`). Neither is imported before it
is used: the core never loads torch at import time.
"""

from __future__ import annotations

from collections.abc import Callable

from chunkscope.retrieval.rerankers.base import Reranker, RerankError, RerankSpec

#: The backends by prefix: a factory importing its module only when called.
RERANKERS: dict[str, Callable[[RerankSpec], Reranker]] = {}


def _cross_encoder(spec: RerankSpec) -> Reranker:
    from chunkscope.retrieval.rerankers.cross_encoder import CrossEncoderReranker

    return CrossEncoderReranker(spec)


def _http(spec: RerankSpec) -> Reranker:
    from chunkscope.retrieval.rerankers.http import HttpReranker

    return HttpReranker(spec)


RERANKERS.update(st=_cross_encoder, http=_http)


def check_rerank_spec(spec: RerankSpec) -> None:
    """Refuse what cannot name a reranker, before anything is loaded.

    Raises:
        RerankError: an unknown prefix, an empty name, ``http:`` without a URL, a depth under 1.
    """
    if spec.kind not in RERANKERS or not spec.name.strip():
        raise RerankError(f"reranker {spec.model!r}: expected st:PATH (a local CrossEncoder folder) or http:MODEL "
                          "(a rerank endpoint at a URL)")
    if spec.kind == "http" and not spec.url:
        raise RerankError(f"reranker {spec.model!r}: it needs the rerank endpoint's base URL")
    if spec.kind == "http" and spec.url and not spec.url.startswith(("http://", "https://")):
        from chunkscope.safe_text import redact_url

        raise RerankError(f"reranker {spec.model!r}: {redact_url(spec.url)!r} is not an http(s) URL")
    if spec.depth < 1:
        raise RerankError(f"reranker {spec.model!r}: the depth must be at least 1, got {spec.depth}")


def make_reranker(spec: RerankSpec) -> Reranker:
    """The reranker ``spec`` names (`check_rerank_spec` first); nothing is loaded until its first use."""
    check_rerank_spec(spec)
    return RERANKERS[spec.kind](spec)


"""The rerank stage's backends, one module each behind `chunkscope.retrieval.rerank.Reranker`."""

"""The rerank stage's backends, one module each behind `chunkscope.retrieval.rerank.Reranker`; and the stage's
defaults, here so that reading ``[rerank]`` (every start of the app) loads neither the store nor a backend."""

#: How many of the search's candidates the reranker re-scores by default (bots use 20 to 100).
DEFAULT_RERANK_DEPTH = 50
#: Seconds a rerank endpoint may take to answer one request.
DEFAULT_RERANK_TIMEOUT = 60.0
#: The variable holding a rerank endpoint's API key unless ``[rerank] api_key_env`` names another.
DEFAULT_RERANK_KEY_ENV = "RERANK_API_KEY"

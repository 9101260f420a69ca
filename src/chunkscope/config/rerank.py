"""The ``[rerank]`` table: which reranker follows the search, checked when the file is read, with the trust
rules (`chunkscope.config.trust`) deciding whether its endpoint may receive the API key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkscope.config.trust import HOW_TO_ALLOW, Origin, secret_refusal
from chunkscope.config.values import seconds_problem, text_problem
from chunkscope.retrieval.rerankers import DEFAULT_RERANK_DEPTH, DEFAULT_RERANK_KEY_ENV, DEFAULT_RERANK_TIMEOUT

if TYPE_CHECKING:
    from chunkscope.retrieval.rerankers.base import RerankSpec

#: The keys of ``[rerank]``.
RERANK_KEYS = frozenset({"model", "url", "depth", "timeout", "api_key_env"})
#: What ``[rerank]`` means, for the configuration's field list.
RERANK_FIELD = ("the rerank stage after search: model (st:PATH, a local CrossEncoder folder, or http:MODEL), url "
                "(the http: endpoint's base, POST {url}/rerank), depth (candidates re-scored, default "
                f"{DEFAULT_RERANK_DEPTH}), timeout (seconds, default {DEFAULT_RERANK_TIMEOUT:g}), api_key_env "
                f"(default {DEFAULT_RERANK_KEY_ENV})")


def check_rerank_table(table: dict[str, Any]) -> str | None:
    """What is wrong with a ``[rerank]`` table, in words for a one-line error; None when nothing is."""
    problem = text_problem(table, "rerank", ("model", "url", "api_key_env"))
    if problem:
        return problem
    depth = table.get("depth", DEFAULT_RERANK_DEPTH)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        return "rerank.depth must be a positive integer"
    problem = seconds_problem(table, "rerank")
    if problem:
        return problem
    if "model" in table:
        # Imported only for a table that names a reranker: the stage's module loads the store.
        from chunkscope.retrieval.rerank import check_rerank_spec
        from chunkscope.retrieval.rerankers.base import RerankError, RerankSpec

        try:
            check_rerank_spec(RerankSpec(table["model"], table.get("url"), depth))
        except RerankError as exc:
            return f"[rerank]: {exc}"
    return None


def rerank_spec(table: dict[str, Any], origin: Callable[[str], Origin], *, trust_tree: bool, source: Path | None,
                model: str | None = None, url: str | None = None, depth: int | None = None) -> RerankSpec | None:
    """The reranker: ``model``/``url``/``depth`` (the command line's) over ``[rerank]`` (``table``, whose keys'
    ``origin`` the config knows); None when neither names a model. The API key goes to the URL only as the trust
    rules allow (``key_refusal`` says why not)."""
    name = model or table.get("model")
    if not name:
        return None
    from chunkscope.retrieval.rerank import check_rerank_spec  # only when a reranker is named (loads the store)
    from chunkscope.retrieval.rerankers.base import RerankSpec

    target = url or table.get("url")
    spec = RerankSpec(str(name), target, int(depth if depth is not None else table.get("depth", DEFAULT_RERANK_DEPTH)),
                      float(table.get("timeout", DEFAULT_RERANK_TIMEOUT)),
                      str(table.get("api_key_env") or DEFAULT_RERANK_KEY_ENV))
    check_rerank_spec(spec)
    if target is None:
        return spec
    named_by: Origin = "cli" if url else origin("rerank.url")
    refusal = secret_refusal(target, named_by, tree_trusted=trust_tree, source=source)
    if refusal is None and "api_key_env" in table and origin("rerank.api_key_env") == "tree" and not trust_tree:
        # The tree would choose which of the user's variables is sent.
        refusal = f"{source}: api_key_env = {spec.api_key_env!r} is named by the docs tree's config; {HOW_TO_ALLOW}"
    return RerankSpec(spec.model, spec.url, spec.depth, spec.timeout, spec.api_key_env, refusal)

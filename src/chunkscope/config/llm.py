"""The ``[llm]`` table: the chat model the LLM stages ask (``chunkscope questions``), checked when the file is read,
with the trust rules (`chunkscope.config.trust`) deciding whether its endpoint may receive the API key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from chunkscope.config.trust import HOW_TO_ALLOW, Origin, secret_refusal
from chunkscope.config.values import seconds_problem, text_problem
from chunkscope.llm.chat import (
    DEFAULT_LLM_KEY_ENV,
    DEFAULT_LLM_TIMEOUT,
    OPENAI_CHAT_URL,
    ChatSpec,
    LlmError,
    parse_chat_model,
)

#: The keys of ``[llm]``.
LLM_KEYS = frozenset({"model", "url", "api_key_env", "timeout"})
#: What ``[llm]`` means, for the configuration's field list.
LLM_FIELD = ("the chat model the LLM stages ask (chunkscope questions): model (openai:MODEL), url (an "
             f"OpenAI-compatible base URL, default {OPENAI_CHAT_URL}), api_key_env (default {DEFAULT_LLM_KEY_ENV}), "
             f"timeout (seconds per request, default {DEFAULT_LLM_TIMEOUT:g})")


def check_llm_table(table: dict[str, Any]) -> str | None:
    """What is wrong with an ``[llm]`` table, in words for a one-line error; None when nothing is."""
    problem = text_problem(table, "llm", ("model", "url", "api_key_env")) or seconds_problem(table, "llm")
    if problem:
        return problem
    if "model" in table:
        try:
            parse_chat_model(table["model"], table.get("url"))
        except LlmError as exc:
            return f"[llm]: {exc}"
    return None


def llm_spec(table: dict[str, Any], origin: Callable[[str], Origin], *, trust_tree: bool, source: Path | None,
             model: str | None = None, url: str | None = None) -> ChatSpec | None:
    """The chat model: ``model``/``url`` (the command line's) over ``[llm]`` (``table``, whose keys' ``origin``
    the config knows); None when neither names a model. The API key goes to the URL only as the trust rules
    allow (``key_refusal`` says why not).

    Raises:
        LlmError: the model or URL is malformed.
    """
    name = model or table.get("model")
    if not name:
        return None
    # A model named on the command line without a URL does not inherit the file's (it may be another server's).
    target = url or (None if model else table.get("url"))
    spec = replace(parse_chat_model(str(name), target),
                   api_key_env=str(table.get("api_key_env") or DEFAULT_LLM_KEY_ENV),
                   timeout=float(table.get("timeout", DEFAULT_LLM_TIMEOUT)))
    named_by: Origin = "cli" if url else (origin("llm.url") if target else "default")
    refusal = secret_refusal(spec.url, named_by, tree_trusted=trust_tree, default_url=OPENAI_CHAT_URL, source=source)
    if refusal is None and "api_key_env" in table and origin("llm.api_key_env") == "tree" and not trust_tree:
        # The tree would choose which of the user's variables is sent.
        refusal = f"{source}: api_key_env = {spec.api_key_env!r} is named by the docs tree's config; {HOW_TO_ALLOW}"
    return replace(spec, key_refusal=refusal)

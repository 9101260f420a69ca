"""``openai:MODEL``: an OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, Ollama, vLLM, LM Studio, …).

The request is the shape every such server accepts (``{"model", "messages", "temperature", "max_tokens"}``); the
answer is ``choices[0].message.content``. Keys, retries and timeouts follow the embedding endpoint's rules: the key
is read from the environment (``[llm] api_key_env``, `DEFAULT_LLM_KEY_ENV` by default) when a request is made and
sent only where the trust rules allow (the spec carries the verdict as ``key_refusal``); 429/5xx and timeouts are
retried with backoff (`chunkscope.embedding.backends.http_retry`); every failure is one line naming the endpoint.

Usage (``usage.prompt_tokens``/``completion_tokens``) is summed when the server reports it, so a run can say what
it spent beside what it estimated.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import urlsplit

from chunkscope.embedding.backends.http_retry import (RetryPolicy, bearer_headers, endpoint_url, post_with_retries,
                                                      refusal_line)
from chunkscope.safe_text import redact_url

#: OpenAI's own endpoint, the default base URL.
OPENAI_CHAT_URL = "https://api.openai.com/v1"
#: The variable holding the chat endpoint's key unless ``[llm] api_key_env`` names another.
DEFAULT_LLM_KEY_ENV = "OPENAI_API_KEY"
#: Seconds one chat request may take: generation is slower than embedding.
DEFAULT_LLM_TIMEOUT = 120.0
#: The prefix a chat model is named with, as for embedders.
PREFIX = "openai:"


class LlmError(Exception):
    """The chat endpoint cannot be used, refused, or answered nonsense; one line, naming it.

    Args:
        status: the HTTP status the endpoint refused with (401, 404, 503 after the retries); None when it did not
            refuse (no answer, or an answer that is no chat completion).
        reached: False when the endpoint could not be connected to at all.
    """

    def __init__(self, message: str, *, status: int | None = None, reached: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.reached = reached


@dataclass(frozen=True)
class ChatSpec:
    """Which chat model, where: ``openai:MODEL`` at ``url``."""

    model: str
    url: str = OPENAI_CHAT_URL
    api_key_env: str = DEFAULT_LLM_KEY_ENV
    timeout: float = DEFAULT_LLM_TIMEOUT
    #: Why no API key may go to ``url`` (`chunkscope.config.trust.secret_refusal`); None: it may.
    key_refusal: str | None = None

    @property
    def name(self) -> str:
        """The model name the endpoint knows (what follows ``openai:``)."""
        return self.model.removeprefix(PREFIX)


def parse_chat_model(model: str, url: str | None = None) -> ChatSpec:
    """The spec of ``openai:MODEL`` at ``url`` (OpenAI's when None).

    Raises:
        LlmError: the model is not named ``openai:MODEL``, or the URL is not an http(s) URL.
    """
    name = model.strip()
    if not name.startswith(PREFIX) or not name[len(PREFIX):].strip():
        raise LlmError(f"{model!r}: name a chat model as openai:MODEL (an OpenAI-compatible /chat/completions "
                       "endpoint: OpenAI, Ollama, vLLM, LM Studio)")
    base = (url or OPENAI_CHAT_URL).strip().rstrip("/")
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise LlmError(f"{redact_url(base)!r} is not an http(s) URL for a chat endpoint")
    return ChatSpec(name, base)


def chat_url(base: str) -> str:
    """``…/chat/completions`` of a base URL (``http://localhost:11434/v1``), keeping any query string."""
    return endpoint_url(base, "/chat/completions")


@dataclass
class Usage:
    """Tokens the endpoint says it read and wrote, over a client's life (0 where it does not say)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0


class ChatClient:
    """One chat endpoint, asked one conversation at a time (thread-safe)."""

    def __init__(self, spec: ChatSpec, *, max_retries: int = 4, backoff: float = 0.5) -> None:
        self.spec = spec
        self.url = chat_url(spec.url)
        self.max_retries = max_retries
        self.backoff = backoff
        self.usage = Usage()
        self.retries = 0
        self._client: Any = None
        self._lock = threading.Lock()

    def where(self) -> str:
        return f"{self.spec.name} at {redact_url(self.url)}"

    def _headers(self) -> dict[str, str]:
        return bearer_headers(self.spec.api_key_env, self.spec.key_refusal)

    def _count_retry(self) -> None:
        self.retries += 1

    def _refusal(self, status: int, reply: Any, attempts: int) -> NoReturn:
        # Raised here rather than returned as the line for `post_with_retries` to raise: the error carries the
        # status, which callers decide by (a refused key ends a run; a page's own refusal fails that page alone).
        raise LlmError(refusal_line(self.where(), status, reply, attempts, key_refusal=self.spec.key_refusal,
                                    api_key_env=self.spec.api_key_env,
                                    not_found=f"no chat endpoint or no model {self.spec.name!r} there"),
                       status=status)

    @staticmethod
    def _unreachable(message: str) -> LlmError:
        return LlmError(message, reached=False)

    def complete(self, system: str, user: str, *, max_tokens: int, temperature: float = 0.0) -> str:
        """The model's answer to one ``user`` message under ``system``.

        Raises:
            LlmError: unreachable, refused, or a reply without an answer; one line naming the endpoint.
        """
        import httpx

        with self._lock:
            if self._client is None:
                t = self.spec.timeout
                self._client = httpx.Client(timeout=httpx.Timeout(t, connect=min(10.0, t)))
        body = {"model": self.spec.name, "temperature": temperature, "max_tokens": max_tokens,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
        reply = post_with_retries(
            self._client, self.url, body, headers=self._headers, where=self.where(), timeout=self.spec.timeout,
            timeout_setting="[llm] timeout", retries=RetryPolicy(self.max_retries, self.backoff, max_delay=30.0),
            error=LlmError, refusal=self._refusal, on_retry=self._count_retry, unreachable=self._unreachable)
        try:
            data = reply.json()
            content = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LlmError(f"{self.where()}: the reply is not a chat completion "
                           '({"choices": [{"message": {"content": …}}]})') from None
        if not isinstance(content, str):
            raise LlmError(f"{self.where()}: the reply's message has no text content")
        self._count_usage(data.get("usage"))
        return content

    def _count_usage(self, usage: Any) -> None:
        self.usage.requests += 1
        if isinstance(usage, dict):
            for key in ("prompt_tokens", "completion_tokens"):
                value = usage.get(key)
                if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                    setattr(self.usage, key, getattr(self.usage, key) + value)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

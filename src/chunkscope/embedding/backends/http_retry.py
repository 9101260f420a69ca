"""One POST to an HTTP endpoint with the retries every chunkscope client makes (embeddings, rerank): a timeout and
429/5xx are retried with exponential backoff and jitter (``Retry-After`` honoured), every failure is one line naming
the endpoint, and the headers (the key) live no longer than the request."""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

from chunkscope.safe_text import redact_urls

#: Statuses worth another try: the server is busy, rate-limits, or failed on its side.
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to try again."""

    max_retries: int
    backoff: float
    max_delay: float


def post_with_retries(client: Any, url: str, body: dict[str, Any], *, headers: Callable[[], dict[str, str]],
                      where: str, timeout: float, timeout_setting: str, retries: RetryPolicy,
                      error: type[Exception], refusal: Callable[[int, Any, int], str],
                      on_retry: Callable[[], None], unreachable: Callable[[str], Exception] | None = None) -> Any:
    """The endpoint's 200 reply to ``body``.

    Args:
        headers: made afresh for each try (and dropped after it), so a key is held only while a request is out.
        where: the endpoint as messages name it (never a secret).
        timeout_setting: the setting that sets the wait, named when the endpoint never answers.
        refusal: the one-line message for a final non-200 status, given the status, the reply and the retries made;
            or it raises the caller's own error, carrying the status (the chat client's `LlmError`).
        on_retry: called for each retried status (the caller counts them).
        unreachable: makes the error for an endpoint that cannot be connected to (``error`` when None), for a
            caller that stops there rather than failing each of its requests alike.

    Raises:
        error: the endpoint cannot be reached, never answers, or refuses; one line naming it.
    """
    import httpx

    attempt = 0
    while True:
        sent = headers()
        try:
            reply = client.post(url, json=body, headers=sent)
        except httpx.ConnectError as exc:
            raise (unreachable or error)(f"{where}: cannot connect ({reason(exc)}); is the server running?") from None
        except httpx.TimeoutException:
            if attempt >= retries.max_retries:
                raise error(f"{where}: no reply within {timeout:g}s ({attempt + 1} attempts; {timeout_setting} "
                            "sets the wait)") from None
            attempt += 1
            _sleep_before(attempt, None, retries)
            continue
        except httpx.HTTPError as exc:
            raise error(f"{where}: request failed ({reason(exc)})") from None
        finally:
            del sent  # the key lives no longer than the request
        if reply.status_code == 200:
            return reply
        if reply.status_code in RETRY_STATUSES and attempt < retries.max_retries:
            attempt += 1
            on_retry()
            _sleep_before(attempt, reply.headers.get("retry-after"), retries)
            continue
        raise error(refusal(reply.status_code, reply, attempt))


def endpoint_url(base: str, route: str) -> str:
    """``{base}{route}`` (``/rerank``, ``/chat/completions``) unless the base already ends with it; a query string
    is kept."""
    parts = urlsplit(base.strip())
    path = parts.path.rstrip("/")
    if not path.endswith(route):
        path += route
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def bearer_headers(api_key_env: str, key_refusal: str | None) -> dict[str, str]:
    """``Authorization: Bearer`` with the key read from ``api_key_env`` now (never kept), or nothing: when the trust
    rules keep the key from this URL (``key_refusal``; a 401 then says why) or the variable is empty."""
    if key_refusal:
        return {}
    key = os.environ.get(api_key_env, "").strip()
    return {"Authorization": f"Bearer {key}"} if key else {}


def refusal_line(where: str, status: int, reply: Any, attempts: int, *, key_refusal: str | None, api_key_env: str,
                 not_found: str) -> str:
    """The one line for an endpoint's final refusal: a key the trust rules kept back, a key refused, nothing
    there (``not_found`` says what was looked for), still failing after retries, or the bare status; with the
    server's own reason where it gave one."""
    detail = server_message(reply)
    said = f": {detail}" if detail else ""
    if status in (401, 403) and key_refusal:
        return f"{where}: the endpoint wants an API key (HTTP {status}), but {key_refusal}"
    if status in (401, 403):
        return f"{where}: the endpoint refused the API key (HTTP {status}); check {api_key_env}{said}"
    if status == 404:
        return f"{where}: not found (HTTP 404): {not_found}{said}"
    if status in RETRY_STATUSES:
        return f"{where}: still failing after {attempts} retries (HTTP {status}){said}"
    return f"{where}: HTTP {status}{said}"


def _sleep_before(attempt: int, retry_after: str | None, retries: RetryPolicy) -> None:
    try:
        delay = float(retry_after) if retry_after else None
    except ValueError:
        delay = None
    if delay is None:
        # Exponential backoff with jitter, so parallel clients do not retry in step.
        delay = retries.backoff * (2 ** (attempt - 1)) * (0.5 + random.random() / 2)
    time.sleep(min(delay, retries.max_delay))


def reason(exc: BaseException) -> str:
    text = redact_urls(str(exc).strip())  # httpx names the URL it tried, credentials and all
    return text.splitlines()[0][:160] if text else type(exc).__name__


def server_message(reply: Any) -> str:
    """The server's own one-line reason (OpenAI: ``{"error": {"message": …}}``), cut short, never the key."""
    try:
        body = reply.json()
    except ValueError:
        body = None
    msg = ""
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            msg = str(err.get("message") or "")
        elif isinstance(err, str):
            msg = err
        elif isinstance(body.get("detail"), str):
            msg = body["detail"]
    if not msg:
        msg = (reply.text or "").strip()
    msg = " ".join(msg.split())
    # OpenAI quotes a partial key in its 401 text ("Incorrect API key provided: sk-ab***cd"): keep none of it.
    if "key" in msg.lower() and "sk-" in msg:
        msg = msg.split("sk-")[0].rstrip(": ") + " (key elided)"
    return msg[:200]

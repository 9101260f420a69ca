"""``openai:MODEL``: an OpenAI-compatible ``/v1/embeddings`` endpoint: OpenAI, Azure OpenAI, Ollama, vLLM, LM Studio…

The request is the one every such server accepts (``{"model": …, "input": [texts]}``); the reply's vectors are
put back in input order by their ``index`` and L2-normalised (OpenAI's already are; some local servers' are
not, and cosine scores must mean the same thing for every embedder).

- **Key**: read from the environment variable the spec names (``OPENAI_API_KEY`` by default) when the request is
  made, never from a file, never printed or kept in an error message. Azure endpoints get it as ``api-key``,
  others as ``Authorization: Bearer``. A local server without keys needs none.
- **Batches** of at most ``batch_size`` texts; a text longer than the model reads (8191 cl100k tokens for
  OpenAI's models) is cut there before sending, as the API would refuse it whole — lint's `embed-truncation`
  warns at the same count.
- **Retries** on 429 and 5xx replies and on timeouts (``[embedder] timeout`` seconds per request, 60 by default),
  with exponential backoff (``Retry-After`` when the server gives one); 401/403, 404 and a refused connection fail
  at once with one line that says what to fix.
- **Replies are checked** before anything is kept: as many vectors as texts, all of one length, numbers only
  (`chunkscope.embedding.encoders.check_vectors` then refuses NaN and zero vectors).

httpx (which qdrant-client already brings) does the HTTP; the protocol is small enough that the ``openai``
package would add a dependency for nothing.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from chunkscope.embedding.backends.http_retry import RetryPolicy, post_with_retries, refusal_line
from chunkscope.embedding.encoders import DEFAULT_TIMEOUT, EmbedError, Encoder, EncoderOptions, Truncator
from chunkscope.embedding.spec import DEFAULT_API_KEY_ENV, EmbedderSpec, EmbedderSpecError
from chunkscope.progress import waiting_on
from chunkscope.safe_text import redact_url

if TYPE_CHECKING:
    import numpy as np

OPENAI_URL = "https://api.openai.com/v1"
#: What OpenAI's embedding models read (cl100k_base tokens); text beyond it is refused by the API, so the
#: embedder cuts it there and lint's `embed-truncation` warns at the same count.
OPENAI_MAX_TOKENS = 8191
#: Sizes of OpenAI's own models (others are learnt from the first reply).
OPENAI_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
#: The score under which a hit counts as not retrieved, per model: seed 004's bot filters at 0.7 with
#: text-embedding-3-small. Another server's model has none unless the user sets one.
OPENAI_THRESHOLDS = {"text-embedding-3-small": 0.7}


@dataclass(frozen=True)
class OpenAISpec(EmbedderSpec):
    """A model behind an OpenAI-compatible endpoint at ``url`` (OpenAI's own by default)."""

    kind = "openai"
    prefix = "openai:"
    takes_url = True

    @classmethod
    def from_user(cls, model: str, url: str | None = None, api_key_env: str | None = None,
                  max_tokens: int | None = None) -> "OpenAISpec":
        """The spec of ``model`` at ``url`` (OpenAI's when None).

        Raises:
            EmbedderSpecError: the URL is not an http(s) URL.
        """
        base = (url or OPENAI_URL).strip().rstrip("/")
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise EmbedderSpecError(f"{redact_url(base)!r} is not an http(s) URL for an embeddings endpoint")
        return cls(model, base, api_key_env or DEFAULT_API_KEY_ENV, max_tokens)

    @property
    def identity(self) -> str:
        """The model named with its host: the same model name served by two servers (an Ollama
        ``nomic-embed-text`` and a vLLM one) may be two different models."""
        url = (self.url or OPENAI_URL).rstrip("/")
        if url == OPENAI_URL:
            return f"openai-{self.model}"
        # The host without the user info: the identity names collections, and a collection's name is shown.
        host = urlsplit(url).netloc.rpartition("@")[2] or redact_url(url)
        import hashlib  # here: OpenSSL's hashes load on first use, never at the app's start-up

        digest = hashlib.sha1(url.encode()).hexdigest()[:8]
        return f"openai-{self.model}-{host}-{digest}"

    @property
    def tokenizer_name(self) -> str:
        """cl100k_base, OpenAI's; for another server's model (an Ollama ``nomic-embed-text``) an estimate, said in
        the docs."""
        return "cl100k_base"

    @property
    def model_max_tokens(self) -> int:
        return OPENAI_MAX_TOKENS

    @property
    def default_threshold(self) -> float | None:
        return OPENAI_THRESHOLDS.get(self.model)

    @property
    def known_dim(self) -> int | None:
        return OPENAI_DIMS.get(self.model)

    def required_modules(self, options: EncoderOptions) -> tuple[tuple[str, str], ...]:
        return (("httpx", "httpx"),)

    def make_encoder(self, options: EncoderOptions) -> Encoder:
        return OpenAIEncoder(self, batch_size=max(options.batch_size, 64), timeout=options.timeout,
                             tokenizer=options.tokenizer)


def endpoint_url(base: str) -> str:
    """``…/embeddings`` of a base URL, keeping any query (Azure's ``?api-version=…``)."""
    parts = urlsplit(base)
    path = parts.path.rstrip("/")
    if not path.endswith("/embeddings"):
        path += "/embeddings"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _is_azure(url: str) -> bool:
    return urlsplit(url).netloc.endswith(".openai.azure.com")


class OpenAIEncoder:
    """An OpenAI-compatible embeddings endpoint, as an `chunkscope.embedding.encoders.Encoder`."""

    def __init__(self, spec: OpenAISpec, *, batch_size: int = 64, timeout: float = DEFAULT_TIMEOUT,
                 max_retries: int = 5, backoff: float = 1.0, tokenizer: Truncator | None = None) -> None:
        self.spec = spec
        self.url = endpoint_url(spec.url or OPENAI_URL)
        self.batch_size = max(1, batch_size)
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self._dim = spec.known_dim
        self._client: Any = None
        self._lock = threading.Lock()
        self._tokenizer = tokenizer
        self.load_seconds = 0.0
        self.encode_seconds = 0.0
        #: Requests retried (rate limits, server errors, timeouts) over this encoder's life.
        self.retries = 0

    @property
    def loaded(self) -> bool:
        return self._client is not None

    @property
    def device(self) -> str | None:
        return urlsplit(self.url).netloc if self._client is not None else None

    def where(self) -> str:
        """The model and endpoint, for messages (never the key)."""
        return f"{self.spec.text} at {redact_url(self.url)}"

    def dim(self) -> int:
        if self._dim is None:  # another server's model: its size is learnt from one request
            self.encode(["dimension probe"])
        assert self._dim is not None
        return self._dim

    @property
    def known_dim(self) -> int | None:
        return self._dim

    def load(self) -> None:
        with self._lock:
            if self._client is None:
                import httpx

                t0 = time.perf_counter()
                self._client = httpx.Client(timeout=httpx.Timeout(self.timeout, connect=min(10.0, self.timeout)))
                self.load_seconds = time.perf_counter() - t0

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # -- requests --

    def _headers(self) -> dict[str, str]:
        if self.spec.key_refusal:
            return {}  # the trust rules keep the key from this URL (a 401 says why)
        key = os.environ.get(self.spec.api_key_env, "").strip()
        if not key:
            if self.spec.url and self.spec.url.rstrip("/") == OPENAI_URL:
                raise EmbedError(f"{self.where()}: no API key: set {self.spec.api_key_env}")
            return {}  # a local server (Ollama, vLLM, LM Studio) usually takes none
        return {"api-key": key} if _is_azure(self.url) else {"Authorization": f"Bearer {key}"}

    def _fit(self, texts: Sequence[str]) -> list[str]:
        """Texts cut to what the model reads: the API refuses a longer one rather than truncating it."""
        limit = self.spec.max_tokens
        out = []
        for t in texts:
            if len(t) <= limit or self._tokenizer is None:  # a token is at least one character
                out.append(t)
                continue
            out.append(t[:self._tokenizer.truncation_offset(t, limit)])
        return out

    def _post(self, texts: list[str]) -> list[list[float]]:
        # Marked as a wait, retries included: a command's progress says what it waits on while no reply comes.
        with waiting_on(f"a reply from {self.where()}"):
            return self._post_retrying(texts)

    def _post_retrying(self, texts: list[str]) -> list[list[float]]:
        self.load()
        reply = post_with_retries(
            self._client, self.url, {"model": self.spec.model, "input": texts}, headers=self._headers,
            where=self.where(), timeout=self.timeout, timeout_setting="[embedder] timeout",
            retries=RetryPolicy(self.max_retries, self.backoff, max_delay=60.0), error=EmbedError,
            refusal=self._refusal, on_retry=self._count_retry)
        return self._vectors(reply, len(texts))

    def _count_retry(self) -> None:
        self.retries += 1

    def _refusal(self, status: int, reply: Any, attempts: int) -> str:
        return refusal_line(self.where(), status, reply, attempts, key_refusal=self.spec.key_refusal,
                            api_key_env=self.spec.api_key_env,
                            not_found=f"no model {self.spec.model!r} there, or the URL is not an embeddings endpoint")

    def _vectors(self, reply: Any, n: int) -> list[list[float]]:
        try:
            data = reply.json()["data"]
            rows = sorted(data, key=lambda d: d.get("index", 0))
            vecs = [r["embedding"] for r in rows]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise EmbedError(f"{self.where()}: the reply is not an embeddings response") from None
        if len(vecs) != n or any(not isinstance(v, list) or not v for v in vecs):
            raise EmbedError(f"{self.where()}: asked for {n} vectors, got {len(vecs)}")
        sizes = sorted({len(v) for v in vecs})
        if len(sizes) > 1:
            raise EmbedError(f"{self.where()}: vectors of different lengths in one reply ({sizes[0]} to {sizes[-1]})")
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for v in vecs for x in v):
            raise EmbedError(f"{self.where()}: the reply's vectors hold something other than numbers")
        return vecs

    def encode(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        t0 = time.perf_counter()
        try:
            rows: list[list[float]] = []
            fitted = self._fit(texts)
            for i in range(0, len(fitted), self.batch_size):
                rows.extend(self._post(fitted[i:i + self.batch_size]))
        finally:
            self.encode_seconds += time.perf_counter() - t0
        if not rows:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        out = np.asarray(rows, dtype=np.float32)
        if self._dim is None:
            self._dim = int(out.shape[1])
        elif out.shape[1] != self._dim:
            raise EmbedError(f"{self.where()}: vectors of size {out.shape[1]}, expected {self._dim}")
        # A NaN or zero row is left as it is for `check_vectors` to refuse with the endpoint's name.
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        with np.errstate(invalid="ignore"):
            return out / np.where((norms == 0) | ~np.isfinite(norms), 1.0, norms)

"""A real HTTP server on 127.0.0.1 that speaks the OpenAI embeddings protocol, for tests.

It serves ``POST /v1/embeddings`` with vectors from the local all-MiniLM-L6-v2 (so answers are meaningful and
comparable with the offline embedder), checks the bearer key and the model name as OpenAI does (401, 404 with
OpenAI's error body), and can be told to answer the next requests with 429 or 500 to exercise retries, or to wait
``delay`` seconds before answering. Replies list the vectors in reverse order with their ``index``, as nothing in
the protocol promises order; whatever ``encode`` returns is sent as it is (NaN as JSON's ``NaN``, rows of different
lengths), so a broken server is one ``encode`` away.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from .loopback import LoopbackServer, Reply, Request

GOOD_KEY = "sk-test-good-key-0123456789"
MODEL = "local-minilm"


class EmbeddingsServer(LoopbackServer):
    """``with EmbeddingsServer(encode) as srv: srv.base_url`` — a live server until the block ends."""

    def __init__(self, encode: Callable[[Sequence[str]], np.ndarray], *, key: str | None = GOOD_KEY,
                 model: str = MODEL, max_input_tokens: int | None = None) -> None:
        super().__init__()
        self.encode = encode
        self.key = key
        self.model = model
        self.max_input_chars: int | None = None
        self.requests: list[dict] = []  # every request's body and what was answered
        self.fail_next: list[int] = []  # statuses to answer the next requests with, first first
        self.retry_after: str | None = "0"
        self.delay = 0.0  # seconds to wait before answering a request
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def answer(self, request: Request) -> Reply:
        body = request.body
        if self.delay:
            time.sleep(self.delay)
        auth = request.headers.get("Authorization", "")
        with self._lock:
            record = {"path": request.path, "body": body, "auth": auth}
            self.requests.append(record)
            status = self.fail_next.pop(0) if self.fail_next else None
        if request.path != "/v1/embeddings":
            record["status"] = 404
            return Reply(404, {"error": {"message": f"no route {request.path}"}})
        if self.key is not None and auth != f"Bearer {self.key}":
            record["status"] = 401
            shown = auth.removeprefix("Bearer ")
            return Reply(401, {"error": {
                "message": f"Incorrect API key provided: {shown[:5]}***{shown[-4:]}", "type": "invalid_request_error"}})
        if body.get("model") != self.model:
            record["status"] = 404
            return Reply(404, {"error": {"message": f"The model `{body.get('model')}` does not exist"}})
        if status is not None:
            record["status"] = status
            headers = {"Retry-After": self.retry_after} if status == 429 and self.retry_after else {}
            return Reply(status, {"error": {"message": "Rate limit reached" if status == 429 else "oops"}}, headers)
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if self.max_input_chars is not None and any(len(t) > self.max_input_chars for t in texts):
            record["status"] = 400
            return Reply(400, {"error": {"message": "input too long"}})
        vecs = self.encode(texts)
        data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vecs)]
        record["status"] = 200
        return Reply(200, {"object": "list", "data": list(reversed(data)), "model": self.model,
                           "usage": {"prompt_tokens": 0, "total_tokens": 0}})

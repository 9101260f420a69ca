"""A real HTTP server on 127.0.0.1 that speaks the OpenAI embeddings protocol, for tests.

It serves ``POST /v1/embeddings`` with vectors from the local all-MiniLM-L6-v2 (so answers are meaningful and
comparable with the offline embedder), checks the bearer key and the model name as OpenAI does (401, 404 with
OpenAI's error body), and can be told to answer the next requests with 429 or 500 to exercise retries, or to wait
``delay`` seconds before answering. Replies list the vectors in reverse order with their ``index``, as nothing in
the protocol promises order; whatever ``encode`` returns is sent as it is (NaN as JSON's ``NaN``, rows of different
lengths), so a broken server is one ``encode`` away.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

GOOD_KEY = "sk-test-good-key-0123456789"
MODEL = "local-minilm"


class EmbeddingsServer:
    """``with EmbeddingsServer(encode) as srv: srv.base_url`` — a live server until the block ends."""

    def __init__(self, encode: Callable[[Sequence[str]], np.ndarray], *, key: str | None = GOOD_KEY,
                 model: str = MODEL, max_input_tokens: int | None = None) -> None:
        self.encode = encode
        self.key = key
        self.model = model
        self.max_input_chars: int | None = None
        self.requests: list[dict] = []  # every request's body and what was answered
        self.fail_next: list[int] = []  # statuses to answer the next requests with, first first
        self.retry_after: str | None = "0"
        self.delay = 0.0  # seconds to wait before answering a request
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> "EmbeddingsServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet
                return

            def _reply(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if server.delay:
                    time.sleep(server.delay)
                auth = self.headers.get("Authorization", "")
                with server._lock:
                    record = {"path": self.path, "body": body, "auth": auth}
                    server.requests.append(record)
                    status = server.fail_next.pop(0) if server.fail_next else None
                if self.path != "/v1/embeddings":
                    record["status"] = 404
                    return self._reply(404, {"error": {"message": f"no route {self.path}"}})
                if server.key is not None and auth != f"Bearer {server.key}":
                    record["status"] = 401
                    shown = auth.removeprefix("Bearer ")
                    return self._reply(401, {"error": {
                        "message": f"Incorrect API key provided: {shown[:5]}***{shown[-4:]}", "type": "invalid_request_error"}})
                if body.get("model") != server.model:
                    record["status"] = 404
                    return self._reply(404, {"error": {"message": f"The model `{body.get('model')}` does not exist"}})
                if status is not None:
                    record["status"] = status
                    headers = {"Retry-After": server.retry_after} if status == 429 and server.retry_after else {}
                    return self._reply(status, {"error": {"message": "Rate limit reached" if status == 429 else "oops"}},
                                       headers)
                texts = body.get("input")
                if isinstance(texts, str):
                    texts = [texts]
                if server.max_input_chars is not None and any(len(t) > server.max_input_chars for t in texts):
                    record["status"] = 400
                    return self._reply(400, {"error": {"message": "input too long"}})
                vecs = server.encode(texts)
                data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                        for i, v in enumerate(vecs)]
                record["status"] = 200
                self._reply(200, {"object": "list", "data": list(reversed(data)), "model": server.model,
                                  "usage": {"prompt_tokens": 0, "total_tokens": 0}})

        return Handler

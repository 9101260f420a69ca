"""A real HTTP server on 127.0.0.1 for the tests of chunkscope's HTTP clients (chat, embeddings, rerank, Qdrant).

Each fake endpoint subclasses `LoopbackServer` and writes only what it answers (`LoopbackServer.answer`): the
threads, the free port, the quiet log and the JSON in and out are here, once.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class Request:
    """What a client sent: ``body`` is its JSON (``{}`` when it sent none)."""

    method: str
    path: str
    headers: Message
    body: Any


@dataclass
class Reply:
    """What the server answers: ``body`` is sent as JSON, or as it is when it is a string (a broken reply)."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class LoopbackServer:
    """``with Server() as srv: srv.origin`` — a live server on a free port until the block ends."""

    def __init__(self) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT``: the endpoint's routes follow it."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def answer(self, request: Request) -> Reply:
        """The reply to one request (called on the server's own threads)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet: pytest shows a failing test's own output
                return

            def _serve(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                reply = server.answer(Request(self.command, self.path, self.headers, json.loads(raw or b"{}")))
                data = (reply.body if isinstance(reply.body, str) else json.dumps(reply.body)).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _serve  # noqa: N815 - http.server's names

        return Handler

"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions protocol, for tests of the LLM stages.

``POST /v1/chat/completions`` answers with ``respond(prompt)`` (the user message) as the assistant's content; the
default rule writes, for every section the prompt shows, one question built from the section's first sentence,
with that sentence as evidence, so the answers are deterministic and checkable. Requests are recorded with their
``Authorization`` header; ``fail_next`` answers the next requests with the statuses given.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SECTION = re.compile(r"### Section heading: (?P<heading>[^\n]*)\n(?P<body>.*?)(?=\n\n### Section heading: |\Z)", re.S)


def sections(prompt: str) -> list[tuple[str, str]]:
    """(heading, text) of every section a prompt shows."""
    return [(m["heading"], m["body"]) for m in SECTION.finditer(prompt)]


def first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]


def honest(prompt: str) -> str:
    """One question per section: about the words of its first sentence, that sentence as evidence."""
    rows = []
    for heading, body in sections(prompt):
        sentence = first_sentence(body)
        words = re.findall(r"[A-Za-z]+", sentence)[:6]
        rows.append({"heading": heading, "question": f"What do the docs say about {' '.join(words).lower()}?",
                     "evidence": sentence})
    return "Here you are:\n```json\n" + json.dumps({"questions": rows}) + "\n```"


class ChatServer:
    """``with ChatServer() as srv: srv.base_url`` — a live chat endpoint until the block ends."""

    def __init__(self, respond: Callable[[str], str] = honest) -> None:
        self.respond = respond
        self.requests: list[dict[str, Any]] = []
        self.fail_next: list[int] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> "ChatServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return

            def _reply(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                with server._lock:
                    server.requests.append({"path": self.path, "body": body,
                                            "auth": self.headers.get("Authorization", "")})
                    status = server.fail_next.pop(0) if server.fail_next else 200
                if not self.path.endswith("/chat/completions"):
                    self._reply(404, {"error": {"message": "no such route"}})
                    return
                if status != 200:
                    self._reply(status, {"error": {"message": "busy"}})
                    return
                prompt = body["messages"][-1]["content"]
                content = server.respond(prompt)
                self._reply(200, {"choices": [{"message": {"role": "assistant", "content": content}}],
                                  "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": 7}})

        return Handler


def situate(prompt: str) -> str:
    """A contextual-retrieval answer: names the chunk's first words and the document's first heading."""
    doc = re.search(r"<document>\n(.*?)\n</document>", prompt, re.S)
    chunk = re.search(r"<chunk>\n(.*?)\n</chunk>", prompt, re.S)
    title = re.search(r"^#\s+(.+)$", doc[1] if doc else "", re.M)
    words = re.findall(r"[A-Za-z]+", chunk[1] if chunk else "")[:4]
    return f"  From the page {title[1] if title else 'untitled'}: about {' '.join(words).lower()}.\n"

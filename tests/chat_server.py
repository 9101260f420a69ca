"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions protocol, for tests of the LLM stages.

``POST /v1/chat/completions`` answers with ``respond(prompt)`` (the user message) as the assistant's content; the
default rule writes, for every section the prompt shows, one question built from the section's first sentence,
with that sentence as evidence, so the answers are deterministic and checkable. Requests are recorded with their
``Authorization`` header; ``fail_next`` answers the next requests with the statuses given (and ``fail_reason``).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

from .loopback import LoopbackServer, Reply, Request

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


class ChatServer(LoopbackServer):
    """``with ChatServer() as srv: srv.base_url`` — a live chat endpoint until the block ends."""

    def __init__(self, respond: Callable[[str], str] = honest) -> None:
        super().__init__()
        self.respond = respond
        self.requests: list[dict[str, Any]] = []
        self.fail_next: list[int] = []
        #: The server's own reason in a failing answer (OpenAI's ``{"error": {"message": ...}}``).
        self.fail_reason = "busy"
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def answer(self, request: Request) -> Reply:
        retry_now = {"Retry-After": "0"}
        with self._lock:
            self.requests.append({"path": request.path, "body": request.body,
                                  "auth": request.headers.get("Authorization", "")})
            status = self.fail_next.pop(0) if self.fail_next else 200
        if not request.path.endswith("/chat/completions"):
            return Reply(404, {"error": {"message": "no such route"}}, retry_now)
        if status != 200:
            return Reply(status, {"error": {"message": self.fail_reason}}, retry_now)
        prompt = request.body["messages"][-1]["content"]
        content = self.respond(prompt)
        return Reply(200, {"choices": [{"message": {"role": "assistant", "content": content}}],
                           "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": 7}}, retry_now)


def situate(prompt: str) -> str:
    """A contextual-retrieval answer: names the chunk's first words and the document's first heading."""
    doc = re.search(r"<document>\n(.*?)\n</document>", prompt, re.S)
    chunk = re.search(r"<chunk>\n(.*?)\n</chunk>", prompt, re.S)
    title = re.search(r"^#\s+(.+)$", doc[1] if doc else "", re.M)
    words = re.findall(r"[A-Za-z]+", chunk[1] if chunk else "")[:4]
    return f"  From the page {title[1] if title else 'untitled'}: about {' '.join(words).lower()}.\n"

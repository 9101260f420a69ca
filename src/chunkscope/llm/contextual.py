"""Contextual retrieval (``embed_prefix = "llm"``): a chat model writes one sentence situating each chunk in its
page; the sentence goes before the chunk's text for embedding only.

Contexts live in a SQLite file under chunkscope's cache folder, keyed by the sha256 of the model's identity (model,
endpoint, prompt version), the page's text and the chunk's text: a changed page or chunk, or another model, is a
new key, and nothing else is ever sent twice. Reading (`CachedContexts`, what chunking uses) never calls the model;
writing (`ContextWriter`, what ``chunkscope contexts`` runs) is the one place that spends tokens, after its cost
(`estimate`) was shown.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from chunkscope.llm.chat import ChatClient, ChatSpec, LlmError

#: Bumped when the prompt changes: contexts written under another prompt are another model's, in effect.
PROMPT_VERSION = "1"
#: The page is cut to about this many tokens around the chunk (a long page would cost more than it tells).
PAGE_TOKEN_BUDGET = 6000
#: The answer's length cap: one short sentence.
MAX_CONTEXT_TOKENS = 100
#: Characters per token, for cutting the page without tokenizing it twice (English prose under cl100k is ~4).
_CHARS_PER_TOKEN = 4
#: A context longer than this is cut: a model that ignored "one sentence" must not drown the chunk.
MAX_CONTEXT_CHARS = 600

SYSTEM = ("You help a search engine. Given a document and one chunk of it, you write one short sentence that "
          "situates the chunk within the document, so that the chunk can be found by a search. Answer with that "
          "sentence only.")


def cache_file() -> Path:
    """Where contexts are kept (``CHUNKSCOPE_CACHE`` moves chunkscope's whole cache folder)."""
    from chunkscope.paths import cache_home

    return cache_home() / "contexts.sqlite3"


def model_identity(spec: ChatSpec) -> str:
    """The model, its endpoint and the prompt's version: what a context depends on besides its texts."""
    return f"openai:{spec.name}@{spec.url}#prompt{PROMPT_VERSION}"


def context_key(identity: str, page: str, chunk: str) -> str:
    """The cache key of one chunk's context (lengths first, so no two (page, chunk) pairs can join the same)."""
    h = hashlib.sha256()
    for part in (identity, page, chunk):
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def page_excerpt(page: str, start: int, end: int, budget_tokens: int = PAGE_TOKEN_BUDGET) -> str:
    """The page, or the part of it about ``budget_tokens`` long centred on the chunk ``page[start:end]``."""
    budget = budget_tokens * _CHARS_PER_TOKEN
    if len(page) <= budget:
        return page
    middle = (start + end) // 2
    lo = max(0, min(middle - budget // 2, len(page) - budget))
    return page[lo:lo + budget]


def prompt(page: str, chunk: str) -> str:
    """The user message: the page (or its excerpt), then the chunk, then what to write."""
    return (f"<document>\n{page}\n</document>\n\nHere is the chunk to situate within the whole document:\n"
            f"<chunk>\n{chunk}\n</chunk>\n\nGive one short sentence situating this chunk within the document, to "
            "help search find it. Answer only with the sentence.")


def clean_context(answer: str) -> str:
    """The answer as a one-line context: whitespace folded, cut to `MAX_CONTEXT_CHARS`."""
    line = " ".join(answer.split())
    return line[:MAX_CONTEXT_CHARS].rstrip()


class ContextCache:
    """The SQLite file of contexts by key; opened on first use, safe across threads and processes."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            path = self.path or cache_file()
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(path, check_same_thread=False, timeout=30)
                db.execute("CREATE TABLE IF NOT EXISTS contexts (key TEXT PRIMARY KEY, context TEXT NOT NULL)")
                db.commit()
            except (OSError, sqlite3.Error) as exc:
                raise LlmError(f"{path}: cannot open the contexts cache: {exc}") from None
            self._db = db
        return self._db

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        with self._lock:
            db = self._conn()
            found: dict[str, str] = {}
            for i in range(0, len(keys), 500):  # SQLite's limit on bound parameters
                part = list(keys[i:i + 500])
                marks = ",".join("?" * len(part))
                for key, context in db.execute(f"SELECT key, context FROM contexts WHERE key IN ({marks})", part):
                    found[key] = context
            return found

    def state(self) -> str:
        """How many contexts the file holds and its newest row: changes with every write."""
        with self._lock:
            count, newest = self._conn().execute("SELECT count(*), max(rowid) FROM contexts").fetchone()
            return f"{count}:{newest}"

    def put(self, key: str, context: str) -> None:
        with self._lock:
            db = self._conn()
            db.execute("INSERT OR REPLACE INTO contexts (key, context) VALUES (?, ?)", (key, context))
            db.commit()  # each one at once: an interrupted run keeps what it paid for

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


_shared: dict[Path, ContextCache] = {}
_shared_lock = threading.Lock()


def shared_cache() -> ContextCache:
    """One `ContextCache` per cache file for the whole process (the app resolves strategies often)."""
    path = cache_file()
    with _shared_lock:
        if path not in _shared:
            _shared[path] = ContextCache(path)
        return _shared[path]


class CachedContexts:
    """The `chunkscope.chunking.contexts.ChunkContexts` of one chat model: cached contexts only, never a request.

    The keys asked for and those without a context are remembered for the process (`tally`), so a command can say
    how many chunks are used without one, however many times and by whichever strategy it chunked them.
    """

    def __init__(self, spec: ChatSpec, cache: ContextCache | None = None) -> None:
        self.spec = spec
        self.cache = cache or shared_cache()

    @property
    def identity(self) -> str:
        return model_identity(self.spec)

    def state(self) -> str:
        return f"{self.identity}:{self.cache.state()}"

    def lookup(self, page: str, chunks: Sequence[str]) -> list[str | None]:
        keys = [context_key(self.identity, page, c) for c in chunks]
        found = self.cache.get_many(keys)
        with _tally_lock:
            _seen.update(keys)
            _unfound.update(k for k in keys if k not in found)
        return [found.get(k) for k in keys]


#: The keys every provider of this process was asked for, and those it had no context for (`tally`).
_seen: set[str] = set()
_unfound: set[str] = set()
_tally_lock = threading.Lock()


def take_tally() -> tuple[int, int]:
    """(chunks without a context, chunks asked for), distinct, over every provider since the last call; then
    forget them (one command's count never carries into the next's)."""
    with _tally_lock:
        counts = len(_unfound), len(_seen)
        _seen.clear()
        _unfound.clear()
    return counts


@dataclass(frozen=True)
class Todo:
    """One chunk still without a context: its page's text and where the chunk lies in it."""

    page: str
    start: int
    end: int
    #: The file, for a failure's line.
    path: str

    @property
    def chunk(self) -> str:
        return self.page[self.start:self.end]


def estimate(todo: Sequence[Todo], count: Callable[[str], int]) -> tuple[int, int]:
    """Tokens sent (system + prompt, counted with ``count``) and the most tokens answered, over ``todo``."""
    sent = 0
    system = count(SYSTEM)
    for t in todo:
        sent += system + count(prompt(page_excerpt(t.page, t.start, t.end), t.chunk))
    return sent, MAX_CONTEXT_TOKENS * len(todo)


class ContextWriter:
    """Asks the chat model for the contexts of chunks that have none and writes them to the cache."""

    def __init__(self, client: ChatClient, cache: ContextCache | None = None) -> None:
        self.client = client
        self.cache = cache or shared_cache()
        self.identity = model_identity(client.spec)

    def write(self, t: Todo) -> str:
        """The context of one chunk, asked and cached.

        Raises:
            LlmError: the endpoint failed or answered nothing (one line naming it).
        """
        answer = clean_context(self.client.complete(SYSTEM, prompt(page_excerpt(t.page, t.start, t.end), t.chunk),
                                                    max_tokens=MAX_CONTEXT_TOKENS))
        if not answer:
            raise LlmError(f"{self.client.where()}: answered an empty context for a chunk of {t.path}")
        self.cache.put(context_key(self.identity, t.page, t.chunk), answer)
        return answer

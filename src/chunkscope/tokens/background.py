"""Whole-document encodings made on a background thread while a tree is chunked (`prepare`).

tiktoken releases the GIL while it encodes, so one daemon thread encodes the documents of a tree, in order, while
the calling thread scans their Markdown and chunks those already done. A document's counter takes its tokens over
when it is made (`Analysis.counter`), waiting only when they are not ready yet, and turns them into offsets itself.
(Two encoding threads measured no faster than one on this kind of machine, and a daemon thread never holds up the
interpreter's exit the way an executor's workers would.)
"""

from __future__ import annotations

import queue
import threading
from array import array
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING, Callable, Iterable, TypeVar

from .offline import TIKTOKEN_NAMES, encode_array, tiktoken_encoding, token_byte_lengths
from .slices import token_offsets

if TYPE_CHECKING:
    import numpy

    from ..docs import Document

T = TypeVar("T")


class PendingOffsets:
    """A document's tokens being encoded on the encoder thread (`Analysis.expect_offsets`); `result` waits for
    them and makes the token offsets on the thread that asks.

    The encoder thread does nothing but encode: every moment it holds the GIL between two encodes, a short encode
    on the chunking thread (which releases the GIL too) waits to get it back. Making each document's offsets there
    instead cost the chunking thread 5-8 times more in those short encodes (cProfile of `chunk_documents` on the
    Rust book: 0.12-0.18 s against 0.025 s).
    """

    __slots__ = ("_name", "_text", "_tokens")

    def __init__(self, name: str, text: str, tokens: "Future[numpy.ndarray]") -> None:
        self._name = name
        self._text = text
        self._tokens = tokens

    def result(self) -> "array[int]":
        return token_offsets(self._name, self._text, self._tokens.result())


class _Encoder:
    """One daemon thread that runs the jobs it is given in submission order."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], object], Future]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[], T]) -> "Future[T]":
        """Run ``fn`` after the jobs already submitted; the future gets what it returns or raises."""
        future: Future[T] = Future()
        self._jobs.put((fn, future))
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="chunkscope-encoder", daemon=True)
                self._thread.start()
        return future

    def _run(self) -> None:
        while True:
            fn, future = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to whoever asks for the result
                future.set_exception(exc)


_ENCODER = _Encoder()


def prepare(docs: Iterable["Document"], name: str) -> None:
    """Start tokenizing many documents in the background, in order; their counters pick the results up.

    Returns at once. A document whose counter is asked for before its encoding is done waits for it (and, with
    ``prepare`` never called, is encoded on the spot). Only tiktoken encodings are prepared: the other tokenizers
    need no whole-document encoding.
    """
    if name not in TIKTOKEN_NAMES:
        return
    # Loaded here, on the caller's thread and once: a broken installation fails here, not inside a job.
    tiktoken_encoding(name)
    token_byte_lengths(name)
    for d in docs:
        analysis = d.analysis
        if not d.text or analysis.has_counter(name) or analysis.offsets_pending(name):
            continue
        tokens = _ENCODER.submit(partial(encode_array, name, d.text))
        analysis.expect_offsets(name, PendingOffsets(name, d.text, tokens))

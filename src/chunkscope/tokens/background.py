"""Whole-document encodings made on a background thread while a tree is chunked (`prepare`).

tiktoken releases the GIL while it encodes, so one daemon thread encodes the documents of a tree, in order, while
the calling thread scans their Markdown and chunks those already done. A document's counter takes its tokens over
when it is made (`Analysis.counter`), waiting only when they are not ready yet, and turns them into offsets itself.

Documents are encoded a group at a time, joined into one text: each encode hands the GIL back to Python once, and
a thread waiting for the GIL waits until the running one lets go of it (up to the interpreter's switch interval,
5 ms, while the chunking thread runs Python): with one call per document the encoder spent about a third of its
time waiting (96 ms busy for 63 ms of encoding, Rust book; see `GROUP_BYTES`). Documents are joined only with a separator that makes both joints clean cuts
(`chunkscope.tokens.slices.is_clean_cut`): a clean cut is a piece boundary in any text, so the group's tokens
between two joints are exactly the document's own (tests compare them with each document encoded alone).
(Two encoding threads measured no faster than one on this kind of machine, and a daemon thread never holds up the
interpreter's exit the way an executor's workers would.)
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence, TypeVar

from chunkscope.tokens.offline import TIKTOKEN_NAMES, encode_array, tiktoken_encoding, token_byte_lengths
from chunkscope.tokens.slices import is_clean_cut, token_byte_starts, token_offsets

if TYPE_CHECKING:
    from array import array

    import numpy

    from chunkscope.document.loader import Document

T = TypeVar("T")

#: About how many bytes of text one background encode takes (~2 ms of encoding). The first group is one document,
#: so chunking starts as soon as it can; after it, longer encodes leave the encoder less time waiting for the GIL.
#: Measured on the Rust book (load_docs + chunk_documents, recursive): one encode per document 101 ms; groups of
#: 16 KB 91 ms, 64 KB 86 ms, 128 KB 84 ms, 256 KB 83 ms, the whole tree at once 97 ms (nothing overlaps).
GROUP_BYTES = 128_000
#: Separators tried between two documents of a group, in order; one is used when both joints are clean cuts.
_SEPARATORS = (" \n", "x\n")


def joint(before: str, after: str) -> str | None:
    """A separator that makes a clean cut at both ends when put between ``before`` and ``after``; None when no
    separator can (``after`` starts with whitespace or ``/``, ``before`` ends with a space or a tab)."""
    for sep in _SEPARATORS:
        if is_clean_cut(before[-1] + sep[0], 1) and is_clean_cut(sep[-1] + after[0], 1):
            return sep
    return None


class _Group:
    """Documents encoded as one text; each document's tokens are cut out of the group's on the first request."""

    __slots__ = ("name", "texts", "byte_bounds", "tokens", "_split", "_lock")

    def __init__(self, name: str, texts: Sequence[str], byte_bounds: Sequence[tuple[int, int]],
                 tokens: "Future[numpy.ndarray]") -> None:
        self.name = name
        self.texts = texts
        self.byte_bounds = byte_bounds
        self.tokens = tokens
        self._split: "list[numpy.ndarray] | None" = None
        self._lock = threading.Lock()

    def tokens_of(self, i: int) -> "numpy.ndarray":
        """Document ``i``'s own tokens (an encoding of it alone, when its joints fall inside a token: they never
        do, by the clean-cut rule, but an exact answer costs one check)."""
        with self._lock:
            if self._split is None:
                self._split = self._cut(self.tokens.result())
            return self._split[i]

    def _cut(self, toks: "numpy.ndarray") -> "list[numpy.ndarray]":
        import numpy as np

        if len(self.texts) == 1:
            return [toks]
        byte_starts = token_byte_starts(self.name, toks)
        bounds = np.asarray(self.byte_bounds, dtype=np.int64)
        first = np.searchsorted(byte_starts, bounds[:, 0])
        last = np.searchsorted(byte_starts, bounds[:, 1])
        out = []
        for i, text in enumerate(self.texts):
            a, b = int(first[i]), int(last[i])
            if byte_starts[a] == bounds[i, 0] and byte_starts[b] == bounds[i, 1]:
                out.append(toks[a:b])
            else:
                out.append(encode_array(self.name, text))
        return out


class PendingOffsets:
    """A document's tokens being encoded on the encoder thread (`Analysis.expect_offsets`); `result` waits for
    them and makes the token offsets on the thread that asks.

    The encoder thread does nothing but encode: every moment it holds the GIL between two encodes, a short encode
    on the chunking thread (which releases the GIL too) waits to get it back. Making each document's offsets there
    instead cost the chunking thread 5-8 times more in those short encodes (cProfile of `chunk_documents` on the
    Rust book: 0.12-0.18 s against 0.025 s).
    """

    __slots__ = ("_group", "_index")

    def __init__(self, group: _Group, index: int) -> None:
        self._group = group
        self._index = index

    def result(self) -> "array[int]":
        group = self._group
        return token_offsets(group.name, group.texts[self._index], group.tokens_of(self._index))


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
    # numpy first: on import, OpenBLAS starts worker threads that spin for about 60 ms, on the second core the
    # encoder needs; imported here, they spin while this thread builds the encoding (~80 ms in tiktoken's
    # constructor) instead of while the tree is chunked (bench/bench_chunking.py). Then the encoding and its token
    # byte lengths, on the caller's thread and once: a broken installation fails here, not inside a job.
    import numpy  # noqa: F401 - imported for its side effect's timing, used by the jobs

    tiktoken_encoding(name)
    token_byte_lengths(name)
    for members in _groups(docs, name):
        text = "".join(sep + d.text for d, sep, _ in members)
        bounds, at = [], 0
        for _, sep, size in members:
            at += len(sep)  # the separators are ASCII: as many bytes as characters
            bounds.append((at, at + size))
            at += size
        tokens = _ENCODER.submit(partial(encode_array, name, text))
        group = _Group(name, [d.text for d, _, _ in members], bounds, tokens)
        for i, (d, _, _) in enumerate(members):
            d.analysis.expect_offsets(name, PendingOffsets(group, i))


def _groups(docs: Iterable["Document"], name: str) -> "Iterator[list[tuple[Document, str, int]]]":
    """The documents to encode, a group at a time: (document, separator before it, its size in UTF-8 bytes).

    The first group is the first document alone; then about `GROUP_BYTES` a group, a new one started where no
    separator can join two documents. Documents with nothing to encode, or encoded already, are left out, and so
    is text that is not valid Unicode (lone surrogates): its counter encodes its slices one by one.
    """
    members: list[tuple[Document, str, int]] = []
    size, limit = 0, 0
    for d in docs:
        analysis = d.analysis
        if not d.text or analysis.has_counter(name) or analysis.offsets_pending(name):
            continue
        try:
            nbytes = len(d.text.encode("utf-8"))
        except UnicodeEncodeError:
            continue
        joined = joint(members[-1][0].text, d.text) if members else None
        if members and (joined is None or size >= limit):
            yield members
            members, size, limit = [], 0, GROUP_BYTES
        sep = joined if members and joined is not None else ""  # a group's first document has none
        members.append((d, sep, nbytes))
        size += len(sep) + nbytes
    if members:
        yield members

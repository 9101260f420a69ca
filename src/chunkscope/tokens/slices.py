"""Exact token counts of any slice of a document, from one whole-document encoding.

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
ends are themselves clean cuts costs no encoding at all. `TiktokenSliceCounter.count` is therefore exact (tests
compare it with a fresh encode on generated text and on the corpus). `SliceCounter` is the generic version that
encodes every slice, `WordsSliceCounter` counts whitespace words by bisection.
"""

from __future__ import annotations

import re
import string
from array import array
from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING

from chunkscope.tokens.offline import encode_array, token_byte_lengths

if TYPE_CHECKING:
    import numpy

    from chunkscope.tokens.registry import TiktokenTokenizer, Tokenizer


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


def token_offsets(name: str, text: str, toks: "numpy.ndarray | None" = None) -> "array[int]":
    """Char offset where each token of ``text`` starts, plus ``len(text)``; a token starting inside a character
    (multi-byte characters can be split between tokens) maps to that character. ``toks``: the text's tokens,
    when already made.

    An ``array('q')``, made from numpy's result without a Python int per token (bisect and indexing work on it
    as on a list). Raises UnicodeEncodeError for text that is not valid Unicode (lone surrogates): the caller
    then counts by encoding every slice instead.
    """
    import numpy as np

    raw = text.encode("utf-8")
    if toks is None:
        toks = encode_array(name, text)
    byte_starts = token_byte_starts(name, toks)
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


def token_byte_starts(name: str, toks: "numpy.ndarray") -> "numpy.ndarray":
    """Byte offset where each of ``toks`` starts in their UTF-8 text, plus the text's byte length (int64)."""
    import numpy as np

    starts = np.empty(len(toks) + 1, dtype=np.int64)
    starts[0] = 0
    np.cumsum(token_byte_lengths(name)[toks], out=starts[1:])
    return starts

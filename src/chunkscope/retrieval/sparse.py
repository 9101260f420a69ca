"""BM25 as sparse vectors, so Qdrant itself scores keyword search (and fuses it with dense search).

A text becomes its terms: lower-cased words (letters and digits, with ``_`` inside identifiers kept, so
``read_line`` stays one term), English stop words dropped, each word stemmed by the Snowball English stemmer
(``borrowing`` → ``borrow``); identifiers and numbers (``read_line``, ``u32``) are kept whole. A term's index in the sparse vector is a stable 32-bit hash of the stem, so no
vocabulary has to be stored or shared between runs.

Documents and queries are weighted differently, which is how BM25 splits between Qdrant and us:

- a chunk's value for a term is BM25's term-frequency part, ``tf·(k1+1) / (tf + k1·(1 − b + b·len/avgdl))``
  (``len`` in terms, ``avgdl`` the mean over the collection's chunks);
- a query's value is 1 per distinct term;
- the collection's sparse vector is declared with Qdrant's IDF modifier, so Qdrant multiplies each term by its
  inverse document frequency over the collection at search time.

The dot product Qdrant computes is then the Okapi BM25 score (Robertson & Zaragoza 2009, with k1 = 1.2 and
b = 0.75, the usual defaults). Nothing is downloaded: the stemmer and the stop words ship with the package.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

K1 = 1.2
B = 0.75

#: Words too common in English prose to tell chunks apart. A short list on purpose: in technical docs words
#: such as "value", "type" or "use" carry meaning, so only function words are dropped.
STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just me more most my myself no nor not of off on once
only or other our ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves
""".split())

_WORD = re.compile(r"[^\W_]+(?:_[^\W_]+)*")
#: Bytes that end a raw token of lower-cased UTF-8 text: every ASCII byte but letters, digits and ``_``, all
#: mapped to a space. A raw token (letters, digits, ``_`` and non-ASCII characters) holds whole `_WORD` matches:
#: `_WORD` never matches across one of these bytes, so a text's words are its raw tokens' words, in order.
_SEPARATORS = bytes(c if c >= 0x80 or chr(c).isalnum() or c == 0x5F else 0x20 for c in range(256))


@dataclass(frozen=True)
class SparseVector:
    """Term indices (sorted, distinct) and their weights."""

    indices: list[int]
    values: list[float]


class Bm25Encoder:
    """Text → terms → BM25-weighted sparse vectors (see the module docstring). Keeps two memos, so a corpus's
    vocabulary is stemmed and hashed once however often its words occur (the pure-Python stemmer costs ~60 µs a
    word): word → stem, and raw token → the indices of its words' stems."""

    def __init__(self, k1: float = K1, b: float = B) -> None:
        import snowballstemmer

        self.k1 = k1
        self.b = b
        self._stemmer = snowballstemmer.stemmer("english")
        self._stems: dict[str, str] = {}
        # A raw token (see `_SEPARATORS`) → the indices of its terms: most hold one, a stop word none, "don’t"
        # two (the curly apostrophe is not ASCII, so it does not end a raw token).
        self._ids: dict[bytes, tuple[int, ...]] = {}

    def _stem(self, word: str) -> str:
        s = self._stems.get(word)
        if s is None:
            # Identifiers and numbers (read_line, u32, 2021) are names, not English words: kept whole.
            s = self._stems[word] = self._stemmer.stemWord(word) if word.isalpha() else word
        return s

    def terms(self, text: str) -> list[str]:
        """The stemmed, stop-word-free terms of ``text``, in order."""
        stems, stem = self._stems, self._stem
        return [stems[w] if w in stems else stem(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]

    def term_ids(self, text: str) -> list[int]:
        """`index_of` of each of ``text``'s `terms`, in order (what `document` and `query` weigh)."""
        # The regular expression over every chunk was most of a tree's keyword pass (~110 µs a chunk); cutting the
        # UTF-8 bytes at ASCII separators is one translate and one split in C, and only each distinct raw token
        # goes through the expression, once, in `_learn`: term extraction at 20,020 chunks went 4.1 -> 2.4 s of CPU,
        # the whole `index` 31.3 -> 28.2 s (median of 10 interleaved pairs; 29.6 -> 27.5 s on the quiet ones:
        # bench/bench_query.py --copies 28 --index-only).
        tokens = text.lower().encode("utf-8", "surrogatepass").translate(_SEPARATORS).split()
        ids = self._ids
        try:
            return list(chain.from_iterable(map(ids.__getitem__, tokens)))
        except KeyError:
            for token in set(tokens).difference(ids):
                self._learn(token)
            return list(chain.from_iterable(map(ids.__getitem__, tokens)))

    def _learn(self, token: bytes) -> None:
        """Memoise a raw token's term indices: its words as `terms` finds them, stop words dropped."""
        # Whole UTF-8 sequences: the separators are ASCII bytes, which never occur inside one.
        words = _WORD.findall(token.decode("utf-8", "surrogatepass"))
        self._ids[token] = tuple(self.index_of(self._stem(w)) for w in words if w not in STOP_WORDS)

    @staticmethod
    def index_of(term: str) -> int:
        """A stable 32-bit index for a term (CRC-32 of its UTF-8: the same in every process and version)."""
        return zlib.crc32(term.encode("utf-8"))

    def document(self, term_ids: Sequence[int], avgdl: float) -> SparseVector:
        """A chunk's sparse vector from its `term_ids`: BM25's term-frequency part per distinct term."""
        # Counted in plain Python: a chunk has a few hundred terms, too few for numpy's per-call cost to pay.
        tf = Counter(term_ids)
        idx = sorted(tf)
        norm = self.k1 * (1 - self.b + self.b * len(term_ids) / max(avgdl, 1.0))
        return SparseVector(idx, [tf[i] * (self.k1 + 1) / (tf[i] + norm) for i in idx])

    def query(self, text: str) -> SparseVector:
        """A question's sparse vector: 1 per distinct term (Qdrant's IDF modifier weighs them)."""
        idx = sorted(set(self.term_ids(text)))
        return SparseVector(idx, [1.0] * len(idx))


def average_length(lengths: Iterable[int]) -> float:
    """Mean document length in terms, rounded to a whole number: a stored point's weights depend on it, so a
    one-term change in one chunk should not rewrite every point of the collection."""
    n = total = 0
    for x in lengths:
        n += 1
        total += x
    return float(max(1, round(total / n))) if n else 1.0

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


@dataclass(frozen=True)
class SparseVector:
    """Term indices (sorted, distinct) and their weights."""

    indices: list[int]
    values: list[float]


class Bm25Encoder:
    """Text → terms → BM25-weighted sparse vectors (see the module docstring). Keeps a stem memo, so a corpus's
    vocabulary is stemmed once however often its words occur (the pure-Python stemmer costs ~60 µs a word)."""

    def __init__(self, k1: float = K1, b: float = B) -> None:
        import snowballstemmer

        self.k1 = k1
        self.b = b
        self._stemmer = snowballstemmer.stemmer("english")
        self._stems: dict[str, str] = {}

    def terms(self, text: str) -> list[str]:
        """The stemmed, stop-word-free terms of ``text``, in order."""
        out = []
        stems = self._stems
        for m in _WORD.finditer(text.lower()):
            w = m.group()
            if w in STOP_WORDS:
                continue
            s = stems.get(w)
            if s is None:
                # Identifiers and numbers (read_line, u32, 2021) are names, not English words: kept whole.
                s = stems[w] = self._stemmer.stemWord(w) if w.isalpha() else w
            out.append(s)
        return out

    @staticmethod
    def index_of(term: str) -> int:
        """A stable 32-bit index for a term (CRC-32 of its UTF-8: the same in every process and version)."""
        return zlib.crc32(term.encode("utf-8"))

    def _vector(self, weights: dict[int, float]) -> SparseVector:
        idx = sorted(weights)
        return SparseVector(idx, [weights[i] for i in idx])

    def document(self, terms: Sequence[str], avgdl: float) -> SparseVector:
        counts: Counter[int] = Counter(self.index_of(t) for t in terms)
        norm = self.k1 * (1 - self.b + self.b * len(terms) / max(avgdl, 1.0))
        return self._vector({i: tf * (self.k1 + 1) / (tf + norm) for i, tf in counts.items()})

    def query(self, text: str) -> SparseVector:
        """A question's sparse vector: 1 per distinct term (Qdrant's IDF modifier weighs them)."""
        return self._vector({self.index_of(t): 1.0 for t in self.terms(text)})


def average_length(lengths: Iterable[int]) -> float:
    """Mean document length in terms, rounded to a whole number: a stored point's weights depend on it, so a
    one-term change in one chunk should not rewrite every point of the collection."""
    n = total = 0
    for x in lengths:
        n += 1
        total += x
    return float(max(1, round(total / n))) if n else 1.0

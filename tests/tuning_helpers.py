"""Set-up shared by the tuning tests (``test_tuning``: probe and sweep; ``test_tune``: the tune search): the
bag-of-words embedders, the docs writer, the three-section window corpus (its fixture, ``window_tree``, and
``store`` are in conftest.py) and the one-verdict tree (a truncated and a heading-cut miss; also used by the app's
Pilot test, ``test_verdict_pilot``).
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import ClassVar

import numpy as np

from chunkscope.embedding.embedder import Embedder


class WordCountEmbedder(Embedder):
    """The real `Embedder` (real SQLite cache, real stats) whose ``encode`` gives a text's normalized word counts
    (plus a tiny constant component, so a text without words is not a zero vector): rankings can be worked out by
    hand, and torch is never loaded. Subclasses say which dimension a word counts in."""

    MODEL_ID = "test-word-counts"  # the model id the embedding cache files its vectors under

    def __init__(self, cache_dir) -> None:
        super().__init__(cache_dir=cache_dir)
        self.model_id = self.MODEL_ID
        self.encoded: list[str] = []

    def word_dimension(self, word: str) -> int:
        raise NotImplementedError

    def encode(self, texts, *, bulk=False):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"[a-z0-9]+", t.lower()):
                out[i, self.word_dimension(w)] += 1.0
            out[i, self.dim - 1] = 1e-3
            out[i] /= np.linalg.norm(out[i])
        self.encoded.extend(texts)
        return out


class BowEmbedder(WordCountEmbedder):
    """One dimension per lowercase word (no two words share one)."""

    MODEL_ID = "test-bag-of-words"
    VOCAB: ClassVar[dict[str, int]] = {}  # shared by every instance: a word keeps its dimension

    def word_dimension(self, word: str) -> int:
        j = self.VOCAB.setdefault(word, len(self.VOCAB))
        assert j < self.dim - 1, "test vocabulary outgrew the vector"
        return j


class BagOfWords(WordCountEmbedder):
    """Each lowercase word hashed to one of 383 dimensions."""

    MODEL_ID = "test-tune-bag-of-words"

    def word_dimension(self, word: str) -> int:
        return zlib.crc32(word.encode()) % (self.dim - 1)


def write_docs(root: Path, docs: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


# Three sections of exactly two lines, and a decoy page per heading word. A bag-of-words question "lidar" scores
# a chunk 1/sqrt(its words): the section alone (8 words) 0.354, two sections (16 words) 0.25, the heading line
# alone 1.0; each decoy holds the heading word among 10 words: 0.316. (What that means for each search: the
# comments beside the tests that use it.)
WINDOW_DOCS = {
    "sensors.md": ("## Lidar\nlaser scanner times reflected pulses measuring range\n"
                   "## Cameras\nimage sensors capture colour frames through lenses\n"
                   "## Radar\nradio echoes reveal velocity via doppler shift\n"),
    "decoy-lidar.md": "lidar alpha bravo charlie delta echo foxtrot golf hotel india\n",
    "decoy-cameras.md": "cameras juliet kilo lima mike november oscar papa quebec romeo\n",
    "decoy-radar.md": "radar sierra tango uniform victor whiskey xray yankee zulu omega\n",
}


# One verdict everywhere (test_tuning with the bag of words, test_verdict_pilot with MiniLM): under `long` the
# "Deep sea" body lies past the model's cut of its section chunk (truncated); under `cut` every heading is a chunk
# of its own (heading cut off). At k = 1 each decoy page outranks the section its words name.
FILLER = " ".join(f"filler{i} words" for i in range(300))  # well past the model's 256 word pieces
VERDICT_DOCS = {
    # "Deep sea" is a level-3 heading inside "## Long": a level-2 section chunk holds its body past the cut.
    "guide.md": (f"# Guide\n\n## Long\n\n{FILLER}\n\n### Deep sea\n\nAnglerfish lure prey with light.\n\n"
                 f"## Radar\n\nRadio echoes reveal velocity via doppler shift.\n"),
    # The questions' own words alone: the first answer for each, so the sections themselves are misses at k=1.
    # (Hashed words: 600 filler words would outgrow `BowEmbedder`'s shared vocabulary.)
    "decoy-deep.md": "deep sea\n",
    "decoy-radar.md": "radar\n",
}
VERDICT_CONFIG = """[query]
k = 1

[presets.long]
strategy = "section"
level = 2
overlap_tokens = 0

[presets.cut]
strategy = "recursive"
chunk_size = 8
chunk_overlap = 0
"""

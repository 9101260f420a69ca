"""The tokenizer registry: named tokenizers with exact counts, each making the slice counter of a document.

``cl100k_base`` (the default; text-embedding-3-small's) and ``o200k_base`` are tiktoken encodings built offline
(`chunkscope.tokens.offline`); ``words`` counts whitespace words, as seed 001 does; ``all-MiniLM-L6-v2`` (bundled
with chunkscope) or ``hf:<model dir>`` is an embedding model's own word pieces, read with the ``tokenizers``
library so counting never imports torch.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from chunkscope.paths import (BUNDLED_TOKENIZER_DIR, DEFAULT_EMBED_MODEL, TokenizerError, is_default_model,
                     model_max_seq_length, resolve_model_dir)
from chunkscope.tokens.offline import TIKTOKEN_NAMES, tiktoken_encoding
from chunkscope.tokens.slices import SliceCounter, TiktokenSliceCounter, WordsSliceCounter

if TYPE_CHECKING:
    from chunkscope.document.loader import Document
    from chunkscope.tokens.background import PendingOffsets

DEFAULT_TOKENIZER = "cl100k_base"
#: The names `get_tokenizer` accepts besides ``hf:<path>``.
TOKENIZER_NAMES = (*TIKTOKEN_NAMES, "words", DEFAULT_EMBED_MODEL)


class Tokenizer(Protocol):
    """What chunkscope asks of a tokenizer: a name, a count, and a slice counter per document."""

    name: str

    def count(self, text: str) -> int: ...

    def counter(self, doc: "Document") -> SliceCounter:
        """The document's slice counter in this tokenizer, made once (`Analysis.counter`)."""
        ...

    def new_counter(self, text: str, offsets: "PendingOffsets | None" = None) -> SliceCounter:
        """A slice counter over ``text``; ``offsets``: its token offsets being made in the background, if any."""
        ...


class TiktokenTokenizer:
    """A tiktoken encoding; special-token text counts as ordinary text (documents are data, not prompts)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.encoding = tiktoken_encoding(name)
        #: Token counts of short slice edges, by their text (`TiktokenSliceCounter`), shared by all documents.
        self.edge_cache: dict[str, int] = {}

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode_ordinary(text)

    def counter(self, doc: "Document") -> SliceCounter:
        return doc.analysis.counter(self)

    def new_counter(self, text: str, offsets: "PendingOffsets | None" = None) -> SliceCounter:
        starts = None
        if offsets is not None:
            try:
                starts = offsets.result()  # waits while the background encoding runs
            except Exception:  # noqa: BLE001 - made again below, where a real problem surfaces
                starts = None
        try:
            return TiktokenSliceCounter(self, text, starts)
        except UnicodeEncodeError:  # lone surrogates (text from the API): count by encoding each slice
            return SliceCounter(self, text)


class WordsTokenizer:
    """Whitespace-separated words, the unit seed 001 sizes chunks in."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())

    def counter(self, doc: "Document") -> SliceCounter:
        return doc.analysis.counter(self)

    def new_counter(self, text: str, offsets: "PendingOffsets | None" = None) -> SliceCounter:
        return WordsSliceCounter(self, text)


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
        return doc.analysis.counter(self)

    def new_counter(self, text: str, offsets: "PendingOffsets | None" = None) -> SliceCounter:
        return SliceCounter(self, text)


#: One tokenizer per name and process: each holds its loaded encoding or model files and its caches.
_TOKENIZERS: dict[str, "TiktokenTokenizer | WordsTokenizer | WordPieceTokenizer"] = {}
_TOKENIZERS_LOCK = threading.Lock()


def get_tokenizer(name: str = DEFAULT_TOKENIZER) -> "TiktokenTokenizer | WordsTokenizer | WordPieceTokenizer":
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


class EndpointTokenizer:
    """What an endpoint's model (``openai:``) reads, counted in a tiktoken encoding, with its limit.

    It answers what callers ask of a word-piece embed tokenizer (``max_seq_length``, ``count_batch``,
    ``may_exceed``, ``truncation_offset``), so counting embed tokens and finding where reading stops is one code
    path for every embedder. An endpoint adds no special tokens: the count is the encoding's own.
    """

    def __init__(self, base: TiktokenTokenizer, max_tokens: int) -> None:
        self.base = base
        self.name = base.name
        self.encoding = base.encoding
        self.max_seq_length = max_tokens

    def counter(self, doc: "Document") -> SliceCounter:
        """The document's slice counter in the encoding (passage sizes in the tokens the model reads)."""
        return self.base.counter(doc)

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def count_batch(self, texts: list[str]) -> list[int]:
        return [len(t) for t in self.encoding.encode_ordinary_batch(list(texts))]

    def may_exceed(self, text: str, limit: int | None = None) -> bool:
        """False when ``text`` certainly fits: every token of a byte-level BPE holds at least one UTF-8 byte."""
        limit = self.max_seq_length if limit is None else limit
        if len(text) > limit:  # at least as many bytes as characters
            return True
        return len(text.encode("utf-8", "surrogatepass")) > limit

    def truncation_offset(self, text: str, max_tokens: int | None = None) -> int:
        """Char offset in ``text`` where the model stops reading (``len(text)`` when it reads everything)."""
        limit = self.max_seq_length if max_tokens is None else max_tokens
        tokens = self.encoding.encode_ordinary(text)
        if len(tokens) <= limit:
            return len(text)
        return self.encoding.decode_with_offsets(tokens)[1][limit]


class EmbedReader(Protocol):
    """What counting an embedder's tokens needs to know of it (an `chunkscope.embedding.spec.EmbedderSpec`, asked
    of its backend): the tokenizer that counts what it reads, and how many of those tokens it reads."""

    @property
    def text(self) -> str: ...

    @property
    def tokenizer_name(self) -> str: ...

    @property
    def max_tokens(self) -> int: ...


def embed_tokenizer(model: "str | EmbedReader" = DEFAULT_EMBED_MODEL) -> "WordPieceTokenizer | EndpointTokenizer":
    """The tokenizer that counts what an embedder reads, with its limit as ``max_seq_length``.

    ``model`` is the embedder's spec, whose backend names the tokenizer and the limit (a local model's own word
    pieces, an endpoint's tiktoken encoding), or the name of a local model: the packaged default or a model
    folder, read with its own word pieces and limit. An endpoint's model is counted through its spec only: what
    a user writes for one is read by `chunkscope.embedding.registry.parse_embedder`, a layer above this one.

    Raises:
        TokenizerError: the tokenizer cannot be loaded, or ``model`` names an endpoint instead of giving its spec.
    """
    if isinstance(model, str):
        if is_default_model(model):
            return _word_pieces(DEFAULT_EMBED_MODEL)
        prefix = model.split(":", 1)[0] if ":" in model.split("/")[0] else ""
        if len(prefix) > 1 and not Path(model).expanduser().exists():
            raise TokenizerError(f"{model!r} is not a local model: count its tokens with its embedder spec")
        return _word_pieces(f"hf:{model}")
    tok = get_tokenizer(model.tokenizer_name)
    if isinstance(tok, TiktokenTokenizer):
        return EndpointTokenizer(tok, model.max_tokens)
    if isinstance(tok, WordPieceTokenizer):
        return tok
    raise TokenizerError(f"{model.text}: {model.tokenizer_name} does not count an embedding model's tokens")


def _word_pieces(name: str) -> WordPieceTokenizer:
    tok = get_tokenizer(name)
    assert isinstance(tok, WordPieceTokenizer)  # the default model's and hf:<dir> names make word pieces
    return tok

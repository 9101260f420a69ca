"""Named tokenizers with exact counts, and per-document token offsets for counting any slice fast.

The package in four parts: `registry` (the named tokenizers and `get_tokenizer`), `offline` (tiktoken's encodings
built from local rank files), `slices` (exact counts of any slice from one whole-document encoding) and
`background` (`prepare`: a tree's documents encoded on a background thread while it is chunked). What callers need
is exported here; model folders and the cache folder are `chunkscope.paths`'.
"""

from __future__ import annotations

from chunkscope.paths import DEFAULT_EMBED_MODEL, TokenizerError
from chunkscope.tokens.background import prepare
from chunkscope.tokens.offline import TIKTOKEN_NAMES, encode_array, populate_tiktoken_cache, tiktoken_constructor_args, tiktoken_encoding
from chunkscope.tokens.registry import (
    DEFAULT_TOKENIZER,
    TOKENIZER_NAMES,
    TiktokenTokenizer,
    Tokenizer,
    WordPieceTokenizer,
    WordsTokenizer,
    embed_tokenizer,
    get_tokenizer,
)
from chunkscope.tokens.slices import SliceCounter, TiktokenSliceCounter, WordsSliceCounter, is_clean_cut, token_offsets

__all__ = [
    "DEFAULT_EMBED_MODEL", "DEFAULT_TOKENIZER", "TIKTOKEN_NAMES", "TOKENIZER_NAMES", "SliceCounter",
    "TiktokenSliceCounter", "TiktokenTokenizer", "Tokenizer", "TokenizerError", "WordPieceTokenizer",
    "WordsSliceCounter", "WordsTokenizer", "embed_tokenizer", "encode_array", "get_tokenizer", "is_clean_cut",
    "populate_tiktoken_cache", "prepare", "tiktoken_constructor_args", "tiktoken_encoding", "token_offsets",
]

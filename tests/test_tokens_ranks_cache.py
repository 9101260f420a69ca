"""The copy of tiktoken's loaded ranks kept in the cache folder: exact, and a damaged copy is only a miss."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

import pytest

from chunkscope.tokens import offline

NAME = "cl100k_base"
#: Text the encodings built from each source must cut alike: prose, code, non-ASCII, special-token text.
SAMPLE = ("Installing Rust: `curl --proto '=https' https://sh.rustup.rs | sh` — θ₁ = Größe 日本語 😀\n\n"
          "fn main() {\n    println!(\"Hello, world!\");\n}\n<|endoftext|> it's 1234567 HTTPServer\r\n" * 5)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh cache folder, read afresh."""
    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path))
    offline._ranks.cache_clear()  # noqa: SLF001 - read again, from this test's cache folder
    yield tmp_path
    offline._ranks.cache_clear()  # noqa: SLF001 - the next test reads its own cache folder's


@pytest.fixture
def loader_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call of tiktoken's loader from here on (it still runs)."""
    import tiktoken.load

    calls: list[str] = []
    real = tiktoken.load.load_tiktoken_bpe

    def counted(path: str, expected_hash: str | None = None) -> dict[bytes, int]:
        calls.append(path)
        return real(path, expected_hash)

    monkeypatch.setattr(tiktoken.load, "load_tiktoken_bpe", counted)
    return calls


def _loaders_own() -> dict[bytes, int]:
    from tiktoken.load import load_tiktoken_bpe

    return load_tiktoken_bpe(str(offline._rank_file(NAME)), expected_hash=offline._SPECS[NAME].sha256)  # noqa: SLF001


def _ranks_afresh() -> dict[bytes, int]:
    """The ranks as a new process reads them."""
    offline._ranks.cache_clear()  # noqa: SLF001
    return offline._ranks(NAME)  # noqa: SLF001


def _copies(cache: Path) -> list[Path]:
    return sorted((cache / "tiktoken").glob(f"{NAME}-*.ranks"))


def _encodes_alike(ranks: dict[bytes, int]) -> None:
    import tiktoken

    args = offline.tiktoken_constructor_args(NAME)
    theirs = tiktoken.Encoding(**{**args, "mergeable_ranks": _loaders_own()})
    ours = tiktoken.Encoding(**{**args, "mergeable_ranks": ranks})
    assert ours.encode_ordinary(SAMPLE) == theirs.encode_ordinary(SAMPLE)


def test_the_loaders_result_is_kept_and_read_back_instead_of_parsing_again(cache: Path,
                                                                          loader_calls: list[str]) -> None:
    first = _ranks_afresh()
    assert len(loader_calls) == 1
    (copy,) = _copies(cache)
    # Named by what the ranks depend on: the rank file's expected hash and tiktoken's version.
    import tiktoken

    assert offline._SPECS[NAME].sha256 in copy.name and tiktoken.__version__ in copy.name  # noqa: SLF001
    again = _ranks_afresh()
    assert len(loader_calls) == 1  # the kept copy, not the loader
    assert again == first == _loaders_own()
    assert list(again.items()) == list(first.items())  # the same order too (the constructor sees the dict as is)
    _encodes_alike(again)


def _truncated(blob: bytes) -> bytes:
    return blob[: len(blob) // 2]


def _digest_changed(blob: bytes) -> bytes:
    head = blob.index(b"\n", blob.index(b"\n") + 1) + 1  # magic line, key line, then the digest
    return blob[:head] + bytes([blob[head] ^ 0xFF]) + blob[head + 1:]


def _one_rank_changed(blob: bytes) -> bytes:
    return blob[:-1] + bytes([blob[-1] ^ 0x01])  # the data no longer matches its digest


def _garbage(blob: bytes) -> bytes:
    return b"\x00\xff garbage \x81" * 1000


def _not_marshal_data(blob: bytes) -> bytes:
    """A well-formed copy (right header, right digest) whose data marshal cannot read."""
    import hashlib

    head = blob.index(b"\n", blob.index(b"\n") + 1) + 1
    data = b"\xff\xfe not marshal"
    return blob[:head] + hashlib.sha256(data).digest() + data


def _other_tiktoken_version(blob: bytes) -> bytes:
    import tiktoken

    return blob.replace(f"tiktoken{tiktoken.__version__}".encode(), b"tiktoken0.0.1", 1)


def _empty(blob: bytes) -> bytes:
    return b""


@pytest.mark.parametrize("damage", [_truncated, _digest_changed, _one_rank_changed, _garbage, _not_marshal_data,
                                    _other_tiktoken_version, _empty])
def test_a_damaged_copy_is_a_miss_the_loader_runs_again_and_rewrites_it(cache: Path, loader_calls: list[str],
                                                                         damage: Callable[[bytes], bytes]) -> None:
    _ranks_afresh()
    (copy,) = _copies(cache)
    intact = copy.read_bytes()
    copy.write_bytes(damage(intact))
    loader_calls.clear()
    ranks = _ranks_afresh()
    assert len(loader_calls) == 1  # the damaged copy was not used
    assert ranks == _loaders_own()
    _encodes_alike(ranks)
    assert copy.read_bytes() == intact  # written anew, whole
    assert [p.name for p in (cache / "tiktoken").iterdir() if p.name.endswith(".tmp")] == []


def test_a_copy_that_cannot_be_written_is_done_without(cache: Path, loader_calls: list[str]) -> None:
    """A cache folder where the copy cannot be written (here its name is taken by a folder): the loader's ranks,
    no error, nothing left behind; once the way is clear, the copy is written."""
    _ranks_afresh()
    (copy,) = _copies(cache)
    copy.unlink()
    copy.mkdir()
    loader_calls.clear()
    ranks = _ranks_afresh()
    assert len(loader_calls) == 1
    assert copy.is_dir() and [p.name for p in (cache / "tiktoken").iterdir() if p.name.endswith(".tmp")] == []
    copy.rmdir()
    _ranks_afresh()
    assert copy.is_file() and len(loader_calls) == 2
    kept = _ranks_afresh()
    assert len(loader_calls) == 2
    assert ranks == kept == _loaders_own()


def test_read_ranks_wants_the_key_it_was_written_for(tmp_path: Path) -> None:
    from chunkscope.tokens import ranks_cache

    ranks = {b"a": 0, b"b": 1, b"ab": 2}
    path = ranks_cache.copy_path(tmp_path, "k1")
    ranks_cache.write_ranks(path, "k1", ranks)
    assert ranks_cache.read_ranks(path, "k1") == ranks
    assert ranks_cache.read_ranks(path, "k2") is None
    assert ranks_cache.read_ranks(tmp_path / "missing.ranks", "k1") is None


_PLAIN_COUNT = r"""
import sys
from chunkscope.tokens import get_tokenizer
assert get_tokenizer("cl100k_base").count("hello world") == 2
print("numpy" in sys.modules)
"""


def test_a_plain_count_does_not_import_numpy() -> None:
    """Only token offsets need the token byte lengths (and numpy): a count of a string needs neither."""
    out = subprocess.run([sys.executable, "-c", _PLAIN_COUNT], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]


_NUMPY_BEFORE_THE_ENCODING = r"""
import sys
from chunkscope.chunking.drivers import chunk_documents
from chunkscope.chunking.registry import get_strategy
from chunkscope.document.loader import Document
from chunkscope.tokens import offline

seen = []
ranks = offline._ranks

def watched(name):
    seen.append("numpy" in sys.modules)
    return ranks(name)

offline._ranks = watched
assert "numpy" not in sys.modules
chunk_documents([Document.from_text("# A\n\nSome text.\n")], get_strategy("recursive"))
print(len(seen) > 0 and all(seen))  # the encoding's ranks, then the token lengths'
"""


def test_chunking_imports_numpy_before_it_builds_the_encoding() -> None:
    """OpenBLAS's threads spin for a while after numpy's import: chunking imports numpy before the encoding is
    built, so they spin during that build rather than beside the background encoder (bench/bench_chunking.py)."""
    out = subprocess.run([sys.executable, "-c", _NUMPY_BEFORE_THE_ENCODING], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True"]

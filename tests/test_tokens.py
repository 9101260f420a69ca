"""Tokenizers: offline tiktoken, exact slice counts, words, the embedder's word pieces."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from chunkscope.docs import decode_document
from chunkscope.tokens import (
    TiktokenSliceCounter,
    TokenizerError,
    embed_tokenizer,
    get_tokenizer,
    is_clean_cut,
    tiktoken_encoding,
)

PIECES = ["word", " ", "  ", "\n", "\n\n", "\r\n", ".", ". ", "’", "“quoted”", "θ₁", "Größe", "日本語", "😀", "```",
          "# ", "1234567", "fn main() {", "}", "\t", "'s", "'ll", "x.y", "—", "a", "The", " the", "123.45",
          # The clean-cut rules' edges: line breaks before slashes, apostrophes after words, case changes (o200k
          # splits there), punctuation runs that swallow line breaks, marks, non-ASCII digits and letters.
          "/", "//", "\n/", ".\n", ":\n\n", "don't", "it's", "camelCase", "HTTPServer", ")", "(", "_", "a/b", "\r",
          "é", "e\u0301", "٣", "Ⅻ", "\u00a0", "\x0b", "x=1;", "?!", "...", "`code`", "**bold**", "-", "42"]
texts = st.lists(st.sampled_from(PIECES), max_size=120).map("".join)


def test_encodings_build_offline_through_tiktoken_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*a, **k):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    tiktoken_encoding.cache_clear()
    for name in ("cl100k_base", "o200k_base"):
        enc = tiktoken_encoding(name)
        assert enc.name == name
    # Known counts, so a wrong rank file or pattern cannot pass.
    assert tiktoken_encoding("cl100k_base").encode_ordinary("hello world") == [15339, 1917]
    assert len(tiktoken_encoding("o200k_base").encode_ordinary("hello world")) == 2


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@given(text=texts, data=st.data())
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_slice_count_is_exact(name: str, text: str, data: st.DataObject) -> None:
    doc, _ = decode_document(text.encode(), "x.md")
    tok = get_tokenizer(name)
    c = tok.counter(doc)
    assert isinstance(c, TiktokenSliceCounter)
    for _ in range(8):
        a = data.draw(st.integers(0, len(text)))
        b = data.draw(st.integers(a, len(text)))
        assert c.count(a, b) == len(tok.encoding.encode_ordinary(text[a:b])), (a, b)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@given(text=texts, data=st.data())
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_piece_counts_are_exact(name: str, text: str, data: st.DataObject) -> None:
    """The splitters' bulk count (`count` inlined over contiguous pieces) against a fresh encode of each piece."""
    doc, _ = decode_document(text.encode(), "x.md")
    tok = get_tokenizer(name)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12))
    bounds = sorted({0, len(text), *cuts})
    got = tok.counter(doc).piece_counts(bounds)
    want = [len(tok.encoding.encode_ordinary(text[a:b])) for a, b in zip(bounds, bounds[1:])]
    assert got == want, bounds


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@given(text=texts)
@settings(max_examples=400, deadline=None)
def test_clean_cuts_split_every_text_without_changing_its_tokens(name: str, text: str) -> None:
    """The rules behind exact slice counts: at a clean cut, encoding the halves apart gives the same tokens."""
    enc = get_tokenizer(name).encoding
    whole = enc.encode_ordinary(text)
    for p in range(1, len(text)):
        if is_clean_cut(text, p):
            assert enc.encode_ordinary(text[:p]) + enc.encode_ordinary(text[p:]) == whole, (p, text[p - 3:p + 3])


@given(text=texts, data=st.data())
@settings(max_examples=200, deadline=None)
def test_end_within_is_the_largest_fitting_end(text: str, data: st.DataObject) -> None:
    doc, _ = decode_document(text.encode(), "x.md")
    tok = get_tokenizer("cl100k_base")
    c = tok.counter(doc)
    a = data.draw(st.integers(0, len(text)))
    budget = data.draw(st.integers(0, 40))
    e = c.end_within(a, budget)
    assert a <= e <= len(text)
    assert tok.count(text[a:e]) <= budget
    if e < len(text):
        # One more character would not fit (counts are not monotone in general; check the next char only).
        assert tok.count(text[a:e + 1]) > budget or tok.count(text[a:e + 2]) > budget or e + 2 > len(text)


def test_corpus_slices_exact(corpus) -> None:
    import random

    from chunkscope.docs import load_docs

    tree = load_docs(corpus)
    tok = get_tokenizer("cl100k_base")
    rng = random.Random(7)
    for d in tree.documents:
        c = tok.counter(d)
        for _ in range(40):
            a = rng.randrange(len(d.text))
            b = min(len(d.text), a + rng.choice([10, 80, 600, 4000]))
            assert c.count(a, b) == tok.count(d.text[a:b]), (d.path, a, b)
        # The bulk count over the document's paragraphs, as the recursive splitter asks for it.
        bounds = sorted({0, len(d.text), *(i for i in range(len(d.text)) if d.text.startswith("\n\n", i))})
        assert c.piece_counts(bounds) == [tok.count(d.text[a:b]) for a, b in zip(bounds, bounds[1:])], d.path


def test_words_and_wordpieces() -> None:
    assert get_tokenizer("words").count("  two words\n") == 2
    wp = embed_tokenizer()
    assert wp.max_seq_length == 256
    assert wp.count("hello world") == 4  # [CLS] hello world [SEP]
    long = "word " * 400
    cut = wp.truncation_offset(long)
    assert 0 < cut < len(long)
    assert wp.count(long[:cut]) <= 256 < wp.count(long[:cut + 10])
    assert wp.truncation_offset("short") == len("short")


def test_unknown_tokenizer_is_one_clear_error() -> None:
    with pytest.raises(TokenizerError, match="unknown tokenizer"):
        get_tokenizer("gpt-17")
    with pytest.raises(TokenizerError, match="cannot be downloaded"):
        embed_tokenizer("some-org/some-model-that-is-not-here")


def test_core_imports_no_ui_or_torch() -> None:
    code = (
        "import sys, chunkscope, chunkscope.docs, chunkscope.structure, chunkscope.tokens, chunkscope.chunk, "
        "chunkscope.config\n"
        "import importlib\n"
        "for m in ('chunkscope.lint','chunkscope.embed','chunkscope.store','chunkscope.retrieval','chunkscope.evaluate'):\n"
        "    try: importlib.import_module(m)\n"
        "    except ModuleNotFoundError as e:\n"
        "        if e.name != m: raise\n"
        "from chunkscope.chunk import strategy_names, strategy_class\n"
        "for n in strategy_names():\n"
        "    try: strategy_class(n)\n"
        "    except ModuleNotFoundError: pass\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual','rich','torch','sentence_transformers'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_import_contract_holds() -> None:
    from pathlib import Path

    lint_imports = Path(sys.executable).parent / "lint-imports"
    # A hard test dependency (the `test` extra): a missing tool must fail here, never skip the contract quietly.
    assert lint_imports.exists(), "import-linter is not installed: pip install -e '.[test]'"
    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run([str(lint_imports)], cwd=repo, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


@given(parts=st.lists(texts, min_size=1, max_size=6))
@settings(max_examples=150, deadline=None)
def test_prepared_batches_give_each_document_its_own_tokens(parts: list[str]) -> None:
    """`prepare` encodes documents joined at clean cuts: each one's offsets must equal its own encoding's."""
    from chunkscope.tokens import prepare, token_offsets

    docs = [decode_document(p.encode(), f"d{i}.md")[0] for i, p in enumerate(parts)]
    prepare(docs, "cl100k_base")
    tok = get_tokenizer("cl100k_base")
    for d in docs:
        c = tok.counter(d)
        assert list(c.starts) == list(token_offsets("cl100k_base", d.text))
        if d.text:
            assert c.count(0, len(d.text)) == len(tok.encoding.encode_ordinary(d.text))


def test_prepared_corpus_offsets_match_fresh_encodes(corpus) -> None:
    from chunkscope.docs import load_docs
    from chunkscope.tokens import prepare, token_offsets

    docs = load_docs(corpus).documents
    prepare(docs, "o200k_base")
    tok = get_tokenizer("o200k_base")
    for d in docs:
        assert list(tok.counter(d).starts) == list(token_offsets("o200k_base", d.text)), d.path


_NUMPY_PROBE = r"""
import os, sys
seen = []

class Probe:
    # Records the environment at the moment numpy is imported (OpenBLAS reads it then), imports nothing itself.
    def find_spec(self, name, path=None, target=None):
        if name == "numpy":
            seen.append(os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
        return None

sys.meta_path.insert(0, Probe())
from chunkscope.numpy_import import numpy
np = numpy()
assert np is sys.modules["numpy"] and numpy() is np
print(seen[0], os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
"""


@pytest.mark.parametrize("user_value, expected", [(None, "4 None"), ("20", "20 20")])
def test_numpy_is_imported_with_a_short_blas_poll_and_the_environment_restored(user_value, expected) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")}
    if user_value is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = user_value  # the user's choice is never overridden
    out = subprocess.run([sys.executable, "-c", _NUMPY_PROBE], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == expected.split()


def test_quick_gil_handoff_nests_and_restores_the_switch_interval() -> None:
    from chunkscope.tokens import quick_gil_handoff

    before = sys.getswitchinterval()
    with quick_gil_handoff():
        inside = sys.getswitchinterval()
        with quick_gil_handoff():
            assert sys.getswitchinterval() == inside
        assert sys.getswitchinterval() == inside  # the inner exit leaves the outer run's interval alone
    assert inside < before
    assert sys.getswitchinterval() == before


def test_encoder_thread_makes_the_first_search_of_a_new_encoding() -> None:
    """tiktoken's regex keeps its fast path for the first thread that searches with it: that must be the thread
    that does the bulk encodes (see `tiktoken_encoding`)."""
    import threading

    from chunkscope import tokens

    seen: list[str] = []
    original = tokens._encode_buffer

    def spy(enc, text):
        seen.append(threading.current_thread().name)
        return original(enc, text)

    tokens.tiktoken_encoding.cache_clear()
    try:
        tokens._encode_buffer = spy
        tokens.tiktoken_encoding("cl100k_base")
    finally:
        tokens._encode_buffer = original
        tokens.tiktoken_encoding.cache_clear()
    assert seen == ["chunkscope-encoder"]

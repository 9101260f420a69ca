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
    tiktoken_encoding,
)

PIECES = ["word", " ", "  ", "\n", "\n\n", "\r\n", ".", ". ", "’", "“quoted”", "θ₁", "Größe", "日本語", "😀", "```",
          "# ", "1234567", "fn main() {", "}", "\t", "'s", "'ll", "x.y", "—", "a", "The", " the", "123.45"]
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
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_slice_count_is_exact(name: str, text: str, data: st.DataObject) -> None:
    doc, _ = decode_document(text.encode(), "x.md")
    tok = get_tokenizer(name)
    c = tok.counter(doc)
    assert isinstance(c, TiktokenSliceCounter)
    for _ in range(5):
        a = data.draw(st.integers(0, len(text)))
        b = data.draw(st.integers(a, len(text)))
        assert c.count(a, b) == len(tok.encoding.encode_ordinary(text[a:b]))


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
    if not lint_imports.exists():
        pytest.skip("import-linter is not installed")
    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run([str(lint_imports)], cwd=repo, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr

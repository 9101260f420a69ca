"""Tokenizers: offline tiktoken, exact slice counts, words, the embedder's word pieces."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from chunkscope.document.loader import decode_document
from chunkscope.tokens import offline
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
    offline.tiktoken_encoding.cache_clear()  # built again, here, under the watch
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

    from chunkscope.document.loader import load_docs

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


@given(parts=st.lists(texts, min_size=1, max_size=6))
@settings(max_examples=150, deadline=None)
def test_prepared_documents_get_their_own_tokens(parts: list[str]) -> None:
    """`prepare` encodes documents on the encoder thread: each one's offsets must equal its own encoding's."""
    from chunkscope.tokens import prepare, token_offsets

    docs = [decode_document(p.encode(), f"d{i}.md")[0] for i, p in enumerate(parts)]
    prepare(docs, "cl100k_base")
    tok = get_tokenizer("cl100k_base")
    for d in docs:
        assert d.analysis.offsets_pending("cl100k_base") == bool(d.text)  # nothing to encode in an empty one
        c = tok.counter(d)
        assert not d.analysis.offsets_pending("cl100k_base")  # the counter took the offsets over
        assert list(c.starts) == list(token_offsets("cl100k_base", d.text))
        if d.text:
            assert c.count(0, len(d.text)) == len(tok.encoding.encode_ordinary(d.text))


@given(parts=st.lists(texts.filter(bool), min_size=2, max_size=8), name=st.sampled_from(["cl100k_base", "o200k_base"]))
@settings(max_examples=300, deadline=None)
def test_documents_encoded_as_one_group_get_exactly_their_own_tokens(parts: list[str], name: str) -> None:
    """`prepare` encodes documents joined into groups: every document's share of its group's tokens must be
    what encoding it alone gives, whatever its first and last characters (the joints' clean cuts)."""
    from chunkscope.document.loader import Document
    from chunkscope.tokens.background import GROUP_BYTES, prepare

    docs = [Document.from_text(p, path=f"d{i}.md") for i, p in enumerate(parts)]
    assert sum(len(d.text.encode()) for d in docs) < GROUP_BYTES  # one document, then one group of all the rest
    prepare(docs, name)
    enc = tiktoken_encoding(name)
    for d in docs:
        pending = d.analysis._pending[name]  # noqa: SLF001 - the group's share, before a counter takes it over
        own = pending._group.tokens_of(pending._index)  # noqa: SLF001
        assert own.tolist() == enc.encode_ordinary(d.text), repr(d.text)


def test_joints_are_clean_cuts_or_none() -> None:
    from chunkscope.tokens.background import joint

    assert joint("text\n", "# Next") == "x\n" and joint("text.", "Next") == " \n"
    assert joint("text\n", " indented") is None and joint("text\n", "/path") is None  # no clean cut before them
    assert joint("text \t", "Next") is None  # trailing blanks run on into any separator
    for before, after in [("a\r\n", "b"), ("}", "{"), ("日本語", "😀"), ("x\n", "'s")]:
        sep = joint(before, after)
        assert sep is not None
        joined = before + sep + after
        assert is_clean_cut(joined, len(before)) and is_clean_cut(joined, len(before) + len(sep))


def test_a_group_whose_joint_falls_inside_a_token_encodes_those_documents_alone() -> None:
    """The safety net behind the clean-cut rule: a document whose bounds are not token starts in its group's
    encoding is encoded on its own (here the group is joined with no separator at all, "hel" + "lo")."""
    from concurrent.futures import Future

    from chunkscope.tokens.background import _Group
    from chunkscope.tokens.offline import encode_array

    tokens: Future = Future()
    tokens.set_result(encode_array("cl100k_base", "hello"))
    assert len(tokens.result()) == 1  # one token across the joint
    group = _Group("cl100k_base", ["hel", "lo"], [(0, 3), (3, 5)], tokens)
    enc = tiktoken_encoding("cl100k_base")
    assert [group.tokens_of(i).tolist() for i in range(2)] == [enc.encode_ordinary("hel"), enc.encode_ordinary("lo")]


def test_prepared_corpus_offsets_match_fresh_encodes(corpus) -> None:
    from chunkscope.document.loader import load_docs
    from chunkscope.tokens import prepare, token_offsets

    docs = load_docs(corpus).documents
    prepare(docs, "o200k_base")
    tok = get_tokenizer("o200k_base")
    for d in docs:
        assert list(tok.counter(d).starts) == list(token_offsets("o200k_base", d.text)), d.path


# --- tiktoken through its public API only -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_offline_encodings_are_tiktokens_own(name: str, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The oracle: tiktoken's own constructor for the encoding, fed the same rank file through tiktoken's cache,
    gives the pattern, special tokens and ranks chunkscope builds the encoding from: both from tiktoken's loader
    (a fresh cache folder) and from the copy of its result kept there (every later process)."""
    import random

    import tiktoken
    import tiktoken.load
    import tiktoken_ext.openai_public as public

    from chunkscope.tokens import populate_tiktoken_cache, tiktoken_constructor_args

    def no_network(*a, **k):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    populate_tiktoken_cache(tmp_path / "tiktoken-cache")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken-cache"))
    theirs = public.ENCODING_CONSTRUCTORS[name]()
    their_encoding = tiktoken.Encoding(**theirs)
    rng = random.Random(name)
    samples = ["".join(rng.choice(PIECES) for _ in range(rng.randrange(200))) for _ in range(50)]
    samples.append("".join(chr(rng.randrange(32, 0x3000)) for _ in range(4000)))

    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "ours"))
    for source in ("loader", "kept copy"):
        offline._ranks.cache_clear()  # noqa: SLF001 - read again, from the source under test
        ours = tiktoken_constructor_args(name)
        assert ours["pat_str"] == theirs["pat_str"], source
        assert ours["special_tokens"] == theirs["special_tokens"], source
        assert ours["mergeable_ranks"] == theirs["mergeable_ranks"], source
        our_encoding = tiktoken.Encoding(**ours)
        for text in samples:
            assert our_encoding.encode_ordinary(text) == their_encoding.encode_ordinary(text), source
        if source == "loader":  # the loader ran and its result was kept; from now on the loader must not run
            assert len(list((tmp_path / "ours").glob(f"tiktoken/{name}-*.ranks"))) == 1

            def no_loader(*a, **k):
                raise AssertionError("tiktoken's loader ran although an intact copy of its result is kept")

            monkeypatch.setattr(tiktoken.load, "load_tiktoken_bpe", no_loader)
    offline._ranks.cache_clear()  # noqa: SLF001 - the next test reads its own cache folder's


def test_encodings_are_built_without_touching_tiktoken_ext(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another library's module is never patched, not even for a moment (a host application using tiktoken in
    another thread would see the patch)."""
    import types

    import tiktoken_ext.openai_public as public

    from chunkscope import tokens

    writes: list[str] = []

    class Watched(types.ModuleType):
        def __setattr__(self, name: str, value: object) -> None:
            writes.append(name)
            super().__setattr__(name, value)

    monkeypatch.setattr(public, "__class__", Watched)
    writes.clear()  # monkeypatch's own assignment went through the watch
    offline.tiktoken_encoding.cache_clear()
    try:
        for name in ("cl100k_base", "o200k_base"):
            tokens.tiktoken_encoding(name)
    finally:
        offline.tiktoken_encoding.cache_clear()
    assert writes == []


# --- no process-wide state ---------------------------------------------------------------------------------------


def test_chunking_leaves_the_switch_interval_alone() -> None:
    """A host application calling chunkscope must find the interpreter as it left it, during the call too."""
    from chunkscope.chunking.drivers import chunk_documents
    from chunkscope.chunking.registry import get_strategy

    seen: list[float] = []

    class Spy(type(get_strategy("recursive"))):
        def spans(self, doc):
            seen.append(sys.getswitchinterval())
            return super().spans(doc)

    before = sys.getswitchinterval()
    docs = [decode_document(f"# Part {i}\n\nSome words about part {i}.\n".encode(), f"p{i}.md")[0] for i in range(3)]
    results = chunk_documents(docs, Spy())
    assert all(r.chunks for r in results)
    assert seen == [before] * 3
    assert sys.getswitchinterval() == before


_ENV_AT_NUMPY_IMPORT = r"""
import os, sys
seen = []

class Probe:
    # Records the environment at the moment numpy is imported (OpenBLAS reads it then), imports nothing itself.
    def find_spec(self, name, path=None, target=None):
        if name == "numpy":
            seen.append(os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
        return None

sys.meta_path.insert(0, Probe())
from chunkscope.chunking.drivers import chunk_documents
from chunkscope.chunking.registry import get_strategy
from chunkscope.document.loader import Document
assert "numpy" not in sys.modules
chunk_documents([Document.from_text("# A\n\nSome text.\n")], get_strategy("recursive"))
assert "numpy" in sys.modules, "the probe must see numpy's import"
print(seen[0])
"""


def test_numpy_is_imported_with_the_environment_as_the_user_left_it() -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")}
    out = subprocess.run([sys.executable, "-c", _ENV_AT_NUMPY_IMPORT], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["None"]


def test_a_tree_with_a_lone_surrogate_document_chunks_every_document_exactly() -> None:
    """Text from the library API may hold lone surrogates (not encodable as UTF-8): `prepare` leaves that
    document out of its groups, its counter encodes slices one by one, and its neighbours are grouped as usual."""
    from chunkscope.chunking.drivers import chunk_documents
    from chunkscope.chunking.registry import get_strategy
    from chunkscope.document.loader import Document

    texts = ["# One\n\nFirst document.\n", "# Two\n\nBroken \ud800 text here.\n", "# Three\n\nThird document.\n"]
    docs = [Document.from_text(t, path=f"d{i}.md") for i, t in enumerate(texts)]
    enc = tiktoken_encoding("cl100k_base")
    results = chunk_documents(docs, get_strategy("recursive", chunk_size=8, chunk_overlap=0))
    assert [r.error for r in results] == [None, None, None]
    for r, text in zip(results, texts):
        assert r.chunks
        for c in r.chunks:
            assert c.text == text[c.start:c.end]
            assert c.tokens == len(enc.encode_ordinary(c.text))

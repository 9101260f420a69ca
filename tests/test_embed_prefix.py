"""``embed_prefix``: text put before a chunk for embedding only, for every strategy. The chunk stays an exact slice;
``embed_text``, the word-piece count, lint's truncation, the JSONL record and the vector cache all follow it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from chunkscope.chunking.drivers import chunk_text
from chunkscope.chunking.model import count_embed_tokens
from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import get_strategy, list_strategies
from chunkscope.cli import main
from chunkscope.document.loader import load_docs

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_docs"
FK = "module-1-foundations/02-forward-kinematics.md"

PAGE = """---
title: Ownership in Rust
---
# Ownership in Rust

Every value has one owner.

## Borrowing

Borrowing lends a value without moving it.

### Shared references

A shared reference lets many readers look at a value at once.

## Moves

Assigning a value moves it to its new owner.
"""


def _by_text(chunks):
    return {c.text.split("\n", 1)[0]: c for c in chunks}


def test_every_strategy_takes_embed_prefix_declared_once():
    from chunkscope.chunking.prefix import EMBED_PREFIX
    from chunkscope.chunking.strategy import Strategy

    for cls in list_strategies():
        declared = [p for p in cls.parameters if p.name == "embed_prefix"]
        assert declared == [EMBED_PREFIX] and declared[0] is EMBED_PREFIX, cls.name
    assert Strategy.parameters == (EMBED_PREFIX,) and EMBED_PREFIX.default == "none"


@pytest.mark.parametrize("name", ["section", "section-sentence", "header-window", "content-type", "recursive", "fixed"])
def test_a_prefix_changes_what_is_embedded_never_the_chunk(name):
    plain = chunk_text(PAGE, name, path="ch04-ownership.md")
    prefixed = chunk_text(PAGE, name, path="ch04-ownership.md", embed_prefix="breadcrumb")
    assert [(c.start, c.end, c.text) for c in prefixed] == [(c.start, c.end, c.text) for c in plain]
    for c in prefixed:
        assert c.text == PAGE[c.start:c.end]
        assert c.embed_text.endswith("\n\n" + c.text) and c.embed_text.startswith("Ownership in Rust")
    assert all(c.embed_text == c.text for c in plain)


def test_named_prefixes():
    section = _by_text(chunk_text(PAGE, "section", path="ch04-ownership.md", overlap_tokens=0, embed_prefix="heading"))
    assert section["## Borrowing"].embed_text == "Ownership in Rust › Borrowing\n\n" + section["## Borrowing"].text
    title = _by_text(chunk_text(PAGE, "section", path="ch04-ownership.md", overlap_tokens=0, embed_prefix="title"))
    assert title["## Moves"].embed_text == "Ownership in Rust\n\n" + title["## Moves"].text
    # breadcrumb: the title, then the heading trail without the `#` heading that repeats it.
    crumbs = _by_text(chunk_text(PAGE, "section-sentence", path="ch04-ownership.md", embed_prefix="breadcrumb"))
    shared = crumbs["### Shared references"]
    assert shared.embed_text == "Ownership in Rust › Borrowing › Shared references\n\n" + shared.text
    none = chunk_text(PAGE, "section", path="ch04-ownership.md", embed_prefix="none")
    assert all(c.embed_text == c.text and c.embed_text_override is None for c in none)


def test_a_free_template_over_metadata_with_typed_line_breaks():
    chunks = chunk_text(PAGE, "section", path="ch04-ownership.md", overlap_tokens=0,
                        embed_prefix=r"[{chapter_id}] {section_title} (lines {lines})\n")
    moves = _by_text(chunks)["## Moves"]
    assert moves.embed_text == f"[ch04] Moves (lines {moves.start_line}-{moves.end_line})\n" + moves.text


def test_embed_offset_finds_the_text_after_a_prefix_that_repeats_it():
    from chunkscope.chunking.model import Chunk

    c = Chunk("a.md", 0, 10, 15, 3, 3, "Moves", 1, embed_text_override="Moves › Moves\n\nMoves")
    assert c.embed_offset == len("Moves › Moves\n\n")  # not 0, where the prefix happens to say it too
    plain = chunk_text(PAGE, "section", path="ch04-ownership.md")[0]
    assert plain.embed_offset == 0
    prefixed = chunk_text(PAGE, "section", path="ch04-ownership.md", embed_prefix="title")[1]
    assert prefixed.embed_text[prefixed.embed_offset:] == prefixed.text


def test_a_prefix_that_renders_empty_adds_nothing():
    text = "Just a paragraph with no heading at all.\n"
    c = chunk_text(text, "recursive", embed_prefix="{heading}\\n\\n")[0]
    assert c.embed_text == c.text and c.embed_text_override is None


@pytest.mark.parametrize("name, value, message", [
    ("recursive", "{titel}\\n", "recursive: embed_prefix '{titel}\\\\n': unknown field 'titel' (fields: title, heading"),
    # A field of another strategy's metadata is unknown here.
    ("recursive", "{section_title}", "recursive: embed_prefix '{section_title}': unknown field 'section_title'"),
    ("section", "{}", "section: embed_prefix '{}': name a field inside braces, e.g. {title} (fields: title"),
    ("fixed", "{title", "fixed: embed_prefix '{title': expected '}' before end of string"),
])
def test_a_bad_template_is_one_line_naming_the_fields(name, value, message):
    with pytest.raises(ParamError) as err:
        get_strategy(name, embed_prefix=value)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_every_declared_field_can_be_named_and_metadata_is_declared():
    docs = load_docs(SAMPLE).documents
    for cls in list_strategies():
        if cls.name == "custom":
            continue
        template = " ".join(f"{{{f}}}" for f in cls.prefix_fields())
        strategy = cls(embed_prefix=template)
        for d in docs:
            for c in strategy.chunk(d):
                # Drift guard: every metadata key a chunk carries is one a template may name.
                assert set(c.metadata) <= set(cls.prefix_fields()), (cls.name, set(c.metadata) - set(cls.prefix_fields()))


def test_embed_tokens_count_the_prefix():
    long_prefix = "Background on ownership and borrowing in the Rust language. " * 8 + "\\n\\n"
    plain = chunk_text(PAGE, "section", path="ch04-ownership.md")
    prefixed = chunk_text(PAGE, "section", path="ch04-ownership.md", embed_prefix=long_prefix)
    count_embed_tokens(plain)
    count_embed_tokens(prefixed)
    for a, b in zip(plain, prefixed):
        assert b.embed_tokens > a.embed_tokens + 60


def test_jsonl_shows_the_embed_text_only_when_a_prefix_is_set(capsys):
    assert main(["chunk", str(SAMPLE / FK), "-s", "section", "--format", "jsonl", "-p", "embed_prefix=heading"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert rows
    for r in rows:
        assert r["embed_text"] == " › ".join(r["heading_path"]) + "\n\n" + r["text"]
    assert main(["chunk", str(SAMPLE / FK), "-s", "section", "--format", "jsonl"]) == 0
    assert all(json.loads(x)["embed_text"] is None for x in capsys.readouterr().out.splitlines())


def test_a_bad_template_on_the_command_line_exits_2(capsys):
    assert main(["chunk", str(SAMPLE), "-p", "embed_prefix={nope}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown field 'nope' (fields: title, heading, heading_path" in err


def test_a_long_prefix_makes_lint_report_truncation(tmp_path, capsys):
    """Lint's embed-truncation rule reads the embed text: a prefix can push a chunk past what the model reads."""
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLE / "chunkscope.toml", docs / "chunkscope.toml")
    body = " ".join(["ownership"] * 200)  # one word piece each: about 200 of the model's 256
    (docs / "ch01-owner.md").write_text(f"# Owner\n\n## Part\n\n{body}\n", encoding="utf-8")
    base = ["lint", str(docs), "-s", "section", "--select", "embed-truncation", "--format", "json"]

    def findings(*extra: str) -> list[dict]:
        main([*base, *extra])
        out = json.loads(capsys.readouterr().out)
        rows = out["findings"] if isinstance(out, dict) else out
        return [f for f in rows if f.get("rule") == "embed-truncation"]

    assert findings() == []
    long_prefix = "embed_prefix=" + "Background on the borrow checker and lifetimes. " * 12 + "{title}\\n\\n"
    truncated = findings("-p", long_prefix)
    assert len(truncated) == 1 and truncated[0]["path"].endswith("ch01-owner.md")


# --- the vector cache is keyed by the text embedded -----------------------------------------------------------


@pytest.mark.model
def test_each_prefix_embeds_its_own_texts_and_never_reuses_anothers_vectors(tmp_path):
    import numpy as np

    from chunkscope.embedding.embedder import Embedder
    from chunkscope.retrieval.retriever import Retriever
    from chunkscope.retrieval.store import Store

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ch04-ownership.md").write_text(PAGE, encoding="utf-8")
    tree = load_docs(docs)
    embedder = Embedder(cache_dir=tmp_path / "vectors")
    store = Store(docs, path=tmp_path / "qdrant")
    try:
        plain = Retriever(tree, get_strategy("section"), embedder, store)
        first = plain.ensure_indexed()
        assert first.embedded == len(plain.chunks) and first.cached == 0
        prefixed = Retriever(tree, get_strategy("section", embed_prefix="breadcrumb"), embedder, store)
        assert prefixed.collection != plain.collection  # points of two prefixes never share a collection
        second = prefixed.ensure_indexed()
        # Same chunk texts, other embed texts: not one vector of the plain run is reused.
        assert [c.text for c in prefixed.chunks] == [c.text for c in plain.chunks]
        assert second.embedded == len(prefixed.chunks) and second.cached == 0
        # The same prefix again is all cache, and its vectors are not the plain ones.
        again = embedder.embed([c.embed_text for c in prefixed.chunks])
        assert again.stats.hits == len(prefixed.chunks) and again.stats.misses == 0
        bare = embedder.embed([c.text for c in plain.chunks]).vectors
        assert not np.allclose(again.vectors, bare)
    finally:
        store.close()
        embedder.close()

"""A document's analysis: a typed object whose parts are computed once, asked for explicitly, never shared."""

from __future__ import annotations

import dataclasses
import gc
import weakref

import pytest

from chunkscope.document import structure
from chunkscope.document.analysis import Analysis, MemoSlot
from chunkscope.chunking.registry import get_strategy
from chunkscope.document.loader import Document
from chunkscope.document.outline_scan import line_starts_of
from chunkscope.site.numbering import doc_numbering, section_numbers
from chunkscope.tokens import get_tokenizer, prepare

TEXT = ("---\ntitle: Loops\n---\n# 3.2 Loops\r\n\r\nA loop repeats. It ends.\r\n\r\n## 3.2.1 While\r\n\r\n"
        "```rust\n# not a heading\nwhile x {}\n```\n\n## For\n\n" + "Words about for loops and ranges. " * 40 + "\n")


def doc_of(text: str = TEXT, path: str = "ch03-02-loops.md") -> Document:
    return Document.from_text(text, path=path)


def test_a_document_has_a_typed_analysis_and_no_free_form_cache() -> None:
    d = doc_of()
    assert isinstance(d.analysis, Analysis)
    assert not hasattr(d, "cache")


def test_each_part_is_computed_once_and_kept() -> None:
    d = doc_of()
    assert d.outline is d.outline and d.structure is d.structure
    assert doc_numbering(d) is doc_numbering(d) is d.analysis.numbering
    assert section_numbers(d) is section_numbers(d) is d.analysis.section_numbers
    assert doc_numbering(d).chapter == 3 and doc_numbering(d).chapter_title == "Loops"
    tok = get_tokenizer("cl100k_base")
    assert tok.counter(d) is d.analysis.counter(tok) is tok.counter(d)


def test_whether_the_markdown_was_parsed_is_asked_explicitly() -> None:
    d = doc_of()
    assert not d.analysis.structure_parsed
    assert d.outline.source == "fast"  # the scan is enough here, and does not parse
    assert not d.analysis.structure_parsed
    d.structure
    assert d.analysis.structure_parsed


def test_line_numbers_need_neither_scan_nor_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_scan(*a, **k):
        raise AssertionError("the outline was scanned for a line number")

    monkeypatch.setattr(structure, "scan", no_scan)
    d = doc_of()
    assert [d.line_of(i) for i in (0, 4, len(d.text))] == [1, 2, d.text.count("\n") + 1]
    assert d.analysis.line_starts == line_starts_of(d.text)
    assert not d.analysis.structure_parsed
    # Once parsed, the parse's own table is the one (one line table per document).
    assert d.analysis.line_starts is d.structure.line_starts


def test_a_copy_gets_an_analysis_of_its_own() -> None:
    d = doc_of("# A\n\nText.\n")
    assert d.structure.headings[0].text == "A"
    copy = dataclasses.replace(d, text="# B\n\nOther text.\n")
    assert copy.analysis is not d.analysis
    assert copy.structure.headings[0].text == "B"  # never its original's parse
    assert [h.text for h in copy.outline.headings] == ["B"]


def test_memo_slots_are_told_apart_by_identity_and_made_once() -> None:
    d = doc_of()
    first, second = MemoSlot[list[int]]("same name"), MemoSlot[list[int]]("same name")
    made: list[str] = []

    def make(tag: str):
        made.append(tag)
        return [len(made)]

    a = d.analysis.memo(first, lambda: make("first"))
    assert d.analysis.memo(first, lambda: make("again")) is a
    b = d.analysis.memo(second, lambda: make("second"))
    assert a == [1] and b == [2] and made == ["first", "second"]
    assert doc_of().analysis.memo(first, list) == []  # per document


def test_a_counter_takes_over_the_offsets_prepare_started() -> None:
    d, empty = doc_of(), doc_of("")
    prepare([d, empty], "cl100k_base")
    assert d.analysis.offsets_pending("cl100k_base") and not d.analysis.has_counter("cl100k_base")
    assert not empty.analysis.offsets_pending("cl100k_base")  # nothing to encode
    tok = get_tokenizer("cl100k_base")
    c = tok.counter(d)
    assert not d.analysis.offsets_pending("cl100k_base") and d.analysis.has_counter("cl100k_base")
    assert c.count(0, len(d.text)) == tok.count(d.text)
    prepare([d], "cl100k_base")  # a document with its counter is not encoded again
    assert not d.analysis.offsets_pending("cl100k_base")


def test_every_strategy_on_one_shared_document_cuts_as_on_a_fresh_one() -> None:
    """Strategies keep memos in the same analysis (each in its own slot): none may see another's."""
    shared = doc_of()
    names = ("recursive", "fixed", "section", "section-sentence", "content-type", "header-window")
    for _ in range(2):  # the second round runs on every memo the first one left
        for name in names:
            got = [c.to_dict() for c in get_strategy(name).chunk(shared)]
            assert got == [c.to_dict() for c in get_strategy(name).chunk(doc_of())], name


def test_a_dropped_document_frees_its_analysis_at_once() -> None:
    """The analysis refers to its document weakly: no reference cycle keeps a parse and its token offsets alive
    until the next garbage collection."""
    d = doc_of()
    get_strategy("section-sentence").chunk(d)
    alive = weakref.ref(d)
    gc.disable()
    try:
        del d
        assert alive() is None
    finally:
        gc.enable()

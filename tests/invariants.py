"""Checks every strategy's chunk list must pass, shared by the strategies' tests."""

from __future__ import annotations


def assert_slices_cover_body(d, chunks) -> None:
    """Chunks are exact slices of the body: none holds a character of the front matter (metadata, never chunk
    text), and every non-whitespace character of the body lies in some chunk."""
    text = d.text
    covered = bytearray(len(text))
    for c in chunks:
        assert c.text == text[c.start:c.end]
        assert d.body_start <= c.start < c.end, \
            f"chunk {c.index} [{c.start}, {c.end}) holds front matter (the body starts at {d.body_start})"
        covered[c.start:c.end] = b"\x01" * (c.end - c.start)
    missing = [j for j in range(d.body_start, len(text)) if not covered[j] and not text[j].isspace()]
    assert not missing, f"uncovered text at {missing[:5]}: {text[missing[0]:missing[0] + 30]!r}"


def assert_trimmed_slices_cover_body(d, chunks) -> None:
    """`assert_slices_cover_body`, with the chunks whitespace-trimmed, in order (starts strictly rising, ends
    never falling) and numbered 0.. (the structure-aware strategies' form)."""
    assert_slices_cover_body(d, chunks)
    for i, c in enumerate(chunks):
        assert c.index == i
        assert c.text and c.text == c.text.strip()
        if i:
            assert c.start > chunks[i - 1].start and c.end >= chunks[i - 1].end


def assert_deterministic(make_strategy, make_doc, chunks) -> None:
    """A fresh strategy on a fresh copy of the document cuts the same chunks, with the same metadata and warnings
    (nothing depends on caches, dict order or earlier runs)."""
    again = make_strategy().chunk(make_doc())
    assert [(c.start, c.end, c.metadata, c.warnings) for c in again] == \
        [(c.start, c.end, c.metadata, c.warnings) for c in chunks]

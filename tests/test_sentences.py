"""Sentence boundaries: offsets (never strings), abbreviations, numbers, code, URLs, quotes, and coverage."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkscope.document.sentences import sentence_boundaries, sentence_spans


def split(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Dr. Smith arrived. He sat down.", ["Dr. Smith arrived.", "He sat down."]),
        ("Use a frame, e.g. The World frame. Then stop.", ["Use a frame, e.g. The World frame.", "Then stop."]),
        ("Rotations, i.e. Matrices, compose. Good.", ["Rotations, i.e. Matrices, compose.", "Good."]),
        ("Python vs. Rust is old. Move on.", ["Python vs. Rust is old.", "Move on."]),
        ("Apples, pears, etc. are fruit. Eat them.", ["Apples, pears, etc. are fruit.", "Eat them."]),
        ("See Fig. 3 for the arm. It bends.", ["See Fig. 3 for the arm.", "It bends."]),
        ("It weighs approx. 5 kg. Lift it.", ["It weighs approx. 5 kg.", "Lift it."]),
        ("Read No. 5 first. Then No. 6.", ["Read No. 5 first.", "Then No. 6."]),
        ("The gain is 3.2 here. It works.", ["The gain is 3.2 here.", "It works."]),
        ("Install v1.2.3 now. Restart.", ["Install v1.2.3 now.", "Restart."]),
        ("Wait... what happened? Nothing.", ["Wait... what happened?", "Nothing."]),
        ("It ended… Then it began.", ["It ended…", "Then it began."]),
        ("Call `a.b()` first. Then `x. Y` too. Done.", ["Call `a.b()` first.", "Then `x. Y` too.", "Done."]),
        ("Open https://example.com/a.b?x=1. Then read.", ["Open https://example.com/a.b?x=1.", "Then read."]),
        ('He said "stop." Then he left.', ['He said "stop."', "Then he left."]),
        ("It fails (often.) Retry it.", ["It fails (often.)", "Retry it."]),
        ("Is it safe? Yes! Go.", ["Is it safe?", "Yes!", "Go."]),
        ("No. That is wrong.", ["No.", "That is wrong."]),
        ("Edsger W. Dijkstra wrote it. Read it.", ["Edsger W. Dijkstra wrote it.", "Read it."]),
        ("2. Listen for connections. Then serve.", ["2. Listen for connections.", "Then serve."]),
        ("The U.S. Army used it. Fine.", ["The U.S. Army used it.", "Fine."]),
        ("First line.\n\nsecond block", ["First line.", "second block"]),
        ("Use `println!` here. Then `panic!` there.", ["Use `println!` here.", "Then `panic!` there."]),
        ("一つ目。二つ目！三つ目", ["一つ目。", "二つ目！", "三つ目"]),
        ("Ends with **bold.** Next one.", ["Ends with **bold.**", "Next one."]),
    ],
)
def test_sentence_splits(text: str, expected: list[str]) -> None:
    assert split(text) == expected


def test_offsets_index_the_given_range_of_a_larger_text() -> None:
    text = "HEADER\n\nAlpha one. Beta two.\n\nFOOTER"
    start = text.index("Alpha")
    end = text.index("\n\nFOOTER")
    spans = sentence_spans(text, start, end)
    assert spans == [(start, start + len("Alpha one.")), (text.index("Beta"), end)]
    assert sentence_boundaries(text, start, end) == [text.index("Beta")]


def test_soft_line_breaks_do_not_end_sentences() -> None:
    text = "This sentence is wrapped\nover two lines. And this\none too."
    assert split(text) == ["This sentence is wrapped\nover two lines.", "And this\none too."]


def test_empty_and_whitespace_ranges() -> None:
    assert sentence_spans("") == []
    assert sentence_spans("   \n  ") == []
    assert sentence_boundaries("abc", 2, 1) == []


_WORDS = st.sampled_from(
    ["Dr.", "e.g.", "the", "arm", "`a.b()`", "3.2", "v1.2.3", "Fig.", "5", "moves", "joint", "x", "(see", "it.)",
     "Why?", "Yes!", "...", "…", "ß", "日本。", "\"quoted.\"", "etc.", "https://a.b/c?d=1.", "ok.", "Then", "\n", "\n\n"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, max_size=40), st.integers(0, 5), st.integers(0, 5))
def test_spans_are_trimmed_ordered_and_cover_the_range(words: list[str], pad_l: int, pad_r: int) -> None:
    body = " ".join(words)
    text = "#" * pad_l + body + "#" * pad_r
    start, end = pad_l, pad_l + len(body)
    spans = sentence_spans(text, start, end)
    covered = set()
    prev_end = start
    for a, b in spans:
        assert start <= prev_end <= a < b <= end
        assert not text[a].isspace() and not text[b - 1].isspace()
        covered.update(range(a, b))
        prev_end = b
    for i in range(start, end):
        if not text[i].isspace():
            assert i in covered
    # Boundaries are exactly the starts of the sentences after the first.
    assert sentence_boundaries(text, start, end) == [a for a, _ in spans[1:]]

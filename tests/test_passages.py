"""Passage-level metrics: interval arithmetic and Chroma's recall / precision / IoU / precision-Ω, computed by
hand on a thirty-character fixture."""

from __future__ import annotations

import pytest

from chunkscope.evaluation.passages import (
    by_path,
    char_measure,
    intersection,
    precision_omega,
    score,
    section_body,
    touching,
    union,
)

#   a.md: 30 characters, the passage is [10, 20).
#
#   0         10        20        30
#   |---------|=========|---------|     passage P = [10, 20)
#   [ c1 0-12  ]
#           [ c2 8-15]
#                     [c3 18-25]
#                            [c5 25-30]
#   b.md: [ c4 0-10 ]  (another file)
PASSAGE = ("a.md", 10, 20)
C1, C2, C3, C4, C5 = ("a.md", 0, 12), ("a.md", 8, 15), ("a.md", 18, 25), ("b.md", 0, 10), ("a.md", 25, 30)


def test_union_merges_overlapping_and_touching_spans_and_drops_empty_ones():
    assert union([(5, 8), (0, 3), (3, 4), (7, 10), (12, 12)]) == [(0, 4), (5, 10)]
    assert union([]) == []
    assert union([(2, 9), (3, 4)]) == [(2, 9)]  # one inside another


def test_intersection_of_two_sets_of_spans():
    assert intersection([(0, 4), (5, 10)], [(2, 6), (9, 20)]) == [(2, 4), (5, 6), (9, 10)]
    assert intersection([(0, 4)], [(4, 8)]) == []  # half-open: touching is not sharing
    assert intersection([(0, 10), (3, 5)], [(4, 12)]) == [(4, 10)]  # the left side is a union first


def test_by_path_unions_each_document_apart():
    assert by_path([C1, C4, C2]) == {"a.md": [(0, 15)], "b.md": [(0, 10)]}


def test_overlapping_chunks_are_counted_once():
    s = score(PASSAGE, [C1, C2])
    # R = [0, 15): 15 characters, not 12 + 7 = 19. P ∩ R = [10, 15): 5.
    assert (s.passage, s.retrieved, s.overlap) == (10, 15, 5)
    assert s.recall == pytest.approx(5 / 10)
    assert s.precision == pytest.approx(5 / 15)
    assert s.iou == pytest.approx(5 / (10 + 15 - 5))


def test_a_chunk_of_another_file_is_retrieved_text_but_no_passage():
    s = score(PASSAGE, [C1, C4])
    # R = 12 (a.md) + 10 (b.md) = 22; P ∩ R = [10, 12): 2.
    assert (s.passage, s.retrieved, s.overlap) == (10, 22, 2)
    assert s.recall == pytest.approx(0.2)
    assert s.precision == pytest.approx(2 / 22)
    assert s.iou == pytest.approx(2 / 30)


def test_the_whole_passage_in_one_chunk():
    s = score(PASSAGE, [("a.md", 5, 25)])
    assert (s.recall, s.precision, s.iou) == (1.0, pytest.approx(10 / 20), pytest.approx(10 / 20))
    exact = score(PASSAGE, [PASSAGE])
    assert (exact.recall, exact.precision, exact.iou) == (1.0, 1.0, 1.0)


def test_nothing_retrieved_scores_zero_not_an_error():
    s = score(PASSAGE, [])
    assert (s.passage, s.retrieved, s.overlap) == (10, 0, 0)
    assert (s.recall, s.precision, s.iou) == (0.0, 0.0, 0.0)


def test_precision_omega_is_precision_of_exactly_the_touching_chunks():
    chunks = [C1, C2, C3, C4, C5, ("a.md", 20, 25), ("a.md", 5, 10)]
    # [20, 25) and [5, 10) end or begin at the passage's edge: half-open spans, they share no character.
    assert touching(PASSAGE, chunks) == [C1, C2, C3]
    # Touching union: [0, 15) + [18, 25) = 15 + 7 = 22; passage inside it: [10, 15) + [18, 20) = 5 + 2 = 7.
    assert precision_omega(PASSAGE, chunks) == pytest.approx(7 / 22)
    assert precision_omega(PASSAGE, [C4, C5]) == 0.0  # no chunk touches it


def test_the_measure_counts_each_disjoint_span():
    text = {"a.md": "aa bb cc dd ee ff gg hh ii jj"}  # 29 characters

    def letters(path: str, start: int, end: int) -> int:
        return sum(1 for ch in text[path][start:end] if not ch.isspace())

    # P = [6, 14) "cc dd ee" (6 letters); R = [0, 5) + [9, 20) = "aa bb" (4) + "dd ee ff gg" (8) = 12;
    # P ∩ R = [9, 14) "dd ee" (4).
    s = score(("a.md", 6, 14), [("a.md", 0, 5), ("a.md", 9, 20)], letters)
    assert (s.passage, s.retrieved, s.overlap) == (6, 12, 4)
    assert s.iou == pytest.approx(4 / (6 + 12 - 4))
    assert char_measure("a.md", 9, 20) == 11


def test_section_body_leaves_out_the_heading_line_and_white_space():
    text = "## A\n\nBody text.\n\n## B\n\n"
    assert section_body(text, 4, 18) == (6, 16)
    assert text[6:16] == "Body text."
    # A heading with nothing under it: the passage is the heading line, never empty.
    assert section_body(text, 22, 24, heading_start=18) == (18, 22)

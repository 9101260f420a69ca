"""``chunkscope query``: what it refuses before any model is loaded, and the filter fields it knows."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkscope.cli import main

SAMPLE = Path(__file__).resolve().parents[1] / "sample_docs"


@pytest.mark.parametrize("args, message", [
    (["   "], "query: the question is empty"),
    (["frames", "-k", "0"], "query: -k must be at least 1, got 0"),
    (["frames", "-k", "-3"], "query: -k must be at least 1, got -3"),
    (["frames", "--threshold", "2"], "query: --threshold must be between -1 and 1 (a cosine score), got 2.0"),
])
def test_meaningless_queries_are_usage_errors(args, message, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path))
    assert main(["query", str(SAMPLE), *args]) == 2
    assert capsys.readouterr().err == f"chunkscope: error: {message}\n"


def test_a_filter_on_a_field_no_chunk_has_names_the_fields(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path))
    assert main(["query", str(SAMPLE), "frames", "--filter", "chapter=3", "--filter", "nosuch=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("chunkscope: error: --filter: no chunk has the field 'chapter'; fields: ")
    # The strategy's own metadata (seed 004) and the core payload fields are offered.
    assert {"chapter_id", "week_number", "path", "heading"} <= set(err.split("fields: ")[1].strip().split(", "))

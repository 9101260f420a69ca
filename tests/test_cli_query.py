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


def _hit(rank: int, score: float, kept: bool, url: str = "") -> "object":
    from chunkscope.retrieval.store import Hit

    text = "A long paragraph about coordinate frames \x1b[31m and transforms, " * 6
    return Hit(rank, score, kept, "module-1/ch01-frames.md", 0, len(text), 3, 9, ["Frames"], "ch01 › Frames", url,
               text, 0)


def test_results_fit_the_terminal_and_say_when_the_threshold_hides_everything(capsys):
    from chunkscope.cli.cmd_retrieval import print_hits

    long_url = "https://book.example.com/docs/module-1/coordinate-frames#11-why-frames-matter-in-a-robot" * 2
    print_hits([_hit(1, 0.55, False, long_url), _hit(2, 0.47, False)], "frames?", 0.7, "recursive")
    out = capsys.readouterr().out.splitlines()
    assert all(len(line) <= 80 for line in out), out  # piped: 80 columns, every line cut, none wrapped
    assert "\x1b" not in "".join(out)
    assert out[1].startswith("── filtered out by threshold 0.7")
    assert out[-1] == "all under the threshold 0.7; if these answers are good, lower it (--threshold)"
    print_hits([_hit(1, 0.81, True), _hit(2, 0.5, False)], "frames?", 0.7, "recursive")
    assert "all under the threshold" not in capsys.readouterr().out

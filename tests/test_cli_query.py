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
    from chunkscope.cli.commands.query import print_hits

    long_url = "https://book.example.com/docs/module-1/coordinate-frames#11-why-frames-matter-in-a-robot" * 2
    print_hits([_hit(1, 0.55, False, long_url), _hit(2, 0.47, False)], "frames?", 0.7, "recursive")
    out = capsys.readouterr().out.splitlines()
    # Piped at 80 columns (conftest): the URL is the one line longer than that, whole; the rest fits.
    assert [line for line in out if len(line) > 80] == [f"    {long_url}"], out
    assert "\x1b" not in "".join(out)
    assert out[1].startswith("── filtered out by threshold 0.7")
    assert out[-1] == "all under the threshold 0.7; if these answers are good, lower it (--threshold)"
    print_hits([_hit(1, 0.81, True), _hit(2, 0.5, False)], "frames?", 0.7, "recursive")
    assert "all under the threshold" not in capsys.readouterr().out


@pytest.mark.parametrize("columns", ["80", "40"])
def test_citations_are_never_cut_and_the_snippet_wraps_under_them(columns, capsys, monkeypatch):
    """A URL and a ``path:line`` are printed whole on a line of their own at any width (a cut URL looks like a
    link and is wrong); the preview of the text wraps instead, every line of it indented and within the width."""
    from chunkscope.cli.commands.query import print_hits
    from chunkscope.retrieval.store import Hit

    monkeypatch.setenv("COLUMNS", columns)
    path = "docs/03-integrations/02-practical-implementation/05-setting-rate-limits-for-production.md"
    url = "https://docs.example.org/integrations/practical-implementation/rate-limits#practical-implementation-notes"
    text = "Set the limit per key, not per address: a proxy shares one address among many clients. " * 3
    hit = Hit(1, 0.8, True, path, 0, len(text), 28, 40, ["Rate limits"], "Rate limits", url, text, 0)
    print_hits([hit], "how do I set a rate limit?", None, "recursive")
    out = capsys.readouterr().out.splitlines()
    assert f"    {path}:28" in out and f"    {url}" in out
    assert not any("…" in line and "://" in line for line in out)
    preview = out[out.index(f"    {url}") + 1:]
    assert len(preview) >= 2, out  # wrapped, not cut at the first line
    assert all(line.startswith("    ") and len(line) <= int(columns) for line in preview), preview
    assert " ".join(line.strip() for line in preview).startswith("Set the limit per key, not per address")

"""file_report: per-file figures agree with lint, stats and the embedding model's own truncation; worst first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chunkscope.chunking.drivers import chunk_documents
from chunkscope.chunking.model import Chunk, ChunkedDoc
from chunkscope.cli.tree_figures import tree_stats_of
from chunkscope.config.reader import load_config, resolve_strategy
from chunkscope.document.loader import Document, load_docs
from chunkscope.chunking.reading import embed_cuts, unread_chars
from chunkscope.tui.headless.file_report import (FileSummary, SORTS, file_summaries, group_by_file, sort_files,
                                                 tree_totals)
from chunkscope.lint import Finding, lint_tree
from chunkscope.tokens import DEFAULT_EMBED_MODEL, embed_tokenizer

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_docs"

#: A paragraph far longer than the model's 256 word pieces (ASCII words, so the tokenizer's pieces are plain).
LONG = " ".join(f"word{i} alpha beta gamma." for i in range(300))


def chunk(index: int, start: int, end: int, text: str = "", **kw) -> Chunk:
    return Chunk("a.md", index, start, end, 1, 1, text or "x" * (end - start), end - start, **kw)


def finding(path: str, line: int, severity: str = "error", rule: str = "oversize") -> Finding:
    return Finding(path, line, 1, rule, severity, "m", None)


def model_cut(text: str) -> int:
    """Where all-MiniLM-L6-v2 stops reading ``text``, from the tokenizers library's own truncation: the first
    character of the first piece it drops (the oracle for `embed_cuts`, which counts by cached runs)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(embed_tokenizer(DEFAULT_EMBED_MODEL).model_dir / "tokenizer.json"))
    tok.enable_truncation(max_length=256)
    enc = tok.encode(text)
    if not enc.overflowing:
        return len(text)
    dropped = enc.overflowing[0]
    return next(o[0] for o, special in zip(dropped.offsets, dropped.special_tokens_mask) if not special)


def test_unread_text_is_what_no_chunk_reads_overlap_included():
    # Chunk 0 is read up to 60 of 0-100; chunk 1 (80-200) re-reads 80-100 and is read whole: only 60-80 is never read.
    chunks = [chunk(0, 0, 100), chunk(1, 80, 200)]
    assert unread_chars(chunks, {0: 60}) == (200, 20)
    # Without overlap the whole tail is lost; a gap between chunks is not text of any chunk.
    assert unread_chars([chunk(0, 0, 100), chunk(1, 150, 200)], {0: 60, 1: 150}) == (150, 90)
    assert unread_chars([], {}) == (0, 0)


def test_embed_cuts_match_the_models_own_truncation():
    doc = Document.from_text(f"# Title\n\n{LONG}\n\nA short paragraph after it.\n", path="long.md")
    c = Chunk("long.md", 0, 0, len(doc.text), 1, 5, doc.text, 10)
    short = Chunk("long.md", 1, 0, 7, 1, 1, doc.text[:7], 2)
    cuts = embed_cuts([c, short], DEFAULT_EMBED_MODEL)
    assert set(cuts) == {0}  # the short one fits
    assert cuts[0] == model_cut(doc.text)
    assert c.embed_tokens is not None and c.embed_tokens > 256  # counted as `count_embed_tokens` would


def test_a_cut_inside_a_strategys_prefix_leaves_the_whole_chunk_unread():
    text = "the chunk's own text, forty characters!!"
    c = chunk(0, 100, 140, text, embed_text_override=f"{LONG}\n\n{text}")
    cuts = embed_cuts([c], DEFAULT_EMBED_MODEL)
    assert cuts == {0: 100}
    assert unread_chars([c], cuts) == (40, 40)


def test_per_file_figures_agree_with_lint_and_stats_on_a_real_tree():
    cfg = load_config(SAMPLE)
    tree = load_docs(SAMPLE, ignore=cfg.ignore)
    resolved = resolve_strategy(cfg, "fixed", {"chunk_size": 400, "chunk_overlap": 0})
    results = chunk_documents(tree.documents, resolved.strategy)
    report = lint_tree(tree, resolved, cfg, results=results)
    rows = file_summaries(results, resolved.strategy.limits().max, report.findings, cfg.embed_model)
    assert rows is not None and [r.path for r in rows] == [d.path for d in tree.documents]
    stats = tree_stats_of(tree, resolved, results, 384)
    totals = tree_totals(rows)
    assert (totals.errors, totals.warnings) == (report.errors, report.warnings)
    assert totals.over_limit == stats.over_limit and totals.chunks == stats.chunks
    for r in rows:
        mine = [f for f in report.findings if f.path == r.path]
        assert (r.errors, r.warnings) == (sum(f.severity == "error" for f in mine),
                                          sum(f.severity != "error" for f in mine))
        assert sorted(map(id, r.findings)) == sorted(map(id, mine))
    # The unread text, chunk by chunk, is what the model drops (no overlap here: each tail is lost).
    by_path = {r.doc.path: r for r in results}
    for r in rows:
        expected = sum(c.end - (c.start + model_cut(c.text)) for c in by_path[r.path].chunks)
        assert r.unread_chars == expected, r.path
    assert any(r.unread_chars for r in rows), "400-token windows should exceed 256 word pieces somewhere"
    # Every truncated chunk is an embed-truncation finding of lint (the same model, the same limit).
    truncating = {(r.path) for r in rows if r.unread_chars}
    assert truncating == {f.path for f in report.findings if f.rule == "embed-truncation"}


def test_without_a_model_the_unread_share_is_unknown_and_the_rest_is_counted():
    doc = Document.from_text("# T\n\nhello\n", path="a.md")
    rows = file_summaries([ChunkedDoc(doc, [chunk(0, 0, len(doc.text))])], None, [finding("a.md", 3)], None)
    assert rows is not None and rows[0].unread_chars is None and rows[0].unread_share == 0.0
    assert rows[0].errors == 1 and tree_totals(rows).unread_share is None


def test_a_file_the_strategy_could_not_chunk_counts_as_an_error():
    doc = Document.from_text("# T\n", path="bad.md")
    rows = file_summaries([ChunkedDoc(doc, [], "ValueError: boom")], 10, [], None)
    assert rows is not None and rows[0].failed and rows[0].blocking == 1 and rows[0].chunks == 0
    assert tree_totals(rows).files_with_errors == 1


def test_worst_first_is_errors_then_warnings_then_over_limit_then_unread():
    def row(path, order, errors=0, warnings=0, over=0, unread=0, chunks=1):
        return FileSummary(path, order, chunks, over, errors, warnings, 100, unread)

    rows = [row("a", 0), row("b", 1, unread=50), row("c", 2, over=1), row("d", 3, warnings=2),
            row("e", 4, errors=1), row("f", 5, errors=1, warnings=1), row("g", 6, chunks=9)]
    assert [r.path for r in sort_files(rows)] == ["f", "e", "d", "c", "b", "a", "g"]
    assert [r.path for r in sort_files(rows, "unread")][0] == "b"
    assert [r.path for r in sort_files(rows, "over limit")][0] == "c"
    assert [r.path for r in sort_files(rows, "chunks")][0] == "g"
    assert [r.path for r in sort_files(rows, "path")] == list("abcdefg")
    assert [r.path for r in sort_files(rows, reverse=True)][-1] == "f"
    assert "worst" in SORTS


def test_group_by_file_puts_the_file_with_most_errors_first_and_errors_first_within():
    fs = [finding("a.md", 5, "warning"), finding("b.md", 9), finding("b.md", 2, "warning"), finding("b.md", 30),
          finding("a.md", 1)]
    groups = group_by_file(fs, {"a.md": 0, "b.md": 1})
    assert [p for p, _ in groups] == ["b.md", "a.md"]
    assert [(f.severity, f.line) for f in groups[0][1]] == [("error", 9), ("error", 30), ("warning", 2)]
    # The first finding of a row is the first of its group.
    doc = Document.from_text("x\n", path="b.md")
    row = file_summaries([ChunkedDoc(doc, [chunk(0, 0, 2)])], None, fs, None)[0]
    assert row.first_finding is groups[0][1][0]


def test_should_stop_ends_the_run():
    doc = Document.from_text("x\n", path="a.md")
    assert file_summaries([ChunkedDoc(doc, [])], None, (), None, should_stop=lambda: True) is None


def test_importing_the_module_loads_no_ui():
    code = ("import sys, chunkscope.tui.headless.file_report\n"
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'torch'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("by", sorted(SORTS))
def test_every_sort_is_total_and_stable(by):
    rows = [FileSummary(f"p{i}", i, i % 3, i % 2, i % 4, i % 5, 10, i) for i in range(12)]
    once = sort_files(rows, by)
    assert sorted(map(id, once)) == sorted(map(id, rows)) and sort_files(list(reversed(rows)), by) == once

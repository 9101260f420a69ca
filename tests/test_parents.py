"""Small-to-big: parents (section, window:N, page) are exact spans holding their child, hits sharing a parent merge
into one result with the best child's rank, eval scores chunks and parents side by side with the real model, and
``--parent`` reaches query, eval and probe (tables and ``--json``)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from chunkscope.chunking.model import Span
from chunkscope.chunking.registry import get_strategy
from chunkscope.chunking.strategy import Strategy
from chunkscope.cli import main
from chunkscope.config.reader import ConfigError, parse_config, resolve_strategy
from chunkscope.document.loader import load_docs
from chunkscope.evaluation.parents import parent_metrics
from chunkscope.retrieval.parents import ParentError, ParentHit, ParentResolver, parent_span, parse_parent
from chunkscope.retrieval.store import Hit
from chunkscope.tokens import get_tokenizer
from tests.markdown_strategies import decoded_doc, markdown

# --- naming a parent ------------------------------------------------------------------------------------------


def test_parent_names():
    assert [parse_parent(v).label for v in (None, "none", "section", "page", "window:200", " Window:8 ")] == \
        ["none", "none", "section", "page", "window:200", "window:8"]
    for bad in ("window", "window:0", "window:x", "chapter", "section:2"):
        with pytest.raises(ParentError, match="parent"):
            parse_parent(bad)


def test_config_reads_retrieval_parent_and_a_presets_own():
    cfg = parse_config({"retrieval": {"parent": "window:50"},
                        "presets": {"big": {"strategy": "recursive", "chunk_size": 100, "parent": "section"}}})
    assert cfg.parent().label == "window:50"
    big = resolve_strategy(cfg, "big")
    assert big.parent == "section" and "parent" not in big.strategy.params
    assert cfg.parent(None, big.parent).label == "section"
    assert cfg.parent("page", big.parent).label == "page"  # the command line's wins
    for bad in ({"retrieval": {"parent": "chapter"}}, {"retrieval": {"parent": 3}},
                {"presets": {"p": {"strategy": "recursive", "parent": "window"}}}):
        with pytest.raises(ConfigError, match="parent"):
            parse_config(bad)


# --- spans: exact, holding the child, on generated Markdown ---------------------------------------------------

WORDS = st.sampled_from(["robot", "joint", "the", "frame", "θ₁", "Größe", "日本語", "naïve", "x", "end.", "#hash"])
GENERATED = markdown(WORDS, "---\ntitle: Generated Ü\n---\n", ["# comment", "## not a heading", "x = 1", ""], 6)


@given(text=GENERATED, kind=st.sampled_from(["section", "page", "window:1", "window:7", "window:40"]))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_parents_are_exact_spans_holding_their_child(text, kind):
    doc = decoded_doc(text, "gen/page.md")
    strategy = get_strategy("recursive", chunk_size=12, chunk_overlap=3)
    spec = parse_parent(kind)
    counter = strategy.counter(doc)
    resolver = ParentResolver(spec, lambda p: doc if p == doc.path else None, strategy.counter)
    chunks = strategy.chunk(doc)
    for c in chunks:
        a, b = parent_span(doc, c.start, c.end, spec, counter)
        assert (a, b) == resolver.span(c.path, c.start, c.end)
        assert doc.body_start <= a <= c.start < c.end <= b <= len(doc.text)
        if spec.kind == "window":
            # Up to N tokens of the strategy's tokenizer each side, the whole of what is left when less remains.
            assert counter.count(a, c.start) <= spec.tokens and counter.count(c.end, b) <= spec.tokens
            if counter.count(doc.body_start, c.start) <= spec.tokens:
                assert a == doc.body_start
            if counter.count(c.end, len(doc.text)) <= spec.tokens:
                assert b == len(doc.text)
        elif spec.kind == "page":
            assert doc.text[doc.body_start:a].strip() == "" and doc.text[b:].strip() == ""
            assert a == c.start or not doc.text[a].isspace()
        else:
            # The oracle, by brute force: the innermost section (from a heading to the next of its level or
            # higher) holding the chunk's non-space text, else the page; trailing blank lines left out.
            lo = c.start + len(c.text) - len(c.text.lstrip())
            hi = c.end - (len(c.text) - len(c.text.rstrip()))
            holding = [h for h in doc.outline.headings if h.start <= lo and hi <= doc.outline.section_end(h)]
            start, end = (holding[-1].start, doc.outline.section_end(holding[-1])) if holding \
                else (len(doc.text) - len(doc.text[doc.body_start:].lstrip()), len(doc.text))
            end = start + len(doc.text[start:end].rstrip())
            assert (a, b) == (min(start, c.start), max(end, c.end))
    # As results: text, lines and span exact.
    hits = [Hit(i + 1, 1.0 - i / 100, True, c.path, c.start, c.end, c.start_line, c.end_line, list(c.heading_path),
                "cite", "", c.text, c.index) for i, c in enumerate(chunks)]
    for p in resolver.merge(hits):
        assert p.text == doc.text[p.start:p.end]
        assert p.start_line == doc.line_of(p.start) and p.end_line == doc.line_of(max(p.start, p.end - 1))
        assert all(p.start <= ch.start and ch.end <= p.end for ch in p.children)


# --- merging ----------------------------------------------------------------------------------------------------

PAGE = """---
title: Bread
---

# Bread

Bread is flour, water, salt and yeast.

## Kneading

Knead the dough for ten minutes on a floured board until it is smooth and springs back.

Then shape the dough into a ball and leave it covered in a warm place to rise.

## Baking

Put the loaf in a hot oven until the crust is golden brown and it sounds hollow.
"""


class Paragraphs(Strategy):
    """One chunk per paragraph (headings are paragraphs too): small children for small-to-big."""

    name = "test-paragraphs"
    parameters = ()

    def spans(self, doc):
        out, pos, text = [], doc.body_start, doc.text
        for block in text[doc.body_start:].split("\n\n"):
            a = text.index(block, pos)
            pos = a + len(block)
            if block.strip():
                out.append(Span(a, a + len(block.rstrip())))
        return out


def _hits(chunks, order, kept=None):
    return [Hit(r, 1.0 - r / 10, True if kept is None else kept[r - 1], chunks[i].path, chunks[i].start,
                chunks[i].end, chunks[i].start_line, chunks[i].end_line, list(chunks[i].heading_path), f"c{i}", "",
                chunks[i].text, i) for r, i in enumerate(order, 1)]


def test_two_children_of_one_section_are_one_result_with_the_better_rank():
    doc = decoded_doc(PAGE, "bread.md")
    chunks = Paragraphs().chunk(doc)
    texts = [c.text.split()[0] for c in chunks]
    assert texts == ["#", "Bread", "##", "Knead", "Then", "##", "Put"]
    resolver = ParentResolver(parse_parent("section"), lambda p: doc)
    # Ranks: "Then" 1, "Put" 2, "Knead" 3: the two Kneading paragraphs merge at rank 1.
    merged = resolver.merge(_hits(chunks, [4, 6, 3]))
    assert [(p.rank, [c.rank for c in p.children]) for p in merged] == [(1, [1, 3]), (2, [2])]
    kneading = merged[0]
    assert isinstance(kneading, ParentHit) and kneading.parent == "section"
    assert kneading.text == doc.text[kneading.start:kneading.end]
    assert kneading.text.startswith("## Kneading") and kneading.text.endswith("warm place to rise.")
    assert kneading.score == pytest.approx(0.9) and kneading.citation == "c4"  # the best child's
    assert kneading.heading_path == ["Bread", "Kneading"]
    d = kneading.to_dict()
    assert d["parent"] == "section" and [c["rank"] for c in d["children"]] == [1, 3]
    assert d["text"] == kneading.text and "text" not in d["children"][0]
    # A later rank keeps its own: the parent is not renumbered to 2 when a sibling merged above it.
    merged = resolver.merge(_hits(chunks, [4, 3, 6]))
    assert [(p.rank, [c.rank for c in p.children]) for p in merged] == [(1, [1, 2]), (3, [3])]
    # A child under the threshold does not make its parent kept, nor give it its rank.
    merged = resolver.merge(_hits(chunks, [6, 3, 4], kept=[False, True, True]))
    assert [(p.rank, p.kept) for p in merged] == [(2, True), (1, False)]
    # The page: everything merges; front matter is never part of it.
    page = ParentResolver(parse_parent("page"), lambda p: doc).merge(_hits(chunks, [4, 6, 1]))
    assert len(page) == 1 and page[0].text.startswith("# Bread") and page[0].text.endswith("sounds hollow.")


def test_a_chunk_across_two_sections_gets_their_enclosing_section():
    text = "# One\n\nIntro.\n\n# Two\n\n## A\n\nAlpha text.\n\n## B\n\nBeta text.\n\n# Three\n\nEnd.\n"
    doc = decoded_doc(text, "two.md")
    across = (text.index("Alpha"), text.index("Beta text.") + len("Beta text."))
    a, b = parent_span(doc, *across, parse_parent("section"))
    assert doc.text[a:b] == "# Two\n\n## A\n\nAlpha text.\n\n## B\n\nBeta text."
    inside = (text.index("Alpha"), text.index("Alpha") + len("Alpha text."))
    assert doc.text[slice(*parent_span(doc, *inside, parse_parent("section")))] == "## A\n\nAlpha text."
    # No section holds a chunk across two top-level ones: the page.
    a, b = parent_span(doc, text.index("Intro"), text.index("Alpha"), parse_parent("section"))
    assert (a, b) == (0, len(text) - 1)


def test_a_window_is_n_tokens_each_side_at_exact_offsets():
    doc = decoded_doc(PAGE, "bread.md")
    chunks = Paragraphs().chunk(doc)
    then = chunks[4]
    counter = get_tokenizer("cl100k_base").counter(doc)
    a, b = parent_span(doc, then.start, then.end, parse_parent("window:5"), counter)
    assert counter.count(a, then.start) == 5 and counter.count(then.end, b) == 5
    assert doc.text[a:then.start].endswith("springs back.\n\n") and doc.text[then.end:b].startswith("\n\n## Baking")


def _rank_metrics_of(parents, relevant, relevant_parents):
    passage = ("bread.md", PAGE.index("Knead the"), PAGE.index("## Baking"))
    m = parent_metrics(parents, relevant, passage, relevant_parents, ks=(1, 3, 5))
    return {k: v for k, v in m.items() if not k.startswith(("passage_", "precision_"))}


def test_parent_metrics_rank_each_parent_at_its_best_childs_rank():
    """A parent's rank is its best child's, so ranks skip where children merged (the gap counts for nDCG); a parent
    can overlap the answer when its child does not, so more can be found than the ideal holds (capped at 1)."""
    doc = decoded_doc(PAGE, "bread.md")
    chunks = Paragraphs().chunk(doc)
    resolver = ParentResolver(parse_parent("section"), lambda p: doc)
    # Knead (Kneading) 1, Put (Baking) 2, Then (Kneading again) 3, "Bread is" (the page) 4.
    merged = resolver.merge(_hits(chunks, [3, 6, 4, 1]))
    assert [p.rank for p in merged] == [1, 2, 4]
    kneading = (merged[0].path, merged[0].start, merged[0].end)
    other = ("bread.md", 0, 1)  # a second relevant parent the search never found
    got = _rank_metrics_of(merged, [True, False, True], [kneading, other])
    ideal = 1 + 1 / math.log2(3)
    assert got == pytest.approx({"hit@1": 1.0, "hit@3": 1.0, "hit@5": 1.0, "mrr": 1.0,
                                 "recall@1": 0.5, "recall@3": 0.5, "recall@5": 1.0,
                                 "ndcg@1": 1.0, "ndcg@3": 1 / ideal, "ndcg@5": (1 + 1 / math.log2(5)) / ideal})
    # One relevant parent in the ideal, two found (the page holds the answer too): recall and nDCG stop at 1.
    got = _rank_metrics_of(merged, [False, True, True], [kneading])
    assert got == pytest.approx({"hit@1": 0.0, "hit@3": 1.0, "hit@5": 1.0, "mrr": 0.5,
                                 "recall@1": 0.0, "recall@3": 1.0, "recall@5": 1.0,
                                 "ndcg@1": 0.0, "ndcg@3": 1 / math.log2(3), "ndcg@5": 1.0})
    # A parent under the threshold is not retrieved; a relevant one past max(ks) is not found.
    unkept = [replace(p, kept=False) if p.rank == 1 else p for p in merged]
    got = _rank_metrics_of(unkept, [True, False, True], [kneading, other])
    assert (got["hit@3"], got["hit@5"], got["mrr"], got["recall@5"]) == (0.0, 1.0, 0.25, 0.5)
    assert _rank_metrics_of([replace(merged[2], rank=6)], [True], [kneading])["mrr"] == 0.0


# --- eval: chunks and parents with the real model -------------------------------------------------------------


@pytest.fixture()
def bread_tree(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "bread.md").write_text(PAGE, encoding="utf-8")
    return load_docs(root)


@pytest.mark.model
def test_eval_scores_chunks_and_their_parents_side_by_side(bread_tree, tmp_path):
    from chunkscope.embedding.embedder import Embedder
    from chunkscope.evaluation.evaluate import evaluate
    from chunkscope.evaluation.queries import Expect, QueryCase
    from chunkscope.retrieval.store import Store

    # The question's words are the first paragraph's; the labelled answer is the next paragraph of its section.
    case = QueryCase("How long do I knead the dough on a floured board?",
                     Expect(path="bread.md", text="leave it covered in a warm place to rise"), line=1)
    emb = Embedder(cache_dir=tmp_path / "emb")
    store = Store(bread_tree.root, path=tmp_path / "qdrant")
    try:
        def run(parent):
            return evaluate(bread_tree, [("para", Paragraphs())], [case], ks=(1, 3), embedder=emb,
                            store_factory=lambda label, s: store, miss_k=1, parent=parse_parent(parent))[0]
        section = run("section")
        window = run("window:3")
        plain = run("none")
    finally:
        store.close()
        emb.close()
    assert plain.parents is None and plain.levels() == [plain]
    chunk_q = section.per_query[0]
    assert chunk_q.reason == "below-k" and chunk_q.rank == 2 and section.metrics["hit@1"] == 0.0
    assert section.metrics == plain.metrics  # the chunks are searched and judged as without a parent
    # The section of the first paragraph holds the answer: a hit at rank 1, carried by the parent.
    parents = section.parents
    assert parents is not None and parents.strategy_label == "para · parent=section" and parents.parent == "section"
    pq = parents.per_query[0]
    assert pq.hit and pq.reason is None and pq.rank == 1 and parents.carried == 1
    assert pq.detail.startswith("carried by its section: the chunk at bread.md:11 ranked 1")
    assert parents.metrics["hit@1"] == 1.0 and parents.metrics["mrr"] == 1.0
    assert parents.metrics["passage_recall@1"] == 1.0 > section.metrics["passage_recall@1"]
    assert parents.metrics["passage_precision@1"] < 1.0
    assert pq.top[0]["children"][:2] == [1, 2] and pq.top[0]["relevant"]
    # Three tokens each side do not reach the answer: the miss says a bigger parent would have carried it.
    wq = window.parents.per_query[0]
    assert not wq.hit and wq.reason == "outside-parent" and window.parents.reasons["outside-parent"] == 1
    assert "the chunk at bread.md:11 ranked 1, but its window:3 bread.md:9-13 stops short" in wq.detail
    assert wq.expected is not None and wq.expected.start_line == 13  # the answer's own chunk, as at chunk level
    d = window.parents.to_dict()
    assert d["level"] == "parent" and d["parent"] == "window:3" and d["reasons"]["outside-parent"] == 1
    json.dumps([r.to_dict() for r in (*section.levels(), *window.levels())])


# --- the command line -----------------------------------------------------------------------------------------

ARGS = ["-s", "recursive", "-p", "chunk_size=20", "-p", "chunk_overlap=0"]


@pytest.fixture()
def bread_docs(tmp_path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "bread.md").write_text(PAGE, encoding="utf-8")
    return root


@pytest.mark.model
def test_query_returns_parents_with_their_children(bread_docs, capsys):
    question = "How long do I knead the dough?"
    assert main(["query", str(bread_docs), question, *ARGS, "--threshold", "-1", "--json"]) == 0
    chunks = json.loads(capsys.readouterr().out)
    assert main(["query", str(bread_docs), question, *ARGS, "--threshold", "-1", "--json", "--parent", "section"]) == 0
    parents = json.loads(capsys.readouterr().out)
    text = PAGE
    assert 1 <= len(parents) < len(chunks)  # merged
    for p in parents:
        assert p["parent"] == "section" and p["text"] == text[p["start"]:p["end"]]
        assert p["start_line"] == text[:p["start"]].count("\n") + 1
        assert p["end_line"] == text[:p["end"] - 1].count("\n") + 1
        assert all(p["start"] <= c["start"] and c["end"] <= p["end"] for c in p["children"])
        assert p["rank"] == p["children"][0]["rank"]
    assert sorted(c["rank"] for p in parents for c in p["children"]) == [c["rank"] for c in chunks]
    # The table names the parent and the chunks that found it.
    assert main(["query", str(bread_docs), question, *ARGS, "--threshold", "-1", "--parent", "section"]) == 0
    out = capsys.readouterr().out
    assert "recursive(chunk_size=20,chunk_overlap=0) · parent=section: " in out
    assert "section lines 9-13, found by" in out


@pytest.mark.model
def test_eval_and_probe_show_chunks_and_parents_side_by_side(bread_docs, capsys, tmp_path):
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"query": "How long do I knead the dough on a floured board?",
                             "expect": {"path": "bread.md", "text": "leave it covered in a warm place"}}) + "\n")
    argv = ["eval", str(bread_docs), str(q), *ARGS, "-k", "1,3", "--parent", "section"]
    assert main([*argv, "--json"]) == 0
    chunk, parent = json.loads(capsys.readouterr().out)["results"]
    assert "level" not in chunk and parent["level"] == "parent" and parent["parent"] == "section"
    assert parent["strategy_label"] == chunk["strategy_label"] + " · parent=section"
    assert set(parent["metrics"]) == set(chunk["metrics"])
    assert parent["metrics"]["hit@1"] >= chunk["metrics"]["hit@1"]
    assert parent["per_query"][0]["top"][0]["children"][0] == 1
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "parent=section" in out and "1.000 │" in out  # the parent's column, beside the chunks'
    assert main(["eval", str(bread_docs), str(q), "--parent", "window"]) == 2
    assert "--parent: parent 'window': a window needs its size in tokens" in capsys.readouterr().err
    assert main(["probe", str(bread_docs), *ARGS, "--levels", "2-2", "--parent", "page", "--json"]) == 0
    labels = [o["label"] for o in json.loads(capsys.readouterr().out)["strategies"]]
    assert labels == ["recursive(chunk_size=20,chunk_overlap=0)",
                      "recursive(chunk_size=20,chunk_overlap=0) · parent=page"]


def test_the_apps_search_keeps_each_strategys_parents_while_the_documents_stay(bread_docs, tmp_path, monkeypatch):
    """Questions typed letter by letter find the parents of the same chunks again: the search session keeps each
    strategy's resolver (and the spans it found) until a document changes."""
    import chunkscope.retrieval.parents as parents
    from chunkscope.progress import CancelToken
    from chunkscope.tui.headless.search import SearchSession
    from tests.test_store_ownership import Embedder as HashEmbedder

    found: list[tuple[str, int, int]] = []
    real = parents.parent_span

    def parent_span(doc, start, end, spec, counter=None):
        found.append((doc.path, start, end))
        return real(doc, start, end, spec, counter)

    monkeypatch.setattr(parents, "parent_span", parent_span)
    cfg = parse_config({"qdrant": {"path": str(tmp_path / "q")}, "retrieval": {"parent": "section"},
                        "query": {"k": 3, "threshold": 0.0, "search": "dense"}})
    small, smaller = (resolve_strategy(cfg, "recursive", {"chunk_size": n, "chunk_overlap": 0}) for n in (20, 12))
    session = SearchSession(load_docs(bread_docs), cfg)
    session._embedder = HashEmbedder()  # type: ignore[assignment]  # noqa: SLF001 - hashes, not the model
    try:
        for resolved in (small, smaller):
            session.index(resolved, lambda p: None, CancelToken())
        first = session.ask(small, "knead the dough")
        assert first.hits and all(isinstance(h, ParentHit) and h.parent == "section" for h in first.hits)
        assert len(found) == 3  # one span for each chunk found
        again = session.ask(small, "knead the dough")
        assert [(h.start, h.end) for h in again.hits] == [(h.start, h.end) for h in first.hits]
        assert len(found) == 3  # the same chunks: their parents were kept
        session.ask(smaller, "knead the dough")
        assert len(found) == 6  # another strategy's chunks have parents of their own
        session.invalidate()  # a document changed on disk: the spans found before may be wrong now
        session.ask(small, "knead the dough")
        assert len(found) == 9
    finally:
        session.close()


# --- the app: the hit inside its parent -----------------------------------------------------------------------


@pytest.mark.model
@pytest.mark.anyio
async def test_the_query_pane_shows_the_parent_with_its_chunk_highlighted(bread_docs, tmp_path, monkeypatch):
    pytest.importorskip("textual")
    from textual.widgets import OptionList

    from tests.pilot import make_app, open_question, wait_for

    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "cache"))
    cfg = parse_config({"retrieval": {"parent": "section"}, "query": {"k": 3, "threshold": 0.0}})
    app = make_app(bread_docs, config=cfg, strategy="recursive", chunk_size=20, chunk_overlap=0)
    async with app.run_test(size=(160, 50)) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.tree_result is not None, what="the tree")
        await open_question(pilot, ex, what="the query input")
        pane = ex.query_one("#query-pane")
        await pilot.press(*"how long do I knead the dough on a floured board", "enter")
        await wait_for(pilot, lambda: pane._answer is not None, timeout=240, what="the answer")  # noqa: SLF001
        first = pane._answer.hits[0]  # noqa: SLF001
        assert isinstance(first, ParentHit) and first.parent == "section"
        assert (first.start_line, first.end_line) == (9, 13) and first.children[0].start_line == 11
        prompt = pane.query_one("#hits", OptionList).get_option("hit-0").prompt
        assert "section lines 9-13 · found by #1 line 11" in prompt.plain
        # The chunk that found it is highlighted inside the parent's text.
        marked = [prompt.plain[s.start:s.end] for s in prompt.spans if "e5c07b" in str(s.style)]
        assert any(m.startswith("Knead the dough for ten minutes") for m in marked)
        assert "## Kneading" in prompt.plain
        # Enter opens the source at the chunk that found the parent.
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: ex.selected == first.children[0].chunk_index, what="the jump to its chunk")

"""The rerank and parent stages in the app: the query pane reranks with the configured reranker (a real rerank
endpoint on 127.0.0.1, the word-overlap server of `tests.test_rerank`) on the worker thread that searches, shows
each hit's search rank and score beside the reranker's, and the expectation line says ``reranked-out`` with
both ranks as ``eval`` does; the evaluation screen's session scores a configured parent beside the chunks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chunkscope.config.reader import parse_config, resolve_strategy
from chunkscope.document.loader import load_docs

from .test_rerank import QUESTION, docs, server  # noqa: F401 - pytest fixtures

pytest.importorskip("textual")

from textual.widgets import Input, OptionList  # noqa: E402

from tests.pilot import make_app, wait_for  # noqa: E402


@pytest.mark.model
@pytest.mark.anyio
async def test_the_query_pane_reranks_and_the_expectation_says_reranked_out(
        docs: Any, server: Any, tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "cache"))
    cfg = parse_config({"rerank": {"model": "http:overlap", "url": server.url},
                        "query": {"k": 3, "threshold": 0.0}})
    app = make_app(docs, config=cfg)
    async with app.run_test(size=(160, 50)) as pilot:
        ex = app.explorer
        await wait_for(pilot, lambda: ex.result is not None and ex.tree_result is not None, what="the tree")
        from chunkscope.tui.widgets.docs_tree import DocsTreeView

        tree = ex.query_one(DocsTreeView)
        tree.move_cursor(tree._leaves["baking.md"])  # noqa: SLF001 - the leaf of that path
        await wait_for(pilot, lambda: ex.result is not None and ex.result.doc.path == "baking.md"
                       and ex.result.complete, what="baking.md")
        ex.selected = 0
        await pilot.press("e")  # expect the baking page's chunk
        box = ex.query_one("#query-input", Input)
        box.focus()
        await pilot.press(*QUESTION, "enter")
        pane = ex.query_one("#query-pane")
        await wait_for(pilot, lambda: pane._answer is not None, timeout=240, what="the answer")  # noqa: SLF001
        answer = pane._answer  # noqa: SLF001
        # The reranker ordered the hits: each carries the search's own rank, shown beside the reranker's.
        assert server.requests and all(getattr(h, "search_rank", 0) for h in answer.hits)
        assert "baking.md" not in [h.path for h in answer.hits]
        prompt = pane.query_one("#hits", OptionList).get_option("hit-0").prompt.plain
        assert f"(search {answer.hits[0].search_rank}, " in prompt
        # The search found the baking page first; the reranker pushed it out: both ranks named, as eval says.
        v = answer.verdict
        assert v is not None and v.reason == "reranked-out" and v.rank == 7
        line = " ".join(str(ex.query_one("#expect-status").render()).split())
        assert "missed: reranked-out, rank 7" in line
        assert "search rank 1 (score " in line and "reranked to rank 7" in line


@pytest.mark.model
def test_the_evaluation_screens_session_scores_a_configured_parent_beside_the_chunks(
        docs: Any, tmp_path: Any, monkeypatch: Any) -> None:
    from chunkscope.evaluation.queries import Expect, QueryCase
    from chunkscope.progress import CancelToken
    from chunkscope.tui.headless.search import SearchSession

    monkeypatch.setenv("CHUNKSCOPE_CACHE", str(tmp_path / "cache"))
    from .test_rerank import DOCS

    root = tmp_path / "sections"
    root.mkdir()
    for name, text in DOCS.items():  # the probe asks level-2 headings
        (root / name).write_text("# Notes\n\n#" + text, encoding="utf-8")
    cfg = parse_config({"retrieval": {"parent": "page"}, "query": {"k": 3}})
    tree = load_docs(root, ignore=cfg.ignore)
    resolved = resolve_strategy(cfg, "recursive", {"chunk_size": 16, "chunk_overlap": 0})
    session = SearchSession(tree, cfg)
    try:
        cases = [QueryCase(QUESTION, Expect("baking.md", heading="Baking bread"), "q.jsonl", 1)]
        results, stopped = session.evaluate([resolved], cases, lambda p: None, CancelToken())
        assert not stopped
        assert [r.strategy_label for r in results] == [resolved.label, f"{resolved.label} · parent=page"]
        probed = session.probe([resolved], lambda p: None, CancelToken())
        assert [o.label for o in probed.outcomes] == [resolved.label, f"{resolved.label} · parent=page"]
        # The parent column's misses are listed too, with their reasons, under the strategy that cut the chunks.
        from chunkscope.tui.screens.evaluation import missed_questions

        missed = missed_questions(results, [resolved])
        assert {m.column for m in missed} <= {f"eval · {r.strategy_label}" for r in results}
        assert all(m.resolved is resolved and m.reason for m in missed)
        parent_level = results[1].per_query[0]
        assert parent_level.hit or any(m.column.endswith("parent=page") for m in missed)
    finally:
        session.close()


def test_the_app_refuses_a_reranker_it_cannot_name_before_it_opens(docs: Any, capsys: Any) -> None:
    from chunkscope.cli import main

    assert main(["tui", str(docs), "--rerank", "http:overlap"]) == 2
    assert capsys.readouterr().err == ("chunkscope: error: reranker 'http:overlap': it needs the rerank endpoint's "
                                       "base URL\n")
    assert main(["tui", str(docs), "--rerank", "st:x", "--rerank-depth", "0"]) == 2
    assert "--rerank-depth must be at least 1, got 0" in capsys.readouterr().err


def test_reranked_hits_show_both_ranks_and_plain_hits_one() -> None:
    from chunkscope.retrieval.rerankers.base import RerankedHit
    from chunkscope.retrieval.store import Hit
    from chunkscope.tui.widgets.query_text import hit_text

    hit = RerankedHit(rank=1, score=0.9, kept=True, path="a.md", start=0, end=4, start_line=1, end_line=1,
                      heading_path=["A"], citation="", url="", text="text", chunk_index=0, search_rank=4,
                      search_score=0.512, rerank_score=0.9)
    assert "(search 4, 0.512)" in hit_text(hit, False).plain
    plain = Hit(rank=1, score=0.9, kept=True, path="a.md", start=0, end=4, start_line=1, end_line=1,
                heading_path=["A"], citation="", url="", text="text", chunk_index=0)
    assert "(search" not in hit_text(plain, False).plain

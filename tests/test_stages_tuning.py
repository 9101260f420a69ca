"""The rerank and parent stages in ``sweep`` and ``tune``: every grid point scored without and with a real rerank
endpoint on 127.0.0.1 (the word-overlap server of `tests.test_rerank`), ``parent`` as a grid key and a tune
dimension, the misses' reasons in ``--json`` and the table, and the written preset keeping ``parent`` and saying
whether the reranker was on."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from chunkscope.cli import main

from .test_rerank import QUESTION, RerankServer, docs, server  # noqa: F401 - pytest fixtures

#: Scores the baking page first whatever the question: a reranker that helps where the search fails.
DOUGH_FIRST = lambda body: (200, json.dumps({"results": sorted(  # noqa: E731 - a one-line server rule
    ({"index": i, "relevance_score": float("dough" in d)} for i, d in enumerate(body["documents"])),
    key=lambda r: -r["relevance_score"])[: body["top_n"]]}))


def queries(tmp_path: Path, question: str = QUESTION) -> Path:
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"query": question, "expect": {"path": "baking.md", "heading": "Baking bread"}}) + "\n")
    return q


def rerank_args(srv: RerankServer) -> list[str]:
    return ["--rerank", "http:overlap", "--rerank-url", srv.url]


@pytest.mark.model
def test_sweep_scores_each_point_without_and_with_the_reranker_and_over_parents(
        docs: Any, server: Any, tmp_path: Any, capsys: Any) -> None:
    argv = ["sweep", str(docs), str(queries(tmp_path)), "--grid", "parent=none,section", "-k", "1",
            "--threshold", "-1", *rerank_args(server)]
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["grid"] == {"parent": ["none", "section"], "rerank": ["off", "on"]}
    assert data["rerank"] == "http:overlap"
    points = {(p["params"]["parent"], p["params"]["rerank"]): p for p in data["points"]}
    assert set(points) == {("none", "off"), ("none", "on"), ("section", "off"), ("section", "on")}
    for parent in ("none", "section"):
        off, on = points[(parent, "off")], points[(parent, "on")]
        assert off["metrics"]["hit@1"] == 1.0 and "misses" not in off or not off["misses"]
        # The search found the baking page first; the word-overlap reranker pushed it last: both ranks named.
        assert on["metrics"]["hit@1"] == 0.0 and on["reasons"]["reranked-out"] == 1
        miss = on["misses"][0]
        assert miss["reason"] == "reranked-out" and miss["rank"] == 7
        assert miss["detail"].startswith("search rank 1 (score ") and "reranked to rank 7" in miss["detail"]
    # A parent point is ranked by its parents; the chunks' own metrics stay beside them.
    assert "chunk_metrics" in points[("section", "off")] and "chunk_metrics" not in points[("none", "off")]
    # The preset names no reranker: its comment says the winner was scored without it.
    assert "rerank =" not in data["preset"] and "# scored without the reranker http:overlap" in data["preset"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "rerank" in out and "# scored without the reranker http:overlap: the search alone did better" in out
    preset = tomllib.loads(out[out.index("[presets.sweep-best]"):])["presets"]["sweep-best"]
    assert preset["parent"] == "none" and "rerank" not in preset


def test_sweep_refuses_a_parent_it_cannot_read_before_any_work(docs: Any, tmp_path: Any, capsys: Any) -> None:
    rc = main(["sweep", str(docs), str(queries(tmp_path)), "--grid", "parent=none,chapter"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("chunkscope: error: --grid 'parent=none,chapter': parent 'chapter'")
    assert err.count("\n") == 1
    # eval puts the parents beside the chunks already: a parent grid there is refused, saying what to give.
    rc = main(["eval", str(docs), str(queries(tmp_path)), "--grid", "parent=none,section"])
    assert rc == 2 and "give --parent KIND, not --grid parent=" in capsys.readouterr().err


@pytest.mark.model
def test_tune_searches_the_reranker_on_and_off_and_says_which_won_in_the_preset(
        docs: Any, server: Any, tmp_path: Any, capsys: Any) -> None:
    # The search ranks the knot page first for a bowline question; a reranker that knows the answer is the
    # baking page wins, and the written preset says it was on.
    server.reply = DOUGH_FIRST
    q = queries(tmp_path, "How do I tie a bowline?")
    argv = ["tune", str(docs), str(q), "-s", "section", "--prefix", "none", "--search", "dense", "-k", "1",
            "--parent", "none,section", "--threshold", "-1", *rerank_args(server)]
    assert main([*argv, "--json", "--write", "--write-best-so-far"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["parents"] == ["none", "section"] and data["rerank"] == "http:overlap"
    labels = {t["label"] for t in data["trials"]}
    assert {"section (defaults) · dense", "section (defaults) · dense · rerank",
            "section (defaults) · dense · parent=section",
            "section (defaults) · dense · rerank · parent=section"} <= labels
    # Every miss has its reason (on the whole tree, the search alone misses: the knot page outranks baking).
    whole = [t for t in data["trials"] if t["rung"] == data["best"]["rung"]]
    missed = [t for t in whole if t["missed"]]
    assert missed and all(not t["rerank"] and sum(t["reasons"].values()) == t["missed"] for t in missed)
    best = data["best"]
    assert best["rerank"] is True and best["parent"] == "none" and best["missed"] == 0
    text = (docs / "chunkscope.toml").read_text()
    assert "with the reranker http:overlap (keep [rerank] when you use this preset)" in text
    preset = tomllib.loads(text)["presets"]["tuned"]
    assert "rerank" not in preset and "parent" not in preset  # parent none is the default: not written


@pytest.mark.model
def test_tune_writes_the_parent_it_chose_and_eval_reads_it_back(
        docs: Any, server: Any, tmp_path: Any, capsys: Any) -> None:
    q = queries(tmp_path)
    rc = main(["tune", str(docs), str(q), "-s", "section", "--prefix", "none", "--search", "dense", "-k", "1",
               "--parent", "section", "--write", "--write-best-so-far", "--threshold", "-1"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "× parent section" in out
    preset = tomllib.loads((docs / "chunkscope.toml").read_text())["presets"]["tuned"]
    assert preset["parent"] == "section"
    assert main(["eval", str(docs), str(q), "-s", "tuned", "-k", "1", "--json", "--threshold", "-1"]) == 0
    levels = json.loads(capsys.readouterr().out)["results"]
    assert [r.get("parent") for r in levels] == [None, "section"]


def test_tune_refuses_a_parent_it_cannot_read(docs: Any, capsys: Any) -> None:
    rc = main(["tune", str(docs), "--parent", "none,chapter"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("chunkscope: error: --parent 'none,chapter': parent 'chapter'")


def test_the_candidate_s_preset_keeps_its_parent_and_its_label_names_each_stage() -> None:
    from chunkscope.evaluation.tune.space import Candidate, Chunking

    c = Candidate(Chunking("section", seed=True), "hybrid", rerank=True, parent="window:100")
    assert c.label == "section (defaults) · hybrid · rerank · parent=window:100"
    assert c.preset() == {"strategy": "section", "search": "hybrid", "parent": "window:100"}
    assert Candidate(Chunking("section", seed=True), "dense").preset() == {"strategy": "section", "search": "dense"}


def test_a_strategy_that_embeds_as_it_chunks_joins_the_default_space_when_configured(monkeypatch: Any) -> None:
    from chunkscope.chunking import registry
    from chunkscope.evaluation.tune.space import default_strategies

    heavy = [cls for cls in registry.list_strategies() if getattr(cls, "embeds_while_chunking", False)]
    if not heavy:
        pytest.skip("no registered strategy embeds as it chunks (the semantic strategy is not in this tree yet)")
    name = heavy[0].name
    assert name not in default_strategies()
    assert name in default_strategies([name])
    from chunkscope.cli.commands.tune import configured_strategies
    from chunkscope.config.reader import parse_config

    cfg: Any = parse_config({"presets": {"mine": {"strategy": name}}}, None)
    assert name in configured_strategies(cfg)

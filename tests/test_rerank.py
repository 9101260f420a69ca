"""The rerank stage: a real rerank endpoint on 127.0.0.1 scoring by word overlap, and a real CrossEncoder built
here from a tiny BERT config (nothing downloaded), reorder the search's candidates; a miss the reranker caused
is ``reranked-out`` with both ranks; a bad reply is one line naming the endpoint."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chunkscope.cli import main

from .loopback import LoopbackServer, Reply, Request

#: One page on the question's topic that shares one word with it, six elsewhere that share three ("how do i"):
#: the search finds the baking page first, the word-overlap reranker puts it last.
QUESTION = "How do I bake bread?"
DOCS = {
    "baking.md": "# Baking bread\n\nKnead the dough for ten minutes, let it rise until doubled, then put the loaf "
                 "in a hot oven until the crust is golden brown.\n",
    "fence.md": "# Fences\n\nHow do I paint a fence? Sand the boards and brush on two coats of stain.\n",
    "guitar.md": "# Guitars\n\nHow do I tune a guitar? Turn each peg until the string matches the tuner.\n",
    "tyre.md": "# Tyres\n\nHow do I change a tyre? Loosen the nuts, jack up the car and swap the wheel.\n",
    "knot.md": "# Knots\n\nHow do I tie a bowline? Make a loop, pass the end up through it and around.\n",
    "sail.md": "# Sailing\n\nHow do I tack a boat? Push the tiller away and let the boom swing across.\n",
    "taxes.md": "# Taxes\n\nHow do I file taxes? Keep every receipt and file before the April deadline.\n",
}


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def overlap(query: str, doc: str) -> float:
    """The server's rule: how many of the question's words the document holds."""
    return float(len(words(query) & words(doc)))


class RerankServer(LoopbackServer):
    """``with RerankServer() as srv: srv.url`` — POST /rerank scored by `overlap`, or by ``reply`` when set."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        #: Replaces the answer: (status, body) from the request's body.
        self.reply: Callable[[dict[str, Any]], tuple[int, str]] | None = None

    @property
    def url(self) -> str:
        return f"{self.origin}/v1"

    def answer(self, request: Request) -> Reply:
        body = request.body
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        if request.path != "/v1/rerank":
            status, text = 404, json.dumps({"error": "no such route"})
        elif self.reply is not None:
            status, text = self.reply(body)
        else:
            results = [{"index": i, "relevance_score": overlap(body["query"], d)}
                       for i, d in enumerate(body["documents"])]
            results.sort(key=lambda r: -r["relevance_score"])
            status, text = 200, json.dumps({"results": results[: body["top_n"]]})
        return Reply(status, text, {"Retry-After": "0"})


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture()
def server():
    with RerankServer() as srv:
        yield srv


def query_json(capsys, *argv: str) -> tuple[int, list[dict[str, Any]]]:
    """``query --json`` with no threshold: a bot reranks only what its threshold kept, and these pages are short."""
    rc = main(["query", *argv, "--threshold", "-1", "--json"])
    out = capsys.readouterr().out
    return rc, json.loads(out) if out else []


# --- the endpoint -------------------------------------------------------------------------------------------


@pytest.mark.model
def test_the_endpoint_reorders_the_search_by_its_rule_and_json_keeps_both_ranks(docs, server, capsys):
    rc, plain = query_json(capsys, str(docs), QUESTION, "-k", "7")
    assert rc == 0 and plain[0]["path"] == "baking.md" and "search_rank" not in plain[0]
    rc, hits = query_json(capsys, str(docs), QUESTION, "-k", "7", "--rerank", "http:overlap",
                          "--rerank-url", server.url)
    assert rc == 0
    (request,) = server.requests
    assert request["model"] == "overlap" and request["query"] == QUESTION and request["top_n"] == 7
    # The new order is the rule's (ties in the search's order); the search's ranks and scores are kept.
    by_search = {h["search_rank"]: h for h in hits}
    assert sorted(by_search) == list(range(1, 8))
    want = sorted(by_search.values(), key=lambda h: (-overlap(QUESTION, h["text"]), h["search_rank"]))
    assert [h["path"] for h in hits] == [h["path"] for h in want]
    assert [h["rank"] for h in hits] == list(range(1, 8))
    assert all(h["rerank_score"] == h["score"] == overlap(QUESTION, h["text"]) for h in hits)
    baking = next(h for h in hits if h["path"] == "baking.md")
    assert (baking["search_rank"], baking["rank"]) == (1, 7)
    assert baking["search_score"] == pytest.approx(plain[0]["score"])
    # -k cuts the reranked order, not the search's: the baking page is gone from the top 3.
    rc, top3 = query_json(capsys, str(docs), QUESTION, "-k", "3", "--rerank", "http:overlap",
                          "--rerank-url", server.url)
    assert [h["path"] for h in top3] == [h["path"] for h in hits[:3]]


@pytest.mark.model
def test_eval_compares_with_and_without_and_names_a_miss_reranked_out(docs, server, capsys, tmp_path):
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"query": QUESTION, "expect": {"path": "baking.md", "heading": "Baking bread"}}) + "\n")
    argv = ["eval", str(docs), str(q), "-k", "1,5", "--rerank", "http:overlap", "--rerank-url", server.url]
    assert main([*argv, "--json"]) == 0
    without, with_ = json.loads(capsys.readouterr().out)["results"]
    assert without["strategy_label"] == "default" and with_["strategy_label"] == "default · rerank=overlap"
    assert without["metrics"]["hit@5"] == 1.0 and without["per_query"][0]["reason"] is None
    assert with_["metrics"]["hit@5"] == 0.0 and with_["reasons"]["reranked-out"] == 1
    miss = with_["per_query"][0]
    assert miss["reason"] == "reranked-out" and miss["rank"] == 7
    assert (miss["expected"]["search_rank"], miss["expected"]["rank"]) == (1, 7)
    assert miss["detail"].startswith("search rank 1 (score ") and "reranked to rank 7 (score 1.000)" in miss["detail"]
    assert all("search_rank" in t and "search_score" in t for t in miss["top"])
    # The table shows both columns, and the miss's line names both ranks.
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())  # the miss's line wraps at 80 columns
    assert "┃ default ┃ default · rerank=overlap ┃" in out and "│ 1 reranked-out │" in out
    assert "reranked-out How do I bake bread? — search rank 1 (score " in out
    assert "reranked to rank 7 (score 1.000)" in out


@pytest.mark.parametrize("reply, problem", [
    (lambda b: (200, '{"results": [{"index": 0, "relevance_score": NaN}]}'),
     "the score of document 0 is not a finite number (nan)"),
    (lambda b: (200, json.dumps({"results": [{"index": len(b["documents"]), "relevance_score": 1.0}]})),
     "is out of range for"),
    (lambda b: (200, json.dumps({"results": [{"index": 0, "relevance_score": 1.0}] * 2})), "index 0 is given twice"),
    (lambda b: (200, json.dumps({"data": []})), "the reply is not a rerank response"),
    (lambda b: (500, json.dumps({"error": "model crashed"})), "still failing after 4 retries (HTTP 500): model crashed"),
])
@pytest.mark.model
def test_a_bad_reply_is_one_line_naming_the_endpoint(reply, problem, docs, server, capsys):
    main(["index", str(docs)])  # whichever case runs first on a worker would otherwise print the index's summary
    capsys.readouterr()
    server.reply = reply
    rc = main(["query", str(docs), QUESTION, "--rerank", "http:overlap", "--rerank-url", server.url])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"chunkscope: error: http:overlap at {server.url}/rerank: ") and problem in err


def test_a_reranker_that_cannot_be_named_fails_before_any_work(docs, capsys):
    assert main(["query", str(docs), QUESTION, "--rerank", "http:overlap"]) == 2
    assert capsys.readouterr().err == ("chunkscope: error: reranker 'http:overlap': it needs the rerank endpoint's "
                                       "base URL\n")
    assert main(["query", str(docs), QUESTION, "--rerank", "cohere"]) == 2
    assert "expected st:PATH" in capsys.readouterr().err
    assert main(["query", str(docs), QUESTION, "--rerank", "st:x", "--rerank-depth", "0"]) == 2
    assert capsys.readouterr().err == "chunkscope: error: --rerank-depth must be at least 1, got 0\n"
    (docs / "chunkscope.toml").write_text('[rerank]\nmodel = "st:x"\ndepth = 0\n')
    assert main(["query", str(docs), QUESTION]) == 2
    assert capsys.readouterr().err.endswith("chunkscope.toml: rerank.depth must be a positive integer\n")


@pytest.mark.model
def test_the_key_goes_only_where_the_trust_rules_allow(docs, server, capsys, monkeypatch):
    """A URL named only by the tree's chunkscope.toml gets no key; the same URL on the command line does."""
    monkeypatch.setenv("RERANK_API_KEY", "rk-secret")
    (docs / "chunkscope.toml").write_text(f'[rerank]\nmodel = "http:overlap"\nurl = "{server.url}"\ndepth = 5\n')
    rc, hits = query_json(capsys, str(docs), QUESTION, "-k", "7")
    assert rc == 0 and "authorization" not in {k.lower() for k in server.headers[-1]}
    assert len(server.requests[-1]["documents"]) == 5  # [rerank] depth: the first five are re-scored
    assert [h["rerank_score"] is None for h in hits] == [False] * 5 + [True] * 2
    rc, _ = query_json(capsys, str(docs), QUESTION, "--rerank-url", server.url)
    assert rc == 0 and server.headers[-1].get("Authorization") == "Bearer rk-secret"


# --- a real CrossEncoder, built here ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory) -> Path:
    """A tiny BERT cross-encoder with random weights and a vocabulary of the test's words, saved to a folder."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("cross-encoder")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set().union(*(words(t) for t in DOCS.values()),
                                                                                   words(QUESTION)))]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    transformers.BertTokenizer(str(folder / "vocab.txt")).save_pretrained(str(folder))
    torch.manual_seed(7)
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=128, num_labels=1)
    transformers.BertForSequenceClassification(config).save_pretrained(str(folder))
    return folder


@pytest.mark.model
def test_a_local_cross_encoder_reorders_by_its_own_scores(docs, cross_encoder, capsys):
    from sentence_transformers import CrossEncoder

    rc, hits = query_json(capsys, str(docs), QUESTION, "-k", "7", "--rerank", f"st:{cross_encoder}")
    assert rc == 0 and len(hits) == 7
    model = CrossEncoder(str(cross_encoder), device="cpu")
    expected = model.predict([(QUESTION, h["text"]) for h in hits])
    assert [h["rerank_score"] for h in hits] == pytest.approx([float(s) for s in expected], abs=1e-5)
    scores = [h["rerank_score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert sorted(h["search_rank"] for h in hits) == list(range(1, 8))
    # Random weights reorder the search, whatever they are: the test is only meaningful if they did.
    assert [h["search_rank"] for h in hits] != list(range(1, 8))


def test_a_folder_that_is_no_model_is_one_line(docs, tmp_path, capsys):
    from chunkscope.retrieval.rerank import make_reranker
    from chunkscope.retrieval.rerankers.base import RerankError, RerankSpec

    reranker = make_reranker(RerankSpec(f"st:{tmp_path}"))
    with pytest.raises(RerankError, match=r"^st:.*is not a model folder \(no config.json\)$"):
        reranker.scores("q", ["d"])


def test_scores_are_checked_and_kept_for_the_deeper_search():
    from chunkscope.retrieval.rerankers.base import Reranker, RerankError, RerankSpec
    from chunkscope.retrieval.store import Hit

    calls: list[list[str]] = []

    class Fixed(Reranker):
        def __init__(self, values: dict[str, float]) -> None:
            super().__init__(RerankSpec("st:fixed", depth=3))
            self.values = values

        def _score(self, query: str, documents) -> list[float]:
            calls.append(list(documents))
            return [self.values[d] for d in documents]

    def hit(rank: int, text: str, kept: bool = True) -> Hit:
        return Hit(rank, 1 - rank / 10, kept, f"{text}.md", 0, 1, 1, 1, [], "", "", text, 0)

    hits = [hit(1, "a"), hit(2, "b", kept=False), hit(3, "c"), hit(4, "d")]
    out = Fixed({"a": 0.1, "c": 0.9}).rerank("q", hits)
    # Kept candidates within the depth are re-scored; one under the threshold and one past the depth follow.
    assert [(h.text, h.rank, h.search_rank, h.rerank_score) for h in out] == [
        ("c", 1, 3, 0.9), ("a", 2, 1, 0.1), ("b", 3, 2, None), ("d", 4, 4, None)]
    r = Fixed({"a": 0.1, "c": 0.9})
    r.rerank("q", hits)
    r.rerank("q", hits[:3])  # the deeper or shallower search of one question asks nothing again
    assert calls == [["a", "c"], ["a", "c"]]
    with pytest.raises(RerankError, match=r"^st:fixed: a score is not a finite number \(inf\)$"):
        Fixed({"a": float("inf"), "c": 1.0}).rerank("q", hits)


@pytest.mark.model
def test_probe_compares_with_and_without_the_reranker(docs, server, capsys):
    assert main(["probe", str(docs), "--levels", "1-1", "--rerank", "http:overlap", "--rerank-url", server.url,
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [s["label"] for s in result["strategies"]] == ["default", "default · rerank=overlap"]
    # Every heading was asked of the endpoint once (a deeper search reuses the scores it gave).
    assert sorted(r["query"] for r in server.requests) == sorted(t.splitlines()[0][2:] for t in DOCS.values())

"""One score per mode: in hybrid search a chunk has one rank and one fused score, whether the app's result list,
its expectation line, ``query`` or ``eval`` shows it, and however deep each of them searched.

Reciprocal rank fusion scores a chunk from its ranks in the dense and the keyword ranking, so the fused score
depends on how deep each side is ranked: a chunk at keyword rank 71 gets that side's share only when the keyword
side is ranked past 71. The tree below has one such chunk, ``stripes.md``: first by meaning (its words are the
embedder's synonyms of "zebra"), after three pages of synonyms that are no near-duplicates of it, and last by
words (one "zebra" in five words, against 70 pages saying "zebra" in four).

The embedder is the real `Embedder` with a bag-of-words ``encode`` in which "stripes" means "zebra": the two
rankings can be told apart by hand, and torch is never loaded.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any, Sequence

import pytest

from chunkscope.config.reader import parse_config, resolve_strategy
from chunkscope.document.loader import load_docs
from chunkscope.evaluation.evaluate import ask_and_judge
from chunkscope.evaluation.queries import Expect, QueryCase
from chunkscope.evaluation.regions import Region
from chunkscope.evaluation.verdicts import DEFAULT_DEPTH, ChunkIndex
from chunkscope.progress import CancelToken

from .tuning_helpers import WordCountEmbedder, write_docs

QUESTION = "zebra"
STRIPES = "zoo/stripes.md"
HERD = 70  # pages saying "zebra" in 4 words: every one ahead of stripes.md in the keyword ranking
ZOO = {
    **{f"zoo/herd{i:02d}.md": f"zebra grass{i}a grass{i}b grass{i}c\n" for i in range(HERD)},
    # Only synonyms: ahead of stripes.md by meaning, absent from the keyword ranking.
    **{f"zoo/synonym{i}.md": f"stripes stripes stripes stripes horn{i}\n" for i in range(3)},
    STRIPES: "zebra stripes stripes gallop trot\n",
}


class SynonymEmbedder(WordCountEmbedder):
    """Each word hashed to one of 383 dimensions, except that "stripes" counts as "zebra"."""

    MODEL_ID = "test-zebra-synonyms"

    def word_dimension(self, word: str) -> int:
        word = "zebra" if word == "stripes" else word
        return zlib.crc32(word.encode()) % (self.dim - 1)


@pytest.fixture
def zoo(tmp_path: Path) -> Path:
    (tmp_path / "docs" / "zoo").mkdir(parents=True)
    return write_docs(tmp_path / "docs", ZOO)


def stripes_of(hits: Sequence[Any]) -> tuple[int, float]:
    """stripes.md's rank and score in a result list."""
    hit = next(h for h in hits if h.path == STRIPES)
    return hit.rank, hit.score


def test_the_expectation_line_and_the_result_list_give_a_chunk_one_rank_and_score(zoo: Path, tmp_path: Path) -> None:
    from chunkscope.tui.headless.search import Expected, SearchSession

    cfg = parse_config({"query": {"k": 20, "search": "hybrid"}})
    session = SearchSession(load_docs(zoo), cfg)
    session._embedder = SynonymEmbedder(tmp_path / "emb")  # noqa: SLF001 - the fake instead of the model
    resolved = resolve_strategy(cfg, None)
    try:
        assert not session.index(resolved, lambda p: None, CancelToken()).cancelled
        chunk = next(c for c in session.retriever(resolved).chunks if c.path == STRIPES)
        expected = Expected(chunk.path, chunk.start, chunk.end, chunk.index, chunk.start_line, resolved.label)

        # In the list (k = 20): the expectation line says the list's rank and score.
        listed = session.ask(resolved, QUESTION, expected=expected)
        rank, score = stripes_of(listed.hits)
        assert 5 < rank < 20, "the fixture should rank stripes.md past 5 and within 20"
        v = listed.verdict
        assert v is not None and v.hit and (v.rank, v.score) == (rank, score)
        # Its score has both sides' shares: first by meaning after the three synonym pages, last of 71 by words.
        assert score == pytest.approx(1 / (2 + 3) + 1 / (2 + HERD))

        # "This chapter only" (the list is then searched deeper and filtered): the same rank and score again.
        chapter = session.ask(resolved, QUESTION, chapter="zoo", expected=expected)
        assert stripes_of(chapter.hits) == (rank, score)
        assert chapter.verdict is not None and (chapter.verdict.rank, chapter.verdict.score) == (rank, score)

        # Below the list (k = 5): the expectation gives the rank and score the k = 20 list shows.
        cfg.query["k"] = 5
        short = session.ask(resolved, QUESTION, expected=expected)
        assert STRIPES not in {h.path for h in short.hits}
        assert [(h.path, h.score) for h in short.hits] == [(h.path, h.score) for h in listed.hits[:5]]
        v = short.verdict
        assert v is not None and not v.hit and v.reason == "below-k"
        assert (v.rank, v.score) == (rank, score)
        assert v.words == f"below-k, rank {rank}, score {score:.3f}"

        # Not reached at all (searched 2 deep): no rank and no score. Its cosine, which dense search would give,
        # is a score no hybrid list shows.
        r = session.retriever(resolved)
        index = ChunkIndex(r.chunks, lambda texts: r.embedder.embed(texts).vectors)
        region = Region(STRIPES, chunk.start, chunk.end, "stripes")
        unranked = ask_and_judge(r, QueryCase(QUESTION, Expect(STRIPES)), region, r.embedder.embed_query(QUESTION),
                                 [chunk], ks=(1,), miss_k=1, depth=2, index=index)
        assert (unranked.reason, unranked.rank, unranked.score) == ("below-k", None, None)
        assert unranked.expected is not None and unranked.expected.score is None
        assert unranked.detail == "not in the top 2"
    finally:
        session.close()


def test_every_list_up_to_the_judging_depth_is_one_fused_ranking() -> None:
    """The sides of a hybrid search are ranked as deep as any search that judges a miss (eval, probe, the app's
    expectation line and its chapter filter), so none of them fuses at another depth than a result list."""
    from chunkscope.retrieval.engine import FUSION_DEPTH
    from chunkscope.tui.headless.search import DEPTH

    assert FUSION_DEPTH >= max(DEFAULT_DEPTH, DEPTH)


def test_eval_and_query_give_a_chunk_one_score_in_hybrid_search(zoo: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from chunkscope.cli import main, retrieval_setup

    monkeypatch.setattr(retrieval_setup, "make_embedder",
                        lambda ctx, args, *a: SynonymEmbedder(tmp_path / "emb"))
    assert main(["query", str(zoo), QUESTION, "--search", "hybrid", "-k", "20", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    listed = next(h for h in hits if h["path"] == STRIPES)
    assert listed["rank"] > 5

    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"query": QUESTION, "expect": {"path": STRIPES}}) + "\n", encoding="utf-8")
    assert main(["eval", str(zoo), str(queries), "--search", "hybrid", "-k", "1,3", "--json"]) == 0
    (q,) = json.loads(capsys.readouterr().out)["results"][0]["per_query"]
    # A miss within the top 5: judged on stripes.md, searched deeper for its rank.
    assert q["reason"] == "below-k"
    assert (q["rank"], q["score"]) == (listed["rank"], listed["score"])
    assert (q["expected"]["rank"], q["expected"]["score"]) == (listed["rank"], listed["score"])

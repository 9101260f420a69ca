"""Evaluation: queries files, expected regions, exact metrics, miss reasons, and a small end-to-end run."""

from __future__ import annotations

import json
import math

import pytest

from chunkscope.chunking.model import Span
from chunkscope.chunking.params import Param
from chunkscope.chunking.strategy import Strategy
from chunkscope.document.loader import load_docs
from chunkscope.embedding.embedder import Embedder
from chunkscope.evaluation.evaluate import evaluate
from chunkscope.evaluation.metrics import mean_metrics, query_metrics
from chunkscope.evaluation.queries import Expect, QueriesError, QueryCase, load_queries
from chunkscope.evaluation.regions import resolve_region
from chunkscope.evaluation.verdicts import judge
from chunkscope.retrieval.store import Hit, Store
from chunkscope.chunking.strategies._common import sections, trim
from chunkscope.tokens import embed_tokenizer

LONG_TAIL = " ".join(f"filler{i} words" for i in range(300))  # well past 256 word pieces

DOCS = {
    "sensors.md": """# Sensors

## Lidar

A lidar measures distance by timing laser pulses reflected from surfaces.

## Cameras

Cameras capture images; stereo pairs recover depth by triangulation.

### Calibration

Intrinsic calibration estimates the focal length and the lens distortion.
""",
    "control.md": f"""# Control

## PID

A PID controller adds proportional, integral and derivative terms of the error.

## Long section

{LONG_TAIL}

The secret ingredient of model predictive control is a receding horizon optimisation.
""",
    "empty.md": "",
}


class SectionsForTest(Strategy):
    """One chunk per section down to ``level`` (a stand-in for the real strategies)."""

    name = "test-sections"
    parameters = (Param("level", int, 2, "deepest heading level that starts a chunk", 1, 6),)

    def spans(self, doc):
        out = []
        for s in sections(doc, self.params["level"]):
            a, b = trim(doc.text, s.start, s.end)
            if b > a:
                out.append(Span(a, b, {"section": s.heading.text if s.heading else ""}))
        return out


@pytest.fixture()
def tree(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return load_docs(root)


def case(path: str, **kw) -> QueryCase:
    return QueryCase("q", Expect(path, **kw), "queries.jsonl", 1)


# --- queries files --------------------------------------------------------------------------------------------


def test_load_jsonl(tmp_path):
    f = tmp_path / "q.jsonl"
    f.write_text(
        '{"query": "how does lidar work", "expect": {"path": "sensors.md", "heading": "Lidar"}}\n'
        "\n# a comment\n"
        '{"query": "pid", "expect": {"path": "control.md", "anchor": "#pid"}, "id": "q2"}\n'
        '{"query": "whole file", "expect": "sensors.md"}\n'
    )
    qs = load_queries(f)
    assert [q.line for q in qs] == [1, 4, 5]
    assert qs[0].expect == Expect("sensors.md", heading="Lidar")
    assert qs[1].expect.anchor == "pid" and qs[1].id == "q2"
    assert qs[2].expect == Expect("sensors.md")


@pytest.mark.parametrize("line, problem", [
    ('{"query": "x", "expect": {"path": "a.md"', "not valid JSON"),
    ('{"expect": {"path": "a.md"}}', '"query" is missing'),
    ('{"query": "x"}', '"expect" is missing'),
    ('{"query": "x", "expect": {"heading": "H"}}', '"expect.path" is missing'),
    ('{"query": "x", "expect": {"path": "a.md", "anchr": "h"}}', "unknown key 'anchr'"),
    ('["query", "x"]', "expected an object"),
    ('{"query": "x", "expect": {"path": "a.md", "heading": 3}}', '"expect.heading" must be'),
])
def test_malformed_jsonl_names_file_and_line(tmp_path, line, problem):
    f = tmp_path / "q.jsonl"
    f.write_text('{"query": "fine", "expect": {"path": "a.md"}}\n\n' + line + "\n")
    with pytest.raises(QueriesError) as err:
        load_queries(f)
    assert str(err.value).startswith(f"{f}:3: ") and problem in str(err.value)


def test_load_yaml_list_with_lines(tmp_path):
    f = tmp_path / "q.yaml"
    f.write_text("# queries\n- query: lidar\n  expect: {path: sensors.md, heading: Lidar}\n\n- query: pid\n  expect:\n    path: control.md\n")
    qs = load_queries(f)
    assert [(q.query, q.line) for q in qs] == [("lidar", 2), ("pid", 5)]
    f.write_text("- query: lidar\n  expect: {path: sensors.md}\n- query: 12\n  expect: {path: x.md}\n")
    with pytest.raises(QueriesError, match=r"q\.yaml:3: .*query"):
        load_queries(f)
    f.write_text("- query: [unclosed\n")
    with pytest.raises(QueriesError, match=r"q\.yaml:\d+: not valid YAML"):
        load_queries(f)


def test_missing_or_empty_queries_file(tmp_path):
    with pytest.raises(QueriesError, match="no such file"):
        load_queries(tmp_path / "nope.jsonl")
    (tmp_path / "e.jsonl").write_text("\n# nothing\n")
    with pytest.raises(QueriesError, match="no queries"):
        load_queries(tmp_path / "e.jsonl")


# --- regions --------------------------------------------------------------------------------------------------


def test_regions(tree):
    doc = tree.get("sensors.md")
    text = doc.text
    r = resolve_region(tree, case("sensors.md", heading="Cameras"))
    # The Cameras section runs to the end: its ### child is inside, no later ## heading.
    assert text[r.start:].startswith("## Cameras") and r.end == len(text)
    r = resolve_region(tree, case("sensors.md", heading="lidar"))  # case-insensitive
    assert text[r.start:r.end].startswith("## Lidar") and text[r.end:].startswith("## Cameras")
    r = resolve_region(tree, case("sensors.md", anchor="calibration"))
    assert text[r.start:].startswith("### Calibration")
    r = resolve_region(tree, case("sensors.md", text="timing laser pulses"))
    assert text[r.start:r.end] == "timing laser pulses"
    r = resolve_region(tree, case("sensors.md", text="recover   depth\nby"))  # whitespace-flexible fallback
    assert text[r.start:r.end] == "recover depth by"
    r = resolve_region(tree, case("sensors.md"))
    assert (r.start, r.end) == (0, len(text))


def test_heading_without_its_number(tmp_path):
    root = tmp_path / "numbered"
    root.mkdir()
    (root / "ch03.md").write_text("# Chapter 3: Motion\n\nIntro.\n\n## 3.2 Forward Kinematics\n\nFK text.\n")
    t = load_docs(root)
    text = t.get("ch03.md").text
    for name in ("Forward Kinematics", "forward kinematics", "3.2 Forward Kinematics", "32-forward-kinematics"):
        r = resolve_region(t, case("ch03.md", heading=name))
        assert text[r.start:r.end].startswith("## 3.2 Forward Kinematics"), name
    assert text[resolve_region(t, case("ch03.md", heading="Motion")).start:].startswith("# Chapter 3")


@pytest.mark.parametrize("kw, problem", [
    ({"text": "not in the file"}, "expected text 'not in the file' not found"),
    ({"heading": "Radar"}, "no heading 'Radar'"),
    ({"anchor": "radar"}, "no heading with anchor #radar"),
    ({"heading": "Lidar", "text": "stereo pairs"}, "not found in sensors.md › Lidar"),  # text outside the section
])
def test_unresolvable_expectation_names_the_line(tree, kw, problem):
    with pytest.raises(QueriesError) as err:
        resolve_region(tree, case("sensors.md", **kw))
    assert str(err.value).startswith("queries.jsonl:1: ") and problem in str(err.value)


def test_unknown_file_names_the_line(tree):
    with pytest.raises(QueriesError, match=r"queries.jsonl:1: expected file 'nope.md' is not in the docs tree"):
        resolve_region(tree, case("nope.md"))


# --- metrics --------------------------------------------------------------------------------------------------


def test_metrics_hand_computed():
    # Ranks 2 and 4 relevant, 3 relevant chunks exist.
    m = query_metrics([False, True, False, True, False], 3, ks=(1, 3, 5))
    assert m["hit@1"] == 0 and m["hit@3"] == 1 and m["hit@5"] == 1
    assert m["mrr"] == pytest.approx(0.5)
    assert m["recall@1"] == 0 and m["recall@3"] == pytest.approx(1 / 3) and m["recall@5"] == pytest.approx(2 / 3)
    dcg5 = 1 / math.log2(3) + 1 / math.log2(5)
    idcg5 = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert m["ndcg@5"] == pytest.approx(dcg5 / idcg5)
    assert m["ndcg@3"] == pytest.approx((1 / math.log2(3)) / idcg5)  # ideal of 3 at k=3 is the same three gains
    assert m["ndcg@1"] == 0


def test_metrics_edge_cases():
    perfect = query_metrics([True], 1, ks=(1, 5))
    assert all(v == 1.0 for v in perfect.values())
    nothing = query_metrics([False] * 5, 0, ks=(1, 5))
    assert all(v == 0.0 for v in nothing.values())
    late = query_metrics([False] * 9 + [True], 1, ks=(1, 3, 5, 10))
    assert late["mrr"] == pytest.approx(0.1) and late["hit@5"] == 0 and late["hit@10"] == 1
    assert late["ndcg@10"] == pytest.approx(1 / math.log2(11))
    # A relevant hit past max(ks) counts for nothing.
    assert query_metrics([False, False, True], 1, ks=(1, 2))["mrr"] == 0
    avg = mean_metrics([query_metrics([True], 1, (1,)), query_metrics([False, True], 1, (1,))])
    assert avg["hit@1"] == 0.5 and avg["mrr"] == pytest.approx(0.5)  # MRR over top max(ks)=1: 1 and 0


# --- miss reasons (synthetic rankings, real chunks) -----------------------------------------------------------


def hits_for(chunks, order, scores=None, threshold=None):
    out = []
    for rank, i in enumerate(order, 1):
        c = chunks[i]
        s = scores[rank - 1] if scores else 1.0 - rank / 100
        out.append(Hit(rank, s, threshold is None or s >= threshold, c.path, c.start, c.end, c.start_line, c.end_line,
                       list(c.heading_path), "", "", c.text, c.index))
    return out


def relevant_of(chunks, doc, region):
    from chunkscope.evaluation.regions import overlaps

    return [c for c in chunks if c.path == region.path and overlaps(doc.text, c.start, c.end, region)]


def test_reasons(tree):
    strat = SectionsForTest()
    doc = tree.get("sensors.md")
    chunks = strat.chunk(doc)  # level 2: the ### Calibration section stays inside ## Cameras
    assert [c.heading_path[-1] for c in chunks] == ["Sensors", "Lidar", "Cameras"]
    others = SectionsForTest().chunk(tree.get("control.md"))
    pool = chunks + others
    tok = embed_tokenizer()

    def run(q, order, scores=None, threshold=None, miss_k=3):
        region = resolve_region(tree, q)
        hits = hits_for(pool, order, scores, threshold)
        return judge(q, region, doc, hits, relevant_of(pool, doc, region), ks=(1, 3), miss_k=miss_k,
                     threshold=threshold, tokenizer=tok, depth=len(order))

    lidar = case("sensors.md", heading="Lidar")
    hit = run(lidar, [1, 0, 2])
    assert hit.hit and hit.reason is None and hit.rank == 1 and hit.metrics["mrr"] == 1
    below = run(lidar, [3, 4, 5, 0, 1])
    assert (below.reason, below.rank) == ("below-k", 5) and "rank 5" in below.detail
    assert below.metrics["hit@3"] == 0
    thr = run(lidar, [1, 0, 2], scores=[0.6, 0.5, 0.4], threshold=0.7)
    assert thr.reason == "threshold" and "0.600 < threshold 0.7" in thr.detail and thr.metrics["hit@1"] == 0
    # The whole file spans three chunks, none ranked within k.
    split = run(case("sensors.md"), [3, 4, 5, 0])
    assert (split.reason, split.relevant_chunks, split.rank) == ("split", 3, 4)
    # The expected passage sits past the truncation point of the one chunk holding it.
    doc_c = tree.get("control.md")
    q = case("control.md", text="receding horizon optimisation")
    region = resolve_region(tree, q)
    rel = relevant_of(pool, doc_c, region)
    assert len(rel) == 1 and rel[0].heading_path[-1] == "Long section"
    trunc = judge(q, region, doc_c, hits_for(pool, [0, 1, 2]), rel, ks=(1, 3), miss_k=3, tokenizer=tok)
    assert trunc.reason == "truncated" and "256" in trunc.detail
    # Truncation explains a miss before the threshold does: the rank of an unread passage is happenstance.
    long_idx = pool.index(rel[0])
    trunc2 = judge(q, region, doc_c, hits_for(pool, [long_idx, 0], scores=[0.1, 0.05], threshold=0.7), rel,
                   ks=(1, 3), miss_k=3, threshold=0.7, tokenizer=tok)
    assert trunc2.reason == "truncated" and trunc2.rank == 1
    # The same chunk expected from its first words is read by the model: below-k, not truncated.
    q2 = case("control.md", heading="Long section")
    r2 = resolve_region(tree, q2)
    assert judge(q2, r2, doc_c, hits_for(pool, [0, 1, 2]), relevant_of(pool, doc_c, r2), ks=(1, 3), miss_k=3,
                 tokenizer=tok).reason == "below-k"
    # Nothing overlaps: an empty file was never chunked.
    q3 = case("empty.md")
    r3 = resolve_region(tree, q3)
    absent = judge(q3, r3, tree.get("empty.md"), hits_for(pool, [0, 1]), [], ks=(1, 3), miss_k=3, tokenizer=tok)
    assert absent.reason == "absent" and absent.metrics["recall@3"] == 0


# --- end to end (real model) ----------------------------------------------------------------------------------


@pytest.mark.model
def test_evaluate_end_to_end(tmp_path, tree):
    queries_file = tmp_path / "q.jsonl"
    queries_file.write_text("\n".join(json.dumps(o) for o in [
        {"query": "How does a lidar measure distance?", "expect": {"path": "sensors.md", "heading": "Lidar"}},
        {"query": "estimating focal length and lens distortion", "expect": {"path": "sensors.md", "anchor": "calibration"}},
        {"query": "proportional integral derivative controller", "expect": {"path": "control.md", "heading": "PID"}},
        {"query": "receding horizon optimisation in model predictive control",
         "expect": {"path": "control.md", "text": "receding horizon optimisation"}},
    ]) + "\n")
    queries = load_queries(queries_file)
    emb = Embedder(cache_dir=tmp_path / "emb")
    store = Store(tree.root, path=tmp_path / "qdrant")
    progress = []
    try:
        results = evaluate(tree, [("h2", SectionsForTest(level=2)), ("h3", SectionsForTest(level=3))], queries,
                           ks=(1, 3), threshold=None, embedder=emb, store_factory=lambda label, s: store,
                           on_progress=lambda p: progress.append((p.phase.name, p.label, p.done, p.total)), miss_k=3)
    finally:
        store.close()
        emb.close()
    assert [r.strategy_label for r in results] == ["h2", "h3"]
    h2, h3 = results
    assert h2.chunks == 6 and h3.chunks == 7
    by_q = {q.query: q for q in h2.per_query}
    assert by_q["How does a lidar measure distance?"].rank == 1
    assert by_q["proportional integral derivative controller"].hit
    # The MPC sentence is beyond the model's 256 word pieces of its chunk: the model never saw it.
    mpc = by_q["receding horizon optimisation in model predictive control"]
    assert mpc.relevant_chunks == 1 and mpc.reason in ("truncated", None)
    assert (mpc.reason is None) == mpc.hit  # ranked within 3 of 6 chunks by chance, or explained as truncated
    for r in results:
        assert set(r.metrics) == {"hit@1", "hit@3", "mrr", "recall@1", "recall@3", "ndcg@1", "ndcg@3",
                                  "passage_recall@1", "passage_recall@3", "passage_precision@1",
                                  "passage_precision@3", "passage_iou@1", "passage_iou@3", "precision_omega"}
        assert all(0.0 <= v <= 1.0 for v in r.metrics.values())
        assert r.metrics["hit@1"] <= r.metrics["hit@3"]
        assert r.metrics["hit@1"] == pytest.approx(sum(q.metrics["hit@1"] for q in r.per_query) / 4)
    json.dumps([r.to_dict() for r in results])  # JSON-ready
    assert ("INDEX", "h2", 6, 6) in progress and ("EVALUATE", "h3", 4, 4) in progress


# --- miss verdicts with overlapping chunks --------------------------------------------------------------------

OVERLAP_DOC = """# Joints

## Revolute

A revolute joint turns about one axis, like an elbow or a knee, and its variable is an angle.

## Prismatic

A prismatic joint slides along one axis, like a linear stage, and its variable is a length.

## Spherical

A spherical joint turns about three axes, like a shoulder, with three angles as variables.

## Fixed

A fixed joint holds two links together and has no variable at all.
"""


class OverlappingSections(Strategy):
    """One chunk per ``##`` section, widened by ``overlap`` characters into each neighbour (overlap windows)."""

    name = "test-overlapping-sections"
    parameters = (Param("overlap", int, 30, "characters taken from each neighbour", 0, 200),)

    def spans(self, doc):
        n, out = self.params["overlap"], []
        for s in sections(doc, 2):
            a, b = trim(doc.text, s.start, s.end)
            if b > a:
                out.append(Span(max(a - n, 0), min(b + n, len(doc.text))))
        return out


@pytest.fixture()
def overlap_tree(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "joints.md").write_text(OVERLAP_DOC, encoding="utf-8")
    (root / "other.md").write_text("# Other\n\n" + "\n\n".join(f"## Topic {i}\n\nUnrelated text {i}."
                                                                 for i in range(8)) + "\n", encoding="utf-8")
    return load_docs(root)


def overlap_pool(tree):
    strat = OverlappingSections()
    chunks = strat.chunk(tree.get("joints.md"))
    others = SectionsForTest().chunk(tree.get("other.md"))
    return chunks, others


def section_chunk(chunks, heading):
    """The chunk made for a section: its heading line comes right after the overlap taken from the one before
    (so its heading path names that previous section)."""
    return next(c for c in chunks if c.text.find(f"## {heading}\n") in range(0, 40))


def test_a_section_whole_in_one_chunk_is_not_split_by_neighbours_touching_it(overlap_tree):
    chunks, others = overlap_pool(overlap_tree)
    doc = overlap_tree.get("joints.md")
    q = case("joints.md", heading="Prismatic")
    region = resolve_region(overlap_tree, q)
    holder = section_chunk(chunks, "Prismatic")
    rel = relevant_of(chunks, doc, region)
    assert len(rel) == 3 and holder in rel  # the overlap neighbours touch the section
    pool = chunks + others
    # A neighbour ranks 4th, the chunk holding the section whole 7th.
    neighbour = pool.index(chunks[holder.index - 1])
    order = [len(chunks) + i for i in range(3)] + [neighbour] + [len(chunks) + i for i in range(3, 5)] + [pool.index(holder)]
    res = judge(q, region, doc, hits_for(pool, order), rel, ks=(1, 3), miss_k=3, depth=len(order))
    assert not res.hit
    assert res.reason == "below-k", res.detail
    assert res.rank == 7 and res.score == pytest.approx(1.0 - 7 / 100)
    assert "rank 7" in res.detail and "split" not in res.detail


def test_the_threshold_verdict_names_the_holding_chunk_not_a_neighbour(overlap_tree):
    chunks, others = overlap_pool(overlap_tree)
    doc = overlap_tree.get("joints.md")
    q = case("joints.md", heading="Spherical")
    region = resolve_region(overlap_tree, q)
    rel = relevant_of(chunks, doc, region)
    holder = section_chunk(chunks, "Spherical")
    pool = chunks + others
    order = [pool.index(chunks[holder.index + 1]), pool.index(holder), len(chunks)]
    res = judge(q, region, doc, hits_for(pool, order, scores=[0.6, 0.5, 0.4], threshold=0.7), rel,
                ks=(1, 3), miss_k=3, threshold=0.7, depth=3)
    assert (res.reason, res.rank, res.score) == ("threshold", 2, 0.5), res.detail
    assert "0.500 < threshold 0.7" in res.detail


def test_a_holding_chunk_outside_the_search_is_below_k_without_a_rank(overlap_tree):
    chunks, others = overlap_pool(overlap_tree)
    doc = overlap_tree.get("joints.md")
    q = case("joints.md", heading="Prismatic")
    region = resolve_region(overlap_tree, q)
    pool = chunks + others
    neighbour = pool.index(chunks[section_chunk(chunks, "Prismatic").index - 1])
    order = [len(chunks) + i for i in range(4)] + [neighbour]
    res = judge(q, region, doc, hits_for(pool, order), relevant_of(chunks, doc, region), ks=(1, 3), miss_k=3,
                depth=5)
    assert (res.reason, res.rank, res.score) == ("below-k", None, None), res.detail
    assert "not in the top 5" in res.detail


def test_split_only_when_no_chunk_holds_the_passage_whole(overlap_tree):
    chunks, others = overlap_pool(overlap_tree)
    doc = overlap_tree.get("joints.md")
    # From the middle of one section to the middle of the next: past any chunk's overlap on both sides.
    q = case("joints.md", text="like a linear stage, and its variable is a length.\n\n## Spherical\n\nA spherical "
                               "joint turns about three axes")
    region = resolve_region(overlap_tree, q)
    rel = relevant_of(chunks, doc, region)
    assert not any(c.start <= region.start and region.end <= c.end for c in rel)
    pool = chunks + others
    order = [len(chunks) + i for i in range(4)] + [pool.index(rel[-1]), pool.index(rel[0])]
    res = judge(q, region, doc, hits_for(pool, order), rel, ks=(1, 3), miss_k=3, depth=len(order))
    assert res.reason == "split" and res.rank == 5
    assert f"spans {len(rel)} chunks" in res.detail and "none holds it whole" in res.detail


# --- passage-level metrics ------------------------------------------------------------------------------------


def test_the_passage_is_the_body_without_the_heading_line(tree):
    text = tree.get("sensors.md").text
    r = resolve_region(tree, case("sensors.md", heading="Lidar"))
    assert text[slice(*r.passage)] == "A lidar measures distance by timing laser pulses reflected from surfaces."
    r = resolve_region(tree, case("sensors.md", anchor="cameras"))
    body = text[slice(*r.passage)]  # its ### child belongs to the section's body
    assert body.startswith("Cameras capture images") and body.endswith("the lens distortion.")
    r = resolve_region(tree, case("sensors.md", text="recover   depth\nby"))
    assert text[slice(*r.passage)] == "recover depth by"
    r = resolve_region(tree, case("sensors.md"))
    assert text[slice(*r.passage)] == text.strip()


def test_passage_metrics_hand_computed(tree):
    doc = tree.get("sensors.md")
    chunks = SectionsForTest().chunk(doc)
    # "# Sensors" (9 characters), "## Lidar\n\n" + the 73-character passage (83), "## Cameras … distortion." (172)
    assert [len(c.text) for c in chunks] == [9, 83, 172]
    q = case("sensors.md", heading="Lidar")
    region = resolve_region(tree, q)
    rel = relevant_of(chunks, doc, region)
    m = judge(q, region, doc, hits_for(chunks, [2, 1, 0]), rel, ks=(1, 3), miss_k=3).metrics
    # The top 1 is the Cameras chunk: no passage in it.
    assert (m["passage_recall@1"], m["passage_precision@1"], m["passage_iou@1"]) == (0.0, 0.0, 0.0)
    # The top 3 are every chunk: 73 passage characters of 172 + 83 + 9 = 264 retrieved.
    assert m["passage_recall@3"] == 1.0
    assert m["passage_precision@3"] == pytest.approx(73 / 264)
    assert m["passage_iou@3"] == pytest.approx(73 / 264)
    # Only the Lidar chunk touches the passage: 73 of its 83 characters, whatever the ranking.
    assert m["precision_omega"] == pytest.approx(73 / 83)
    # A chunk under the threshold is not retrieved text.
    thr = judge(q, region, doc, hits_for(chunks, [1, 2], scores=[0.9, 0.5], threshold=0.7), rel, ks=(1, 3),
                miss_k=3, threshold=0.7).metrics
    assert thr["passage_precision@3"] == pytest.approx(73 / 83) and thr["passage_recall@3"] == 1.0


def test_passage_metrics_in_the_models_word_pieces(tree):
    from chunkscope.evaluation.metrics import passage_measure

    tok = embed_tokenizer()
    doc = tree.get("sensors.md")
    chunks = SectionsForTest().chunk(doc)
    q = case("sensors.md", heading="Lidar")
    region = resolve_region(tree, q)
    res = judge(q, region, doc, hits_for(chunks, [1]), relevant_of(chunks, doc, region), ks=(1,), miss_k=1,
                measure=passage_measure("tokens", tree, tok))

    def pieces(s: str) -> int:
        return tok.count(s) - 2  # without [CLS] and [SEP]

    passage = "A lidar measures distance by timing laser pulses reflected from surfaces."
    expected = pieces(passage) / pieces(chunks[1].text)
    assert res.metrics["passage_precision@1"] == pytest.approx(expected)
    assert res.metrics["precision_omega"] == pytest.approx(expected)
    assert expected != pytest.approx(73 / 83)  # a different count from characters
    with pytest.raises(ValueError, match="expected one of chars, tokens"):
        passage_measure("words")


# --- shadowed: the answer ranked below a copy of itself -------------------------------------------------------

PRISMATIC = "## Prismatic\n\nA prismatic joint slides along one axis, like a linear stage, and its variable is a length.\n"


@pytest.fixture()
def copy_tree(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "joints.md").write_text(OVERLAP_DOC, encoding="utf-8")
    (root / "copy.md").write_text("# Copy\n\n" + PRISMATIC, encoding="utf-8")
    (root / "other.md").write_text("# Other\n\n" + "\n\n".join(f"## Topic {i}\n\nUnrelated text {i}."
                                                                 for i in range(6)) + "\n", encoding="utf-8")
    return load_docs(root)


def prismatic_question(copy_tree):
    """``copy_tree`` cut by `SectionsForTest`: the pool of all its chunks, other.md's chunks, joints.md, the question
    for its Prismatic section and that section's region, the chunk holding it, and its twin in copy.md."""
    strat = SectionsForTest()
    joints, copy, other = (strat.chunk(copy_tree.get(p)) for p in ("joints.md", "copy.md", "other.md"))
    pool = joints + copy + other
    doc = copy_tree.get("joints.md")
    q = case("joints.md", heading="Prismatic")
    region = resolve_region(copy_tree, q)
    holder = next(c for c in joints if c.text.startswith("## Prismatic"))
    twin = next(c for c in copy if c.text.startswith("## Prismatic"))
    return pool, other, doc, q, region, holder, twin


def test_a_miss_outranked_by_a_copy_of_its_chunk_is_shadowed(copy_tree):
    pool, other, doc, q, region, holder, twin = prismatic_question(copy_tree)
    assert holder.text == twin.text
    o = [pool.index(c) for c in other]
    # The copy ranks 1st, the expected chunk 5th: its place within k went to its copy.
    res = judge(q, region, doc, hits_for(pool, [pool.index(twin), o[0], o[1], o[2], pool.index(holder)]),
                relevant_of(pool, doc, region), ks=(1, 3), miss_k=3, depth=5)
    assert res.reason == "shadowed", res.detail
    assert res.detail == "rank 5, score 0.950; a near-duplicate at copy.md:3 ranked 1 (same text)"
    assert (res.expected.rank, res.expected.where, res.expected_whole) == (5, f"joints.md:{holder.start_line}", True)
    assert [(c.rank, c.where, c.duplicate) for c in res.outranked_by] == [
        (1, "copy.md:3", True), (2, f"other.md:{other[0].start_line}", False),
        (3, f"other.md:{other[1].start_line}", False)]
    assert res.outranked_count == 4
    d = res.to_dict()
    assert d["expected"]["rank"] == 5 and d["expected"]["whole"] is True
    assert d["outranked_by"][0] == {"rank": 1, "score": 0.99, "path": "copy.md", "line": 3, "end_line": 5,
                                    "start": twin.start, "end": twin.end, "kept": True, "duplicate": True}
    # The copy ranked 4th, outside the places the expected chunk needed: an ordinary below-k miss, and the
    # chunks listed above it are the three within k.
    res = judge(q, region, doc, hits_for(pool, [o[0], o[1], o[2], pool.index(twin), pool.index(holder)]),
                relevant_of(pool, doc, region), ks=(1, 3), miss_k=3, depth=5)
    assert res.reason == "below-k" and [c.rank for c in res.outranked_by] == [1, 2, 3]
    assert not any(c.duplicate for c in res.outranked_by) and res.outranked_count == 4


def test_every_miss_names_its_chunk_and_what_outranked_it(overlap_tree):
    chunks, others = overlap_pool(overlap_tree)
    doc = overlap_tree.get("joints.md")
    pool = chunks + others
    # split: judged on the best-ranked part, which holds part of the passage.
    q = case("joints.md", text="like a linear stage, and its variable is a length.\n\n## Spherical\n\nA spherical "
                               "joint turns about three axes")
    region = resolve_region(overlap_tree, q)
    rel = relevant_of(chunks, doc, region)
    order = [len(chunks) + i for i in range(4)] + [pool.index(rel[-1]), pool.index(rel[0])]
    res = judge(q, region, doc, hits_for(pool, order), rel, ks=(1, 3), miss_k=3, depth=len(order))
    assert res.reason == "split" and res.expected_whole is False
    assert (res.expected.rank, res.expected.path, res.expected.start_line) == (5, "joints.md", rel[-1].start_line)
    assert [c.rank for c in res.outranked_by] == [1, 2, 3] and res.outranked_count == 4
    # absent: nothing to name.
    q3 = case("other.md", text="Unrelated text 3.")
    r3 = resolve_region(overlap_tree, q3)
    absent = judge(q3, r3, overlap_tree.get("other.md"), hits_for(pool, [0, 1]), [], ks=(1, 3), miss_k=3)
    assert absent.reason == "absent" and absent.expected is None and absent.outranked_by == []
    # A hit has nothing to explain.
    q4 = case("joints.md", heading="Fixed")
    r4 = resolve_region(overlap_tree, q4)
    found = judge(q4, r4, doc, hits_for(pool, [pool.index(section_chunk(chunks, "Fixed"))]),
                  relevant_of(chunks, doc, r4), ks=(1,), miss_k=1)
    assert found.hit and found.expected is None and "expected" not in found.to_dict()


OWNERSHIP = ("Ownership is a set of rules that govern how a program manages memory. Each value has a single owner, "
             "and when the owner goes out of scope the value is dropped and its memory is freed. Moving a value "
             "transfers ownership to a new variable, and the old variable can no longer be used. Borrowing lets "
             "code use a value through a reference without taking ownership of it.")


@pytest.fixture()
def ownership_tree(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "ownership.md").write_text(f"# Memory\n\n## Ownership\n\n{OWNERSHIP}\n", encoding="utf-8")
    # The same paragraph under a heading closer to the question: a near-duplicate, not the same text.
    (root / "appendix.md").write_text(f"# Appendix\n\n## Ownership rules\n\n{OWNERSHIP}\n", encoding="utf-8")
    (root / "collections.md").write_text(
        "# Collections\n\n## Vectors\n\nA vector stores a list of values of one type next to each other in memory.\n\n"
        "## Strings\n\nA string is a growable, UTF-8 encoded sequence of bytes owned by its variable.\n",
        encoding="utf-8")
    return load_docs(root)


@pytest.mark.model
def test_shadowed_by_a_near_duplicate_found_by_the_models_vectors(tmp_path, ownership_tree):
    queries = [QueryCase("ownership rules", Expect("ownership.md", heading="Ownership"), "q.jsonl", 1),
               QueryCase("a growable sequence of bytes", Expect("collections.md", heading="Vectors"), "q.jsonl", 2)]
    emb = Embedder(cache_dir=tmp_path / "emb")
    store = Store(ownership_tree.root, path=tmp_path / "qdrant")
    try:
        deep, shallow = (evaluate(ownership_tree, [("h2", SectionsForTest(level=2))], queries, ks=(1,), embedder=emb,
                                  store_factory=lambda label, s: store, miss_k=1, depth=depth)[0]
                         for depth in (10, 1))
        vectors = emb.embed([c.text for c in SectionsForTest(level=2).chunk(ownership_tree.get("appendix.md"))]
                            + [c.text for c in SectionsForTest(level=2).chunk(ownership_tree.get("ownership.md"))]).vectors
    finally:
        store.close()
        emb.close()
    own, vec = deep.per_query
    assert own.reason == "shadowed", own.detail
    twin = own.outranked_by[0]
    assert (twin.rank, twin.where, twin.duplicate) == (1, "appendix.md:3", True)
    cosine = float(vectors[1] @ vectors[3])  # the two "## Ownership…" chunks, as the model embeds them
    assert 0.95 <= cosine < 0.999 and twin.similarity == pytest.approx(cosine, abs=1e-5)
    assert own.detail == f"rank 2, score {own.score:.3f}; a near-duplicate at appendix.md:3 ranked 1 (cosine {cosine:.3f})"
    assert deep.reasons["shadowed"] == 1
    # An unrelated chunk above it is no duplicate: an ordinary miss, with what outranked it.
    assert vec.reason == "below-k" and vec.outranked_by and not any(c.duplicate for c in vec.outranked_by)
    assert vec.outranked_by[0].where == "collections.md:7"  # ## Strings
    assert vec.outranked_by[0].similarity is not None and vec.outranked_by[0].similarity < 0.95
    # Searched one deep, the expected chunk has no rank; its score still comes from its vector, and it is the
    # score Qdrant gave it in the deeper search.
    unranked = shallow.per_query[1]
    assert unranked.expected.rank is None and unranked.outranked_count is None
    assert unranked.expected.score == pytest.approx(vec.expected.score, abs=1e-4)
    assert f"not in the top 1 (score {unranked.expected.score:.3f})" == unranked.detail


def test_the_eval_report_names_each_misses_chunks_whole_at_80_columns(copy_tree, capsys, monkeypatch):
    from chunkscope.cli.commands.eval import print_eval
    from chunkscope.evaluation.evaluate import EvalResult
    from chunkscope.evaluation.metrics import mean_metrics

    monkeypatch.setenv("COLUMNS", "80")
    pool, other, doc, q, region, holder, twin = prismatic_question(copy_tree)
    order = [pool.index(twin)] + [pool.index(c) for c in other[:5]] + [pool.index(holder)]
    res = judge(q, region, doc, hits_for(pool, order), relevant_of(pool, doc, region), ks=(1, 5), miss_k=5, depth=7)
    print_eval([EvalResult("sections", mean_metrics([res.metrics]), [res], ks=(1, 5))], [1, 5])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines), out
    assert "shadowed" in out and "1 shadowed" in out  # the reason, and its count in the table
    assert f"expected  #7 0.930 joints.md:{holder.start_line} (holds the passage)" in out
    assert "#1 0.990 copy.md:3 (near-duplicate, same text)" in out
    # Every chunk that outranked it within k, each whole on a line, then how many more ranked above it.
    for c, rank in zip(other[:4], range(2, 6)):
        assert any(f"#{rank} {1 - rank / 100:.3f} other.md:{c.start_line}" in line for line in lines), rank
    assert "and 1 more" in out
    assert "passage metrics in characters; text shared by overlapping chunks counted once" in out


def test_sweep_ranks_by_passage_level_metrics():
    from chunkscope.evaluation.sweep import UnknownMetric, parse_metric

    # The metric's own cut-off is computed beside 1 and k, as for hit@N.
    assert parse_metric("passage_iou@3", 5) == ("passage_iou@3", (1, 3, 5))
    assert parse_metric("passage_recall@10", 5) == ("passage_recall@10", (1, 5, 10))
    assert parse_metric("passage_precision@1", 5) == ("passage_precision@1", (1, 5))
    assert parse_metric("precision_omega", 5) == ("precision_omega", (1, 5))
    for bad in ("passage_iou", "precision_omega@5", "passage_iou@0", "iou@5"):
        with pytest.raises(UnknownMetric, match="passage_iou@N or precision_omega"):
            parse_metric(bad, 5)


def test_a_miss_searches_deeper_until_its_holding_chunk_is_found(overlap_tree):
    from chunkscope.evaluation.evaluate import _needs_depth

    chunks, others = overlap_pool(overlap_tree)
    doc = overlap_tree.get("joints.md")
    region = resolve_region(overlap_tree, case("joints.md", heading="Prismatic"))
    rel = relevant_of(chunks, doc, region)
    holder = section_chunk(chunks, "Prismatic")
    neighbour = chunks[holder.index - 1]
    pool = chunks + others
    filler = [len(chunks) + i for i in range(4)]
    # Only an overlap neighbour in the shallow list: the holder's rank (the verdict's) is further down.
    assert _needs_depth(hits_for(pool, filler + [pool.index(neighbour)]), doc, region, rel, miss_k=3)
    # The holder is in the list: its rank is known.
    assert not _needs_depth(hits_for(pool, filler + [pool.index(holder)]), doc, region, rel, miss_k=3)
    # A hit needs no rank of a miss.
    assert not _needs_depth(hits_for(pool, [pool.index(neighbour)] + filler), doc, region, rel, miss_k=3)

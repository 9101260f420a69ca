"""Tuning: the label-free probe (questions, regions, a strategy that provably loses sections), the parameter sweep
(the known best wins, invalid points are skipped, every distinct text is embedded once, collections are cleaned
up), and the ``probe``/``sweep`` commands.

Most tests use `BowEmbedder`, the real `Embedder` (real SQLite cache, real stats) with a bag-of-words ``encode``:
its rankings can be worked out by hand, and torch is never loaded. The tests marked ``model`` use MiniLM.
"""

from __future__ import annotations

import json
import re
import tomllib

import pytest

from chunkscope.chunking.model import Span
from chunkscope.chunking.params import Param, ParamError
from chunkscope.chunking.registry import get_strategy
from chunkscope.chunking.strategy import Strategy
from chunkscope.cli.parsing import parse_grid, parse_levels
from chunkscope.config.reader import ResolvedStrategy, parse_config
from chunkscope.document.loader import load_docs
from chunkscope.progress import CancelToken
from chunkscope.embedding.embedder import Embedder
from chunkscope.evaluation.queries import Expect, QueryCase
from chunkscope.retrieval.ids import collection_name, owner_key
from chunkscope.retrieval.store import Store
from chunkscope.config.presets import toml_value
from chunkscope.evaluation.probe import ProbeSet, even_sample, probe, probe_query, probe_sections
from chunkscope.evaluation.sweep import grid_points, parse_metric, sweep

from .tuning_helpers import VERDICT_CONFIG, VERDICT_DOCS, BagOfWords, BowEmbedder, write_docs


SENSORS = """# Sensors

## Lidar

A laser scanner times reflected pulses to measure range.

## Cameras

Image sensors capture colour frames through a lens.

## Radar

Radio echoes reveal speed through the doppler shift.

## 7.1

A section whose heading is only a number.

## Empty

## Wheels

### Encoders

Optical encoders count ticks per revolution.
"""

PROBE_DOCS = {
    "sensors.md": SENSORS,
    # No heading: this file adds no question, but its one chunk outranks the Radar section for "Radar".
    "radar.md": "Radar radar radar.\n",
    "kinematics.md": "## 3.2 Forward Kinematics\n\nJoint angles give the pose of the tool.\n",
    "a.md": "## Summary\n\nThe first summary.\n",
    "b.md": "## Summary\n\nThe second summary.\n",
}

SPLITTER = '''
import re

def split(text):
    """Every heading line a chunk of its own, the text between headings another."""
    spans, pos = [], 0
    for m in re.finditer(r"(?m)^#{1,6} .*$", text):
        if text[pos:m.start()].strip():
            spans.append((pos, m.start()))
        spans.append((m.start(), m.end()))
        pos = m.end()
    if text[pos:].strip():
        spans.append((pos, len(text)))
    return spans
'''


@pytest.fixture()
def probe_tree(tmp_path):
    return load_docs(write_docs(tmp_path / "docs", PROBE_DOCS))


@pytest.fixture()
def splitter(tmp_path):
    f = tmp_path / "splitter.py"
    f.write_text(SPLITTER, encoding="utf-8")
    return f"{f}:split"


def line_of(text: str, line: str) -> int:
    return text.splitlines().index(line) + 1


# --- the probe set --------------------------------------------------------------------------------------------


def test_probe_query_strips_numbers():
    assert probe_query("3.2 Forward Kinematics") == "Forward Kinematics"
    assert probe_query("Chapter 3: Motion  Planning") == "Motion Planning"
    assert probe_query("Lidar") == "Lidar"
    assert probe_query("4.1") == "4.1"  # nothing to strip: a number-only heading stays as it is (and is skipped)


def test_probe_sections_questions_regions_and_skips(probe_tree):
    ps = probe_sections(probe_tree)
    assert [(s.path, s.query) for s in ps.sections] == [
        ("kinematics.md", "Forward Kinematics"), ("sensors.md", "Lidar"), ("sensors.md", "Cameras"),
        ("sensors.md", "Radar"), ("sensors.md", "Wheels"), ("sensors.md", "Encoders"),
    ]
    by_query = {s.query: s for s in ps.sections}
    # ## 7.1 is only a number, ## Empty has no body, the two "Summary" sections are ambiguous.
    assert ps.skipped == {"empty": 1, "number-only": 1, "duplicate": 2, "sampled-out": 0}
    assert ps.headings == 10  # every heading at levels 2-4, before skipping
    doc = probe_tree.get("sensors.md")
    lidar = by_query["Lidar"]
    assert lidar.line == line_of(SENSORS, "## Lidar") and lidar.where == f"sensors.md:{lidar.line}"
    # The body starts after the heading line: the heading is not part of the answer.
    assert doc.text[lidar.start:lidar.end].strip() == "A laser scanner times reflected pulses to measure range."
    assert doc.text[lidar.heading_start:].startswith("## Lidar")
    # A section whose own text is empty is answered by its subsections' text, not by their heading lines.
    wheels = by_query["Wheels"]
    assert doc.text[wheels.start:].startswith("Optical encoders")
    assert wheels.end == len(doc.text)
    assert by_query["Forward Kinematics"].heading == "3.2 Forward Kinematics"
    # The cases and regions evaluate() takes.
    case = by_query["Radar"].case()
    assert case.query == "Radar" and case.expect == Expect("sensors.md", heading="Radar")
    assert by_query["Radar"].region().start == by_query["Radar"].start


def test_probe_sections_levels_duplicates_and_sampling(probe_tree):
    assert [s.query for s in probe_sections(probe_tree, min_level=3, max_level=3).sections] == ["Encoders"]
    with_dups = probe_sections(probe_tree, unique=False)
    assert [s.path for s in with_dups.sections if s.query == "Summary"] == ["a.md", "b.md"]
    full = probe_sections(probe_tree).sections
    sample = probe_sections(probe_tree, max_queries=2)
    assert sample.sections == [full[1], full[4]]  # the middle of each half of the 6, the same every time
    assert sample.skipped["sampled-out"] == 4
    with pytest.raises(ParamError):
        probe_sections(probe_tree, min_level=4, max_level=2)


def test_even_sample_is_spread_and_deterministic():
    assert even_sample(range(10), 3) == [1, 5, 8]
    assert even_sample(range(10), 1) == [5]
    assert even_sample(range(4), 10) == [0, 1, 2, 3]
    assert even_sample(range(4), None) == [0, 1, 2, 3]
    assert even_sample(range(100), 50) == list(range(1, 100, 2))


def test_parse_levels():
    assert parse_levels("2-4") == (2, 4)
    assert parse_levels("3") == (3, 3)
    for bad in ("4-2", "0-3", "2-7", "two", ""):
        with pytest.raises(ParamError):
            parse_levels(bad)


# --- probe ----------------------------------------------------------------------------------------------------


def test_probe_finds_the_strategy_that_cuts_headings_off(probe_tree, splitter, store, tmp_path):
    emb = BowEmbedder(tmp_path / "emb")
    strategies = [("sections", get_strategy("section", overlap_tokens=0)),
                  ("split", get_strategy("custom", callable=splitter))]
    seen = []
    res = probe(probe_tree, strategies, k=1, embedder=emb, store=store,
                on_progress=lambda p: seen.append(((p.outer or p).done, (p.outer or p).total, p.phase.name)))
    assert not res.cancelled
    by_label = {o.label: o for o in res.outcomes}
    queries = [s.query for s in res.sections]
    sec, split = by_label["sections"], by_label["split"]
    # Whole sections: every heading finds its body at rank 1 but Radar, which the radar.md page outranks.
    assert dict(zip(queries, sec.hits)) == {q: q != "Radar" for q in queries}
    assert sec.metrics["hit@1"] == pytest.approx(5 / 6)
    assert sec.cut_off == [False] * 6
    # Headings cut off their text: the heading-only chunk is the best match and is no answer.
    assert split.hits == [False] * 6 and split.metrics["hit@1"] == 0.0 and split.metrics["mrr"] == 0.0
    assert split.cut_off == [True] * 6
    assert [s.query for s in res.missed_by_all()] == ["Radar"]
    assert {s.query for s in res.missed_only_by("split")} == set(queries) - {"Radar"}
    assert res.missed_only_by("sections") == []
    # Progress: strategies done of 2, ending at 2.
    assert seen[-1] == (2, 2, "PROBE") and {p for *_, p in seen} >= {"EMBED", "INDEX", "EVALUATE"}
    d = res.to_dict()
    json.dumps(d)
    assert d["queries"] == 6 and d["missed_by_all"] == [{"path": "sensors.md", "line": line_of(SENSORS, "## Radar"),
                                                          "heading": "Radar"}]
    radar = next(s for s in d["sections"] if s["query"] == "Radar")
    assert radar["results"]["split"]["cut_off"] is True and radar["results"]["sections"]["rank"] == 2
    assert [s["strategy"] for s in d["strategies"]] == ["section", "custom"]
    # The probe keeps each strategy's collection (as `index` would).
    assert len(store.collections()) == 2


def test_probe_with_nothing_to_ask(tmp_path, store):
    tree = load_docs(write_docs(tmp_path / "docs", {"x.md": "# Only a title\n\nText.\n"}))
    res = probe(tree, [("s", get_strategy("section"))], embedder=BowEmbedder(tmp_path / "emb"), store=store)
    assert res.outcomes == [] and res.sections == [] and res.missed_by_all() == []


@pytest.mark.model
def test_probe_with_the_real_model(probe_tree, splitter, store, tmp_path):
    emb = Embedder(cache_dir=tmp_path / "emb")
    res = probe(probe_tree, [("sections", get_strategy("section", overlap_tokens=0)),
                             ("split", get_strategy("custom", callable=splitter))], k=1, embedder=emb, store=store)
    sec, split = res.outcomes
    assert split.cut_off == [True] * 6 and sec.cut_off == [False] * 6
    assert sec.metrics["hit@1"] >= 4 / 6
    assert split.metrics["hit@1"] < sec.metrics["hit@1"]


# --- sweep ----------------------------------------------------------------------------------------------------


class LineWindows(Strategy):
    """Windows of ``lines`` lines; ``tag`` changes nothing (two values give identical chunks)."""

    name = "line-windows"
    parameters = (Param("lines", int, 2, "lines per chunk", 1, 100), Param("tag", str, "a", "no effect"),
                  Param("max_lines", int, 100, "lines must not exceed this", 1, 100))

    def validate(self) -> None:
        if self.params["lines"] > self.params["max_lines"]:
            raise ParamError(f"{self.name}: lines ({self.params['lines']}) must not exceed max_lines "
                             f"({self.params['max_lines']})")

    def spans(self, doc):
        starts = [0] + [m.end() for m in re.finditer(r"\n", doc.text)]
        starts = [s for s in starts if s < len(doc.text)] + [len(doc.text)]
        n = self.params["lines"]
        return [Span(starts[i], starts[min(i + n, len(starts) - 1)]) for i in range(0, len(starts) - 1, n)]


# window_tree (WINDOW_DOCS): three sections of exactly two lines. A bag-of-words query "lidar" scores a chunk
# 1/sqrt(its words): the section alone (8 words) 0.354, two sections (16 words) 0.25, the heading line alone 1.0.
# Each decoy page holds the heading word among 10 words: 0.316. So 2-line windows answer all three; 4-line windows
# only the last section (alone in its window); 1-line windows none (the heading line, no answer, always wins).


def test_sweep_picks_the_known_best(window_tree, store, tmp_path):
    emb = BowEmbedder(tmp_path / "emb")
    ps = probe_sections(window_tree)
    assert [s.query for s in ps.sections] == ["Lidar", "Cameras", "Radar"]
    res = sweep(window_tree, LineWindows, {"lines": [1, 2, 4]}, ps, k=1, embedder=emb, store=store)
    scores = {p.params["lines"]: p.metrics["hit@1"] for p in res.points}
    assert scores == {1: 0.0, 2: 1.0, 4: pytest.approx(1 / 3)}
    assert [p.params["lines"] for p in res.ranked()] == [2, 4, 1]
    assert res.best.params == {"lines": 2} and res.metric == "hit@1" and res.source == "probe"
    snippet = res.preset_toml()
    preset = tomllib.loads(snippet)["presets"]["sweep-best"]
    assert preset == {"strategy": "line-windows", "lines": 2}
    assert snippet.startswith("# best by hit@1 = 1.000 on 3 probe queries (lines=2)")
    # Chunk counts and storage: vectors × dim × 4 + payload.
    two = res.points[1]
    assert two.chunks == 6 and two.vector_bytes == 6 * 384 * 4 and two.payload_bytes > 0
    json.dumps(res.to_dict())


def test_sweep_on_labelled_queries_with_mrr(window_tree, store, tmp_path):
    cases = [QueryCase("cameras", Expect("sensors.md", text="image sensors capture colour frames"), "q.jsonl", 1)]
    res = sweep(window_tree, LineWindows, {"lines": [1, 2]}, cases, k=1, metric="mrr",
                embedder=BowEmbedder(tmp_path / "emb"), store=store)
    # The query's words are in the heading line; the expected text is the body line.
    assert {p.params["lines"]: p.metrics["mrr"] for p in res.points}[2] == 1.0
    assert res.best.params == {"lines": 2} and res.source == "queries" and res.queries == 1


def test_sweep_embeds_each_distinct_text_once_and_reuses_the_cache(window_tree, tmp_path):
    ps = probe_sections(window_tree)
    grid = {"lines": [2, 4], "tag": ["a", "b"]}  # the tag values give identical chunks
    emb = BowEmbedder(tmp_path / "emb")
    with Store(window_tree.root, path=tmp_path / "q1") as st:
        first = sweep(window_tree, LineWindows, grid, ps, embedder=emb, store=st)
    chunk_texts = [t for t in emb.encoded if t not in {"Lidar", "Cameras", "Radar"}]
    assert len(chunk_texts) == len(set(chunk_texts)) == first.distinct_texts  # no text went to the model twice
    assert first.embedded == first.distinct_texts
    by = {(p.params["lines"], p.params["tag"]): p for p in first.points}
    assert by[(2, "b")].embedded == 0 and by[(2, "b")].cached == by[(2, "a")].texts
    assert by[(4, "b")].embedded == 0 and by[(4, "b")].cached == by[(4, "a")].texts
    assert first.cached == by[(2, "a")].texts + by[(4, "a")].texts + by[(4, "a")].cached
    # Same sweep again, a new process's embedder on the same cache: nothing is embedded.
    emb2 = BowEmbedder(tmp_path / "emb")
    with Store(window_tree.root, path=tmp_path / "q2") as st:
        second = sweep(window_tree, LineWindows, grid, ps, embedder=emb2, store=st)
    assert second.embedded == 0 and emb2.encoded == []
    assert second.cached == sum(p.texts for p in second.points)
    assert [p.metrics for p in second.points] == [p.metrics for p in first.points]


def test_invalid_points_are_skipped_with_the_reason(window_tree, store, tmp_path):
    ps = probe_sections(window_tree)
    res = sweep(window_tree, "fixed", {"chunk_size": [8, 64], "chunk_overlap": [0, 16]}, ps,
                embedder=BowEmbedder(tmp_path / "emb"), store=store)
    status = {(p.params["chunk_size"], p.params["chunk_overlap"]): p.status for p in res.points}
    assert status == {(8, 0): "ok", (8, 16): "skipped", (64, 0): "ok", (64, 16): "ok"}
    skipped = res.skipped
    assert len(skipped) == 1 and skipped[0].reason == "fixed: chunk_overlap (16) must be below chunk_size (8)"
    assert skipped[0].to_dict()["reason"] == skipped[0].reason and "metrics" not in skipped[0].to_dict()
    assert all(p.status == "ok" for p in res.ranked()) and len(res.ranked()) == 3


def test_all_points_invalid_runs_nothing(window_tree, store, tmp_path):
    res = sweep(window_tree, LineWindows, {"lines": [5, 6], "max_lines": [4]}, probe_sections(window_tree),
                embedder=BowEmbedder(tmp_path / "emb"), store=store)
    assert [p.status for p in res.points] == ["skipped", "skipped"]
    assert res.best is None and res.preset_toml() == "" and store.collections() == []


def test_sweep_drops_only_its_own_collections(window_tree, store, tmp_path):
    emb = BowEmbedder(tmp_path / "emb")
    ps = probe_sections(window_tree)
    before = collection_name("line-windows", LineWindows(lines=2).params, emb.model_id, owner_key(window_tree.root))
    store.ensure_collection(before, emb.dim)  # a collection the user had before the sweep
    res = sweep(window_tree, LineWindows, {"lines": [1, 2, 4]}, ps, embedder=emb, store=store)
    assert store.collections() == [before]
    assert len(res.dropped) == 2 and before not in res.dropped
    kept = sweep(window_tree, LineWindows, {"lines": [1, 2, 4]}, ps, embedder=emb, store=store, keep=True)
    assert len(store.collections()) == 3 and kept.dropped == []


def test_sweep_progress_and_stop(window_tree, store, tmp_path):
    ps = probe_sections(window_tree)
    calls = []
    sweep(window_tree, LineWindows, {"lines": [1, 2, 50]}, ps, embedder=BowEmbedder(tmp_path / "emb"), store=store,
          on_progress=lambda p: calls.append(((p.outer or p).done, (p.outer or p).total, p.phase.name)))
    assert calls[-1] == (3, 3, "SWEEP")
    assert [d for d, _, _ in calls] == sorted(d for d, _, _ in calls)  # never goes back
    assert {p for *_, p in calls} >= {"CHUNK", "EMBED", "INDEX", "EVALUATE", "SWEEP"}
    assert all(t == 3 for _, t, _ in calls)

    cancel = CancelToken()

    def progress(p):
        if p.outer is None and p.done >= 1:  # the first configuration finished
            cancel.cancel()

    res = sweep(window_tree, LineWindows, {"lines": [1, 2, 4]}, ps, embedder=BowEmbedder(tmp_path / "emb"),
                store=store, on_progress=progress, cancel=cancel)
    assert res.cancelled
    assert [p.status for p in res.points] == ["ok", "pending", "pending"]
    assert store.collections() == []  # the stopped sweep cleaned up too


def test_storage_matches_the_stats_command(window_tree, store, tmp_path):
    from chunkscope.chunking.drivers import chunk_documents
    from chunkscope.cli.tree_figures import tree_stats_of

    res = sweep(window_tree, "fixed", {"chunk_size": [16], "chunk_overlap": [0]}, probe_sections(window_tree),
                embedder=BowEmbedder(tmp_path / "emb"), store=store)
    strategy = get_strategy("fixed", chunk_size=16, chunk_overlap=0)
    stats = tree_stats_of(window_tree, ResolvedStrategy("fixed", strategy, ""), chunk_documents(window_tree.documents, strategy), 384)
    point = res.points[0]
    assert (point.chunks, point.vector_bytes, point.payload_bytes) == (stats.chunks, stats.vector_bytes, stats.payload_bytes)


# --- grid, metric and preset ----------------------------------------------------------------------------------


def test_parse_grid_and_points():
    grid = parse_grid(["chunk_size=256, 384,512", "chunk-overlap=0,50,0"], "recursive")
    assert grid == {"chunk_size": [256, 384, 512], "chunk_overlap": [0, 50]}
    points = grid_points(grid)
    assert len(points) == 6 and points[0] == {"chunk_size": 256, "chunk_overlap": 0}
    assert points[1] == {"chunk_size": 256, "chunk_overlap": 50}
    seps = parse_grid(['separators=[["\\n\\n", "\\n"], ["\\n"]]'], "recursive")
    assert seps == {"separators": [["\n\n", "\n"], ["\n"]]}


@pytest.mark.parametrize("items, message", [
    (["chunk_size"], "--grid 'chunk_size': expected NAME=VALUE,VALUE,... e.g. chunk_size=256,384,512"),
    (["=256"], "--grid '=256': the parameter name is empty"),
    (["chunk_size=256,"], "--grid 'chunk_size=256,': empty value (expected chunk_size=VALUE,VALUE,...)"),
    (["chunk_sise=256"], "--grid 'chunk_sise=256': recursive has no parameter 'chunk_sise' "
                         "(parameters: chunk_size, chunk_overlap, encoding, separators, include_front_matter, "
                         "embed_prefix; and the pipeline's search, embedder, parent)"),
    (["chunk_size=256", "chunk_size=512"], "--grid 'chunk_size=512': chunk_size is given twice; list all its values in one --grid"),
    (["chunk_size=big"], "--grid 'chunk_size=big': recursive: chunk_size must be an integer, got 'big'"),
    (["chunk_size=0"], "--grid 'chunk_size=0': recursive: chunk_size must be in 1..100000, got 0"),
    ([], "sweep needs at least one --grid NAME=VALUE,VALUE,..."),
])
def test_parse_grid_errors_are_one_clear_line(items, message):
    with pytest.raises(ParamError) as err:
        parse_grid(items, "recursive")
    assert str(err.value) == message


def test_parse_metric():
    assert parse_metric(None, 5) == ("hit@5", (1, 5))
    assert parse_metric("MRR", 3) == ("mrr", (1, 3))
    assert parse_metric("ndcg@10", 5) == ("ndcg@10", (1, 5, 10))
    for bad in ("hit5", "precision@3", "hit@0"):
        # The core names the metric, never the command line's flag (the CLI words that: test_cli_* and below).
        with pytest.raises(ParamError, match=f"^metric '{bad}': expected mrr, hit@N"):
            parse_metric(bad, 5)


def test_preset_snippet_is_valid_config(window_tree, store, tmp_path):
    res = sweep(window_tree, "recursive", {"chunk_size": [64, 128]}, probe_sections(window_tree),
                base_params={"separators": ["\n\n", "\n", " "], "encoding": "o200k_base"},
                embedder=BowEmbedder(tmp_path / "emb"), store=store)
    cfg = parse_config(tomllib.loads(res.preset_toml("tuned")))
    preset = cfg.presets["tuned"]
    assert preset["strategy"] == "recursive" and preset["separators"] == ["\n\n", "\n", " "]
    assert preset["chunk_size"] == res.best.params["chunk_size"] and preset["encoding"] == "o200k_base"
    assert toml_value({"a b": [1, True, "x\"y"]}) == '{ "a b" = [1, true, "x\\"y"] }'


def test_sweep_rejects_bad_queries_before_work(window_tree, store, tmp_path):
    from chunkscope.evaluation.queries import QueriesError

    emb = BowEmbedder(tmp_path / "emb")
    with pytest.raises(QueriesError, match="no heading"):
        sweep(window_tree, LineWindows, {"lines": [1]}, ProbeSet([], 0, {}), embedder=emb, store=store)
    bad = [QueryCase("x", Expect("nope.md"), "q.jsonl", 7)]
    with pytest.raises(QueriesError, match=r"q\.jsonl:7: expected file 'nope\.md'"):
        sweep(window_tree, LineWindows, {"lines": [1]}, bad, embedder=emb, store=store)
    assert emb.encoded == []


# --- the commands ---------------------------------------------------------------------------------------------


@pytest.fixture()
def cli(monkeypatch, tmp_path):
    """`chunkscope.cli.main` with the bag-of-words embedder in place of the model."""
    from chunkscope.cli import main, retrieval_setup

    monkeypatch.setattr(retrieval_setup, "make_embedder", lambda ctx, args: BowEmbedder(tmp_path / "emb"))
    return main


def test_cli_sweep(cli, window_tree, capsys):
    rc = cli(["sweep", str(window_tree.root), "--probe", "-s", "fixed", "--grid", "chunk_size=8,64",
              "--grid", "chunk_overlap=0,16", "-k", "1"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "skipped (1):" in out and "chunk_overlap (16) must be below chunk_size (8)" in out
    assert "[presets.sweep-best]\nstrategy = \"fixed\"\nchunk_size = " in out
    assert "dropped the sweep's 3 collections" in out
    rc = cli(["sweep", str(window_tree.root), "--probe", "-s", "fixed", "--grid", "chunk_size=8,64",
              "--grid", "chunk_overlap=0", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["source"] == "probe" and len(data["points"]) == 2 and data["cache"]["embedded"] == 0


@pytest.mark.parametrize("argv, message", [
    (["--probe", "--grid", "chunk_size"], "chunkscope: error: --grid 'chunk_size': expected NAME=VALUE,VALUE,..."),
    (["--probe", "--grid", "chunk_size=x"], "chunkscope: error: --grid 'chunk_size=x': recursive: chunk_size must be"),
    (["--probe"], "chunkscope: error: sweep needs at least one --grid"),
    (["--grid", "chunk_size=8"], "chunkscope: error: sweep needs a QUERIES file, or --probe"),
    (["--probe", "--grid", "chunk_size=8", "--metric", "p@5"], "chunkscope: error: --metric 'p@5'"),
    (["--probe", "--grid", "chunk_size=8", "-p", "nope=1"], "chunkscope: error: recursive: unknown parameter 'nope'"),
])
def test_cli_sweep_usage_errors(cli, window_tree, capsys, argv, message):
    rc = cli(["sweep", str(window_tree.root), "-s", "recursive", *argv])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1


def test_cli_probe(cli, tmp_path, splitter, capsys):
    root = write_docs(tmp_path / "docs", PROBE_DOCS)
    (root / "chunkscope.toml").write_text(
        f'[presets.whole]\nstrategy = "section"\noverlap_tokens = 0\n\n'
        f'[presets.split]\nstrategy = "custom"\ncallable = "{splitter}"\n', encoding="utf-8")
    # The splitter is code the tree's config names: it runs only for a tree the user trusts.
    rc = cli(["probe", str(root), "-s", "whole", "-s", "split", "-k", "1", "--trust-tree-config"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    radar = line_of(SENSORS, "## Radar")
    assert "missed by every strategy (1)" in out and f"sensors.md:{radar}  Radar" in out
    assert "missed only by split (5)" in out and "heading cut off" in out
    assert "skipped 1 empty section, 1 number-only heading, 2 duplicate headings" in out
    rc = cli(["probe", str(root), "-s", "whole", "-s", "split", "-k", "1", "--json", "--max-queries", "3",
              "--trust-tree-config"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["queries"] == 3 and data["skipped"]["sampled-out"] == 3
    assert [s["cut_off"] for s in data["strategies"]] == [0, 3]


# --- the probe's words: "missed only by X" ----------------------------------------------------------------------


def hand_probe(hits_by_label: dict[str, list[bool]]):
    """A probe result built by hand: one section per column of hits, every strategy's verdicts given."""
    from chunkscope.evaluation.probe import ProbeOutcome, ProbeResult, ProbeSection

    n = len(next(iter(hits_by_label.values())))
    sections = [ProbeSection("a.md", 3 + 4 * i, 2, f"Topic {i}", f"Topic {i}", f"topic-{i}", 10 * i + 5, 10 * i + 9,
                             10 * i) for i in range(n)]
    outcomes = [ProbeOutcome(label, "section", {}, n, {"hit@1": sum(h) / n, "mrr": sum(h) / n}, list(h),
                             [1 if x else 9 for x in h], [None if x else "below-k" for x in h], [False] * n)
                for label, h in hits_by_label.items()]
    return ProbeResult(1, (1,), ProbeSet(sections, n, {}), outcomes)


THREE = {"A": [False, False, False, True], "B": [True, True, False, False], "C": [False, True, False, True]}


def test_missed_only_by_lists_what_every_other_strategy_found():
    res = hand_probe(THREE)
    # Topic 0: A and C both missed it, so it is not A's alone (nor C's); Topic 1: only A missed it.
    assert [s.heading for s in res.missed_only_by("A")] == ["Topic 1"]
    assert [s.heading for s in res.missed_only_by("B")] == ["Topic 3"]
    assert res.missed_only_by("C") == []
    assert [s.heading for s in res.missed_by_all()] == ["Topic 2"]


def test_cli_probe_lists_and_counts_only_the_misses_no_other_strategy_has(capsys, monkeypatch):
    from chunkscope.cli.commands import probe as probe_command

    monkeypatch.setenv("COLUMNS", "120")
    probe_command.print_probe(hand_probe(THREE))
    out = capsys.readouterr().out
    assert "missed only by A (1)" in out and "missed only by B (1)" in out and "missed only by C" not in out
    cells = [[c.strip() for c in re.split("[│┃]", line)[1:-1]] for line in out.splitlines() if line[:1] in ("│", "┃")]
    header, rows = cells[0], cells[1:]
    row = {r[0]: r for r in rows}
    only = header.index("only")
    assert [row[x][only] for x in "ABC"] == ["1", "1", "0"]
    assert "only: missed by this strategy and found by every other" in " ".join(out.split())


# --- compare counts what lint reports -------------------------------------------------------------------------


def test_compare_counts_every_lint_finding_duplicates_included(tmp_path, capsys):
    from chunkscope.cli import main

    same = "## Safety\n\nAlways stop the motors before touching the arm.\n"
    root = write_docs(tmp_path / "docs", {"a.md": "# A\n\n" + same, "b.md": "# B\n\n" + same})
    argv = ["compare", str(root), "-s", "section", "-p", "overlap_tokens=0", "-s", "recursive", "--json"]
    assert main(argv) == 0
    counts = json.loads(capsys.readouterr().out)["lint"]
    rules = set()
    for i, strategy in enumerate(["section", "recursive"]):
        params = ["-p", "overlap_tokens=0"] if strategy == "section" else []
        main(["lint", str(root), "-s", strategy, *params, "--format", "json"])
        findings = json.loads(capsys.readouterr().out)
        rules |= {f["rule"] for f in findings}
        errors = sum(1 for f in findings if f["severity"] == "error")
        assert counts[i] == {"errors": errors, "warnings": len(findings) - errors}, strategy
    assert "duplicate" in rules, "the fixture should give duplicate findings"


# --- one verdict everywhere: the CLI's probe, the app's probe and the app's expectation --------------------------

def test_the_app_and_the_cli_give_one_verdict_on_a_truncated_and_a_heading_cut_miss(monkeypatch, tmp_path, capsys):
    from chunkscope.cli import main, retrieval_setup
    from chunkscope.config.reader import load_config, resolve_strategy
    from chunkscope.tui.headless.search import SearchSession
    from chunkscope.tui.screens.evaluation import judged_expectation, missed_sections, missed_text

    root = write_docs(tmp_path / "docs", VERDICT_DOCS)
    (root / "chunkscope.toml").write_text(VERDICT_CONFIG, encoding="utf-8")
    monkeypatch.setattr(retrieval_setup, "make_embedder", lambda ctx, args: BagOfWords(tmp_path / "emb"))
    cli: dict[tuple[str, str], str] = {}  # (preset, heading) -> what the CLI's probe says
    for preset in ("long", "cut"):
        assert main(["probe", str(root), "-s", preset, "-k", "1", "--show", "0"]) == 0
        out = " ".join(capsys.readouterr().out.split())
        for heading in ("Deep sea", "Radar"):
            m = re.search(rf"guide\.md:\d+ {heading} — ([^;]+?, rank \d+, score \d\.\d{{3}})", out)
            if m:
                cli[(preset, heading)] = m.group(1)

    tree = load_docs(root)
    cfg = load_config(root)
    session = SearchSession(tree, cfg)
    session._embedder = BagOfWords(tmp_path / "emb")  # noqa: SLF001 - the fake instead of the model
    strategies = [resolve_strategy(cfg, "long"), resolve_strategy(cfg, "cut")]
    try:
        result = session.probe(strategies, lambda p: None, CancelToken())
        app_probe = {(m.resolved.label, m.heading): m for m in missed_sections(result, strategies)}
        truncated, cut = app_probe[("long", "Deep sea")], app_probe[("cut", "Radar")]
        assert truncated.words.startswith("truncated, rank ") and truncated.reason == "truncated"
        assert cut.words.startswith("heading cut off, rank ") and cut.reason == "heading cut off"
        for m in (truncated, cut):
            # The app's probe list says what the CLI's probe says, word for word.
            said = cli[(m.resolved.label, m.heading)]
            assert m.words == said and f"  {said}" in missed_text(m).plain
            # Enter on the miss expects its chunk for its question; asked, the expectation gets the same verdict.
            expected = judged_expectation(m, tree.get(m.path))
            verdict = session.ask(m.resolved, m.query, expected=expected).verdict
            assert not verdict.hit and verdict.rank == m.rank and verdict.words == said
    finally:
        session.close()

"""tune: the search space, the parts of the tree each rung reads, successive halving within a wall-time budget
(a clock the test moves), stopping with the best so far, the label-free and labelled scores, the question-free
parts read through lint, the preset written into a chunkscope.toml that keeps every other byte, and the command
end to end (``tune --write`` then ``eval -s tuned``).

Most tests use `BagOfWords`, the real `Embedder` (real SQLite cache, real stats) with a bag-of-words ``encode``:
its rankings can be worked out by hand, and torch is never loaded. The test marked ``model`` uses MiniLM.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from chunkscope.chunking.params import Param
from chunkscope.config.reader import ConfigError, load_config, parse_config, resolve_strategy
from chunkscope.document.loader import load_docs
from chunkscope.evaluation.queries import Expect, QueryCase, load_queries
from chunkscope.evaluation.regions import resolve_region
from chunkscope.progress import CancelToken, Phase
from chunkscope.retrieval.store import Store
from chunkscope.config.presets import PresetWriteError, replace_table, table_headers, write_preset
from chunkscope.evaluation.tune.plan import plan_parts
from chunkscope.evaluation.tune.score import Weights, measure_structure, weighted
from chunkscope.evaluation.tune.search import tune
from chunkscope.evaluation.tune.space import Candidate, Chunking, search_space

from .test_tuning import LineWindows
from .tuning_helpers import WINDOW_DOCS, BagOfWords, write_docs

REPO = Path(__file__).resolve().parents[1]


# WINDOW_DOCS: three sections of two lines each, and a decoy page per heading word. A bag-of-words question
# "lidar" scores a chunk 1/sqrt(its words): the section alone (8 words) 0.354 beats the decoy (the word among 10)
# at 0.316, while a section with 50 tokens of the next one appended (section's default overlap: 16+ words, 0.25)
# or the whole page (fixed 64-token windows) loses to it. So at k=1 only `section` without overlap answers every
# heading.
SMALL_SPACE = {"section": [[{"overlap_tokens": 0}, {"overlap_tokens": 50}]],
               "fixed": [[{"chunk_size": 64}], [{"chunk_overlap": 0}]]}


def many_docs(n: int = 27) -> dict[str, str]:
    """``n`` pages of two sections each, every heading and body with words of its own: 2n probe questions."""
    docs = {}
    for i in range(n):
        a, b = f"topic{i}alpha", f"topic{i}beta"
        docs[f"page-{i:02d}.md"] = (f"# Page {i}\n\n## {a.title()} notes\n\n{a} facts about item{i} and more "
                                   f"words{i} here\n\n## {b.title()} notes\n\n{b} details of part{i} with "
                                   f"extra{i} text\n")
    return docs


# --- the space and the parts of the tree ------------------------------------------------------------------------


def test_search_space_puts_the_seeds_first_and_every_combination_once():
    space = search_space(["section", "fixed"], ("none", "breadcrumb"), SMALL_SPACE)
    assert space[:2] == [Chunking("section", seed=True), Chunking("fixed", seed=True)]
    rest = space[2:]
    assert len(rest) == len(set(rest)) == 2 * 2 + 1 * 2  # (2 overlaps + 1 size) x 2 prefixes
    assert Chunking("section", (("overlap_tokens", 0), ("embed_prefix", "breadcrumb"))) in rest
    # The labels name what was chosen; the defaults with no prefix are the seed, named so.
    assert space[0].label == "section (defaults)"
    bc = next(c for c in rest if c.strategy == "fixed" and c.param_dict["embed_prefix"] == "breadcrumb")
    assert bc.label == "fixed chunk_size=64 chunk_overlap=0 prefix=breadcrumb"
    assert Candidate(bc, "hybrid").preset() == {"strategy": "fixed", "chunk_size": 64, "chunk_overlap": 0,
                                                 "embed_prefix": "breadcrumb", "search": "hybrid"}


def test_the_default_space_covers_every_builtin_strategy_and_prefix():
    space = search_space()
    names = {c.strategy for c in space}
    assert names == {"recursive", "fixed", "section", "section-sentence", "header-window", "content-type"}
    assert {c.param_dict.get("embed_prefix") for c in space if not c.seed} == {"none", "title", "heading", "breadcrumb"}
    # Settings that move several parameters together show the first of them in the label.
    hw = next(c for c in space if c.strategy == "header-window" and c.param_dict.get("max_words") == 150
              and c.param_dict["embed_prefix"] == "title")
    assert hw.label == "header-window max_words=150 prefix=title"
    assert hw.param_dict["target_words"] == 120  # the preset has them all


def test_parts_of_the_tree_are_nested_spread_and_hold_enough_questions(tmp_path):
    tree = load_docs(write_docs(tmp_path / "docs", many_docs(27)))
    per_doc = {d.path: 2 for d in tree.documents}
    parts = plan_parts(tree, per_doc)
    # A ninth of the tree would hold 6 questions (< 16): grown to 8 pages it is not under half of the third,
    # so it is left out; the third (9 pages, 18 questions) and the whole tree remain.
    assert [len(p) for p in parts] == [9, 27]
    assert set(parts[0]) < set(parts[1])
    assert parts == plan_parts(tree, per_doc)  # the same on every run
    names = sorted(parts[0])
    assert names != [f"page-{i:02d}.md" for i in range(9)]  # spread over the tree, not its first pages
    # Labelled questions: the pages they expect are always in every part.
    labelled = plan_parts(tree, None, ["page-26.md"])
    assert all("page-26.md" in p for p in labelled) and len(labelled) == 3


# --- the search -------------------------------------------------------------------------------------------------


def test_label_free_tune_finds_the_configuration_that_keeps_each_heading_with_its_body(window_tree, store, tmp_path):
    emb = BagOfWords(tmp_path / "emb")
    res = tune(window_tree, strategies=["section", "fixed"], prefixes=("none",), modes=("dense",), k=1,
               space=SMALL_SPACE, embedder=emb, store=store)
    assert res.source == "probe" and len(res.rungs) == 1 and res.queries == 3
    best = res.best
    assert best.candidate == Candidate(Chunking("section", (("overlap_tokens", 0), ("embed_prefix", "none"))), "dense")
    assert best.parts["probe_hit"] == 1.0
    by_label = {t.label: t for t in res.on_rung(0)}
    # Its overlap drowns every heading but the last (nothing follows Radar to append).
    assert by_label["section (defaults) · dense"].parts["probe_hit"] == pytest.approx(1 / 3)
    assert by_label["fixed (defaults) · dense"].parts["probe_hit"] == 0.0
    # The score is the weighted mean of the parts, as the weights say.
    w = res.weights
    assert best.score == pytest.approx(weighted(best.parts, w))
    assert set(w) == {"probe_hit", "probe_mrr", "read", "limits", "lint", "graph"}
    # The evidence: the winner beside the best seed, on the same questions.
    mine, seed = res.comparison()
    assert mine is best and seed.candidate.chunking.seed and seed.questions == best.questions
    assert res.preset() == {"strategy": "section", "overlap_tokens": 0, "embed_prefix": "none", "search": "dense"}
    json.dumps(res.to_dict())


class TunableWindows(LineWindows):
    """A strategy another package registers: it declares what tune tries, and the tuner is not edited for it.
    One-line windows by default (no heading with its body: the probe answers nothing); two-line windows answer
    every question of the window corpus, four-line ones only the last."""

    name = "tunable-windows"
    parameters = (Param("lines", int, 1, "lines per chunk", 1, 100), Param("tag", str, "a", "no effect"),
                  Param("max_lines", int, 100, "lines must not exceed this", 1, 100))
    search_space = {"lines": (2, 4)}


def test_a_plugin_strategy_is_tuned_from_its_own_search_space(monkeypatch, window_tree, store, tmp_path):
    from chunkscope.chunking import registry

    monkeypatch.setitem(registry._BUILTIN, "tunable-windows", "tests.test_tune:TunableWindows")  # noqa: SLF001
    mine = [c for c in search_space(prefixes=("none",)) if c.strategy == "tunable-windows"]
    assert [c.param_dict.get("lines") for c in mine] == [None, 2, 4]  # the seed, then its own values
    res = tune(window_tree, strategies=["tunable-windows"], prefixes=("none",), modes=("dense",), k=1,
               embedder=BagOfWords(tmp_path / "emb"), store=store)
    assert res.best.candidate.chunking.param_dict == {"lines": 2, "embed_prefix": "none"}
    assert res.best.parts["probe_hit"] == 1.0 and res.no_answer == ""


def test_a_seed_at_its_defaults_winning_is_no_answer(window_tree, store, tmp_path):
    # overlap_tokens=50 is section's default: the only other chunking is the seed itself, and the seed (tried
    # first) wins the tie.
    res = tune(window_tree, strategies=["section"], prefixes=("none",), modes=("dense",), k=1,
               space={"section": [[{"overlap_tokens": 50}]]}, embedder=BagOfWords(tmp_path / "emb"), store=store)
    assert res.best.candidate.chunking.seed and not res.ended_early
    assert res.no_answer == "the winner is section at its defaults: tuning found nothing better"
    assert res.comparison() is None  # never the winner against itself
    assert res.describe_best().startswith("best so far by chunkscope tune (label-free), not an answer: the winner "
                                          "is section at its defaults")
    assert res.to_dict()["no_answer"] == res.no_answer


def test_a_budget_that_ends_before_the_whole_tree_is_no_answer_and_says_what_the_tree_needs(tmp_path, store):
    tree = load_docs(write_docs(tmp_path / "docs", many_docs(27)))
    space = {"fixed": [[{"chunk_size": n} for n in (6, 12, 24, 48, 96)], [{"chunk_overlap": 0}]]}
    now = [0.0]

    def each_configuration_takes_ten_seconds(p):
        if p.phase is Phase.TUNE and p.outer is None and p.done > 0:
            now[0] += 10.0

    res = tune(tree, strategies=["fixed"], prefixes=("none",), modes=("dense",), space=space, budget=15.0,
               embedder=BagOfWords(tmp_path / "emb"), store=store, clock=lambda: now[0],
               on_progress=each_configuration_takes_ten_seconds)
    first, whole = res.rungs
    # The first rung's share (7.5 s) ends after the seed; the seed alone goes on, and wins the whole tree.
    assert (first.planned, first.measured, first.stopped) == (6, 1, "budget")
    assert res.best.rung == 1 and res.ended_early
    assert res.no_answer == ("the budget ended before the best configurations were measured on the whole tree "
                             f"(1 of 6 configurations measured on {first.fraction:.0%} of the tree)")
    # 10 s a configuration: six on the first part is 60 s, within half the budget (two rungs): 120 s; the whole
    # tree then measures the best third and the seed (3), 90 s in all by the end of the second half.
    assert res.needed_budget() == pytest.approx(120.0)
    assert res.to_dict()["needed_budget"] == 120.0


def test_successive_halving_promotes_the_best_third_to_the_whole_tree(tmp_path, store):
    tree = load_docs(write_docs(tmp_path / "docs", many_docs(27)))
    space = {"fixed": [[{"chunk_size": n} for n in (6, 12, 24, 48, 96)], [{"chunk_overlap": 0}]]}
    res = tune(tree, strategies=["fixed"], prefixes=("none",), modes=("dense",), space=space,
               embedder=BagOfWords(tmp_path / "emb"), store=store)
    first, whole = res.rungs
    assert first.fraction < 0.5 and whole.whole and first.questions == 18 and whole.questions == 54
    assert (first.planned, first.measured) == (6, 6)  # the seed and five sizes, on a third of the tree
    ranked = res.on_rung(0)
    top = [t.candidate for t in ranked[:2]]  # ceil(6 / 3)
    seed = next(t.candidate for t in ranked if t.candidate.chunking.seed)
    # The best seed goes on as the reference, second, when it did not make the cut.
    expected = top if seed in top else [top[0], seed, top[1]]
    assert [t.candidate for t in res.trials if t.rung == 1] == expected
    assert res.best.rung == 1 and res.best.candidate in expected
    assert res.kept  # the winner's whole-tree collection stays; the others are gone
    assert store.collections() == [res.kept]


def test_a_second_run_embeds_nothing(window_tree, tmp_path):
    kw = {"strategies": ["section", "fixed"], "prefixes": ("none", "title"), "modes": ("dense",),
          "space": SMALL_SPACE, "k": 1}
    with Store(window_tree.root, path=tmp_path / "q1") as st:
        first = tune(window_tree, embedder=BagOfWords(tmp_path / "emb"), store=st, **kw)
    assert first.embedded > 0
    again = BagOfWords(tmp_path / "emb")
    with Store(window_tree.root, path=tmp_path / "q2") as st:
        second = tune(window_tree, embedder=again, store=st, **kw)
    assert second.embedded == 0 and again.encoded == []
    assert [(t.label, t.score) for t in second.trials] == [(t.label, t.score) for t in first.trials]


def test_the_budget_is_shared_between_the_rungs(tmp_path, store):
    tree = load_docs(write_docs(tmp_path / "docs", many_docs(27)))
    space = {"fixed": [[{"chunk_size": n} for n in (6, 12, 24, 48, 96)], [{"chunk_overlap": 0}]]}
    now = [0.0]

    def each_configuration_takes_ten_seconds(p):
        if p.phase is Phase.TUNE and p.outer is None and p.done > 0:
            now[0] += 10.0

    res = tune(tree, strategies=["fixed"], prefixes=("none",), modes=("dense",), space=space, budget=35.0,
               embedder=BagOfWords(tmp_path / "emb"), store=store, clock=lambda: now[0],
               on_progress=each_configuration_takes_ten_seconds)
    first, whole = res.rungs
    # The first rung has half the budget (17.5 s): two configurations (0-10 s, 10-20 s), then its share is spent.
    assert (first.measured, first.stopped) == (2, "budget") and first.planned == 6
    # The whole tree gets what is left: the best of those two (and the seed, if that is not it) by 40 s.
    assert 1 <= whole.planned <= 2 and whole.measured == whole.planned
    assert res.budget_spent and not res.cancelled
    assert res.best.rung == 1 and res.best.candidate == res.on_rung(0)[0].candidate


def test_the_budget_ends_the_search_with_the_best_so_far(window_tree, store, tmp_path):
    now = [0.0]

    def each_configuration_takes_ten_seconds(p):
        if p.phase is Phase.TUNE and p.outer is None and p.done > 0:
            now[0] += 10.0

    res = tune(window_tree, strategies=["section", "fixed"], prefixes=("none",), modes=("dense",), k=1,
               space=SMALL_SPACE, budget=25.0, embedder=BagOfWords(tmp_path / "emb"), store=store,
               clock=lambda: now[0], on_progress=each_configuration_takes_ten_seconds)
    (rung,) = res.rungs
    # Five configurations; three start before 25 s (0, 10, 20), the fourth would start at 30 s.
    assert (rung.planned, rung.measured, rung.stopped) == (5, 3, "budget") and res.budget_spent
    assert len(res.trials) == 3 and res.best is res.on_rung(0)[0]


def test_stopping_keeps_what_was_measured(window_tree, store, tmp_path):
    cancel = CancelToken()

    def stop_after_the_first(p):
        if p.phase is Phase.TUNE and p.outer is None and p.done >= 1:
            cancel.cancel()

    res = tune(window_tree, strategies=["section", "fixed"], prefixes=("none",), modes=("dense", "hybrid"), k=1,
               space=SMALL_SPACE, embedder=BagOfWords(tmp_path / "emb"), store=store, cancel=cancel,
               on_progress=stop_after_the_first)
    assert res.cancelled and not res.budget_spent
    assert [t.label for t in res.trials] == ["section (defaults) · dense", "section (defaults) · hybrid"]
    assert res.best is not None and res.rungs[0].stopped == "cancelled"
    assert store.collections() == [res.kept]  # a stopped search cleans up too, but for its best so far


def test_labelled_questions_score_hit_and_mrr_over_every_search_mode(window_tree, store, tmp_path):
    cases = [QueryCase("cameras", Expect("sensors.md", text="image sensors capture colour frames"), "q.jsonl", 1)]
    res = tune(window_tree, cases, strategies=["section"], prefixes=("none",), space=SMALL_SPACE, k=1,
               embedder=BagOfWords(tmp_path / "emb"), store=store)
    assert res.source == "queries" and res.modes == ("dense", "keyword", "hybrid")
    assert res.weights == {"hit": 0.7, "mrr": 0.3}
    for t in res.trials:
        assert t.score == pytest.approx(0.7 * t.metrics["hit@1"] + 0.3 * t.metrics["mrr"])
        assert set(t.parts) == {"hit", "mrr"} and t.structure is None


def test_a_bad_labelled_question_fails_before_any_work(window_tree, store, tmp_path):
    from chunkscope.evaluation.queries import QueriesError

    emb = BagOfWords(tmp_path / "emb")
    bad = [QueryCase("x", Expect("nope.md"), "q.jsonl", 7)]
    with pytest.raises(QueriesError, match=r"q\.jsonl:7: expected file 'nope\.md'"):
        tune(window_tree, bad, embedder=emb, store=store)
    assert emb.encoded == []


# --- the parts that need no questions ---------------------------------------------------------------------------


def test_question_free_parts_come_from_the_tokenizer_and_lint(tmp_path):
    from chunkscope.chunking.drivers import chunk_documents
    from chunkscope.chunking.registry import get_strategy
    from chunkscope.lint import RULES, lint_tree

    long_words = " ".join(f"word{i}" for i in range(400))
    docs = {"a.md": f"# A\n\n## Long\n\n{long_words}\n\n## Short\n\nTiny.\n",
            **{f"p{i}.md": f"# P{i}\n\n## S{i}\n\nsome text number {i} about thing{i % 3}\n" for i in range(12)}}
    tree = load_docs(write_docs(tmp_path / "docs", docs))
    strategy = get_strategy("section", max_tokens=100, min_tokens=10, overlap_tokens=0)
    chunks = [c for r in chunk_documents(tree.documents, strategy) for c in r.chunks]
    emb = BagOfWords(tmp_path / "emb")
    with Store(tree.root, path=tmp_path / "qdrant") as store:
        from chunkscope.retrieval.neighbours import StoredEmbeddings
        from chunkscope.retrieval.retriever import Retriever

        retriever = Retriever(tree, strategy, emb, store)
        retriever.ensure_indexed()
        st = measure_structure(tree.documents, tree.root, chunks, strategy, None, emb,
                               StoredEmbeddings(store, retriever.collection))
        report = lint_tree(tree, strategy, None, embeddings=StoredEmbeddings(store, retriever.collection))
        without = measure_structure(tree.documents, tree.root, chunks, strategy, None, emb)
    # The 400-word section is longer than the model reads (256 word pieces): part of it is never read.
    assert st.unread_chars and 0 < st.unread_chars < st.chars
    parts = st.parts()
    assert 0 < parts["read"] < 1
    # Over the limit of 100 tokens (oversize) and under the minimum of 10 (the one-word sections): lint's findings.
    assert st.findings.get("oversize", 0) >= 1 and st.findings.get("undersize", 0) >= 1
    assert st.off_limits >= 2 and parts["limits"] < 1
    # Hubs and orphans: exactly the chunks lint marks when it has the chunks' neighbourhoods; unmeasured without.
    flagged = {(f.path, f.chunk_index) for f in report.findings if f.rule in ("hub", "orphan")}
    if "hub" in RULES or "orphan" in RULES:
        assert st.graph == len(flagged) > 0  # the islands of the fixture: a check that read nothing would say 0
        assert 0 < parts["graph"] < 1
    else:
        assert st.graph is None and parts["graph"] is None
    assert without.graph is None and without.parts()["graph"] is None


def test_an_unmeasured_part_is_left_out_and_the_rest_rescaled():
    w = Weights().__dict__
    parts = {"probe_hit": 1.0, "probe_mrr": 0.5, "read": None, "limits": 1.0, "lint": 1.0, "graph": None}
    known = {p: w[p] for p, v in parts.items() if v is not None}
    expected = sum(known[p] * parts[p] for p in known) / sum(known.values())
    assert weighted(parts, w) == pytest.approx(expected)
    assert weighted({"probe_hit": None}, w) == 0.0


# --- writing the preset ----------------------------------------------------------------------------------------

COMMENTED = """\
# chunkscope settings for the book   (a comment at the top)
strategy = "recursive"   # the default
ignore = [
  "drafts/**",
  # a comment inside an array
]

[strategies.recursive]
chunk_size = 384
separators = [
  ["not", "a header"],
]
notes = \"\"\"
[presets.tuned]
this is a string, not a table
\"\"\"

[presets.mine]
strategy = "section"   # mine

[presets.tuned]
# chosen by an earlier run
strategy = "fixed"
chunk_size = 128

# the lint settings below belong to [lint]
[lint]
severity = { undersize = "error" }

[presets.tuned.framework_keywords]
ros = ["rclpy"]
"""


def test_replacing_the_table_keeps_every_other_byte():
    values = {"strategy": "section-sentence", "max_tokens": 256, "embed_prefix": "breadcrumb", "search": "hybrid"}
    out, replaced = replace_table(COMMENTED, ("presets", "tuned"), values, comment="by tune")
    assert replaced
    old_table = COMMENTED[COMMENTED.index("[presets.tuned]\n# chosen"):COMMENTED.index("\n# the lint settings")]
    new_table = ('[presets.tuned]\n# by tune\nstrategy = "section-sentence"\nmax_tokens = 256\n'
                 'embed_prefix = "breadcrumb"\nsearch = "hybrid"\n')
    sub = "[presets.tuned.framework_keywords]\nros = [\"rclpy\"]\n"
    # The comment and the blank line above [lint] are [lint]'s: they stay where they were.
    assert out == COMMENTED.replace(old_table, new_table).replace(sub, "")
    data = tomllib.loads(out)
    assert data["presets"]["tuned"] == values and data["presets"]["mine"] == {"strategy": "section"}
    assert data["strategies"]["recursive"]["notes"].startswith("[presets.tuned]")  # the string is untouched
    # Rewriting with the same values changes nothing more.
    again, _ = replace_table(out, ("presets", "tuned"), values, comment="by tune")
    assert again == out


def test_headers_inside_strings_and_arrays_are_not_tables():
    heads = [p for _, p in table_headers(COMMENTED)]
    assert heads == [("strategies", "recursive"), ("presets", "mine"), ("presets", "tuned"), ("lint",),
                     ("presets", "tuned", "framework_keywords")]


def test_adding_the_table_goes_after_the_other_presets_and_changes_nothing_else():
    text = COMMENTED.replace(COMMENTED[COMMENTED.index("[presets.tuned]\n# chosen"):COMMENTED.index(
        "# the lint settings")], "").replace("\n[presets.tuned.framework_keywords]\nros = [\"rclpy\"]\n", "")
    out, replaced = replace_table(text, ("presets", "tuned"), {"strategy": "fixed", "search": "dense"})
    assert not replaced
    added = '\n[presets.tuned]\nstrategy = "fixed"\nsearch = "dense"\n'
    at = text.index('strategy = "section"   # mine\n') + len('strategy = "section"   # mine\n')
    assert out == text[:at] + added + text[at:]


def test_crlf_files_stay_crlf_and_a_missing_file_is_created(tmp_path):
    crlf = "strategy = \"recursive\"\r\n\r\n[lint]\r\nignore = []\r\n"
    out, _ = replace_table(crlf, ("presets", "tuned"), {"strategy": "fixed"})
    assert out == crlf + "\r\n[presets.tuned]\r\nstrategy = \"fixed\"\r\n"
    w = write_preset(tmp_path / "chunkscope.toml", "tuned", {"strategy": "fixed", "search": "hybrid"})
    assert w.created_file and not w.replaced
    assert (tmp_path / "chunkscope.toml").read_text() == '[presets.tuned]\nstrategy = "fixed"\nsearch = "hybrid"\n'


def test_the_written_preset_is_read_back_with_its_search_mode(tmp_path):
    cfg_file = tmp_path / "chunkscope.toml"
    cfg_file.write_text('# mine\n[presets.mine]\nstrategy = "section"  # kept\n\n[lint]\nignore = []\n', encoding="utf-8")
    write_preset(cfg_file, "tuned", {"strategy": "section-sentence", "max_tokens": 256, "search": "hybrid"})
    cfg = load_config(explicit=cfg_file)
    r = resolve_strategy(cfg, "tuned")
    assert r.label == "tuned" and r.name == "section-sentence" and r.params["max_tokens"] == 256
    assert r.search == "hybrid" and resolve_strategy(cfg, "mine").search is None
    with pytest.raises(ConfigError, match=r"\[presets.bad\] search must be one of dense, keyword, hybrid"):
        parse_config({"presets": {"bad": {"strategy": "fixed", "search": "fuzzy"}}})


def test_pyproject_gets_its_tool_table(tmp_path):
    py = tmp_path / "pyproject.toml"
    py.write_text('[project]\nname = "x"\n\n[tool.chunkscope]\nstrategy = "fixed"\n', encoding="utf-8")
    w = write_preset(py, "tuned", {"strategy": "section", "search": "dense"}, table_prefix=("tool", "chunkscope"))
    assert w.table == "tool.chunkscope.presets.tuned"
    assert py.read_text().startswith('[project]\nname = "x"\n\n[tool.chunkscope]\nstrategy = "fixed"\n\n')
    cfg = load_config(explicit=py)
    assert cfg.presets["tuned"] == {"strategy": "section", "search": "dense"}


def test_a_preset_s_search_mode_is_what_eval_and_query_use(tmp_path):
    import argparse

    from chunkscope.cli.commands.eval import eval_variants
    from chunkscope.cli.retrieval_setup import search_mode

    cfg = parse_config({"presets": {"tuned": {"strategy": "fixed", "chunk_size": 128, "search": "hybrid"}}})
    tuned, plain = resolve_strategy(cfg, "tuned"), resolve_strategy(cfg, "recursive")
    none_given = argparse.Namespace(search=None, grid=None)
    assert [v.search for v in eval_variants(none_given, cfg, [tuned, plain])] == ["hybrid", "dense"]
    assert search_mode(none_given, cfg, tuned.search) == "hybrid" and search_mode(none_given, cfg, plain.search) == "dense"
    given = argparse.Namespace(search="keyword", grid=None)  # the command line still wins
    assert [v.search for v in eval_variants(given, cfg, [tuned])] == ["keyword"]
    assert search_mode(given, cfg, tuned.search) == "keyword"


@pytest.mark.anyio
async def test_the_app_opened_on_the_tuned_preset_asks_in_its_search_mode(tmp_path):
    pytest.importorskip("textual")
    from tests.pilot import make_app

    root = write_docs(tmp_path / "docs", WINDOW_DOCS)
    (root / "chunkscope.toml").write_text('strategy = "tuned"\n\n[presets.tuned]\nstrategy = "section"\n'
                                          'search = "hybrid"\n', encoding="utf-8")
    app = make_app(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.explorer.resolved.label == "tuned" and app.explorer.search.search_mode == "hybrid"


@pytest.mark.parametrize("text, message", [
    ('[presets]\ntuned = { strategy = "fixed" }\n', "written as an inline table or dotted keys"),
    ('presets.tuned.strategy = "fixed"\n', "written as an inline table or dotted keys"),
    ("[presets\n", "not valid TOML"),
])
def test_a_file_that_cannot_be_rewritten_safely_is_left_alone(tmp_path, text, message):
    f = tmp_path / "chunkscope.toml"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(PresetWriteError, match=message):
        write_preset(f, "tuned", {"strategy": "section"})
    assert f.read_text() == text


# --- the command ------------------------------------------------------------------------------------------------


def test_parse_budget():
    from chunkscope.chunking.params import ParamError
    from chunkscope.cli.commands.tune import parse_budget

    assert parse_budget("10m") == 600 and parse_budget("90s") == 90 and parse_budget("1h30m") == 5400
    assert parse_budget("2.5m") == 150 and parse_budget("45") == 45 and parse_budget("none") is None
    for bad in ("ten minutes", "-5m", "m"):
        with pytest.raises(ParamError, match=r"^--budget"):
            parse_budget(bad)


@pytest.fixture()
def cli(monkeypatch, tmp_path):
    """`chunkscope.cli.main` with the bag-of-words embedder in place of the model (tune and eval share it)."""
    from chunkscope.cli import main, retrieval_setup

    monkeypatch.setattr(retrieval_setup, "make_embedder", lambda ctx, args, *a: BagOfWords(tmp_path / "emb"))
    return main


def test_tune_write_then_eval_the_tuned_preset(cli, tmp_path, capsys):
    root = write_docs(tmp_path / "docs", WINDOW_DOCS)
    (root / "chunkscope.toml").write_text('# my settings\nstrategy = "recursive"\n\n[lint]\nignore = []\n',
                                          encoding="utf-8")
    rc = cli(["tune", str(root), "-s", "section", "-s", "fixed", "--prefix", "none", "--search", "dense,hybrid",
              "-k", "1", "--budget", "5m", "--write"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "score = 0.45 × probe hit@1 + 0.20 × probe MRR + 0.15 × text read" in out
    assert "evidence: the winner against the best seed strategy" in out and "best seed: section (defaults)" in out
    assert "[presets.tuned] added:" in out and "tune took" in out
    text = (root / "chunkscope.toml").read_text()
    assert text.startswith('# my settings\nstrategy = "recursive"\n\n[lint]\nignore = []\n\n[presets.tuned]\n')
    preset = tomllib.loads(text)["presets"]["tuned"]
    assert preset["strategy"] == "section" and preset["overlap_tokens"] == 0
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": "cameras", "expect": {"path": "sensors.md", "heading": "Cameras"}}) + "\n")
    rc = cli(["eval", str(root), str(queries), "-s", "tuned", "-k", "1,5", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["results"][0]["strategy_label"] == "tuned"
    assert data["results"][0]["strategy"] == preset["strategy"]


def test_tune_json_and_usage_errors(cli, tmp_path, capsys):
    root = write_docs(tmp_path / "docs", WINDOW_DOCS)
    rc = cli(["tune", str(root), "-s", "section", "--prefix", "none", "--search", "dense", "-k", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["source"] == "probe" and data["best"]["rung"] == 1 and data["written"] is None
    assert data["preset"]["strategy"] == "section" and data["preset"]["search"] == "dense"
    for argv, message in [(["--budget", "soon"], "chunkscope: error: --budget 'soon'"),
                          (["-s", "nope"], "chunkscope: error: unknown strategy 'nope'"),
                          (["--search", "fuzzy"], "chunkscope: error: --search 'fuzzy'")]:
        rc = cli(["tune", str(root), *argv])
        out, err = capsys.readouterr()
        assert rc == 2 and out == "" and err.startswith(message) and err.count("\n") == 1


@pytest.fixture()
def slow_tune(monkeypatch):
    """`tune` under the command line with a clock on which each configuration takes ten seconds."""
    from chunkscope.evaluation.tune import search as search_module

    real = search_module.tune

    def ten_seconds_each(*args, on_progress=None, **kw):
        now = [0.0]

        def progress(p):
            if p.phase is Phase.TUNE and p.outer is None and p.done > 0:
                now[0] += 10.0
            if on_progress is not None:
                on_progress(p)

        return real(*args, clock=lambda: now[0], on_progress=progress, **kw)

    monkeypatch.setattr(search_module, "tune", ten_seconds_each)


def test_tune_says_when_the_budget_gave_no_answer_and_writes_only_when_asked(cli, slow_tune, tmp_path, capsys):
    root = write_docs(tmp_path / "docs", WINDOW_DOCS)
    argv = ["tune", str(root), "-s", "section", "--prefix", "none", "--search", "dense", "-k", "1", "--budget", "25s"]
    rc = cli([*argv, "--write"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    out = " ".join(out.split())  # the console wraps long lines at 80 columns
    # Seven chunkings of section (its own space and the seed); three fit in 25 s.
    assert ("no answer: the budget ended before the best configurations were measured on the whole tree "
            "(3 of 7 configurations measured on the whole tree)") in out
    assert "needs about 1 min 10 s on this tree" in out and "run again with --budget 2m" in out, out
    assert "nothing written: this is no answer (--write-best-so-far writes the best so far)" in out
    assert "# best so far by chunkscope tune (label-free), not an answer: the budget ended" in out
    assert "chosen by" not in out
    assert not (root / "chunkscope.toml").exists()
    rc = cli([*argv, "--write-best-so-far"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    text = (root / "chunkscope.toml").read_text()
    assert "[presets.tuned]\n# best so far by chunkscope tune (label-free), not an answer: the budget ended" in text
    assert tomllib.loads(text)["presets"]["tuned"]["strategy"] == "section"


def test_ctrl_c_prints_the_best_so_far_and_exits_130(cli, tmp_path, capsys, monkeypatch):
    from contextlib import contextmanager

    from chunkscope.cli.commands import tune as cmd_tune

    token = CancelToken()

    @contextmanager
    def interrupt():
        yield token

    @contextmanager
    def bar(title, quiet=False):
        def on_progress(p):
            if p.phase is Phase.TUNE and p.outer is None and p.done >= 1:
                token.cancel()  # as the first Ctrl-C does, once the first configuration is measured
        yield on_progress

    monkeypatch.setattr(cmd_tune, "graceful_interrupt", interrupt)
    monkeypatch.setattr(cmd_tune, "progress_bar", bar)
    root = write_docs(tmp_path / "docs", WINDOW_DOCS)
    rc = cli(["tune", str(root), "-s", "section", "-s", "fixed", "--prefix", "none", "-k", "1", "--write"])
    out, err = capsys.readouterr()
    assert rc == 130
    assert "[presets.tuned]" in out and "stopped: nothing written" in out
    assert err.startswith("chunkscope: error: interrupted: the ranking covers what was measured")
    assert not (root / "chunkscope.toml").exists()


# --- the question sets of the benchmark --------------------------------------------------------------------------


def _rows(name: str) -> list[dict]:
    lines = (REPO / "bench" / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(s) for s in lines if s.strip() and not s.lstrip().startswith("#")]


@pytest.mark.corpus
def test_the_rust_book_question_sets_resolve(corpus):
    tree = load_docs(corpus)
    rows = _rows("rust_book_tune_queries.jsonl")
    assert {r["split"] for r in rows} == {"tune", "heldout"}
    asked = {(r["expect"]["path"], r["expect"]["heading"]) for r in _rows("rust_book_queries.jsonl")}
    for q in load_queries(REPO / "bench" / "rust_book_tune_queries.jsonl"):
        resolve_region(tree, q)
        assert (q.expect.path, q.expect.heading) not in asked  # no section the held-aside set asks about


def test_the_attrs_question_set_resolves():
    docs = os.environ.get("CHUNKSCOPE_ATTRS_DOCS")
    if not docs or not Path(docs).is_dir():
        pytest.skip("set CHUNKSCOPE_ATTRS_DOCS to the docs/ folder of the attrs sdist (MIT; not in this repo)")
    tree = load_docs(docs)
    rows = _rows("attrs_queries.jsonl")
    assert {r["split"] for r in rows} == {"tune", "heldout"}
    for q in load_queries(REPO / "bench" / "attrs_queries.jsonl"):
        resolve_region(tree, q)


# --- with the real model ---------------------------------------------------------------------------------------


@pytest.mark.model
def test_label_free_tune_with_the_real_model_then_eval_the_preset(tmp_path, capsys):
    from chunkscope.cli import main

    root = write_docs(tmp_path / "docs", {
        "kitchen.md": "# Kitchen\n\n## Baking bread\n\nKnead the dough for ten minutes, let it rise until doubled, "
                      "then bake the loaf until the crust is golden.\n\n## Brewing coffee\n\nGrind the beans "
                      "coarsely and pour water just off the boil over them.\n",
        "boat.md": "# Boat\n\n## Tacking\n\nPush the tiller away and let the boom swing across as the bow passes "
                   "through the wind.\n\n## Anchoring\n\nLower the anchor slowly and pay out five times the depth "
                   "in chain.\n",
    })
    # The seed at its defaults may win (four distinct topics: it answers them all), which is no answer: the
    # best so far is written because asked for.
    rc = main(["tune", str(root), "-s", "section-sentence", "--prefix", "none,breadcrumb", "--budget", "2m",
               "--write", "--write-best-so-far", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["written"]["table"] == "presets.tuned"
    assert data["best"]["parts"]["probe_hit"] == 1.0  # four headings, four distinct topics
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"query": "how long should I knead dough?",
                             "expect": {"path": "kitchen.md", "heading": "Baking bread"}}) + "\n")
    rc = main(["eval", str(root), str(q), "-s", "tuned", "-k", "1,5", "--json"])
    res = json.loads(capsys.readouterr().out)["results"][0]
    assert rc == 0 and res["strategy_label"] == "tuned" and res["metrics"]["hit@1"] == 1.0

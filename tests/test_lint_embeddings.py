"""Lint with embeddings: ``hub``, ``orphan`` and ``near-duplicate`` from the tree's neighbourhoods in a real local
Qdrant (``lint --embeddings``, the library's ``lint_tree(embeddings=...)``), and ``embed-truncation`` counted in
the configured embedder's own tokens and limit (issue #11).

The lint-level tests index hand-set vectors (the scene of test_neighbours.py, one document per point) so every
finding is known in advance; the command-line test runs the real model on a small folder.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from chunkscope.chunking.drivers import chunk_documents
from chunkscope.chunking.registry import get_strategy
from chunkscope.cli import main
from chunkscope.config.reader import load_config
from chunkscope.document.loader import load_docs
from chunkscope.lint import lint_tree
from chunkscope.retrieval.neighbours import StoredEmbeddings
from chunkscope.retrieval.indexing import index_chunks
from chunkscope.retrieval.store import Store
from chunkscope.tokens import get_tokenizer

from .test_neighbours import K, TableEmbedder, scene

EMBEDDING_RULES = "hub,orphan,near-duplicate"


def scene_tree(tmp_path: Path):
    """The scene as a docs folder: one file per point, its text the point's text (one chunk each)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    named = scene()
    for path, text, _ in named:
        (docs / path).write_text(text + "\n", encoding="utf-8")
    return docs, {text: vec for _, text, vec in named}


@pytest.fixture()
def indexed_scene(tmp_path):
    """The scene's tree, its chunks (recursive: one per file), and their points in a real local store."""
    docs, table = scene_tree(tmp_path)
    tree = load_docs(docs)
    strategy = get_strategy("recursive")
    results = chunk_documents(tree.documents, strategy)
    assert all(len(r.chunks) == 1 for r in results)
    emb = TableEmbedder(table)
    store = Store(tree.root, path=tmp_path / "qdrant")
    name = store.use(strategy, emb, owner=tree.root)
    index_chunks(store, [c for r in results for c in r.chunks], emb, name)
    yield tree, strategy, results, store, name
    store.close()


def test_the_embedding_rules_report_the_hub_the_orphans_and_the_near_twins(indexed_scene):
    tree, strategy, results, store, name = indexed_scene
    emb = StoredEmbeddings(store, name, k=K, order=[d.path for d in tree.documents])
    report = lint_tree(tree, strategy, None, select=EMBEDDING_RULES, results=results, embeddings=emb)
    got = {(f.path, f.line, f.rule, f.chunk_index, f.severity) for f in report.findings}
    assert got == {
        ("hub.md", 1, "hub", 0, "warning"),
        ("island.md", 1, "orphan", 0, "warning"),
        ("near.md", 1, "orphan", 0, "warning"),
        ("near.md", 1, "near-duplicate", 0, "warning"),
    }
    by = {(f.path, f.rule): f for f in report.findings}
    # The hub: every cluster point has it among its 5 nearest; the evidence names other files' chunks.
    hub = by["hub.md", "hub"].message
    assert hub.startswith("chunk 0 is among the 5 nearest of 40 chunks in 40 files, 8.0x its share (hubs: over ")
    assert len(re.findall(r"c\d-\d\.md:1 \(cosine 0\.32\)", hub)) == 3
    # The island's nearest is the one cluster point it leans towards; the reworded copy is shadowed by a copy.
    assert by["island.md", "orphan"].message == (
        "chunk 0 is among the 5 nearest of no other chunk: an island (its nearest, c0-0.md:1, is at cosine 0.11, "
        "under the 0.95 of a near-twin)")
    assert re.fullmatch(r"chunk 0 is among the 5 nearest of no other chunk: shadowed by its near-twin g\d\.md:1 "
                        r"\(cosine 0\.96\)", by["near.md", "orphan"].message)
    # One finding per pair, at the later chunk, naming the earlier copies (identical copies are duplicate's).
    assert re.fullmatch(r"chunk 0 reads nearly as (g\d\.md:1 \(chunk 0, cosine 0\.960\), ){2}g\d\.md:1 \(chunk 0, "
                        r"cosine 0\.960\) and 2 more to the embedder", by["near.md", "near-duplicate"].message)
    assert all(f.hint for f in report.findings)


def test_without_embeddings_or_without_neighbourhoods_the_rules_do_not_run(indexed_scene):
    tree, strategy, results, store, name = indexed_scene
    assert lint_tree(tree, strategy, None, select=EMBEDDING_RULES, results=results).findings == []

    class VectorsOnly:
        """Embeddings that give vectors but know no neighbourhoods."""

        def vector(self, path, index):
            return [1.0, 0.0]

    report = lint_tree(tree, strategy, None, select=EMBEDDING_RULES, results=results, embeddings=VectorsOnly())
    assert report.findings == []


def test_a_chunk_whose_point_is_of_another_cut_is_not_judged(indexed_scene):
    """An index out of step with the chunks lint is given (a file edited since) says nothing about them."""
    tree, strategy, results, store, name = indexed_scene
    emb = StoredEmbeddings(store, name, k=K, order=[d.path for d in tree.documents])
    hub_doc = next(r for r in results if r.doc.path == "hub.md")
    moved = [replace(c, start=c.start + 1, text=c.text[1:]) for c in hub_doc.chunks]
    shifted = [r if r is not hub_doc else replace(r, chunks=moved) for r in results]
    assert lint_tree(tree, strategy, None, select="hub", results=results, embeddings=emb).by_rule == {"hub": 1}
    report = lint_tree(tree, strategy, None, select="hub", results=shifted, embeddings=emb)
    assert report.findings == []


# --- the command line -----------------------------------------------------------------------------------------

BREAD = ("Knead the dough for ten minutes, let it rise until doubled, then bake the loaf at 220 degrees until the "
         "crust is golden brown.\n")
NEAR_DOCS = {
    "baking.md": BREAD,
    "bread-again.md": BREAD.replace("ten", "10"),
    "sailing.md": "To tack, push the tiller away, let the boom swing across the boat, and trim the jib sheet on the "
                  "new side as the bow passes through the wind.\n",
    "taxes.md": "Keep every receipt, report your income from each employer, and file the return before the April "
                "deadline to avoid a penalty.\n",
}


@pytest.mark.model
def test_lint_embeddings_on_the_command_line(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in NEAR_DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    assert main(["lint", str(docs), "--embeddings", "-s", "recursive"]) == 0  # warnings only
    out, err = capsys.readouterr()
    lines = out.splitlines()
    near = [line for line in lines if "warning near-duplicate" in line]
    assert near == [f"{docs}/bread-again.md:1:1: warning near-duplicate chunk 0 reads nearly as {docs}/baking.md:1 "
                    f"(chunk 0, cosine 0.997) to the embedder"]
    assert lines[-1].startswith("embedding space (all-MiniLM-L6-v2, 4 chunks, k=10): k-occurrence skewness not "
                                "defined")
    assert "1 near-duplicate, 0 hubs, 0 orphans;" in lines[-1]
    assert "recursive: 4 chunks, 4 embedded" in err  # the index was made first, as `index` makes it
    # A second run reuses the stored points: nothing is embedded, so no index line.
    assert main(["lint", str(docs), "--embeddings", "-s", "recursive", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert [(f["path"], f["line"]) for f in json.loads(out) if f["rule"] in EMBEDDING_RULES.split(",")] == \
        [(f"{docs}/bread-again.md", 1)]
    assert "embedded" not in err and err.startswith("embedding space (")


def test_lint_embeddings_without_the_retrieval_extra_says_what_to_install(tmp_path, capsys, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nSome text.\n", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "qdrant_edge", None)  # importlib.util.find_spec then finds nothing
    assert main(["lint", str(docs), "--embeddings"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == ("chunkscope: error: lint --embeddings needs chunkscope's retrieval extra (qdrant-edge-py is not "
                   "installed): pip install 'chunkscope[retrieval]'\n")


def test_selecting_an_embedding_rule_without_embeddings_says_it_does_not_run(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nSome text.\n", encoding="utf-8")
    assert main(["lint", str(docs), "--select", "hub,oversize"]) == 0
    assert "chunkscope: note: hub runs only with --embeddings" in capsys.readouterr().err


# --- embed-truncation in the embedder's own tokens (issue #11) ------------------------------------------------

WORDS = ["alpha", "river", "stone", "market", "garden", "signal", "window", "harbor", "lantern", "meadow"]


def words_doc(n: int) -> str:
    """``n`` words, ten a line (each word one cl100k_base token, its leading space included)."""
    ws = [WORDS[(i * 7) % len(WORDS)] for i in range(n)]
    return "\n".join(" ".join(ws[i:i + 10]) for i in range(0, n, 10)) + "\n"


OPENAI = '[embedder]\nmodel = "openai:text-embedding-3-small"\n'


def test_embed_truncation_counts_in_the_embedders_tokens_and_limit(tmp_path, capsys):
    enc = get_tokenizer("cl100k_base").encoding
    long, short = words_doc(9000), words_doc(600)
    files = {"long.md": long, "short.md": short}
    rows = _lint_json(tmp_path / "openai", OPENAI, files, capsys)
    # 600 words (720 tokens) are far under the 8191 text-embedding-3-small reads; 9000 words are not.
    assert [(r["path"].rsplit("/", 1)[-1], r["line"]) for r in rows] == [("long.md", 1)]
    tokens = enc.encode_ordinary(long)
    n_short = len(enc.encode_ordinary(short))
    assert n_short < 8191 < len(tokens)
    stop = len(enc.decode(tokens[:8191]))  # where reading stops, by tiktoken itself
    line = long[:stop].count("\n") + 1
    lost = (len(long.rstrip()) - stop) / len(long.rstrip())
    assert rows[0]["message"] == (f"chunk 0's embed text is {len(tokens)} cl100k_base tokens; "
                                  f"openai:text-embedding-3-small reads 8191, so the text from line {line} on "
                                  f"({lost:.0%} of the chunk) is not embedded")
    # The same 600 words are more than all-MiniLM-L6-v2's 256 word pieces.
    pieces = get_tokenizer("all-MiniLM-L6-v2").count(short.rstrip())
    rows = _lint_json(tmp_path / "minilm", "", {"short.md": short}, capsys)
    assert len(rows) == 1 and rows[0]["message"].startswith(f"chunk 0's embed text is {pieces} word pieces; "
                                                             f"all-MiniLM-L6-v2 reads 256 (with [CLS]/[SEP])")
    # A threshold set in [lint] still wins over the embedder's limit.
    rows = _lint_json(tmp_path / "set", OPENAI + "[lint]\nthresholds = { embed-truncation = 500 }\n",
                      {"short.md": short}, capsys)
    assert len(rows) == 1
    assert f"{n_short} cl100k_base tokens; openai:text-embedding-3-small reads 500" in rows[0]["message"]


def _lint_json(root: Path, toml: str, files: dict[str, str], capsys) -> list[dict]:
    docs = root / "docs"
    docs.mkdir(parents=True)
    (docs / "chunkscope.toml").write_text(toml, encoding="utf-8")  # the docs root's own configuration
    for name, text in files.items():
        (docs / name).write_text(text, encoding="utf-8")
    capsys.readouterr()
    code = main(["lint", str(docs), "-s", "fixed", "-p", "chunk_size=20000", "-p", "chunk_overlap=0",
                 "--select", "embed-truncation", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_embed_token_counts_are_the_configured_embedders(tmp_path, capsys):
    """``chunk`` fills each chunk's embed_tokens with the embedder's tokenizer: cl100k_base for an endpoint (it
    used to look for a local model folder named after it, and fail)."""
    root = tmp_path / "site"
    docs = root / "docs"
    docs.mkdir(parents=True)
    (docs / "chunkscope.toml").write_text(OPENAI, encoding="utf-8")
    text = "Grüße aus Köln — naïve café ☕ and a few plain words.\n"
    (docs / "a.md").write_text(text, encoding="utf-8")
    assert main(["chunk", str(docs), "--format", "jsonl"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    enc = get_tokenizer("cl100k_base").encoding
    assert [r["embed_tokens"] for r in rows] == [len(enc.encode_ordinary(r["text"])) for r in rows]
    assert load_config(docs).embedder_spec().tokenizer_name == "cl100k_base"


# --- the app's lint pane --------------------------------------------------------------------------------------

SIZE = (160, 50)


def near_docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in NEAR_DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    return docs


async def _lint_pane(pilot, app):
    from tests.pilot import wait_for

    ex = app.explorer
    await wait_for(pilot, lambda: ex.result is not None and ex.tree_result is not None, what="first file and tree")
    await pilot.press("l")
    await wait_for(pilot, lambda: bool(ex.query("#lint-pane")), what="the lint pane")
    return ex, ex.query_one("#lint-pane")


@pytest.mark.model
@pytest.mark.anyio
async def test_the_lint_pane_runs_the_embedding_rules_in_the_background_and_merges_them(tmp_path):
    from textual.widgets import Checkbox, OptionList

    from tests.pilot import make_app, wait_for

    app = make_app(near_docs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        ex, pane = await _lint_pane(pilot, app)
        before = len(pane._all)  # noqa: SLF001 - the findings the list shows
        assert "near-duplicate" not in {f.rule for f in pane._all}  # noqa: SLF001
        await pilot.press("m")
        assert pane.query_one("#lint-embeddings", Checkbox).value is True
        await wait_for(pilot, lambda: any(f.rule == "near-duplicate" for f in pane._all),  # noqa: SLF001
                       timeout=180, what="the embedding rules' findings")
        space = str(pane.query_one("#lint-space").render())
        assert space.startswith("Embedding space (4 chunks, k=10): k-occurrence skewness not defined (hubness, "
                                "Radovanović et al. 2010)") and "1 near-duplicate" in space
        assert len(pane._all) == before + 1  # noqa: SLF001
        near = next(f for f in pane._all if f.rule == "near-duplicate")  # noqa: SLF001
        assert (near.path, near.line, near.chunk_index) == ("bread-again.md", 1, 0)
        assert "baking.md:1 (chunk 0, cosine 0.997)" in near.message
        # Enter on it opens the file with its chunk selected, as for any finding.
        findings = pane.query_one("#findings", OptionList)
        findings.focus()
        findings.highlighted = pane._findings.index(near)  # noqa: SLF001
        await pilot.press("enter")
        await wait_for(pilot, lambda: ex.current_path == "bread-again.md" and ex.selected == 0, what="the jump")
        # m again hides them.
        pane.focus_list()
        await pilot.press("m")
        await wait_for(pilot, lambda: len(pane._all) == before, what="the embedding findings gone")  # noqa: SLF001
        assert not pane.query_one("#lint-space").has_class("-shown")


@pytest.mark.anyio
async def test_the_lint_pane_says_what_to_install_for_the_embedding_rules(tmp_path, monkeypatch):
    from tests.pilot import make_app, wait_for

    monkeypatch.setitem(sys.modules, "qdrant_edge", None)
    app = make_app(near_docs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        ex, pane = await _lint_pane(pilot, app)
        before = list(pane._all)  # noqa: SLF001
        await pilot.press("m")
        line = pane.query_one("#lint-space")
        await wait_for(pilot, lambda: "pip install" in str(line.render()), timeout=60, what="the install hint")
        assert str(line.render()) == ("Running the embedding rules needs chunkscope's retrieval extra (qdrant-edge-py is not "
                                      "installed): pip install 'chunkscope[retrieval]'")
        assert pane._all == before  # noqa: SLF001

"""A single file given to a command is read as part of its docs tree: same path, metadata, URL and lint as the tree.

Through the real command line (`chunkscope.cli.main`): every file of a tree chunked alone must give exactly the
rows the tree run gives for it, for every strategy, and lint must find the same things.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from chunkscope.cli import main
from chunkscope.config.reader import load_config
from chunkscope.document.loader import docs_root_of, load_docs

TEXTBOOK_SITE = Path(__file__).parent / "fixtures" / "textbook"
STRATEGIES = ("section-sentence", "header-window", "section", "content-type", "recursive", "fixed")


@pytest.fixture(scope="module")
def sample_tree(tmp_path_factory: pytest.TempPathFactory, sample_docs: Path) -> Path:
    """sample_docs with a ``chunkscope.toml`` in it: the marker that makes it a docs root for a single file."""
    root = tmp_path_factory.mktemp("sample") / "docs"
    shutil.copytree(sample_docs, root)
    (root / "chunkscope.toml").write_text('site_url = "https://book.example.com/docs"\n', encoding="utf-8")
    return root


def run_rows(capsys, *argv: str) -> list[dict]:
    assert main(list(argv)) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def run_lint(capsys, docs: str) -> list[dict]:
    # section-sentence: its seed requires chapter and section, which a file read without its folders lost.
    main(["lint", docs, "-s", "section-sentence", "--format", "json"])
    return json.loads(capsys.readouterr().out)


def files_of(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".md", ".mdx"))


# --- the docs root --------------------------------------------------------------------------------------------


def test_the_docs_root_of_a_file_in_a_docusaurus_site_is_its_docs_folder() -> None:
    page = TEXTBOOK_SITE / "docs" / "module-1" / "1.1-basics" / "overview.md"
    assert docs_root_of(page) == TEXTBOOK_SITE / "docs"
    tree = load_docs(page)
    assert tree.root == TEXTBOOK_SITE / "docs" and tree.partial
    assert [d.path for d in tree] == ["module-1/1.1-basics/overview.md"]


def test_the_docs_root_is_the_nearest_folder_with_a_chunkscope_toml(sample_tree: Path) -> None:
    page = sample_tree / "module-2-motion" / "index.md"
    assert docs_root_of(page) == sample_tree
    tree = load_docs(page)
    assert (tree.root, [d.path for d in tree], tree.partial) == (sample_tree, ["module-2-motion/index.md"], True)


def test_without_a_marker_the_docs_root_is_the_files_folder(tmp_path: Path) -> None:
    page = tmp_path / "notes" / "a.md"
    page.parent.mkdir()
    page.write_text("# A\n", encoding="utf-8")
    assert docs_root_of(page) == page.parent
    assert [d.path for d in load_docs(page)] == ["a.md"]


def test_a_whole_tree_is_not_partial(sample_tree: Path) -> None:
    assert not load_docs(sample_tree).partial


def test_a_single_file_finds_the_same_config_as_its_tree(sample_tree: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the working directory holds no config: only the docs root can give it
    page = sample_tree / "module-1-foundations" / "02-forward-kinematics.md"
    assert load_config(page).source == load_config(sample_tree).source == sample_tree / "chunkscope.toml"


def test_a_config_beside_a_docusaurus_config_is_found_for_the_docs_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    site = tmp_path / "site"
    shutil.copytree(TEXTBOOK_SITE, site)
    (site / "chunkscope.toml").write_text("[strategies.recursive]\nchunk_size = 64\n", encoding="utf-8")
    page = site / "docs" / "module-1" / "intro.md"
    assert docs_root_of(page) == site / "docs"
    assert load_config(page).source == load_config(site / "docs").source == site / "chunkscope.toml"


# --- same rows, same findings ---------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_sample_file_alone_gives_the_tree_runs_rows(strategy: str, sample_tree: Path, capsys) -> None:
    tree_rows = run_rows(capsys, "chunk", str(sample_tree), "-s", strategy, "--format", "jsonl")
    for f in files_of(sample_tree):
        alone = run_rows(capsys, "chunk", str(f), "-s", strategy, "--format", "jsonl")
        rel = f.relative_to(sample_tree).as_posix()
        assert alone == [r for r in tree_rows if r["path"] == rel], (strategy, rel)
        assert alone, rel


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_textbook_file_alone_gives_the_tree_runs_rows(strategy: str, capsys) -> None:
    docs = TEXTBOOK_SITE / "docs"
    tree_rows = run_rows(capsys, "chunk", str(docs), "-s", strategy, "--format", "jsonl")
    for f in files_of(docs):
        alone = run_rows(capsys, "chunk", str(f), "-s", strategy, "--format", "jsonl")
        assert alone == [r for r in tree_rows if r["path"] == f.relative_to(docs).as_posix()], (strategy, f)


def test_a_single_file_keeps_its_chapter_section_and_route() -> None:
    # The bug this guards: forward-kinematics.md alone lost its folders, so chapter and section were None.
    page = TEXTBOOK_SITE / "docs" / "module-2" / "2.1-kinematics" / "forward-kinematics.md"
    from chunkscope import get_strategy
    from chunkscope.site.urls import doc_route

    doc = load_docs(page).documents[0]
    chunks = get_strategy("section-sentence").chunk(doc)
    assert {(c.metadata["chapter"], c.metadata["section"]) for c in chunks} == {(2, "2.1")}
    # Its route keeps its folders, as the tree run's does (the bug gave "/forward-kinematics").
    whole = load_docs(TEXTBOOK_SITE / "docs").get("module-2/2.1-kinematics/forward-kinematics.md")
    assert doc_route(doc) == doc_route(whole) and doc_route(doc).startswith("/module-2/")


@pytest.mark.parametrize("root", ["sample", "textbook"])
def test_lint_finds_the_same_things_for_a_file_alone(root: str, sample_tree: Path, capsys) -> None:
    docs = sample_tree if root == "sample" else TEXTBOOK_SITE / "docs"
    whole = run_lint(capsys, str(docs))
    for f in files_of(docs):
        alone = run_lint(capsys, str(f))
        assert alone == [x for x in whole if x["path"] == str(f)], f
    if root == "textbook":
        assert not [x for x in whole if x["rule"] == "missing-metadata" and "2.1-kinematics" in x["path"]]


def test_a_file_alone_is_checked_for_duplicates_against_the_pages_before_it(tmp_path: Path, capsys) -> None:
    # The same section on two pages: the tree run reports the second page's copy, naming the first page's chunk;
    # linting the second page alone must say exactly that, which needs the pages before it in reading order.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "chunkscope.toml").write_text("", encoding="utf-8")
    shared = "## Safety\n\nAlways keep the emergency stop within reach when the arm is powered and moving.\n"
    (docs / "01-first.md").write_text(f"# First\n\nIntro one.\n\n{shared}", encoding="utf-8")
    (docs / "02-second.md").write_text(f"# Second\n\nIntro two.\n\n{shared}", encoding="utf-8")
    whole = [x for x in run_lint(capsys, str(docs)) if x["rule"] == "duplicate"]
    assert [x["path"] for x in whole] == [str(docs / "02-second.md")], whole
    alone = [x for x in run_lint(capsys, str(docs / "02-second.md")) if x["rule"] == "duplicate"]
    assert alone == whole
    assert not [x for x in run_lint(capsys, str(docs / "01-first.md")) if x["rule"] == "duplicate"]

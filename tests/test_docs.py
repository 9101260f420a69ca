"""The docs tree: order, exact decoding, front matter, and per-file problems that never stop the tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chunkscope.document.loader import DocsError, load_docs, split_front_matter
from chunkscope.site.order import number_prefix


def write(root: Path, rel: str, data: str | bytes) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        p.write_bytes(data.encode("utf-8"))
    else:
        p.write_bytes(data)
    return p


def test_order_follows_sidebar_position_then_number_prefix_then_name(tmp_path: Path) -> None:
    write(tmp_path, "zeta.md", "---\nsidebar_position: 1\n---\n# Z\n")
    write(tmp_path, "alpha.md", "# A\n")
    write(tmp_path, "10-ten.md", "# ten\n")
    write(tmp_path, "2-two.md", "# two\n")
    write(tmp_path, "guide/_category_.json", '{"position": 0}')
    write(tmp_path, "guide/b.md", "# b\n")
    write(tmp_path, "guide/index.md", "# guide\n")
    tree = load_docs(tmp_path)
    assert [d.path for d in tree.documents] == [
        "guide/index.md", "guide/b.md", "zeta.md", "2-two.md", "10-ten.md", "alpha.md",
    ]


def test_skips_hidden_node_modules_build_and_ignore_globs(tmp_path: Path) -> None:
    write(tmp_path, "a.md", "a")
    write(tmp_path, ".hidden/x.md", "x")
    write(tmp_path, "node_modules/pkg/readme.md", "x")
    write(tmp_path, "build/out.md", "x")
    write(tmp_path, "drafts/wip.md", "x")
    write(tmp_path, "notes.txt", "x")
    write(tmp_path, "c.mdx", "c")
    tree = load_docs(tmp_path, ignore=["drafts/**"])
    assert [d.path for d in tree.documents] == ["a.md", "c.mdx"]


def test_text_is_exact_bom_removed_line_endings_untouched(tmp_path: Path) -> None:
    raw = "\ufeff---\r\ntitle: Hi\r\n---\r\n# Title\r\n\r\nBody\rold mac\n".encode("utf-8")
    write(tmp_path, "a.md", raw)
    doc = load_docs(tmp_path).documents[0]
    assert doc.text == raw.decode("utf-8")[1:]
    assert doc.front_matter == {"title": "Hi"}
    assert doc.text[doc.body_start:].startswith("# Title\r\n")


def test_bad_files_are_problems_and_the_tree_goes_on(tmp_path: Path) -> None:
    write(tmp_path, "good.md", "# fine\n")
    write(tmp_path, "latin1.md", "caf\xe9".encode("latin-1"))
    write(tmp_path, "binary.md", b"\x89PNG\x00\x00\x01")
    write(tmp_path, "big.md", "x" * 5000)
    write(tmp_path, "badfm.md", "---\ntitle: [unclosed\n---\n# Still here\n")
    tree = load_docs(tmp_path, max_bytes=4000)
    codes = {p.path: p.code for p in tree.problems}
    assert codes == {"latin1.md": "invalid-utf8", "binary.md": "binary", "big.md": "too-large", "badfm.md": "front-matter"}
    # A malformed front matter loses nothing: the document is kept, its YAML is not taken for prose.
    paths = [d.path for d in tree.documents]
    assert paths == ["badfm.md", "good.md"]
    badfm = tree.get("badfm.md")
    assert badfm.front_matter == {} and badfm.text[badfm.body_start:] == "# Still here\n"
    assert all(str(p).startswith(p.path + ": " + p.code + ": ") for p in tree.problems)
    assert "line 1" in next(p.message for p in tree.problems if p.code == "invalid-utf8")


@pytest.mark.skipif(os.name == "nt", reason="symlinks")
def test_symlinks_never_leave_the_root_or_loop(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    write(root, "a.md", "# a\n")
    write(tmp_path, "outside/secret.md", "# secret\n")
    (root / "out").symlink_to(tmp_path / "outside")
    (root / "sub").mkdir()
    (root / "sub" / "loop").symlink_to(root)
    write(root, "sub/b.md", "# b\n")
    (root / "inside.md").symlink_to(root / "a.md")
    tree = load_docs(root)
    assert [d.path for d in tree.documents] == ["a.md", "inside.md", "sub/b.md"]
    msgs = {p.path: p.message for p in tree.problems}
    assert "outside" in msgs["out"] and "loops" in msgs["sub/loop"]


def test_single_file_and_missing_path(tmp_path: Path) -> None:
    f = write(tmp_path, "one.md", "# one\n")
    tree = load_docs(f)
    assert tree.single_file and [d.path for d in tree.documents] == ["one.md"]
    with pytest.raises(DocsError, match="no such file"):
        load_docs(tmp_path / "nope")
    write(tmp_path, "x.txt", "x")
    with pytest.raises(DocsError, match="not a Markdown file"):
        load_docs(tmp_path / "x.txt")


def test_front_matter_forms() -> None:
    assert split_front_matter("---\n---\nbody") == ({}, 8, None)
    fm, start, err = split_front_matter("---\na: 1\nb: [x, y]\n---\nbody")
    assert fm == {"a": 1, "b": ["x", "y"]} and err is None and start == len("---\na: 1\nb: [x, y]\n---\n")
    assert split_front_matter("no front matter") == ({}, 0, None)
    fm, start, err = split_front_matter("---\n- a list\n---\nbody")
    assert fm == {} and "not a mapping" in err


def test_number_prefix() -> None:
    assert number_prefix("01-intro") == ((1,), "intro")
    # Docusaurus keeps a prefix that looks like a version or a date (tests/test_site_routes.py has the rest).
    assert number_prefix("4.1-humanoid") == (None, "4.1-humanoid")
    assert number_prefix("ch03-02-data") == (None, "ch03-02-data")
    assert number_prefix("2024") == (None, "2024")


def test_corpus_loads_without_problems(corpus: Path) -> None:
    tree = load_docs(corpus)
    assert len(tree.documents) == 112 and not tree.problems
    for d in tree.documents:
        assert d.source is not None and d.source.read_bytes().decode("utf-8").lstrip("\ufeff") == d.text


"""Docusaurus' routing rules as chunkscope models them: number prefixes, index pages, slugs, ids and anchors.

Each case here was checked against a real Docusaurus 3 build (tests/test_docusaurus_oracle.py builds the same
situations in tests/fixtures/docusaurus/docs); these tests keep the rules fast to run and name each one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkscope import chunk_text, get_strategy
from chunkscope.document.loader import Document
from chunkscope.site.urls import chunk_url, doc_route
from chunkscope.site.order import number_prefix, sidebar_order_key


def doc(path: str, text: str = "# Title\n\nBody.\n") -> Document:
    return Document.from_text(text, path=path)


@pytest.mark.parametrize(("name", "expected"), [
    ("01-intro", ((1,), "intro")),
    ("1_intro", ((1,), "intro")),
    ("1.basics", ((1,), "basics")),
    ("02 - setup", ((2,), "setup")),
    ("003 - my doc", ((3,), "my doc")),
    ("0-overview", ((0,), "overview")),
    # A prefix that looks like a version or a date is part of the name (Docusaurus issues 4640 and 4653).
    ("4.1-humanoid-fundamentals", (None, "4.1-humanoid-fundamentals")),
    ("10.2.3-deep-dive", (None, "10.2.3-deep-dive")),
    ("2021-01-31-changelog", (None, "2021-01-31-changelog")),
    ("01-02-notes", (None, "01-02-notes")),
    ("1_2 intro", (None, "1_2 intro")),
    # No separator, or letters first: no prefix at all.
    ("2024", (None, "2024")),
    ("ch03-02-data", (None, "ch03-02-data")),
    ("intro", (None, "intro")),
])
def test_number_prefix_strips_what_docusaurus_strips(name, expected) -> None:
    assert number_prefix(name) == expected


@pytest.mark.parametrize(("path", "front", "route"), [
    ("01-getting-started.md", "", "/getting-started"),
    ("1.basics.md", "", "/basics"),
    ("02 - setup.md", "", "/setup"),
    ("2021-01-31-changelog.md", "", "/2021-01-31-changelog"),
    ("module-4/4.1-humanoid-fundamentals/intro.md", "", "/module-4/4.1-humanoid-fundamentals/intro"),
    ("module-4/10.2.3-deep-dive.mdx", "", "/module-4/10.2.3-deep-dive"),
    ("module-4/06-control/01-pid.md", "", "/module-4/control/pid"),
    # Index pages (index, README, or named after the folder exactly as written) route to their folder, with
    # Docusaurus' trailing slash; an id does not change that.
    ("index.md", "", "/"),
    ("README.md", "", "/"),
    ("03-sensors/README.md", "", "/sensors/"),
    ("guide/01-basics/index.md", "", "/guide/basics/"),
    ("module-4/06-control/index.md", "id: control-overview", "/module-4/control/"),
    ("module-4/4.1-humanoid-fundamentals/4.1-humanoid-fundamentals.md", "", "/module-4/4.1-humanoid-fundamentals/"),
    ("07-safety/07-safety.md", "", "/safety/"),
    ("Guide/guide.md", "", "/Guide/"),
    # Named after the folder without its prefix: not the folder's index page.
    ("05-actuators/actuators.md", "", "/actuators/actuators"),
    # id replaces the file name; a slug replaces the route (absolute) or the last part (relative, resolved
    # against the folder's route, so "./" and "../" work as in a URL); a slug beats an index page.
    ("guide/02-advanced.md", "id: pro-tips", "/guide/pro-tips"),
    ("03-sensors/01-imu.md", "slug: /hardware/imu", "/hardware/imu"),
    ("03-sensors/02-lidar.md", "slug: laser-ranging", "/sensors/laser-ranging"),
    ("guide/03-faq.mdx", "slug: ./questions/faq", "/guide/questions/faq"),
    ("04-reference/02-internals/01-storage.md", "slug: ../storage-format", "/reference/storage-format"),
    ("guide/notes.md", "slug: tips/", "/guide/tips/"),
    ("guide/index.md", "slug: start", "/guide/start"),
    ("a/b.md", "slug: /", "/"),
    # parse_number_prefixes: false keeps every prefix of the page's path, folders too.
    ("04-reference/0-overview.md", "parse_number_prefixes: false", "/04-reference/0-overview"),
])
def test_doc_route_is_the_docusaurus_permalink(path, front, route) -> None:
    text = f"---\n{front}\n---\n# T\n" if front else "# T\n"
    assert doc_route(doc(path, text)) == route


def test_a_kept_prefix_is_no_sidebar_position() -> None:
    names = ["4.10-late.md", "4.2-early.md", "3-three.md", "alpha.md", "10-ten.md"]
    ordered = sorted(names, key=lambda n: sidebar_order_key(n, None))
    # Numbered pages by number, then the rest by name: "4.2-" and "4.10-" are names, not positions 4.2 and 4.10.
    assert ordered == ["3-three.md", "10-ten.md", "4.10-late.md", "4.2-early.md", "alpha.md"]


def test_a_file_name_prefix_is_read_without_its_extension() -> None:
    # "1.md" is a page named "1" (no prefix), not page "md" at position 1: it sorts among the unnumbered.
    assert sidebar_order_key("1.md", None)[0] == sidebar_order_key("alpha.md", None)[0]
    assert sidebar_order_key("1.md", None) > sidebar_order_key("99-last.md", None)


def test_sidebar_order_of_the_fixture_root_as_docusaurus_builds_it() -> None:
    # The order of the root of tests/fixtures/docusaurus/docs in the built sidebar (index.md aside): ties on a
    # position go by name, a category's position and a page's prefix compare on one scale, kept prefixes last.
    built = [("01-getting-started.md", None), ("1.basics.md", None), ("02 - setup.md", None), ("03-sensors", 3.0),
             ("04-reference", None), ("module-4", 4.0), ("05-actuators", None), ("guide", 5.0), ("07-safety", None),
             ("2021-01-31-changelog.md", None)]
    assert sorted(built, key=lambda e: sidebar_order_key(*e)) == built


def test_positions_and_prefixes_share_one_scale() -> None:
    # Docusaurus' sidebar position is sidebar_position (or the category's position) when given, else the
    # number prefix: a page at prefix 2 comes before one at sidebar_position 5.
    assert sidebar_order_key("02-two.md", None) < sidebar_order_key("five.md", 5)
    assert sidebar_order_key("five.md", 5) < sidebar_order_key("07-seven.md", None)


def test_an_h1_gives_no_anchor() -> None:
    # Docusaurus renders a page's H1 without an id (it is the title, not in the table of contents).
    text = "# Chapter 1: Intro\n\nOpening words.\n\n## 1.1 Sensors\n\nMore.\n"
    d = doc("ch01-intro.md", text)
    chunks = chunk_text(text, "custom", path="ch01-intro.md", callable="tests.test_custom:paragraphs")
    by_text = {c.text: c for c in chunks}
    assert chunk_url(None, d, by_text["Opening words."]) == "/ch01-intro"
    assert chunk_url("https://ex.org/book/", d, by_text["More."]) == "https://ex.org/book/ch01-intro#11-sensors"


def test_an_explicit_id_does_not_renumber_a_later_heading() -> None:
    # Docusaurus never registers {#id} with its slugger: "## Install" after "{#install}" is "install" too.
    text = "# T\n\n## Setup {#install}\n\nx\n\n## Install\n\ny\n\n## Install\n\nz\n"
    assert [h.anchor for h in doc("a.md", text).outline.headings[1:]] == ["install", "install", "install-1"]


def test_an_explicit_id_after_a_clash_keeps_the_count() -> None:
    text = "# T\n\n## Usage\n\nx\n\n## Other {#usage}\n\ny\n\n## Usage\n\nz\n"
    assert [h.anchor for h in doc("a.md", text).outline.headings[1:]] == ["usage", "usage", "usage-1"]
    assert [h.anchor for h in doc("a.md", text).structure.headings[1:]] == ["usage", "usage", "usage-1"]


def test_chunk_jsonl_rows_carry_the_url_query_prints(tmp_path, capsys) -> None:
    from chunkscope.cli import main
    from chunkscope.document.loader import load_docs

    docs = tmp_path / "docs"
    (docs / "module-4" / "4.1-humanoid").mkdir(parents=True)
    (docs / "module-4" / "4.1-humanoid" / "intro.md").write_text(
        "# 4.1 Humanoids\n\nOpening.\n\n## 4.1.1 Balance\n\nThe zero-moment point.\n", encoding="utf-8")
    (tmp_path / "chunkscope.toml").write_text('site_url = "https://book.example.com/docs/"\n', encoding="utf-8")
    assert main(["chunk", str(docs), "-s", "section", "--config", str(tmp_path / "chunkscope.toml"),
                 "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    doc = load_docs(docs).documents[0]
    chunks = {c.index: c for c in get_strategy("section").chunk(doc)}
    assert [r["url"] for r in rows] == [chunk_url("https://book.example.com/docs/", doc, chunks[r["index"]])
                                        for r in rows]
    assert rows[-1]["url"] == "https://book.example.com/docs/module-4/4.1-humanoid/intro#411-balance"


def test_seed_url_anchor_under_the_title_is_the_page_itself_and_not_missing() -> None:
    # Docusaurus gives the H1 no id: seed 000's and seed 002's url_anchor for content under it is "" (the page),
    # and lint does not call that missing metadata; a section below it keeps its "#anchor".
    from chunkscope.document.loader import Document
    from chunkscope.lint import lint_tree

    doc = Document.from_text("# Kinematics\n\nIntro text here.\n\n## Forward kinematics\n\nBody text.\n",
                             path="ch03-kinematics.md")
    for name in ("section-sentence", "section"):
        chunks = get_strategy(name).chunk(doc)
        anchors = [c.metadata["url_anchor"] for c in chunks]
        assert anchors[0] == "" and anchors[-1] == "#forward-kinematics", (name, anchors)
    from chunkscope.document.loader import DocsTree
    findings = lint_tree(DocsTree(Path("."), [doc], []), get_strategy("section-sentence"))
    assert not [f for f in findings.findings if f.rule == "missing-metadata"
                and "url_anchor" in f.message]


# --- names and ids a URL must percent-encode (tests/fixtures/docusaurus/docs: with space/, café.md, heading-ids.md)

@pytest.mark.parametrize(("path", "route", "url"), [
    # The built sitemap's <loc> for each: a browser's path encoding (space, non-ASCII), the rest kept raw.
    ("with space/a page.md", "/with space/a page", "https://ex.org/with%20space/a%20page"),
    ("café.md", "/café", "https://ex.org/caf%C3%A9"),
    ("it's (odd) & +=,;@~.md", "/it's (odd) & +=,;@~", "https://ex.org/it's%20(odd)%20&%20+=,;@~"),
    # Built in a trial site (not kept in the fixture: "|" is no file name on Windows): kept raw in the sitemap.
    ("pipe|caret^.md", "/pipe|caret^", "https://ex.org/pipe|caret^"),
])
def test_a_route_is_percent_encoded_in_the_url_as_the_sitemap_writes_it(path, route, url) -> None:
    d = doc(path)
    assert doc_route(d) == route  # the route itself is the page's decoded path, as Docusaurus writes it to disk
    chunk = get_strategy("fixed").chunk(d)[0]
    assert chunk_url("https://ex.org/", d, chunk) == url


HEADING_IDS = ("# Heading ids\n\nIntro.\n\n## Setup {#my setup}\n\nA.\n\n## Über uns\n\nB.\n\n## Hash {#c#sharp}\n\nC.\n\n"
               "## Setup\n\nD.\n\n## Pad {#  padded id  }\n\nE.\n\n## Empty {# }\n\nF.\n")


def test_explicit_ids_are_the_ids_docusaurus_builds() -> None:
    # The built page's h2 ids: an explicit id is taken as written, spaces and "#" kept, trimmed; "{# }" is no id,
    # so the whole text is slugified; the explicit "my setup" leaves the slug "setup" free.
    d = doc("heading-ids.md", HEADING_IDS)
    for headings in (d.outline.headings, d.structure.headings):
        assert [(h.text, h.anchor) for h in headings[1:]] == [
            ("Setup", "my setup"), ("Über uns", "über-uns"), ("Hash", "c#sharp"), ("Setup", "setup"),
            ("Pad", "padded id"), ("Empty {# }", "empty--")]


def test_a_fragment_is_percent_encoded_as_a_browser_needs_it() -> None:
    # A browser percent-decodes a fragment to find the id: "#my%20setup" opens id="my setup"; "#" inside an id
    # is escaped so the URL has one fragment.
    d = doc("heading-ids.md", HEADING_IDS)
    chunks = chunk_text(HEADING_IDS, "custom", path="heading-ids.md", callable="tests.test_custom:paragraphs")
    urls = {c.text: chunk_url("https://ex.org", d, c) for c in chunks}
    assert urls["A."] == "https://ex.org/heading-ids#my%20setup"
    assert urls["B."] == "https://ex.org/heading-ids#%C3%BCber-uns"
    assert urls["C."] == "https://ex.org/heading-ids#c%23sharp"
    assert urls["E."] == "https://ex.org/heading-ids#padded%20id"
    anchors = [c.metadata["url_anchor"] for c in get_strategy("section").chunk(d)]
    assert "#my%20setup" in anchors and "#c%23sharp" in anchors

"""What a new user's trial on two outside Docusaurus trees found (an SDK's versioned, number-prefixed developer
docs; a JS tool's versioned docs with ``id:`` front matter and no H1 on its pages), each on a small synthetic site.

- A folder inside a site's docs (the way a user indexes a part of a big tree) is read as part of that tree: its
  paths and URLs are the whole site's, not those of a tree that starts at the folder.
- A file inside ``versioned_docs/version-X`` given alone is read as that release's page, with its route.
- A docs folder kept beside its site root (``website/`` reading ``path: '../docs'``) is read with that site.
- A page that opens with prose under a front matter ``title`` (Docusaurus shows the title as its H1) gives that
  text the title as its heading, so lint does not ask for metadata the page already has.
- Lint: a plugin that is code does not hide the docs the preset configured; a chunk that starts inside a code
  block is named as starting there; a few words past the embedder's limit are not "0%" of a chunk.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from chunkscope import get_strategy
from chunkscope.chunking.model import Span
from chunkscope.chunking.strategy import Limits, Strategy
from chunkscope.document.loader import Document, DocsTree, load_docs
from chunkscope.lint import lint_tree
from chunkscope.site.urls import page_url

CONFIG = """module.exports = {
  url: 'https://example.org',
  baseUrl: '/',
  trailingSlash: true,
  presets: [['classic', {docs: {routeBasePath: '/', lastVersion: '2.0', versions: {current: {path: 'main'}}}}]],
};
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "docs" / "01-apps" / "02-transfer").mkdir(parents=True)
    (root / "docs" / "01-apps" / "_category_.json").write_text('{"label": "Apps", "position": 1}', encoding="utf-8")
    (root / "docs" / "00-intro.md").write_text("---\nslug: /\n---\n\n# Intro\n\nWelcome.\n", encoding="utf-8")
    (root / "docs" / "01-apps" / "02-transfer" / "03-params.md").write_text(
        "# Params\n\nThe transfer module's parameters.\n", encoding="utf-8")
    (root / "docs" / "01-apps" / "02-transfer" / "_partial.md").write_text("Shared text.\n", encoding="utf-8")
    version = root / "versioned_docs" / "version-2.0" / "01-apps"
    version.mkdir(parents=True)
    (version / "05-mocks.md").write_text("---\nid: mock-api\n---\n\n# Mocks\n\nOld mocks.\n", encoding="utf-8")
    (root / "versions.json").write_text(json.dumps(["2.0"]), encoding="utf-8")
    (root / "docusaurus.config.js").write_text(CONFIG, encoding="utf-8")
    return root


def urls(tree: DocsTree) -> dict[str, str]:
    """Each page's published URL, as the loader read the site around it."""
    return {d.path: page_url(None, d) for d in tree.documents}


def test_a_folder_inside_the_docs_reads_as_part_of_the_site(site: Path) -> None:
    tree = load_docs(site / "docs" / "01-apps" / "02-transfer")
    # Paths from the docs folder, the number prefixes stripped from the route, the current version's path.
    assert urls(tree) == {"01-apps/02-transfer/03-params.md": "https://example.org/main/apps/transfer/params/"}
    assert tree.partial and tree.root == site / "docs"
    assert urls(tree) == {p: u for p, u in urls(load_docs(site / "docs")).items() if p.startswith("01-apps/02-")}
    # The folder alone: a re-walk (the app's watcher) finds only its own pages, never the rest of the tree.
    assert tree.published is not None
    assert tree.published("01-apps/02-transfer/03-params.md") and not tree.published("00-intro.md")
    assert not tree.published("01-apps/02-transfer/_partial.md")


def test_a_folder_inside_a_release_reads_as_that_version(site: Path) -> None:
    tree = load_docs(site / "versioned_docs" / "version-2.0" / "01-apps")
    assert urls(tree) == {"01-apps/05-mocks.md": "https://example.org/apps/mock-api/"}


def test_a_file_of_a_release_alone_has_the_release_route(site: Path) -> None:
    tree = load_docs(site / "versioned_docs" / "version-2.0" / "01-apps" / "05-mocks.md")
    assert urls(tree) == {"01-apps/05-mocks.md": "https://example.org/apps/mock-api/"}
    assert tree.root == site / "versioned_docs" / "version-2.0"


def test_a_folder_outside_any_site_is_its_own_tree(tmp_path: Path) -> None:
    (tmp_path / "notes" / "a").mkdir(parents=True)
    (tmp_path / "notes" / "a" / "page.md").write_text("# Page\n\nText.\n", encoding="utf-8")
    tree = load_docs(tmp_path / "notes" / "a")
    assert [d.path for d in tree.documents] == ["page.md"] and not tree.partial and tree.site is None


@pytest.mark.parametrize("name", ["recursive", "fixed"])
def test_text_before_the_first_heading_sits_under_the_front_matter_title(name: str) -> None:
    intro = "Install it first, with the package manager you use.\n\n## Next steps\n\nRun it.\n"
    page = Document.from_text(f"---\nid: getting-started\ntitle: Getting Started\n---\n\n{intro}",
                              path="GettingStarted.md")
    chunks = get_strategy(name, chunk_size=8, chunk_overlap=0).chunk(page)
    assert chunks[0].metadata["heading"] == "Getting Started"
    assert chunks[-1].metadata["heading"] == "Next steps"
    untitled = Document.from_text(intro, path="notes.md")
    assert get_strategy(name, chunk_size=8, chunk_overlap=0).chunk(untitled)[0].metadata["heading"] == ""


def test_lint_asks_no_heading_of_a_page_titled_in_its_front_matter() -> None:
    page = Document.from_text("---\ntitle: Architecture\n---\n\nHow the parts fit together.\n", path="arch.md")
    findings = lint_tree(DocsTree(Path("."), [page], []), get_strategy("recursive"))
    assert [f.rule for f in findings.findings if f.rule == "missing-metadata"] == []


def test_a_file_of_a_release_alone_finds_the_site_config(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chunkscope.config.reader import find_config

    monkeypatch.chdir(site.parent)  # no config in the working directory to fall back on
    (site / "chunkscope.toml").write_text("", encoding="utf-8")
    assert find_config(site / "versioned_docs" / "version-2.0" / "01-apps" / "05-mocks.md") == site / "chunkscope.toml"


def test_a_folder_inside_the_docs_finds_the_site_config(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # load_docs reads such a folder as part of the site, so the site's config is the one that applies to it.
    from chunkscope.config.reader import find_config

    monkeypatch.chdir(site.parent)
    (site / "chunkscope.toml").write_text("", encoding="utf-8")
    assert find_config(site / "docs" / "01-apps" / "02-transfer") == site / "chunkscope.toml"
    assert find_config(site / "versioned_docs" / "version-2.0" / "01-apps") == site / "chunkscope.toml"


def test_the_note_on_a_folder_inside_the_docs_shows_the_docs_folder_as_typed(
        site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(site.parent)
    tree = load_docs("site/docs/01-apps/02-transfer")
    assert tree.notes[0] == ("site/docs/01-apps/02-transfer: read as part of the site's docs folder site/docs: "
                             "paths start there")


def test_a_folder_inside_the_docs_is_never_taken_for_an_indexed_whole_tree(site: Path) -> None:
    # An index run on the folder keeps no manifest of its own (it is part of the site's tree, as a file alone is):
    # a manifest written for the folder as a tree of its own must not answer for it.
    from chunkscope.retrieval.manifest import expected_root

    assert expected_root(site / "docs" / "01-apps" / "02-transfer") is None
    assert expected_root(site) == site / "docs"
    assert expected_root(site / "docs") == site / "docs"


def test_a_plugin_that_is_code_does_not_hide_the_docs_the_preset_configured(tmp_path: Path) -> None:
    # IBC-Go's config ends its plugins with `async function myPlugin(context, options) {...}` (Tailwind): the
    # docs are the classic preset's, read whole, so nothing chunkscope reads fell back to a default.
    from chunkscope.site.config import read_site

    (tmp_path / "docusaurus.config.js").write_text("""module.exports = {
  url: 'https://example.org',
  presets: [['classic', {docs: {routeBasePath: '/'}}]],
  plugins: [
    ['@docusaurus/plugin-content-docs', {id: 'adrs', path: 'architecture', routeBasePath: 'architecture'}],
    async function myPlugin(context, options) { return {name: 'tailwind'}; },
  ],
};
""", encoding="utf-8")
    reading = read_site(tmp_path)
    assert (reading.config.route_base_path, reading.unread) == ("/", "")
    # Without the preset's docs an unread plugin could be the docs plugin itself: that is still said.
    (tmp_path / "docusaurus.config.js").write_text(
        "module.exports = {url: 'https://example.org', plugins: [makeDocs()]};", encoding="utf-8")
    assert "an entry of plugins (makeDocs())" in read_site(tmp_path).unread


class Overlapping(Strategy):
    """Two chunks that overlap inside one code block over the limit, as recursive with chunk_overlap cuts."""

    name = "overlapping"
    description = "test strategy: the second chunk starts inside the first"

    def limits(self) -> Limits:
        return Limits("cl100k_base", 20)

    def spans(self, doc: Document) -> list[Span]:
        text = doc.text
        second, first_end = text.index("    total = a"), text.index("    return total")
        return [Span(doc.body_start, first_end, {}), Span(second, len(text), {})]


def test_a_chunk_that_starts_inside_a_code_block_is_named_as_starting_there() -> None:
    # Jest's Webpack page: "chunk 1 ends inside the js code block ... at line 31", where chunk 2 started, while
    # chunk 1 ran on to line 39. The line belongs to the chunk that starts there.
    body = "".join(f"    step_{i} = compute(a, b, {i})\n" for i in range(12))
    text = (f"# Code\n\n```python\ndef add(a, b):\n{body}    total = a + b\n    log(total)\n    check(total)\n"
            "    return total\n```\n")
    page = Document.from_text(text, path="code.md")
    found = [f for f in lint_tree(DocsTree(Path("."), [page], []), Overlapping()).findings if f.rule == "split-fence"]
    second = text[:text.index("    total = a")].count("\n") + 1
    assert [(f.line, f.message.split(" inside ")[0]) for f in found] == [(second, "chunk 1 starts")]


class WholeBody(Strategy):
    """The whole body as one chunk, with no limit of its own (only the embedder's)."""

    name = "whole-body"
    description = "test strategy: one chunk"

    def limits(self) -> Limits:
        return Limits("cl100k_base", None)

    def spans(self, doc: Document) -> list[Span]:
        return [Span(doc.body_start, len(doc.text), {})]


def test_a_chunk_a_few_words_too_long_does_not_say_nothing_is_lost() -> None:
    # Jest's Configuration page: "259 word pieces ... (0% of the chunk) is not embedded".
    words = " ".join(["retrieval"] * 300)
    page = Document.from_text(f"{words}\n", path="long.md")
    found = lint_tree(DocsTree(Path("."), [page], []), WholeBody(), select="embed-truncation").findings
    assert len(found) == 1 and "(under 1% of the chunk)" not in found[0].message  # a sixth of it: a real share
    page = Document.from_text(f"{' '.join(['retrieval'] * 255)}\n", path="long.md")
    found = lint_tree(DocsTree(Path("."), [page], []), WholeBody(), select="embed-truncation").findings
    assert len(found) == 1 and "(under 1% of the chunk) is not embedded" in found[0].message


def test_docs_kept_beside_the_site_read_with_the_site(tmp_path: Path) -> None:
    # Jest (and Prettier) keep website/ and docs/ side by side, the config reading `path: '../docs'`: the docs
    # folder or one of its pages given alone has no marker above it, and had the route alone for a URL.
    (tmp_path / "website").mkdir()
    (tmp_path / "website" / "docusaurus.config.js").write_text(
        "module.exports = {url: 'https://example.org', presets: [['classic', {docs: {path: '../docs'}}]]};",
        encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "MockFunctionAPI.md").write_text("---\nid: mock-function-api\n---\n\n# Mocks\n\nText.\n",
                                                          encoding="utf-8")
    expected = {"MockFunctionAPI.md": "https://example.org/docs/mock-function-api"}
    assert urls(load_docs(tmp_path / "docs")) == expected
    assert urls(load_docs(tmp_path / "docs" / "MockFunctionAPI.md")) == expected
    assert urls(load_docs(tmp_path / "website")) == expected
    # A site beside that publishes another folder does not claim this one.
    (tmp_path / "website" / "docusaurus.config.js").write_text(
        "module.exports = {url: 'https://example.org', presets: [['classic', {docs: {path: 'guides'}}]]};",
        encoding="utf-8")
    assert urls(load_docs(tmp_path / "docs")) == {"MockFunctionAPI.md": "/mock-function-api"}
    # A folder deep in those docs, or a page in it, is read as part of them too, with its path from docs/.
    (tmp_path / "website" / "docusaurus.config.js").write_text(
        "module.exports = {url: 'https://example.org', presets: [['classic', {docs: {path: '../docs'}}]]};",
        encoding="utf-8")
    (tmp_path / "docs" / "sub").mkdir()
    (tmp_path / "docs" / "sub" / "x.md").write_text("# X\n\nText.\n", encoding="utf-8")
    deep = {"sub/x.md": "https://example.org/docs/sub/x"}
    assert urls(load_docs(tmp_path / "docs" / "sub")) == deep
    assert urls(load_docs(tmp_path / "docs" / "sub" / "x.md")) == deep


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node to evaluate a site config")
def test_trusting_the_docs_code_runs_no_other_site_beside_them(tmp_path: Path) -> None:
    # allow_code trusts the tree's own site; the site beside it that publishes another folder is another
    # project: its config is read literally to tell, never run.
    ran = "require('fs').writeFileSync(require('path').join(__dirname, 'ran'), '');\n"
    for name, docs in (("other", "guides"), ("website", "../docs")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "docusaurus.config.js").write_text(
            ran + f"module.exports = {{url: 'https://{name}.org', "
                  f"presets: [['classic', {{docs: {{path: '{docs}'}}}}]]}};", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "x.md").write_text("# X\n\nText.\n", encoding="utf-8")
    assert urls(load_docs(tmp_path / "docs", allow_code=True)) == {"x.md": "https://website.org/docs/x"}
    assert (tmp_path / "website" / "ran").exists()  # the site picked is read with its code
    assert not (tmp_path / "other" / "ran").exists()

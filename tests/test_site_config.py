"""Reading a Docusaurus site around the docs: its config (literals or Node), what it publishes, and its URLs.

The real build that checks these rules end to end is tests/test_docusaurus_oracle.py (the handbook site root);
these tests name each rule and run without Node, except where Node itself is the subject.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from chunkscope import get_strategy, load_docs
from chunkscope.document.loader import DocsError
from chunkscope.site.config import SiteConfig, read_site
from chunkscope.site.order import DEFAULT_EXCLUDE, GlobSet
from chunkscope.site.urls import chunk_url, page_url

PAGE = "# Title\n\nBody.\n\n## Part\n\nMore.\n"


def site(tmp_path: Path, config: str, name: str = "docusaurus.config.js", docs: str = "docs") -> Path:
    """A site root with ``config`` and a docs folder holding two pages and a partial."""
    (tmp_path / name).write_text(config, encoding="utf-8")
    for rel in ("intro.md", "01-start/02-setup.md", "01-start/_partial.mdx"):
        f = tmp_path / docs / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(PAGE, encoding="utf-8")
    return tmp_path


ESM_TS = """
import type {Config} from '@docusaurus/types';
import {themes as prismThemes} from 'prism-react-renderer';

const config: Config = {
  url: 'https://docs.example.org',
  baseUrl: `/proto/`,
  trailingSlash: false,
  presets: [
    ['classic', {docs: {routeBasePath: '/', sidebarPath: './sidebars.ts'}} satisfies Preset.Options],
  ],
  themeConfig: {prism: {theme: prismThemes.github}},
};

export default config;
"""


def test_a_typescript_config_is_read_from_its_literals(tmp_path: Path) -> None:
    root = site(tmp_path, ESM_TS, "docusaurus.config.ts")
    reading = read_site(root)
    c = reading.config
    assert (c.url, c.base_url, c.trailing_slash, c.route_base_path, c.path) == (
        "https://docs.example.org", "/proto/", False, "/", "docs")
    assert reading.unread == ""
    tree = load_docs(root)
    urls = {d.path: page_url(None, d) for d in tree}
    assert urls == {"intro.md": "https://docs.example.org/proto/intro",
                    "01-start/02-setup.md": "https://docs.example.org/proto/start/setup"}


def test_what_is_not_a_literal_is_said_in_one_line_and_defaults_stand(tmp_path: Path) -> None:
    root = site(tmp_path, """
const base = process.env.BASE_URL ?? '/';
module.exports = async function createConfig() {
  return {
    url: 'https://x.example',
    baseUrl: base,
    plugins: [[require.resolve('@docusaurus/plugin-content-docs'), {path: 'docs'}]],
    presets: [['classic', {docs: {exclude: [...defaults, '**/*.draft.md'], routeBasePath: 'api'}}]],
  };
};
""")
    reading = read_site(root)
    assert reading.config.url == "https://x.example" and reading.config.route_base_path == "api"
    assert reading.config.base_url == "/" and reading.config.exclude == DEFAULT_EXCLUDE
    assert "\n" not in reading.unread
    assert "baseUrl (process.env.BASE_URL ?? '/')" in reading.unread
    assert "docs.exclude (...defaults)" in reading.unread
    tree = load_docs(root)
    assert any("could not read baseUrl" in n for n in tree.notes)


def test_a_broken_config_is_a_note_not_an_error(tmp_path: Path) -> None:
    root = site(tmp_path, "module.exports = {url: 'https://x.example' +, }")
    tree = load_docs(root)
    assert len(tree) == 2 and tree.site == SiteConfig(source="docusaurus.config.js")
    assert any("does not parse as JavaScript (line 1)" in n for n in tree.notes)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_evaluates_the_config_only_when_code_may_run(tmp_path: Path) -> None:
    root = site(tmp_path, """
const path = require('path');
const route = ['reference', 'v2'].join('/');
module.exports = {url: 'https://x.example', baseUrl: '/', presets: [['classic', {docs: {routeBasePath: route}}]]};
""")
    assert read_site(root).config.route_base_path == "docs"  # not a literal: Docusaurus' default, and a note
    assert "docs.routeBasePath (['reference', 'v2'].join('/'))" in read_site(root).unread
    assert read_site(root, allow_code=True).config.route_base_path == "reference/v2"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_where_node_fails_the_literals_are_read_and_the_note_says_why(tmp_path: Path) -> None:
    root = site(tmp_path, """
const {themes} = require('prism-react-renderer');
module.exports = {url: 'https://x.example', baseUrl: '/b/', themeConfig: {prism: themes.github},
  presets: [['classic', {docs: {routeBasePath: someName}}]]};
""")
    reading = read_site(root, allow_code=True)
    assert reading.config.base_url == "/b/"
    assert "node could not load it" in reading.unread and "prism-react-renderer" in reading.unread


def test_a_site_root_reads_its_docs_folder_and_leaves_partials_out(tmp_path: Path) -> None:
    root = site(tmp_path, "module.exports = {url: 'https://x.example', baseUrl: '/'};")
    (root / "versioned_docs" / "version-1.0").mkdir(parents=True)
    tree = load_docs(root)
    assert tree.root == root / "docs" and {d.path for d in tree} == {"intro.md", "01-start/02-setup.md"}
    assert "reading its docs folder docs/" in tree.notes[0] and "versioned_docs/ (1 version) not read" in tree.notes[0]
    assert any("01-start/_partial.mdx" in n for n in tree.notes)
    # The docs folder given itself is read with the same site; a single file too.
    assert {d.path for d in load_docs(root / "docs")} == {"intro.md", "01-start/02-setup.md"}
    one = load_docs(root / "docs" / "intro.md")
    assert page_url(None, one.documents[0]) == "https://x.example/docs/intro"
    assert "01-start/_partial.mdx" in {d.path for d in load_docs(root, site={"unpublished": True})}


def test_a_plain_folder_leaves_underscore_partials_out_too(tmp_path: Path) -> None:
    (tmp_path / "_shared").mkdir()
    for rel in ("a.md", "_b.md", "_shared/c.md"):
        (tmp_path / rel).write_text(PAGE, encoding="utf-8")
    tree = load_docs(tmp_path)
    assert [d.path for d in tree] == ["a.md"] and tree.site is None
    assert page_url("https://x.example/docs/", tree.documents[0]) == "https://x.example/docs/a"


def test_chunkscope_toml_site_settings_win_and_are_checked(tmp_path: Path) -> None:
    root = site(tmp_path, "module.exports = {url: 'https://x.example', trailingSlash: false};")
    tree = load_docs(root, site={"base_url": "/b/", "trailing_slash": True, "route_base_path": "/"})
    doc = tree.get("01-start/02-setup.md")
    assert doc is not None
    assert chunk_url(None, doc, get_strategy("fixed").chunk(doc)[0]) == "https://x.example/b/start/setup/"
    with pytest.raises(DocsError, match=r"\[site\].*site.trailing_slash must be true or false"):
        load_docs(root, site={"trailing_slash": "yes"})


@pytest.mark.parametrize(("config", "route", "path"), [
    (SiteConfig(), "/intro", "/docs/intro"),
    (SiteConfig(route_base_path="/"), "/", "/"),
    (SiteConfig(base_url="/b/", trailing_slash=True), "/a/b", "/b/docs/a/b/"),
    (SiteConfig(base_url="/b/", trailing_slash=False), "/guide/", "/b/docs/guide"),
    (SiteConfig(base_url="/b/", route_base_path="/", trailing_slash=False), "/", "/b/"),  # the home keeps its slash
    # A site whose lastVersion is a release serves the current docs under "next", or the path it names.
    (SiteConfig(last_version="2.0", released=("2.0", "1.0")), "/x", "/docs/next/x"),
    (SiteConfig(released=("2.0",), versions={"current": {"path": "main"}}), "/x", "/docs/main/x"),
    (SiteConfig(released=("2.0",), version="2.0"), "/x", "/docs/x"),
    (SiteConfig(released=("2.0", "1.0"), version="1.0"), "/x", "/docs/1.0/x"),
])
def test_page_paths_follow_base_url_route_base_version_and_trailing_slash(config: SiteConfig, route: str,
                                                                           path: str) -> None:
    assert config.page_path(route) == path


@pytest.mark.parametrize(("glob", "yes", "no"), [
    ("**/_*.{js,jsx,ts,tsx,md,mdx}", ["_a.md", "x/y/_b.mdx"], ["a_b.md", "_a.txt"]),
    ("**/_*/**", ["_s/a.md", "x/_s/y/a.md"], ["x/s_/a.md"]),
    ("**/*.template.md", ["a.template.md", "x/a.template.md"], ["a.md", "template.md"]),
    ("drafts/*.md", ["drafts/a.md"], ["drafts/x/a.md", "x/drafts/a.md"]),
])
def test_globs_match_as_docusaurus_matches_them(glob: str, yes: list[str], no: list[str]) -> None:
    g = GlobSet([glob])
    assert all(g.match(p) for p in yes) and not any(g.match(p) for p in no)


def test_the_site_table_of_chunkscope_toml_is_validated(tmp_path: Path) -> None:
    from chunkscope.config.reader import ConfigError, parse_config

    cfg = parse_config({"site": {"base_url": "/b/", "trailing_slash": True, "exclude": ["**/*.draft.md"],
                                 "unpublished": False, "versions": {"current": {"path": "main"}}}})
    assert cfg.site["base_url"] == "/b/"
    with pytest.raises(ConfigError, match=r"unknown key site.baseUrl"):
        parse_config({"site": {"baseUrl": "/b/"}}, tmp_path / "chunkscope.toml")
    with pytest.raises(ConfigError, match=r"site.exclude must be a list of glob strings"):
        parse_config({"site": {"exclude": "**/*.md"}})
    with pytest.raises(ConfigError, match=r"site.unpublished must be true or false"):
        parse_config({"site": {"unpublished": 1}})

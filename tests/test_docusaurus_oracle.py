"""A real Docusaurus 3 build as the oracle for citation routes and anchors.

The fixture tree (tests/fixtures/docusaurus/docs) and a copy of sample_docs are built by the Docusaurus pinned in
tests/docusaurus/package.json, each as its own instance of the docs plugin; then every chunk of every page of every
strategy must link (`site.chunk_url`) to a page the build wrote (its sitemap) and to an ``id`` of a heading in that
page's HTML, and every page's heading anchors must be the ids Docusaurus gave, in order.

npm installs into a cache folder outside the repository (``$XDG_CACHE_HOME`` or ``~/.cache``, then
``chunkscope-tests/docusaurus-<hash of package.json>``), reused while package.json is unchanged; a finished build
is kept there too, keyed by everything it was built from, so a re-run with nothing changed reads it back.
Where node or npm is absent the tests skip and say so.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Callable
from urllib.parse import unquote, urlsplit

import pytest

from chunkscope import get_strategy, load_docs, strategy_names
from chunkscope.site.numbering import doc_numbering
from chunkscope.site.urls import chunk_url, doc_route

from .conftest import REPO, SAMPLE_DOCS

# One worker runs them all under pytest-xdist (--dist loadgroup), so the session builds the site once, not per worker.
pytestmark = [pytest.mark.docusaurus, pytest.mark.xdist_group("docusaurus")]

SITE_SOURCE = REPO / "tests" / "docusaurus"
FIXTURE_DOCS = REPO / "tests" / "fixtures" / "docusaurus" / "docs"
#: A whole site root with its own config: docs in guides/ under /handbook/manual/, trailingSlash, partials, exclude.
HANDBOOK = REPO / "tests" / "fixtures" / "docusaurus" / "site"
SITE_URL = "https://oracle.example.com"  # docusaurus.config.js's url
#: The route each tree is served under (the docs plugin's routeBasePath).
FIXTURE_BASE, SAMPLE_BASE = "fixture", "sample"
#: Every strategy, custom too (cut at blank lines: a chunk starts at nearly every heading).
STRATEGIES = {name: {} for name in strategy_names() if name != "custom"} | {
    "custom": {"callable": "tests.test_custom:paragraphs"}
}
#: A URL fragment as RFC 3986 allows it: no raw space, "#", "%" or non-ASCII, only %XX escapes.
_VALID_FRAGMENT = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-F]{2})*")
BUILD_TIMEOUT = 900  # seconds: a cold install and build take about a minute and a half on two cores


# --- installing and building --------------------------------------------------------------------------------

def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "chunkscope-tests"


def _run(cmd: list[str], cwd: Path, env: dict[str, str], what: str) -> None:
    """Run a node tool; a failure fails the test with the tail of what the tool printed."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
        pytest.fail(f"{what} failed (exit {proc.returncode}):\n{tail}")


def _node_env() -> dict[str, str]:
    # No update check (it would reach the network) and no colour codes in a failure's output. No persistent webpack
    # cache: it lives in the shared node_modules and is not keyed by site, so one site's build could come out with
    # another site's pages (seen: a fixture built as "Page Not Found" pages titled after the previous site).
    return {**os.environ, "NO_UPDATE_NOTIFIER": "1", "NO_COLOR": "1", "FORCE_COLOR": "0",
            "BROWSERSLIST_IGNORE_OLD_DATA": "1", "DOCUSAURUS_NO_PERSISTENT_CACHE": "1"}


def _installed() -> Path:
    """The folder holding node_modules for package.json, installed once and reused while package.json is the same."""
    manifest = (SITE_SOURCE / "package.json").read_bytes()
    home = _cache_root() / f"docusaurus-{hashlib.sha256(manifest).hexdigest()[:16]}"
    if (home / "node_modules" / "@docusaurus" / "core" / "package.json").is_file():
        return home
    # Install beside the final folder and rename it into place, so an interrupted install is never reused.
    home.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=home.name + ".", dir=home.parent))
    (staging / "package.json").write_bytes(manifest)
    _run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], staging, _node_env(), "npm install")
    try:
        staging.rename(home)
    except OSError:  # another session finished the same install first
        shutil.rmtree(staging, ignore_errors=True)
    return home


def _tree_digest(trees: dict[str, Path]) -> str:
    """A hash of everything a build reads: the pinned packages, the site config and every file of every tree."""
    h = hashlib.sha256()
    for name in ("package.json", "docusaurus.config.js"):
        h.update((SITE_SOURCE / name).read_bytes())
    for base, root in sorted(trees.items()):
        h.update(f"\0tree {base}\0".encode())
        for f in sorted(p for p in root.rglob("*") if p.is_file()):
            h.update(f"\0{f.relative_to(root).as_posix()}\0".encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _build(trees: dict[str, Path]) -> Path:
    """The Docusaurus build of ``trees`` ({routeBasePath: docs folder}), built once per set of inputs."""

    def prepare(site: Path) -> None:
        for name in ("package.json", "docusaurus.config.js"):
            shutil.copyfile(SITE_SOURCE / name, site / name)

    env = {"CHUNKSCOPE_DOCS_TREES": json.dumps({b: str(p) for b, p in trees.items()})}
    return _built("trees", _tree_digest(trees), prepare, env)


def _build_site(source: Path) -> Path:
    """The Docusaurus build of a whole site root (its own config and docs), built once per set of inputs."""
    h = hashlib.sha256((SITE_SOURCE / "package.json").read_bytes())
    for f in sorted(p for p in source.rglob("*") if p.is_file()):
        h.update(f"\0{f.relative_to(source).as_posix()}\0".encode())
        h.update(f.read_bytes())
    return _built(source.name, h.hexdigest()[:16], lambda site: shutil.copytree(source, site, dirs_exist_ok=True), {})


def _built(kind: str, digest: str, prepare: Callable[[Path], None], env: dict[str, str]) -> Path:
    """The build of a site folder made by ``prepare``, kept under ``builds/<kind>-<digest>`` (one per kind)."""
    home = _installed()
    out = home / "builds" / f"{kind}-{digest}"
    if (out / "sitemap.xml").is_file():
        return out
    # A fresh site folder each time: webpack's persistent cache there does not key on every option (a stale
    # cache kept MDX parsing after markdown.format changed), so nothing of an earlier build is reused.
    with tempfile.TemporaryDirectory(prefix="chunkscope-docusaurus-") as tmp:
        site = Path(tmp)
        prepare(site)
        (site / "node_modules").symlink_to(home / "node_modules", target_is_directory=True)
        staging = Path(tempfile.mkdtemp(prefix="build.", dir=home))
        cli = home / "node_modules" / "@docusaurus" / "core" / "bin" / "docusaurus.mjs"
        _run(["node", str(cli), "build", str(site), "--out-dir", str(staging), "--no-minify"], site,
             _node_env() | env, "docusaurus build")
    old = [p for p in out.parent.glob(f"{kind}-*") if p.is_dir()] if out.parent.is_dir() else []
    out.parent.mkdir(exist_ok=True)
    try:
        staging.rename(out)
    except OSError:  # another session wrote the same build first
        shutil.rmtree(staging, ignore_errors=True)
    for stale in old:  # one build of each kind is kept: the one the current inputs give
        if stale != out:
            shutil.rmtree(stale, ignore_errors=True)
    return out


def _require_node() -> None:
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed: the Docusaurus oracle needs node >= 20 and npm")
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    m = re.match(r"v(\d+)", version)
    if not m or int(m.group(1)) < 20:
        pytest.skip(f"node {version or '(unknown version)'} is too old: Docusaurus 3 needs node >= 20")


# --- reading the build --------------------------------------------------------------------------------------

class _HeadingIds(HTMLParser):
    """The ``id`` of every h1-h6 element of a page, in document order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: list[tuple[int, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if re.fullmatch(r"h[1-6]", tag):
            ident = dict(attrs).get("id")
            if ident:
                self.ids.append((int(tag[1]), ident))


class Site:
    """A finished build: its pages (from the sitemap) and the heading ids of each."""

    def __init__(self, out: Path, base_url: str = "/") -> None:
        self.out = out
        #: The site's baseUrl: in its URLs, not in the build folder's layout.
        self.base_url = base_url
        sitemap = (out / "sitemap.xml").read_text(encoding="utf-8")
        locs = [html.unescape(loc) for loc in re.findall(r"<loc>([^<]+)</loc>", sitemap)]  # "&amp;" is "&"
        #: Each page's route as written on disk (decoded) → its URL path as the sitemap writes it, percent-encoded
        #: as a browser requests it ("/fixture/with%20space/a%20page"): a citation must match it exactly.
        self.paths = {unquote(urlsplit(loc).path): urlsplit(loc).path for loc in locs}
        self.routes = set(self.paths)
        self._ids: dict[str, list[tuple[int, str]]] = {}

    def heading_ids(self, route: str) -> list[tuple[int, str]]:
        """(level, id) of the headings of the page at ``route``, in order."""
        if route not in self._ids:
            local = route.removeprefix(self.base_url.rstrip("/")).strip("/")
            page = self.out / local / "index.html" if local else self.out / "index.html"
            parser = _HeadingIds()
            parser.feed(page.read_text(encoding="utf-8"))
            self._ids[route] = parser.ids
        return self._ids[route]


@pytest.fixture(scope="session")
def sample_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sample_docs copied at test time (the build reads it; nothing is written into the repository)."""
    dest = tmp_path_factory.mktemp("sample-docs") / "docs"
    shutil.copytree(SAMPLE_DOCS, dest)
    return dest


@pytest.fixture(scope="session")
def site(sample_copy: Path) -> Site:
    """One Docusaurus build of both trees, shared by every test here."""
    _require_node()
    return Site(_build({FIXTURE_BASE: FIXTURE_DOCS, SAMPLE_BASE: sample_copy}))


def _trees(sample_copy: Path) -> dict[str, Path]:
    return {FIXTURE_BASE: FIXTURE_DOCS, SAMPLE_BASE: sample_copy}


# --- the checks ---------------------------------------------------------------------------------------------

def _check_chunks(site: Site, base: str, root: Path, strategy: str) -> tuple[int, int, list[str]]:
    """Pages, chunks and failures of every chunk's URL of one strategy over one tree."""
    tree = load_docs(root)
    assert not tree.problems, tree.problems
    strat = get_strategy(strategy, **STRATEGIES[strategy])
    failures: list[str] = []
    n_chunks = 0
    for doc in tree.documents:
        for chunk in strat.chunk(doc):
            n_chunks += 1
            url = chunk_url(f"{SITE_URL}/{base}", doc, chunk)
            parts = urlsplit(url)
            route, anchor = unquote(parts.path), unquote(parts.fragment)
            where = f"{doc.path} chunk {chunk.index} ({strategy}): {url}"
            if route not in site.routes:
                failures.append(f"{where}: no such page")
                continue
            # Decoding alone would let "/with space/a page" pass: the path must be the one the sitemap writes.
            if parts.path != site.paths[route]:
                failures.append(f"{where}: path {parts.path!r} is not the built page's URL {site.paths[route]!r}")
            if not _VALID_FRAGMENT.fullmatch(parts.fragment):
                failures.append(f"{where}: fragment {parts.fragment!r} is not percent-encoded")
            ids = {i for _, i in site.heading_ids(route)}
            if anchor and anchor not in ids:
                failures.append(f"{where}: no heading with id {anchor!r} (the page has {sorted(ids)})")
            under = doc.structure.heading_before(_first_content(doc.text, chunk.start, chunk.end))
            if not anchor and under is not None and under.level > 1:
                failures.append(f"{where}: no anchor, but the chunk starts under {under.text!r}")
            # The seeds' own url_anchor field (seed 000, seed 002) must name a built id too ("" is the page).
            seed_anchor = chunk.metadata.get("url_anchor")
            if seed_anchor and unquote(seed_anchor.lstrip("#")) not in ids:
                failures.append(f"{where}: url_anchor {seed_anchor!r} is not a heading id of the page")
            if seed_anchor and not _VALID_FRAGMENT.fullmatch(seed_anchor[1:]):
                failures.append(f"{where}: url_anchor {seed_anchor!r} is not percent-encoded")
    return len(tree.documents), n_chunks, failures


def _first_content(text: str, start: int, end: int) -> int:
    i = start
    while i < end and text[i].isspace():
        i += 1
    return i if i < end else start


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("base", [FIXTURE_BASE, SAMPLE_BASE])
def test_every_chunk_links_to_a_built_page_and_heading(site: Site, sample_copy: Path, base: str,
                                                       strategy: str) -> None:
    pages, chunks, failures = _check_chunks(site, base, _trees(sample_copy)[base], strategy)
    print(f"{base}/{strategy}: {pages} pages, {chunks} chunks, {len(failures)} failures")
    assert chunks >= pages
    assert not failures, f"{len(failures)} of {chunks} chunks link wrong:\n" + "\n".join(failures)


@pytest.mark.parametrize("base", [FIXTURE_BASE, SAMPLE_BASE])
def test_every_page_is_routed_and_its_anchors_are_the_built_ids(site: Site, sample_copy: Path, base: str) -> None:
    tree = load_docs(_trees(sample_copy)[base])
    routes = {f"/{base}{doc_route(doc)}": doc.path for doc in tree.documents}
    built = {r for r in site.routes if r == f"/{base}/" or r.startswith(f"/{base}/")}
    # Every page is one of the built site's and the site has no page chunkscope did not route to.
    assert set(routes) == built, (sorted(set(routes) - built), sorted(built - set(routes)))
    wrong = []
    for route, path in routes.items():
        doc = next(d for d in tree.documents if d.path == path)
        ours = [(h.level, h.anchor) for h in doc.structure.headings if h.level > 1]
        theirs = [(lvl, i) for lvl, i in site.heading_ids(route) if lvl > 1]
        if ours != theirs:
            wrong.append(f"{path}: ours {ours}\n  built {theirs}")
    assert not wrong, "\n".join(wrong)


def test_the_fixture_exercises_the_routing_rules(site: Site) -> None:
    """The fixture keeps the cases it was made for: prefixes stripped and kept, index pages, slugs, ids."""
    for route in ("/fixture/getting-started", "/fixture/basics", "/fixture/setup", "/fixture/2021-01-31-changelog",
                  "/fixture/module-4/4.1-humanoid-fundamentals/", "/fixture/module-4/10.2.3-deep-dive",
                  "/fixture/module-4/control/", "/fixture/sensors/", "/fixture/safety/", "/fixture/hardware/imu",
                  "/fixture/sensors/laser-ranging", "/fixture/actuators/actuators", "/fixture/guide/pro-tips",
                  "/fixture/guide/questions/faq", "/fixture/guide/tips/", "/fixture/reference/storage-format",
                  "/fixture/04-reference/0-overview", "/fixture/with space/a page", "/fixture/café",
                  "/fixture/heading-ids"):
        assert route in site.routes, route
    # The sitemap percent-encodes what a browser would (space, non-ASCII) and keeps the rest raw.
    assert site.paths["/fixture/with space/a page"] == "/fixture/with%20space/a%20page"
    assert site.paths["/fixture/café"] == "/fixture/caf%C3%A9"
    # (A page named with ' ( ) & + = , ; @ ~ gets a sitemap path with those raw, but Docusaurus 3.10 renders its
    # HTML as the not-found page: no tree is expected to use such names, so the fixture does not.)
    # An explicit id is taken as written, spaces and "#" included, and trimmed; "{# }" is no id.
    assert [i for lvl, i in site.heading_ids("/fixture/heading-ids") if lvl > 1] == [
        "my setup", "über-uns", "c#sharp", "setup", "padded id", "empty--"]


# --- a whole site root, read through its own config -------------------------------------------------------------

@pytest.fixture(scope="session")
def handbook() -> Site:
    """The Docusaurus build of the handbook site root, with its own docusaurus.config.js."""
    _require_node()
    return Site(_build_site(HANDBOOK), base_url="/handbook/")


@pytest.mark.parametrize("allow_code", [False, True], ids=["literals", "node"])
def test_a_site_root_is_read_through_its_config_and_every_page_is_a_built_page(handbook: Site,
                                                                               allow_code: bool) -> None:
    # Read without running the config (its literal forms) and with Node running it: the same site either way.
    tree = load_docs(HANDBOOK, allow_code=allow_code)
    assert tree.root == HANDBOOK / "guides" and "reading its docs folder guides/" in tree.notes[0]
    pages = {doc.path: urlsplit(chunk_url(None, doc, next(iter(get_strategy("fixed").chunk(doc))))) for doc in tree}
    assert {p.netloc for p in pages.values()} == {"handbook.example.org"}
    built = {r for r in handbook.routes if r.startswith("/handbook/manual/")}
    # Every page chunkscope reads is one the build published, and the build published no page it left out:
    # the _-prefixed partials and the excluded template are in neither.
    assert {p.path for p in pages.values()} == built, (sorted(pages), sorted(built))
    assert not any(part.startswith("_") or ".template." in part for path in pages for part in path.split("/"))
    assert all(p.path.endswith("/") for p in pages.values())  # trailingSlash: true
    assert any("release.template.md" in note for note in tree.notes)


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_every_chunk_of_a_site_root_links_to_a_built_page_and_heading(handbook: Site, strategy: str) -> None:
    tree = load_docs(HANDBOOK)
    strat = get_strategy(strategy, **STRATEGIES[strategy])
    failures = []
    for doc in tree:
        for chunk in strat.chunk(doc):
            url = chunk_url(None, doc, chunk)
            parts = urlsplit(url)
            if parts.path not in handbook.paths.values():
                failures.append(f"{doc.path} chunk {chunk.index}: {url}: no such page")
            elif parts.fragment and unquote(parts.fragment) not in {i for _, i in handbook.heading_ids(parts.path)}:
                failures.append(f"{doc.path} chunk {chunk.index}: {url}: no such heading")
    assert not failures, "\n".join(failures)


def test_sidebar_prefixes_number_no_chapter_and_no_chapter_id_spans_two_sections() -> None:
    tree = load_docs(HANDBOOK)
    sections: dict[str, set[str]] = {}
    for doc in tree:
        numbering = doc_numbering(doc)
        assert numbering.chapter is None, (doc.path, numbering)
        sections.setdefault(numbering.chapter_id, set()).add(doc.path.split("/")[0])
    assert all(len(tops) == 1 for tops in sections.values()), sections
    # 01-basics/03-rate-limits.md and 02-advanced/03-rate-limits.md share a prefix, not a chapter.
    ids = {doc.path: doc_numbering(doc).chapter_id for doc in tree}
    assert ids["01-basics/03-rate-limits.md"] != ids["02-advanced/03-rate-limits.md"]


def test_unpublished_pages_are_read_when_asked() -> None:
    tree = load_docs(HANDBOOK, site={"unpublished": True})
    assert {"01-basics/_shared/_note.mdx", "02-advanced/_snippet.md", "02-advanced/release.template.md"} <= {
        d.path for d in tree}

"""Routes and URLs: the page Docusaurus publishes for a document, and the link a chunk's citation gives.

Docusaurus routes each page from its path (number prefixes stripped), ``id`` and ``slug``; the site serves it
under ``url`` + ``baseUrl`` + the docs plugin's ``routeBasePath`` (and the version's path), with or without a
trailing slash as ``trailingSlash`` says. Where the loader read the site's configuration (`chunkscope.site.config`)
the document carries it, and every URL here follows it.
"""

from __future__ import annotations

import string
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Protocol
from urllib.parse import quote

from chunkscope.site.order import number_prefix

if TYPE_CHECKING:
    from chunkscope.document.loader import Document
    from chunkscope.document.structure import Heading


class Span(Protocol):
    """What a URL needs of a chunk: where it starts and ends in its document's text."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


# --- routes ------------------------------------------------------------------------------------------------

def _strip_prefix(segment: str) -> str:
    return number_prefix(segment)[1]


def _is_category_index(path: PurePosixPath) -> bool:
    """Whether Docusaurus makes the page its folder's index: ``index``, ``README`` or the folder's own name.

    Names are compared as written, number prefixes and all (``07-safety/07-safety.md`` is an index page,
    ``05-actuators/actuators.md`` is not), and case aside.
    """
    stem = path.stem.lower()
    return stem in ("index", "readme") or (len(path.parts) > 1 and stem == path.parent.name.lower())


def _resolve(slug: str, folder_route: str) -> str:
    """A relative slug resolved against its folder's route, as a URL path is (``./``, ``../``, a trailing ``/``)."""
    parts = [p for p in folder_route.split("/") if p]
    segments = slug.split("/")
    for seg in segments:
        if seg == "..":
            if parts:
                parts.pop()
        elif seg not in ("", "."):
            parts.append(seg)
    route = "/" + "/".join(parts)
    trailing = segments[-1] in ("", ".", "..")
    return route + "/" if trailing and route != "/" else route


def doc_route(doc: "Document") -> str:
    """The page's route as Docusaurus computes it: its permalink under the docs plugin's route base.

    An absolute ``slug`` is the route. Else an index page (`_is_category_index`) routes to its folder, with a
    trailing slash; else the ``slug``, the ``id`` or the file name (number prefix stripped) is resolved under
    the folder's route, whose folder names lose their number prefixes. ``parse_number_prefixes: false`` keeps
    every prefix of the page's path.
    """
    fm = doc.front_matter
    path = PurePosixPath(doc.path)
    strip = fm.get("parse_number_prefixes") is not False
    folders = [_strip_prefix(p) if strip else p for p in path.parts[:-1]]
    folder_route = "/" + "".join(f"{f}/" for f in folders)
    slug = fm.get("slug")
    slug = slug.strip() if isinstance(slug, str) and slug.strip() else None
    if slug is not None and slug.startswith("/"):
        return slug
    if slug is None and _is_category_index(path):
        # An id does not change an index page's route: Docusaurus checks the file's name, not its id.
        return folder_route
    if slug is None:
        doc_id = fm.get("id")
        if isinstance(doc_id, str) and doc_id.strip():
            slug = doc_id.strip()
        else:
            slug = _strip_prefix(path.stem) if strip else path.stem
    return _resolve(slug, folder_route)


# --- page URLs ---------------------------------------------------------------------------------------------

# A route and an id are what Docusaurus writes raw (``/with space/a page``, ``id="my setup"``); a citation URL must
# carry them the way a browser sends them, or the link is no valid URL and some tools cut it at the space. The
# printable ASCII a browser leaves raw (WHATWG URL standard), everything else (controls, non-ASCII as UTF-8) is
# percent-encoded; `quote` keeps letters, digits and "_.-~" itself.
_PRINTABLE = frozenset(string.punctuation)
# In a path: the browser's path percent-encode set is space " # < > ? ` { }; Docusaurus' sitemap writes each page's
# URL exactly so (``/fixture/with%20space/a%20page``, ``caf%C3%A9``, ``it's%20(odd)%20&%20+=,;@~`` kept raw).
# "%" and "\\" are encoded too: a raw "%" would be read as an escape (Docusaurus cannot build such a page
# anyway) and a browser turns "\\" into "/".
_PATH_SAFE = "".join(sorted(_PRINTABLE - set('"#<>?`{}%\\')))
# In a fragment: the browser's fragment percent-encode set (space " < > `), plus "#" and "%" so the fragment is
# one valid, unambiguous URL part; a browser percent-decodes a fragment to find the id ("#c%23sharp" finds
# id="c#sharp", "#my%20setup" finds id="my setup").
_FRAGMENT_SAFE = "".join(sorted(_PRINTABLE - set('"<>`#%')))


def url_path(route: str) -> str:
    """A route (`doc_route`) as a URL path: each segment percent-encoded as a browser requests it, which is how
    Docusaurus' sitemap writes it (``/with space/a page`` → ``/with%20space/a%20page``)."""
    return quote(route, safe=_PATH_SAFE)


def url_fragment(anchor: str) -> str:
    """A heading id as a URL fragment (no ``#``): ``"my setup"`` → ``"my%20setup"``, ``"über"`` → ``"%C3%BCber"``."""
    return quote(anchor, safe=_FRAGMENT_SAFE)


def heading_fragment(heading: "Heading | None") -> str | None:
    """The URL fragment that links to ``heading`` on its published page: ``"#anchor"`` (percent-encoded,
    `url_fragment`); ``""`` for the page's H1, which Docusaurus renders as the title with no id (the page itself
    is the link); None with no heading."""
    if heading is None:
        return None
    if heading.level <= 1:
        return ""
    return f"#{url_fragment(heading.anchor)}" if heading.anchor else None


def page_url(site_url: str | None, doc: "Document") -> str:
    """The published URL of ``doc``'s page, percent-encoded as a browser sends it (`url_path`).

    ``site_url`` (chunkscope.toml's ``site_url``), when given, is the base every route is joined to, as written.
    Else the site the loader read around the docs (``doc.site``: url + baseUrl + routeBasePath + version path)
    is; with neither, the URL is the route alone. The site's ``trailingSlash`` applies either way.
    """
    site = doc.site
    route = doc_route(doc)
    if site is None:
        return f"{(site_url or '').rstrip('/')}{url_path(route)}"
    if site_url:
        slashed = site.page_path(route)[len(site.docs_path):] or "/"
        return f"{site_url.rstrip('/')}{url_path(slashed)}"
    return f"{site.site_url}{url_path(site.page_path(route))}"


def chunk_url(site_url: str | None, doc: "Document", chunk: Span, page: str | None = None) -> str:
    """The published page of ``doc`` (`page_url`) + the fragment of the heading the chunk's content starts
    under, percent-encoded as a browser sends it (`url_fragment`). ``page``: that page's URL, already worked out
    (every chunk of a page shares it)."""
    h = doc.content_heading(chunk.start, chunk.end)
    return f"{page_url(site_url, doc) if page is None else page}{heading_fragment(h) or ''}"

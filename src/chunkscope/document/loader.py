"""The docs tree: finding Markdown/MDX files, decoding them exactly, front matter, and per-file problems.

Every offset anywhere in chunkscope indexes into ``Document.text``: the file's bytes decoded as UTF-8 with a
leading BOM removed and nothing else touched (line endings included).
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Iterator

from chunkscope.document.analysis import Analysis
from chunkscope.document.outline_scan import line_of
from chunkscope.document.structure import first_content
from chunkscope.site.config import SiteConfig, SiteConfigError, read_site
from chunkscope.site.order import (DEFAULT_EXCLUDE, DEFAULT_INCLUDE, GlobSet, category_position, front_matter_position,
                                   is_published, sidebar_order_key)
from chunkscope.site.sidebars import sidebar_ordered

if TYPE_CHECKING:
    from chunkscope.document.structure import Heading, Outline, Structure


DOC_SUFFIXES = (".md", ".mdx")
#: Folders that are never documentation: build output and package managers' trees.
SKIPPED_DIRS = frozenset({"node_modules", "build", "dist", "site", "_build", "target", "__pycache__", "venv"})
#: A file larger than this is reported and skipped: documentation pages are never this big, binaries are.
DEFAULT_MAX_BYTES = 4 * 1024 * 1024

_FRONT_MATTER = re.compile(r"\A---[ \t]*(\r\n|\r|\n)(.*?)(?:\r\n|\r|\n)?(?:---|\.\.\.)[ \t]*(?:\r\n|\r|\n|\Z)", re.S)
#: Values a front matter block may stand for once its YAML aliases are expanded: a page's metadata has a few dozen;
#: a "billion laughs" block (anchors of anchors of anchors) has billions, which any reader of the values would walk.
MAX_FRONT_MATTER_VALUES = 10_000
_EMPTY_FRONT_MATTER = re.compile(r"\A---[ \t]*(\r\n|\r|\n)---[ \t]*(?:\r\n|\r|\n|\Z)")


@dataclass(frozen=True, slots=True)
class Problem:
    """A file that could not be used as it is; the rest of the tree carries on."""

    path: str
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.code}: {self.message}"


@dataclass(eq=False)
class Document:
    """One Markdown or MDX file, decoded exactly.

    Attributes:
        path: POSIX path relative to the docs root (for a single file, the root of its tree: `docs_root_of`).
        text: the decoded text; every offset in chunkscope indexes into this string.
        front_matter: the YAML front matter as a dict (empty when there is none or it is malformed).
        body_start: offset of the first character after the front matter block.
        source: absolute path on disk, when the document came from a file.
    """

    path: str
    text: str
    front_matter: dict[str, Any] = field(default_factory=dict)
    body_start: int = 0
    source: Path | None = None
    mtime_ns: int = 0
    #: The Docusaurus site the page is published in, when the loader read one around the docs: its URLs follow
    #: the site's url, baseUrl, routeBasePath and trailingSlash (`chunkscope.site.urls.page_url`).
    site: SiteConfig | None = field(default=None, repr=False, compare=False)
    #: What is derived from the text (parse, outline, numbering, token counters, strategies' memos), each part
    #: computed once and reused by every strategy. Not a constructor argument: a copy made with
    #: ``dataclasses.replace`` gets an analysis of its own, never its original's.
    analysis: Analysis = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.analysis = Analysis(self)

    @classmethod
    def from_text(cls, text: str, path: str = "doc.md") -> "Document":
        """A document from a string, its front matter parsed as `load_docs` parses a file's.

        The text is kept exactly as given (a leading BOM too: it is a file's encoding mark, not a string's), so
        offsets into the document are offsets into ``text``. Malformed front matter is a `UserWarning`, and the
        document carries on without it, as a loaded tree carries on with a `Problem`.

        Args:
            text: Markdown or MDX source.
            path: POSIX path as it would be relative to a docs root (``"intro/01-setup.md"``); it names the
                chunks and the metadata read from paths (chapter numbers, page routes) follows it.

        Raises:
            TypeError: ``text`` is not a string.
        """
        if not isinstance(text, str):
            raise TypeError(f"Document.from_text() takes a str, got {type(text).__name__}")
        fm, body_start, err = split_front_matter(text)
        if err:
            import warnings

            warnings.warn(str(Problem(path, "front-matter", err)), UserWarning, stacklevel=2)
        return cls(path=path, text=text, front_matter=fm, body_start=body_start)

    @property
    def structure(self) -> "Structure":
        """The parsed Markdown structure, computed on first use and kept (`Analysis.structure`)."""
        return self.analysis.structure

    @property
    def outline(self) -> "Outline":
        """Line table, headings and fences: from a fast line scan when that is certain, else from `structure`
        (always from it once the document has been parsed); identical either way (`Analysis.outline`)."""
        return self.analysis.outline

    @property
    def name(self) -> str:
        return PurePosixPath(self.path).name

    def content_heading(self, start: int, end: int) -> "Heading | None":
        """The heading the text of ``[start, end)`` begins under, leading whitespace skipped: the heading a
        chunk of that span cites (`chunkscope.site.urls.chunk_url`). From the outline: its headings are the
        parse's, and indexing a tree then never parses a document the chunking did not."""
        return self.outline.heading_before(first_content(self.text, start, end))

    def line_of(self, offset: int) -> int:
        """The 1-based line holding ``offset`` (line breaks as Markdown sees them: CRLF, CR or LF), from the line
        table alone: asking for a line never scans nor parses the Markdown."""
        return line_of(self.analysis.line_starts, offset)


@dataclass
class DocsTree:
    """Every document found under a root, in reading order, and the problems met on the way.

    Attributes:
        root: the docs root every ``Document.path`` is relative to (for a single file, the root of the tree it
            belongs to: see `docs_root_of`).
        single_file: one file was given (commands show it by the path the user typed).
        partial: only part of the tree under ``root`` was loaded (a single file, a folder inside a site's docs),
            so what needs the other files (lint's ``duplicate`` rule across files, a store's other points) must not
            be judged from this part.
        site: the Docusaurus site the docs are published in, when one was read around them.
        notes: one-line remarks on how the tree was read (a site root read through its docs folder, pages
            Docusaurus does not publish left out, config values that could not be read); not problems.
        published: which files under ``root`` are pages (`iter_doc_files`' rule for this tree), for a re-walk.
        allow_code: the site's JS files (config, sidebars) may be run with Node (a trusted tree), for a re-walk.
    """

    root: Path
    documents: list[Document]
    problems: list[Problem]
    single_file: bool = False
    partial: bool = False
    site: SiteConfig | None = None
    notes: list[str] = field(default_factory=list)
    published: Callable[[str], bool] | None = None
    allow_code: bool = False

    def get(self, path: str) -> Document | None:
        for d in self.documents:
            if d.path == path:
                return d
        return None

    def __iter__(self) -> Iterator[Document]:
        return iter(self.documents)

    def __len__(self) -> int:
        return len(self.documents)


class DocsError(Exception):
    """The docs path itself cannot be used (missing, not Markdown); one line, shown to the user as is."""


def _expanded_values(root: Any) -> int:
    """How many values a composed YAML node stands for once every alias is expanded, counted up to just over
    `MAX_FRONT_MATTER_VALUES` (each shared node once, so a "billion laughs" block costs its own size here; a
    recursive alias counts as too many)."""
    cap = MAX_FRONT_MATTER_VALUES + 1
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        value = node.value
        kids = [] if isinstance(value, str) else [k for item in value
                                                  for k in (item if isinstance(item, tuple) else (item,))]
        if not children_done:
            if id(node) in open_nodes:
                return cap  # the node holds itself: endless once expanded
            open_nodes.add(id(node))
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in sizes)
            continue
        open_nodes.discard(id(node))
        sizes[id(node)] = min(1 + sum(sizes[id(k)] for k in kids), cap)
    return sizes[id(root)]


def split_front_matter(text: str) -> tuple[dict[str, Any], int, str | None]:
    """Parse a leading YAML front matter block.

    Returns:
        (front matter dict, offset where the body starts, error message or None). A malformed block yields an
        empty dict, the body start after the block (so the YAML is never taken for prose) and the error.
    """
    m = _EMPTY_FRONT_MATTER.match(text)
    if m:
        return {}, m.end(), None
    m = _FRONT_MATTER.match(text)
    if not m:
        return {}, 0, None
    raw = m.group(2)
    import yaml  # here, not at import time: PyYAML costs the app's start-up ~15 ms and many trees have none

    loader = yaml.SafeLoader(raw)  # yaml.safe_load's steps, with the size checked between parse and build
    try:
        node = loader.get_single_node()
        if node is not None and _expanded_values(node) > MAX_FRONT_MATTER_VALUES:
            return {}, m.end(), (f"front matter expands to more than {MAX_FRONT_MATTER_VALUES:,} values through YAML "
                                 "aliases; it is ignored")
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        return {}, m.end(), f"malformed front matter{where}: {problem}"
    finally:
        loader.dispose()
    if data is None:
        return {}, m.end(), None
    if not isinstance(data, dict):
        return {}, m.end(), f"front matter is a {type(data).__name__}, not a mapping"
    return {str(k): v for k, v in data.items()}, m.end(), None


def decode_document(raw: bytes, path: str, source: Path | None = None, mtime_ns: int = 0) -> tuple[Document | None, list[Problem]]:
    """Turn a file's bytes into a Document, or say why it cannot be one."""
    if b"\x00" in raw[:8192]:
        return None, [Problem(path, "binary", "file holds NUL bytes; not a text document")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return None, [Problem(path, "invalid-utf8", f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at line {line})")]
    if text.startswith("\ufeff"):
        text = text[1:]
    fm, body_start, err = split_front_matter(text)
    problems = [Problem(path, "front-matter", err)] if err else []
    return Document(path=path, text=text, front_matter=fm, body_start=body_start, source=source, mtime_ns=mtime_ns), problems


#: How a file is opened: never blocking (a FIFO named ``*.md`` opens at once instead of waiting for a writer),
#: bytes as they are on every platform.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def _kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, word in ((stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "named pipe (FIFO)"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return word
    return "special file"


def read_document(file: Path, rel: str, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[Document | None, list[Problem]]:
    """Read one file from disk as a Document (problems instead of exceptions).

    Only a regular file is read (a FIFO, a device or a socket named ``*.md`` is a problem, never a hang), and the
    size limit holds for the bytes actually read: a file's reported size can be 0 while it never ends.
    """
    limit = f"the {max_bytes}-byte limit (max_file_bytes in chunkscope.toml)"
    try:
        st = file.stat()  # before opening: opening some devices (a tape, a terminal) does something
        if not stat.S_ISREG(st.st_mode):
            return None, [Problem(rel, "not-a-file", f"a {_kind_of(st.st_mode)}, not a regular file; not read")]
        if st.st_size > max_bytes:
            return None, [Problem(rel, "too-large", f"{st.st_size} bytes is over {limit}")]
        fd = os.open(file, _OPEN_FLAGS)
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())  # the file opened, which may have been swapped since the first look
            if not stat.S_ISREG(st.st_mode):
                return None, [Problem(rel, "not-a-file", f"a {_kind_of(st.st_mode)}, not a regular file; not read")]
            raw = f.read(max_bytes + 1)
    except OSError as exc:
        return None, [Problem(rel, "unreadable", exc.strerror or str(exc))]
    if len(raw) > max_bytes:
        return None, [Problem(rel, "too-large", f"reads on past {limit}")]
    return decode_document(raw, rel, source=file, mtime_ns=st.st_mtime_ns)


def _ignored(rel: str, patterns: Iterable[str]) -> bool:
    for pat in patterns:
        if fnmatch.fnmatchcase(rel, pat) or fnmatch.fnmatchcase(rel, pat.rstrip("/") + "/*"):
            return True
        if pat.startswith("**/") and fnmatch.fnmatchcase(rel, pat[3:]):
            return True
    return False


def docusaurus_pages(include: Iterable[str] = DEFAULT_INCLUDE,
                     exclude: Iterable[str] = DEFAULT_EXCLUDE) -> Callable[[str], bool]:
    """The docs plugin's rule for which files are pages (`chunkscope.site.order.is_published`), for
    `iter_doc_files`: by default every ``.md``/``.mdx`` file except ``_``-prefixed files and folders."""
    inc, exc = GlobSet(include), GlobSet(exclude)
    return lambda rel: is_published(rel, inc, exc)


def every_file(rel: str) -> bool:
    """`iter_doc_files`' ``published`` rule that keeps every Markdown file (unpublished pages asked for)."""
    return True


def iter_doc_files(root: Path, ignore: Iterable[str] = (), published: Callable[[str], bool] | None = None,
                   left_out: list[str] | None = None, under: str = "") -> tuple[list[tuple[Path, str]], list[Problem]]:
    """Every Markdown/MDX file under ``root`` in the folders' order (the sidebar Docusaurus generates; `load_docs`
    then applies a site's sidebars file), as (absolute path, POSIX relative path).

    Only pages: a file ``published`` (default: `docusaurus_pages`' defaults) says Docusaurus would not publish is
    skipped, and its relative path appended to ``left_out`` when given. Symlinks are followed only when they stay
    inside the root and do not lead back to a folder already on the current path, so a link loop or a link out
    of the tree is reported, never walked. ``under`` (a POSIX path relative to ``root``) walks only that folder,
    its files still named relative to ``root``.
    """
    ignore = tuple(ignore)
    is_page = published if published is not None else docusaurus_pages()
    root_real = root.resolve()
    files: list[tuple[Path, str]] = []
    problems: list[Problem] = []

    def walk(folder: Path, rel_parts: tuple[str, ...], seen: frozenset[Path]) -> None:
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            problems.append(Problem("/".join(rel_parts) or ".", "unreadable", exc.strerror or str(exc)))
            return
        keyed = []
        for e in entries:
            if e.name.startswith("."):
                continue
            rel = "/".join((*rel_parts, e.name))
            path = Path(e.path)
            if e.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    problems.append(Problem(rel, "symlink", "broken or looping symbolic link; skipped"))
                    continue
                if target != root_real and root_real not in target.parents:
                    problems.append(Problem(rel, "symlink", "link points outside the docs root; skipped"))
                    continue
                if target in seen:
                    problems.append(Problem(rel, "symlink", "link loops back to a parent folder; skipped"))
                    continue
            try:
                is_dir = e.is_dir()
            except OSError:
                continue
            if is_dir:
                if e.name in SKIPPED_DIRS or _ignored(rel, ignore):
                    continue
                keyed.append((sidebar_order_key(e.name, category_position(path)), True, path, rel))
            elif e.name.lower().endswith(DOC_SUFFIXES):
                if _ignored(rel, ignore):
                    continue
                if not is_page(rel):
                    if left_out is not None:
                        left_out.append(rel)
                    continue
                stem = e.name.rsplit(".", 1)[0]
                # index/README pages open their folder in Docusaurus' sidebar.
                pos = front_matter_position(path)
                if pos is None and stem.lower() in ("index", "readme"):
                    pos = float("-inf")
                keyed.append((sidebar_order_key(e.name, pos), False, path, rel))
        keyed.sort(key=lambda k: k[0])
        for _, is_dir, path, rel in keyed:
            if is_dir:
                real = path.resolve()
                walk(path, tuple(rel.split("/")), seen | {real})
            else:
                files.append((path, rel))

    start = root / under if under else root
    walk(start, tuple(under.split("/")) if under else (), frozenset({root_real, start.resolve()}))
    return files, problems


#: Docusaurus' site configuration and sidebar files: the folder holding one is a site root (its docs are in docs/).
#: Only code and data suffixes: a page named ``sidebars.md`` is documentation, not a marker.
_SITE_MARKERS = tuple(f"{stem}.{ext}" for stem in ("docusaurus.config", "sidebars")
                      for ext in ("js", "ts", "mjs", "cjs", "mts", "cts", "json", "yaml", "yml"))
CONFIG_MARKER = "chunkscope.toml"


def is_site_root(folder: Path) -> bool:
    """Whether ``folder`` is a Docusaurus site root (it holds ``docusaurus.config.*`` or ``sidebars.*``)."""
    return any((folder / name).is_file() for name in _SITE_MARKERS)


def docs_root_of(file: str | os.PathLike[str]) -> Path:
    """The root of the docs tree a single file belongs to, so it reads as it does in a whole-tree run.

    The rule: the nearest folder, from the file's own folder upwards, that holds ``chunkscope.toml``,
    ``docusaurus.config.*`` or ``sidebars.*``, or that a site root beside it names as its docs (``path: '../docs'``).
    A Docusaurus site root (either of the two) stands for its ``docs/`` folder when the file lies inside it. With no
    such folder, the file's own folder is the root.
    """
    marked = marked_root_of(file)
    return marked if marked is not None else Path(os.path.abspath(file)).parent


def marked_root_of(file: str | os.PathLike[str]) -> Path | None:
    """`docs_root_of` when a marker decides it (the folder holding one, or a site root's ``docs/`` or
    ``versioned_docs/version-X`` folder); None when no folder above the file is marked, and its own folder is a
    root only for want of a better one."""
    file = Path(os.path.abspath(file))  # absolute, but symlinks kept: the path stays the one the user gave
    return _marked_above(file)


def _marked_above(path: Path) -> Path | None:
    """The nearest marked root strictly above the absolute ``path`` (see `marked_root_of`), or None. A docs
    folder that a site root beside it names (`_site_root_beside`) is marked too, so a page or folder deep in it
    reads as part of it, as one in a site's own ``docs/`` does."""
    for folder in path.parents:
        if is_site_root(folder):
            return _site_folder_of(folder, path)
        if (folder / CONFIG_MARKER).is_file() or _site_root_beside(folder) is not None:
            return folder
    return None


def site_docs_above(folder: str | os.PathLike[str]) -> Path | None:
    """The docs folder (``docs/`` or ``versioned_docs/version-X``) of the Docusaurus site that ``folder`` lies
    inside, as far as the markers tell without reading the site's config; None for a folder in no site, a folder
    with a ``chunkscope.toml`` of its own (a root of its own), or a docs folder itself."""
    path = Path(os.path.abspath(folder))
    if (path / CONFIG_MARKER).is_file():
        return None
    above = _marked_above(path)
    if above is None:
        return None
    if above.name == "docs" and is_site_root(above.parent) or _site_root_beside(above) is not None:
        return above
    release = above.parent.name == "versioned_docs" and above.name.startswith("version-")
    return above if release and is_site_root(above.parent.parent) else None


def _site_folder_of(site_root: Path, path: Path) -> Path:
    """The docs folder of ``site_root`` that ``path`` lies in: ``docs/``, or the ``versioned_docs/version-X``
    folder of a release (read as that version, with its routes); the site root itself for anything else."""
    docs = site_root / "docs"
    if docs.is_dir() and docs in path.parents:
        return docs
    versioned = site_root / "versioned_docs"
    if versioned in path.parents:
        version = versioned / path.relative_to(versioned).parts[0]
        if version != path and version.name.startswith("version-") and version.is_dir():
            return version
    return site_root


def load_docs(path: str | os.PathLike[str], *, ignore: Iterable[str] = (), max_bytes: int = DEFAULT_MAX_BYTES,
              allow_code: bool = False, site: Mapping[str, Any] | None = None) -> DocsTree:
    """Load a docs tree (a folder, read recursively) or a single Markdown/MDX file.

    A single file is read as part of its tree (`docs_root_of`): its ``path`` is relative to that tree's root,
    so its metadata, routes and ids are those of a whole-tree run, and the tree is marked ``partial``.

    When the docs sit in a Docusaurus site (the folder is a site root, its docs folder, or one of its
    ``versioned_docs/version-X`` folders), the site's config is read (`chunkscope.site.config.read_site`) and
    every document carries it, so URLs are the published ones; so is a docs folder that a site root beside it
    names (``website/`` with ``path: '../docs'``). A folder inside a docs folder is read as part of it, as a single
    file is: paths relative to that docs folder, the tree ``partial``. A site root given as ``path`` reads its
    docs folder, and says so in ``notes``; versioned docs are read only when their folder is given. Files Docusaurus
    does not publish (``_``-prefixed, the plugin's ``exclude``) are left out unless ``site`` says
    ``unpublished = true``, and ``notes`` counts them. The pages come in the site's sidebar order: its sidebars
    file's when the docs plugin names one (`chunkscope.site.sidebars`), else the folders'.

    Args:
        allow_code: the user allows running the tree's code: a JS/TS site config is evaluated with Node
            (else only its literal forms are read).
        site: ``[site]`` settings from chunkscope.toml, over the site's own config.

    Raises:
        DocsError: the path does not exist or is not a Markdown file or folder, or ``site`` holds a value of
            the wrong type. Problems with single files inside a tree never raise: they are collected in
            ``DocsTree.problems``.
    """
    p = Path(path)
    if not p.exists():
        raise DocsError(f"{path}: no such file or folder")
    if p.is_file():
        if not p.name.lower().endswith(DOC_SUFFIXES):
            raise DocsError(f"{path}: not a Markdown file (.md or .mdx)")
        root = docs_root_of(p)
        found, remarks = _site_around(root, allow_code, site)
        rel = Path(os.path.abspath(p)).relative_to(root).as_posix()
        doc, problems = read_document(p, rel, max_bytes)
        if doc is not None:
            doc.site = found
        return DocsTree(root=root, documents=[doc] if doc else [], problems=problems, single_file=True,
                        partial=True, site=found, notes=remarks)
    if not p.is_dir():
        raise DocsError(f"{path}: not a file or folder")
    notes: list[str] = []
    if is_site_root(p):
        found, notes = _site_around(p, allow_code, site, as_site_root=True)
        docs_folder = p / (found.path if found is not None else "docs")
        if docs_folder.is_dir():
            notes.insert(0, f"{path}: a Docusaurus site: reading its docs folder {found.path if found else 'docs'}/"
                            + _versions_note(p))
            p = docs_folder
        else:
            found = None  # a site without a docs folder (a blog, pages only): read the folder as it is
            notes = []
    else:
        found, notes = _site_around(p, allow_code, site)
    under = ""
    inside = site_docs_above(p) if found is None else None
    if inside is not None:
        # A folder inside a site's docs (or a release's) is read as part of that tree, as a single file is: its
        # paths, ids and routes are then the whole site's, not those of a tree that starts at the folder.
        found, remarks = _site_around(inside, allow_code, site)
        if found is not None:
            under = Path(os.path.abspath(p)).relative_to(inside).as_posix()
            shown = os.path.normpath(os.path.join(path, *[os.pardir] * len(Path(under).parts)))  # as typed
            notes = [f"{path}: read as part of the site's docs folder {shown}: paths start there", *remarks]
            p = inside
    unpublished = bool((site or {}).get("unpublished", False))
    published: Callable[[str], bool]
    if unpublished:
        published = every_file
    elif found is not None:
        published = docusaurus_pages(found.include, found.exclude)
    else:
        published = docusaurus_pages()
    if under:
        published = _kept_under(under, published)  # a re-walk (the app's watcher) keeps to the folder too
    left_out: list[str] = []
    files, problems = iter_doc_files(p, ignore, published, left_out, under=under)
    if left_out:
        notes.append(f"{len(left_out)} file{'s' if len(left_out) != 1 else ''} Docusaurus does not publish "
                     f"(_-prefixed or excluded: {', '.join(left_out[:3])}{', …' if len(left_out) > 3 else ''}) "
                     "left out; unpublished = true under [site] reads them")
    docs: list[Document] = []
    for file, rel in files:
        doc, probs = read_document(file, rel, max_bytes)
        problems.extend(probs)
        if doc is not None:
            doc.site = found
            docs.append(doc)
    if found is not None:
        # A hand-written sidebars file orders the pages as the site does; the walk gave the generated order.
        docs, remark = sidebar_ordered(docs, found, allow_code, partial=bool(under))
        if remark:
            notes.append(remark)
    return DocsTree(root=p, documents=docs, problems=problems, site=found, notes=notes, published=published,
                    partial=bool(under), allow_code=allow_code)


def _kept_under(under: str, published: Callable[[str], bool]) -> Callable[[str], bool]:
    """``published`` for the files under the folder ``under`` only."""
    prefix = under + "/"
    return lambda rel: rel.startswith(prefix) and published(rel)


def _versions_note(site_root: Path) -> str:
    """``"; versioned_docs/ (3 versions) not read: give versioned_docs/version-X to read one"`` or ""."""
    versioned = site_root / "versioned_docs"
    if not versioned.is_dir():
        return ""
    n = sum(1 for e in versioned.iterdir() if e.is_dir() and e.name.startswith("version-"))
    return (f"; versioned_docs/ ({n} version{'s' if n != 1 else ''}) not read: give versioned_docs/version-X "
            "as DOCS to read one")


def _site_around(folder: Path, allow_code: bool, overrides: Mapping[str, Any] | None,
                 as_site_root: bool = False) -> tuple[SiteConfig | None, list[str]]:
    """The Docusaurus site ``folder`` is the docs of (or the root of, with ``as_site_root``), and notes on
    what of its config could not be read; (None, []) when the folder is in no site."""
    version = "current"
    if as_site_root:
        site_root = folder
    elif is_site_root(folder.parent):
        site_root = folder.parent
    elif folder.parent.name == "versioned_docs" and folder.name.startswith("version-") \
            and is_site_root(folder.parent.parent):
        site_root, version = folder.parent.parent, folder.name.removeprefix("version-")
    else:
        return _site_beside(folder, allow_code, overrides)
    try:
        reading = read_site(site_root, allow_code=allow_code, version=version, overrides=overrides)
    except SiteConfigError as exc:
        raise DocsError(f"[site] in chunkscope.toml: {exc}") from exc
    config = reading.config
    if not as_site_root and version == "current" and \
            os.path.abspath(site_root / config.path) != os.path.abspath(folder):
        return None, []  # a folder of the site that is not its docs (a blog, a second plugin's docs)
    return config, [reading.unread] if reading.unread else []


def _site_beside(folder: Path, allow_code: bool, overrides: Mapping[str, Any] | None
                 ) -> tuple[SiteConfig | None, list[str]]:
    """The site whose docs ``folder`` is from a site root beside it (Jest's ``website/`` reads ``path: '../docs'``,
    so ``docs/`` given alone has no marker above it), and its notes; (None, []) when no site beside names it.

    The site is picked by its config's literal reading: trusting this tree's code (``allow_code``) must not run
    the code of every other project in the same parent folder; only the site picked is read again with it.
    """
    here = Path(os.path.abspath(folder))
    site_root = _site_root_beside(here, overrides)
    if site_root is None:
        return None, []
    try:
        reading = read_site(site_root, allow_code=allow_code, overrides=overrides)
    except SiteConfigError as exc:
        raise DocsError(f"[site] in chunkscope.toml: {exc}") from exc
    if os.path.abspath(site_root / reading.config.path) != str(here):
        return None, []  # its code names another folder than its literal reading did
    return reading.config, [reading.unread] if reading.unread else []


def _site_root_beside(folder: Path, overrides: Mapping[str, Any] | None = None) -> Path | None:
    """The site root beside the absolute ``folder`` whose config, read literally (never run), names ``folder``
    as its docs; None when none does."""
    if folder.parent == folder:
        return None  # the file system's root has nothing beside it
    try:
        beside = sorted(e for e in folder.parent.iterdir() if e != folder and e.is_dir() and is_site_root(e))
    except OSError:
        return None
    for site_root in beside:
        try:
            reading = read_site(site_root, allow_code=False, overrides=overrides)
        except SiteConfigError as exc:
            raise DocsError(f"[site] in chunkscope.toml: {exc}") from exc
        if os.path.abspath(site_root / reading.config.path) == str(folder):
            return site_root
    return None


def is_ignored(rel: str, patterns: Iterable[str]) -> bool:
    """Whether ``iter_doc_files`` skips the file or folder at ``rel`` (POSIX, relative to the root) for these
    ignore patterns: the same rule, for a watcher that stats the tree without reading it."""
    return _ignored(rel, tuple(patterns))

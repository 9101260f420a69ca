"""What Docusaurus makes of file names: number prefixes, sidebar order, and which files it publishes as pages.

Docusaurus strips one number prefix from each file and folder name, orders the sidebar by ``sidebar_position``,
``_category_`` positions and those prefixes, and leaves out of the site every file its docs plugin excludes (by
default any file or folder whose name starts with ``_``: MDX partials). The loader walks the tree in this order and
with these rules; nothing here reads a document's text beyond the head of its front matter.
"""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Iterable
from pathlib import Path

# Docusaurus' default number-prefix parser strips one number and its separators ("01-", "1_", "1.", "02 - ") from
# file and folder names when it builds routes, ids and sidebar positions...
_NUMBER_PREFIX = re.compile(r"^(\d+)\s*[-_.]+\s*")
# ...except from a name that starts like a version or a date ("4.1-", "10.2.3-", "2021-01-31-", "01-02-"): that
# name is kept whole and has no position. (Docusaurus tests a date pattern too, but every date it matches starts
# with two numbers joined by a separator, so this one pattern covers both.)
_KEPT_PREFIX = re.compile(r"^\d+[-_.]\d+")
# A page's file name is read without its extension: "1.md" is a page named "1", not one named "md".
_DOC_EXTENSION = re.compile(r"\.mdx?$", re.I)

#: The docs plugin's default ``exclude`` (Docusaurus 3, ``@docusaurus/utils`` ``GlobExcludeDefault``): partials,
#: folders of partials, tests.
DEFAULT_EXCLUDE = ("**/_*.{js,jsx,ts,tsx,md,mdx}", "**/_*/**", "**/*.test.{js,jsx,ts,tsx}", "**/__tests__/**")
#: The docs plugin's default ``include``.
DEFAULT_INCLUDE = ("**/*.{md,mdx}",)


def number_prefix(name: str) -> tuple[tuple[int, ...] | None, str]:
    """Split a Docusaurus number prefix off a file or folder name: ``"01-intro"`` → ``((1,), "intro")``.

    A name that starts like a version or a date keeps its prefix: ``"4.1-humanoid"`` → ``(None, "4.1-humanoid")``.
    Give a file's name without its extension.
    """
    if _KEPT_PREFIX.match(name):
        return None, name
    m = _NUMBER_PREFIX.match(name)
    if not m:
        return None, name
    return (int(m.group(1)),), name[m.end():]


def category_position(folder: Path) -> float | None:
    """The ``position`` from a Docusaurus ``_category_.json``/``.yml`` file, if any."""
    for fname in ("_category_.json", "_category_.yml", "_category_.yaml"):
        f = folder / fname
        if not f.is_file():
            continue
        import yaml  # only for this file kind: PyYAML costs start-up time and many trees have none

        try:
            raw = f.read_text(encoding="utf-8")
            data = json.loads(raw) if fname.endswith(".json") else yaml.safe_load(raw)
        except (OSError, ValueError, yaml.YAMLError):
            return None
        pos = data.get("position") if isinstance(data, dict) else None
        return float(pos) if isinstance(pos, (int, float)) else None
    return None


SortKey = tuple[int, tuple[float, ...], str]


def sidebar_order_key(name: str, position: float | None) -> SortKey:
    """Docusaurus' sidebar order of a file (named with its extension) or folder among its siblings.

    A sibling's position is its ``sidebar_position`` or ``_category_`` position when given, else its number
    prefix; both count on one scale (a folder at position 3 comes before ``04-page.md``). Positioned siblings
    come first, by position; ties and the rest (kept prefixes like ``4.1-`` included) go by name.
    """
    if position is None:
        num, _ = number_prefix(_DOC_EXTENSION.sub("", name))
        position = float(num[0]) if num is not None else None
    if position is not None:
        return (0, (position,), name)
    return (1, (), name)


def front_matter_position(file: Path) -> float | None:
    """Read only the head of a file to find ``sidebar_position`` without decoding the whole tree twice."""
    try:
        if not stat.S_ISREG(file.stat().st_mode):
            return None  # a FIFO or a device named *.md: opening it could block; the loader reports it
        with file.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return None
    m = re.search(rb"^sidebar_position:\s*([0-9.]+)\s*$", head, re.M)
    if not m or not head.lstrip(b"\xef\xbb\xbf").startswith(b"---"):
        return None
    try:
        return float(m.group(1))
    except ValueError:
        return None


# --- what Docusaurus publishes ---------------------------------------------------------------------------------

def _braces(pattern: str) -> list[str]:
    """``"a.{md,mdx}"`` → ``["a.md", "a.mdx"]`` (globby's brace expansion; nested braces expand in turn)."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    return [x for alt in m.group(1).split(",") for x in _braces(pattern[:m.start()] + alt + pattern[m.end():])]


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A micromatch-style glob as a regex over a POSIX path: ``**`` spans folders (``**/`` may match none),
    ``*`` and ``?`` stay inside one name and, as in Docusaurus' globby, never match a leading dot."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append(r"(?:[^/.][^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(r"(?:[^/.][^/]*(?:/[^/.][^/]*)*)?")
            i += 2
        elif pattern[i] == "*":
            out.append(r"[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append(r"[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


class GlobSet:
    """Docusaurus-style globs (``**``, ``*``, ``?``, ``{a,b}``) matched against paths relative to the docs root."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        self._regexes = [_glob_regex(p.removeprefix("./")) for pat in self.patterns for p in _braces(pat)]

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def match(self, rel: str) -> bool:
        """Whether the POSIX path ``rel`` matches one of the globs."""
        return any(r.match(rel) for r in self._regexes)


def is_published(rel: str, include: GlobSet, exclude: GlobSet) -> bool:
    """Whether the docs plugin makes a page of the file at ``rel``: an ``include`` glob matches and no
    ``exclude`` glob does (Docusaurus' own rule; its defaults leave out every ``_``-prefixed file and folder)."""
    return include.match(rel) and not exclude.match(rel)

"""Noticing Markdown files that change, appear, vanish or move under the docs root (no Textual here).

Why polling and not an event library such as ``watchfiles`` (measured on the Rust book, 112 files, 2 cores):
one `scan` costs about 0.65 ms, so a scan a second is under 0.1% of one core while idle, and the explorer
already wakes once a second for its slow-cut check. The save-to-screen latency is at most `POLL_SECONDS` plus
`SETTLE_SECONDS` plus the cut; an inotify watcher would answer in ~0.1 s but adds a compiled dependency, a
thread per tree, and watch limits, and misses changes on network and container mounts where polling still
works. A scan only stats (no file is read); the reading order (`iter_doc_files`, which reads front matter)
is asked only when the set of files changed.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from functools import partial
from typing import Callable, Iterable

from chunkscope.document.loader import DOC_SUFFIXES, SKIPPED_DIRS, DocsTree, Document, is_ignored

#: After a scan that differs, wait this long and scan again until two agree: an editor's save (old file moved
#: aside, new one renamed into place, a temporary file on the way) settles into one edit, never a delete + add.
SETTLE_SECONDS = 0.15
#: At most this many settling rounds (a tree that keeps changing is taken as it is then; the next poll goes on).
SETTLE_ROUNDS = 5


@dataclass(frozen=True, slots=True)
class Stamp:
    """What a scan knows of one file without reading it; (device, inode) survive a rename."""

    mtime_ns: int
    size: int
    dev: int
    ino: int


#: POSIX path relative to the root -> its stamp.
Snapshot = dict[str, Stamp]


@dataclass(frozen=True, slots=True)
class TreeChange:
    """How the files on disk differ from the last accepted snapshot."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    #: (old path, new path): a file moved with its inode, size and time unchanged.
    renamed: tuple[tuple[str, str], ...] = ()
    modified: tuple[str, ...] = ()

    @property
    def structural(self) -> bool:
        """Files came, went or moved (the reading order must be asked again)."""
        return bool(self.added or self.removed or self.renamed)

    def __bool__(self) -> bool:
        return self.structural or bool(self.modified)


def _stamp(st: os.stat_result) -> Stamp:
    return Stamp(st.st_mtime_ns, st.st_size, st.st_dev, st.st_ino)


def scan(root: Path, ignore: Iterable[str] = (), *, single_file: Path | None = None) -> Snapshot:
    """Stat every Markdown/MDX file the docs tree would hold (the same hidden, skipped and ignored folders as
    `chunkscope.document.loader.iter_doc_files`; symbolic links inside the root followed once).

    Args:
        root: the docs root.
        ignore: the configuration's ignore patterns.
        single_file: the one file (under ``root``) when the app was opened on a file, not a folder: only it is
            watched, known by its path relative to the root as its document is.
    """
    out: Snapshot = {}
    if single_file is not None:
        try:
            out[single_file.relative_to(root).as_posix()] = _stamp(single_file.stat())
        except OSError:
            pass
        return out
    patterns = tuple(ignore)
    seen: set[tuple[int, int]] = set()

    def walk(folder: Path, prefix: str) -> None:
        try:
            st = folder.stat()
            entries = list(os.scandir(folder))
        except OSError:
            return
        if (st.st_dev, st.st_ino) in seen:
            return  # a link loop
        seen.add((st.st_dev, st.st_ino))
        for e in entries:
            if e.name.startswith("."):
                continue
            rel = prefix + e.name
            try:
                if e.is_dir():
                    if e.name not in SKIPPED_DIRS and not is_ignored(rel, patterns):
                        walk(Path(e.path), rel + "/")
                elif e.name.lower().endswith(DOC_SUFFIXES) and not is_ignored(rel, patterns):
                    out[rel] = _stamp(e.stat())
            except OSError:
                continue  # vanished between the listing and the stat: the next scan knows

    walk(root, "")
    return out


def baseline(documents: Iterable[Document], current: Snapshot) -> Snapshot:
    """The snapshot the tree was loaded from: the files as scanned now, but each document with the time it was
    read at (an edit between loading and the first scan is then still an edit), and a document missing from the
    scan kept (so it reads as removed)."""
    out = dict(current)
    for d in documents:
        s = current.get(d.path)
        out[d.path] = Stamp(d.mtime_ns, s.size, s.dev, s.ino) if s is not None else Stamp(d.mtime_ns, -1, -1, -1)
    return out


def tree_scanner(tree: DocsTree, ignore: Iterable[str] = ()) -> Callable[[], Snapshot] | None:
    """One scan of what the watcher watches: the tree, or the one file the app was opened on (None once that file
    is gone from the tree: it has no path left to watch)."""
    if not tree.single_file:
        return partial(scan, tree.root, ignore)
    if not tree.documents:
        return None
    return partial(scan, tree.root, single_file=tree.root / tree.documents[0].path)


def first_scan(tree: DocsTree, ignore: Iterable[str] = ()) -> Snapshot | None:
    """The watcher's baseline (0.65 ms on the Rust book's 112 files): the files as they are now, each document with
    the time it was read at."""
    scan_once = tree_scanner(tree, ignore)
    return baseline(tree.documents, scan_once()) if scan_once is not None else None


def diff(old: Snapshot, new: Snapshot) -> TreeChange:
    """What changed from ``old`` to ``new``; a removed and an added path with the same inode, size and time
    are one rename (a new file reusing a freed inode has a new time)."""
    removed = [p for p in old if p not in new]
    added = [p for p in new if p not in old]
    modified = [p for p in new if p in old and old[p] != new[p]]
    by_identity = {new[p]: p for p in added}
    renamed: list[tuple[str, str]] = []
    for p in list(removed):
        target = by_identity.get(old[p])
        if target is not None and target in added:
            renamed.append((p, target))
            removed.remove(p)
            added.remove(target)
    return TreeChange(tuple(added), tuple(removed), tuple(renamed), tuple(modified))


def describe_change(change: TreeChange, most: int = 3) -> str:
    """One line for a notification: the files that came, went or moved, by name while there are few."""
    def names(paths: list[str], verb: str) -> str:
        if len(paths) > most:
            return f"{len(paths)} files {verb}"
        return f"{', '.join(paths)} {verb}"

    parts = []
    if change.added:
        parts.append(names(list(change.added), "added"))
    if change.removed:
        parts.append(names(list(change.removed), "deleted"))
    if change.renamed:
        moves = [f"{old} → {new}" for old, new in change.renamed]
        parts.append(f"renamed {', '.join(moves)}" if len(moves) <= most else f"{len(moves)} files renamed")
    return "; ".join(parts)


def settled_scan(scan_once, first: Snapshot, *, pause: float = SETTLE_SECONDS, rounds: int = SETTLE_ROUNDS,
                 cancelled=lambda: False) -> Snapshot:
    """Scan again after a short pause until two scans agree (an editor's save finishing), from ``first``."""
    last = first
    for _ in range(rounds):
        time.sleep(pause)
        if cancelled():
            break
        now = scan_once()
        if now == last:
            break
        last = now
    return last

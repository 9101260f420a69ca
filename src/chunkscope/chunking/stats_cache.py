"""Each file's chunk token counts under a strategy, kept between runs: an unchanged tree is not re-cut to be counted.

The app shows a tree's totals (chunk count, the size histogram) from here at start-up and after a strategy change,
while the full cut of the tree (lint, exports) runs behind them. An entry is used only for a file whose path and
text are exactly those it was counted from, under the same strategy, parameters and chunkscope version; for a
strategy that is not chunkscope's own, its module file's size and time are part of the key too (its code may be
edited between runs). One small JSON file per docs root and strategy key; the oldest files go beyond `KEEP`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from chunkscope.chunking.strategy import Strategy
from chunkscope.document.loader import Document
from chunkscope.paths import cache_home

#: Bumped when what is stored changes meaning.
FORMAT = 1
#: How many (docs root, strategy) files are kept: every value typed while tuning makes a key of its own.
KEEP = 64


@dataclass(frozen=True)
class FileStats:
    """One file's cut, as the totals need it: each chunk's token count in order, or why the cut failed."""

    tokens: tuple[int, ...]
    error: str | None = None


def strategy_key(strategy: Strategy) -> str:
    """What the counts depend on besides the files: chunkscope's version, the strategy's code and parameters."""
    from chunkscope import __version__

    cls = type(strategy)
    parts: dict[str, object] = {"format": FORMAT, "version": __version__, "class": f"{cls.__module__}.{cls.__qualname__}",
                                "name": strategy.name, "params": strategy.params}
    if not cls.__module__.startswith("chunkscope."):
        module = sys.modules.get(cls.__module__)
        source = getattr(module, "__file__", None)
        if source is not None:
            try:
                st = os.stat(source)
            except OSError:
                pass
            else:
                parts["code"] = (st.st_size, st.st_mtime_ns)
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()


def file_key(doc: Document) -> str:
    """The file as it was counted: its path and its whole text (front matter included)."""
    h = hashlib.sha1(doc.path.encode("utf-8", "surrogatepass"))
    h.update(b"\0")
    h.update(doc.text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


class StatsCache:
    """The stored counts of one docs root (a folder under the cache folder, ``chunk-stats`` by default)."""

    def __init__(self, root: str | Path, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else cache_home() / "chunk-stats"
        self._root = hashlib.sha1(str(Path(root).resolve()).encode("utf-8", "surrogatepass")).hexdigest()[:16]

    def _file(self, strategy: Strategy) -> Path:
        return self.folder / f"{self._root}-{strategy_key(strategy)[:24]}.json"

    def _read(self, strategy: Strategy) -> dict[str, list[object]]:
        try:
            data = json.loads(self._file(strategy).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # nothing stored, or a file cut short: counted afresh
        files = data.get("files") if isinstance(data, dict) and data.get("format") == FORMAT else None
        return files if isinstance(files, dict) else {}

    def lookup(self, strategy: Strategy, docs: Iterable[Document]) -> dict[str, FileStats]:
        """The stored counts of those ``docs`` that are unchanged since they were counted (by path)."""
        stored = self._read(strategy)
        out: dict[str, FileStats] = {}
        for doc in docs:
            entry = stored.get(doc.path)
            if not isinstance(entry, list) or len(entry) != 3 or entry[0] != file_key(doc):
                continue
            tokens, error = entry[1], entry[2]
            if isinstance(tokens, list) and all(isinstance(t, int) for t in tokens) and \
                    (error is None or isinstance(error, str)):
                out[doc.path] = FileStats(tuple(tokens), error)
        return out

    def store(self, strategy: Strategy, docs: Iterable[Document], stats: Mapping[str, FileStats]) -> None:
        """Keep the counts of ``docs`` (those in ``stats``) for the next run; a write that fails is skipped."""
        files = {d.path: [file_key(d), list(stats[d.path].tokens), stats[d.path].error]
                 for d in docs if d.path in stats}
        import tempfile  # only when writing

        target = self._file(strategy)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            # Written whole and renamed into place: a reader never sees half a file.
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".stats-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"format": FORMAT, "files": files}, f, separators=(",", ":"))
            os.replace(tmp, target)
            self._prune()
        except OSError:
            pass  # a read-only or full cache folder: the totals are counted again next time

    def _prune(self) -> None:
        kept = sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in kept[KEEP:]:
            old.unlink(missing_ok=True)

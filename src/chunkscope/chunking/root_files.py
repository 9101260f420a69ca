"""What the chunk caches share: one JSON file per docs root and strategy key under a folder of the cache, read
whole (a missing or damaged file is empty, never an error), written whole and renamed into place, the oldest
files removed past a bound. `stats_cache` keeps each file's token counts in such files, `cut_cache` each file's
cut."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chunkscope.chunking.strategy import Strategy

#: How many docs roots' worth of files a folder keeps (`RootFiles._prune`).
ROOTS_KEPT = 4


class RootFiles:
    """The files of one docs root under ``folder``, one per ``key(strategy)`` (`stats_cache.strategy_key`: what a
    cut depends on besides the files), in format ``fmt``; at most ``keep`` files in the folder."""

    def __init__(self, root: str | Path, folder: Path, *, key: Callable[[Strategy], str], fmt: int, keep: int,
                 tmp_prefix: str) -> None:
        self.folder = folder
        self._key = key
        self._root = hashlib.sha1(str(Path(root).resolve()).encode("utf-8", "surrogatepass")).hexdigest()[:16]
        self._format = fmt
        self._keep = keep
        self._tmp_prefix = tmp_prefix

    def _file(self, strategy: Strategy) -> Path:
        return self.folder / f"{self._root}-{self._key(strategy)[:24]}.json"

    def _read(self, strategy: Strategy) -> dict[str, Any]:
        """The stored entries by path; empty when nothing is stored or the file is cut short or of another format."""
        try:
            data = json.loads(self._file(strategy).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        files = data.get("files") if isinstance(data, dict) and data.get("format") == self._format else None
        return files if isinstance(files, dict) else {}

    def _write(self, strategy: Strategy, files: dict[str, Any]) -> None:
        """Store ``files`` whole for ``strategy``; a read-only or full cache folder skips the write (the work is
        done again next time)."""
        import tempfile  # only when writing

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=self._tmp_prefix, suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump({"format": self._format, "files": files}, f, separators=(",", ":"))
                os.replace(tmp, self._file(strategy))  # a reader never sees half a file
            except OSError:
                Path(tmp).unlink(missing_ok=True)
                raise
            self._prune()
        except OSError:
            pass

    def _prune(self) -> None:
        """At most ``keep`` files of this docs root (every value typed while tuning is a key of its own) and
        ``keep`` times `ROOTS_KEPT` in the folder, the newest kept; and temporary files left by a process that
        ended while it wrote (the app ends at once on a quit) once they are an hour old."""
        import time

        by_age = sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        mine = [f for f in by_age if f.name.startswith(self._root + "-")]
        for old in {*mine[self._keep:], *by_age[self._keep * ROOTS_KEPT:]}:
            old.unlink(missing_ok=True)
        hour_ago = time.time() - 3600
        for tmp in self.folder.glob(self._tmp_prefix + "*.tmp"):
            if tmp.stat().st_mtime < hour_ago:
                tmp.unlink(missing_ok=True)

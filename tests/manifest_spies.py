"""For the tests of the index manifest: a tree aged past the manifest's racy window, and spies that log what a run
loads, reads, hashes and chunks (the manifest's promise is what it does *not* do)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

#: An hour ago: files and folders older than the manifest's racy window, as a tree edited long ago is.
PAST = 3600

Calls = dict[str, list[Any]]


def age(root: Path, seconds: int = PAST) -> None:
    """Set every file's and folder's times ``seconds`` back (a tree written just now is "racy": hashed anyway)."""
    when = os.stat(root).st_mtime - seconds
    for folder, _, files in os.walk(root):
        for name in files:
            os.utime(Path(folder) / name, (when, when))
        os.utime(folder, (when, when))


def spy(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, log: list[Any], arg: int = 0) -> None:
    """``module.name`` logs its positional argument number ``arg`` in ``log`` at every call, then does its work."""
    real = getattr(module, name)

    def logged(*a: Any, **kw: Any) -> Any:
        log.append(a[arg])
        return real(*a, **kw)

    monkeypatch.setattr(module, name, logged)


def spy_chunking(monkeypatch: pytest.MonkeyPatch, log: list[Any]) -> None:
    """`chunk_documents` logs the path of every document it is given (an iterable: read once, then passed on)."""
    import chunkscope.chunking.drivers as drivers

    real = drivers.chunk_documents

    def chunk_documents(docs: Any, *a: Any, **kw: Any) -> Any:
        docs = list(docs)
        log.extend(d.path for d in docs)
        return real(docs, *a, **kw)

    monkeypatch.setattr(drivers, "chunk_documents", chunk_documents)


def forget(calls: Calls) -> None:
    """Empty every log, for the next step's calls alone."""
    for log in calls.values():
        log.clear()

"""The real app for Pilot tests, and waiting on it: shared by the TUI test modules."""

from __future__ import annotations

import time
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "sample_docs"


def make_app(docs: Path = SAMPLE, config=None, strategy: str | None = None, **params):
    """The real app on a docs tree (sample_docs by default), its config read as `chunkscope DOCS` reads it."""
    from chunkscope.config.reader import load_config, resolve_strategy
    from chunkscope.document.loader import load_docs
    from chunkscope.tui.app import ChunkscopeApp

    cfg = config or load_config(docs)
    return ChunkscopeApp(load_docs(docs, ignore=cfg.ignore), cfg, resolve_strategy(cfg, strategy, params or None))


async def wait_for(pilot, cond, timeout: float = 20.0, what: str = "condition") -> None:
    """Let the app run until ``cond()`` holds (workers finish in threads, results arrive as messages)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.02)
        if cond():
            await pilot.pause()
            return
    raise AssertionError(f"timed out waiting for {what}")


async def open_question(pilot, explorer, what: str = "the query input") -> None:
    """``/`` in the explorer, then wait until the question field is there and has the focus."""
    from textual.widgets import Input

    await pilot.press("slash")
    await wait_for(pilot, lambda: explorer.query("#query-input")
                   and explorer.query_one("#query-input", Input).has_focus, what=what)


async def press_burst(pilot, *keys: str) -> None:
    """Send keys the way a terminal delivers a burst (a fast typist, a busy moment): all at once, no waiting
    between them as ``pilot.press`` does. Then let the app handle them."""
    import unicodedata

    from textual import events
    from textual.keys import REPLACED_KEYS, _get_unicode_name_from_key

    app = pilot.app
    for key in keys:
        original = REPLACED_KEYS.get(key, key)
        try:
            char: str | None = unicodedata.lookup(_get_unicode_name_from_key(original))
        except KeyError:
            char = key if len(key) == 1 else None
        event = events.Key(key, char)
        event.set_sender(app)
        app._driver.send_message(event)  # noqa: SLF001 - what the terminal's reader thread does
    await pilot.pause()

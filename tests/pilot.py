"""Waiting on the real app in Pilot tests, shared by the TUI test modules."""

from __future__ import annotations

import time


async def wait_for(pilot, cond, timeout: float = 20.0, what: str = "condition") -> None:
    """Let the app run until ``cond()`` holds (workers finish in threads, results arrive as messages)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.02)
        if cond():
            await pilot.pause()
            return
    raise AssertionError(f"timed out waiting for {what}")

"""Small pieces of wording shared by the command line and the app (counts with the right plural)."""

from __future__ import annotations


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 chunk``, ``2 chunks``, ``0 chunks``; ``nouns`` for an irregular plural."""
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"

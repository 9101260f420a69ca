"""Small pieces of wording shared by the command line and the app (counts with the right plural, what to install)."""

from __future__ import annotations


def install_hint(subject: str, extra: str, package: str) -> str:
    """What a missing optional part needs: ``Querying needs chunkscope's retrieval extra (torch is not
    installed): pip install 'chunkscope[retrieval]'``."""
    return f"{subject} needs chunkscope's {extra} extra ({package} is not installed): pip install 'chunkscope[{extra}]'"


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 chunk``, ``2 chunks``, ``0 chunks``; ``nouns`` for an irregular plural."""
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"


#: The environment variable that allows a docs tree's own config: secrets to the URLs it names, the code it names
#: (`chunkscope.config.trust`).
TRUST_TREE_ENV = "CHUNKSCOPE_TRUST_TREE_CONFIG"
#: How a message says to allow it; the command line words it with its flag too (`chunkscope.cli.output`).
ALLOW_TREE_CONFIG = f"allow the docs tree's config only if you trust it ({TRUST_TREE_ENV}=1)"

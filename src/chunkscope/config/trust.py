"""What a docs tree's own ``chunkscope.toml`` may do: the rules for secrets and for code named by a config.

A docs tree may come from a fork or a pull request, so its config is untrusted input (pip and npm treat a
package's build config the same way). Two rules follow, and the README states them ("What a docs tree's config
may do"):

- **Secrets** (the embedder's API key, ``QDRANT_API_KEY``) go only to a host the user named outside the tree
  (the command line, the environment, the user's own config file) or to the embedder's default host. A URL that
  only the tree's config names gets no secret unless the user allows the tree's config once (the command line's
  flag, or ``CHUNKSCOPE_TRUST_TREE_CONFIG=1`` in CI). Plain ``http`` carries a secret only to this machine
  (loopback), whoever named the URL.
- **Code** named by a tree's config (a ``custom`` strategy's ``callable``) is imported only when the tree's
  config is allowed the same way; otherwise using it is a one-line error saying how to allow it (the reader hands
  the callable on as a `chunkscope.chunking.strategies.custom.RefusedCallable`, which is never imported).

This module decides; the layers below the config only carry its verdicts (a refusal's words), never ask it.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from chunkscope.wording import ALLOW_TREE_CONFIG, TRUST_TREE_ENV

#: Where a setting came from: the docs tree's config file, the user's own config file, the command line, the
#: environment, or chunkscope's default.
Origin = Literal["tree", "user", "cli", "env", "default"]

#: The environment variable that allows a tree's config (secrets to its URLs, its code), and how messages say so.
TRUST_ENV = TRUST_TREE_ENV
HOW_TO_ALLOW = ALLOW_TREE_CONFIG


def trust_from_environment(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment allows a tree's config (``CHUNKSCOPE_TRUST_TREE_CONFIG`` = 1/true/yes/on)."""
    value = (os.environ if environ is None else environ).get(TRUST_ENV, "")
    return value.strip().lower() in ("1", "true", "yes", "on")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine: ``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def secret_refusal(url: str, origin: Origin, *, tree_trusted: bool, default_url: str | None = None,
                   source: Path | None = None) -> str | None:
    """Why no secret may go to ``url``, in words for a message; None when it may.

    Args:
        url: where the secret would go.
        origin: who named the URL (`Origin`).
        tree_trusted: the user allowed the tree's config (the command line's flag, `TRUST_ENV`).
        default_url: the service's default endpoint (always allowed over https).
        source: the config file that named the URL (for the message).
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme != "https" and not is_loopback(host):
        return f"the key is sent over plain {parts.scheme or 'http'} only to this machine (loopback); use https"
    if default_url is not None and url.rstrip("/") == default_url.rstrip("/"):
        return None
    if origin == "tree" and not tree_trusted:
        where = f" {source}" if source is not None else " the docs tree's chunkscope.toml"
        return f"the key is not sent to a URL named only by{where}; {HOW_TO_ALLOW}"
    return None


def code_refusal(spec: str, where: str, source: Path | None) -> str:
    """The one-line error for code a tree's config names and the user has not allowed."""
    named_in = f"{source}: " if source is not None else ""
    return f"{named_in}{where} callable = {spec!r} is code named by the docs tree's config, not run: {HOW_TO_ALLOW}"

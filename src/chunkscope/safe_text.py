"""Document text made safe for a terminal: control characters shown as pictures or escapes, never executed.

Shared by the command line and the app (which must not import the CLI's argument handling to get it).
"""

from __future__ import annotations

import json
import re
from typing import Any

# Control characters are shown as Unicode control pictures (or escapes), never written raw: a document holding
# an ESC or OSC sequence must not drive the user's terminal. Bidi overrides could reorder what is shown.
_CONTROL_MAP = {c: chr(0x2400 + c) for c in range(0x20)}
_CONTROL_MAP[0x7F] = "\u2421"
for _c in range(0x80, 0xA0):
    _CONTROL_MAP[_c] = f"\\x{_c:02x}"
for _c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C):
    _CONTROL_MAP[_c] = f"\\u{_c:04x}"
_MULTILINE_MAP = dict(_CONTROL_MAP)
_MULTILINE_MAP[0x0A] = "\n"
_MULTILINE_MAP[0x09] = "\t"
_ONELINE_MAP = dict(_CONTROL_MAP)
_ONELINE_MAP[0x0A] = "\u21b5"
_ONELINE_MAP[0x09] = "\u2192"


def visible(text: str, *, oneline: bool = False) -> str:
    """Document text made safe for a terminal: every control character shown, none executed."""
    return text.translate(_ONELINE_MAP if oneline else _MULTILINE_MAP)


def snippet(text: str, width: int = 80) -> str:
    """A one-line preview of a chunk, whitespace folded, safe for a terminal."""
    flat = " ".join(text.split())
    if len(flat) > width:
        flat = flat[: width - 1] + "…"
    return visible(flat, oneline=True)


#: What json leaves raw and terminals obey: C1 controls and bidi overrides.
_JSON_ESCAPED = re.compile("[\x80-\x9f\u202a-\u202e\u2066-\u2069]")


def json_line(obj: Any) -> str:
    """One JSON line; C1 controls and bidi overrides escaped too (json leaves them raw, terminals obey them)."""
    # A regex finds the few characters at C speed; ``str.translate`` with a table looks every character up
    # (75 ms of `chunk --format jsonl` on the Rust book, about 8% of the command).
    return _JSON_ESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(obj, ensure_ascii=False, default=str))


# Credentials a URL may carry: ``user:pass@``, and query parameters that hold keys or tokens (``?api-key=``,
# ``api_key=``, ``token=``, Azure's ``sig=``…). Every URL chunkscope prints goes through `redact_url`.
_SECRET_PARAM = re.compile(
    r"(?i)^(?:api[-_]?key|key|(?:access[-_]|refresh[-_]|id[-_])?token|secret|client[-_]secret|password|passwd|"
    r"pwd|auth|authorization|sig|signature|x-api-key|code)$")
_URL_IN_TEXT = re.compile(r"""\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'"<>`]+""")
REDACTED = "***"


def redact_url(url: str) -> str:
    """``url`` with its credentials shown as ``***``: the user info before ``@`` and the values of query
    parameters that hold keys or tokens. Everything else is kept, so the message still says where."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:  # an unparseable URL (a bad IPv6 literal): its credentials cannot be found, so none shown
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
    query = "&".join(_redact_param(p) for p in parts.query.split("&")) if parts.query else ""
    fragment = parts.fragment
    if fragment and "=" in fragment:  # OAuth's implicit flow puts tokens in the fragment
        fragment = "&".join(_redact_param(p) for p in fragment.split("&"))
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _redact_param(param: str) -> str:
    name, eq, value = param.partition("=")
    return f"{name}={REDACTED}" if eq and value and _SECRET_PARAM.match(name) else param


def redact_urls(text: str) -> str:
    """``text`` with every URL in it passed through `redact_url` (exception messages, tracebacks)."""
    if "://" not in text:
        return text
    def one(m: re.Match[str]) -> str:
        url = m.group()
        bare = url.rstrip(").,;:]}")  # the sentence's punctuation after a URL is not part of it
        return redact_url(bare) + url[len(bare):]

    return _URL_IN_TEXT.sub(one, text)

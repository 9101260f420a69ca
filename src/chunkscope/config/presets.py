"""Writing presets: a ``[presets.NAME]`` table put into chunkscope.toml (or pyproject.toml) byte for byte.

The configuration reader (`chunkscope.config.reader`) reads the file; this writes one table of it and leaves
every other byte as it was (comments, order, line endings), checking by parsing both texts that nothing else
changed. ``tune --write`` and ``sweep`` write their winner through it.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from chunkscope.config.reader import ConfigError

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key(k: str) -> str:
    return k if _BARE.fullmatch(k) else json.dumps(k, ensure_ascii=False)



def toml_value(v: Any) -> str:
    """A TOML literal for a parameter value (strings, numbers, booleans, lists and tables of them)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {toml_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(str(v))


def table_text(path: Sequence[str], values: Mapping[str, Any], *, comment: str = "", newline: str = "\n") -> str:
    """A TOML table: its header, a comment line (inside the table, so rewriting the table rewrites it too) and
    its keys, one per line."""
    lines = [f"[{'.'.join(_key(p) for p in path)}]"]
    if comment:
        lines.append("# " + " ".join(comment.split()))
    lines += [f"{_key(k)} = {toml_value(v)}" for k, v in values.items()]
    return newline.join(lines) + newline


class PresetWriteError(ConfigError):
    """The preset cannot be written without touching the rest of the file; one line naming the file and why."""


@dataclass(frozen=True)
class PresetWrite:
    """Where a preset was written, and whether the file or the table is new."""

    path: Path
    table: str
    created_file: bool
    replaced: bool


def _skip_string(line: str, i: int) -> int:
    """The index after the one-line string starting at ``line[i]`` (a quote), or len(line) if unclosed."""
    q = line[i]
    j = i + 1
    while j < len(line):
        if q == '"' and line[j] == "\\":
            j += 2
            continue
        if line[j] == q:
            return j + 1
        j += 1
    return len(line)


def _parse_header(line: str) -> tuple[tuple[str, ...], bool] | None:
    """The key path of a table header line (``[a."b c".d]``, ``[[a.b]]``, comment allowed), None otherwise."""
    import tomllib

    s = line.strip()
    if not s.startswith("["):
        return None
    array = s.startswith("[[")
    i = 2 if array else 1
    keys: list[str] = []
    while True:
        while i < len(s) and s[i] in " \t":
            i += 1
        if i >= len(s):
            return None
        if s[i] in "\"'":
            j = _skip_string(s, i)
            try:
                keys.append(tomllib.loads(f"k = {s[i:j]}")["k"])
            except tomllib.TOMLDecodeError:
                return None
            i = j
        else:
            m = _BARE.match(s, i)
            if not m:
                return None
            keys.append(m.group(0))
            i = m.end()
        while i < len(s) and s[i] in " \t":
            i += 1
        if i < len(s) and s[i] == ".":
            i += 1
            continue
        break
    close = "]]" if array else "]"
    if not s.startswith(close, i):
        return None
    tail = s[i + len(close):].strip()
    if tail and not tail.startswith("#"):
        return None
    return tuple(keys), array


def _lines(text: str) -> list[tuple[int, str]]:
    """(offset, line with its ending) of every line."""
    out, pos = [], 0
    for line in text.splitlines(keepends=True):
        out.append((pos, line))
        pos += len(line)
    return out


def table_headers(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """(offset of the line, key path) of every table header of a TOML text, skipping lines inside multi-line
    strings and inside arrays or inline tables that span lines (where a line may start with ``[`` too)."""
    out: list[tuple[int, tuple[str, ...]]] = []
    depth = 0
    in_ml: str | None = None
    for pos, line in _lines(text):
        i = 0
        if in_ml is None and depth == 0:
            head = _parse_header(line)
            if head is not None:
                out.append((pos, head[0]))
                continue
        while i < len(line):
            if in_ml is not None:
                end = line.find(in_ml, i)
                while end != -1 and in_ml == '"""' and _escaped(line, end):
                    end = line.find(in_ml, end + 1)
                if end == -1:
                    i = len(line)
                    break
                i = end + 3
                while i < len(line) and line[i] == in_ml[0]:
                    i += 1  # up to two quotes may close the string's content
                in_ml = None
                continue
            ch = line[i]
            if ch == "#":
                break
            if line.startswith('"""', i) or line.startswith("'''", i):
                in_ml = line[i:i + 3]
                i += 3
                continue
            if ch in "\"'":
                i = _skip_string(line, i)
                continue
            if ch in "[{":
                depth += 1
            elif ch in "]}":
                depth = max(0, depth - 1)
            i += 1
    return out


def _escaped(line: str, at: int) -> bool:
    n = 0
    while at - n - 1 >= 0 and line[at - n - 1] == "\\":
        n += 1
    return n % 2 == 1


def _block_end(text: str, start: int, nxt: int) -> int:
    """Where a table's own text ends before the next header at ``nxt``: the comments and blank lines right
    above a header are that header's (they describe what follows), so they are kept with it."""
    end = nxt
    while end > start:
        line_start = text.rfind("\n", start, end - 1) + 1
        line = text[line_start:end]
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        if line_start <= start:
            break
        end = line_start
    return end


def replace_table(text: str, path: Sequence[str], values: Mapping[str, Any], *, comment: str = "",
                  source: str = "config") -> tuple[str, bool]:
    """``text`` with the table at ``path`` (and its sub-tables) replaced by ``values``, or added after the last
    table that shares its parent (else at the end); every other byte stays as it was. Returns the new text and
    whether a table was replaced.

    Raises:
        PresetWriteError: the text is not valid TOML, the table is written another way (an inline table or
            dotted keys), or the result would change anything else (checked by parsing both).
    """
    import tomllib

    path = tuple(path)
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PresetWriteError(f"{source}: not valid TOML ({exc}); fix it before writing a preset") from None
    newline = "\r\n" if "\r\n" in text else "\n"
    new = table_text(path, values, comment=comment, newline=newline)
    headers = table_headers(text)
    mine = [i for i, (_, p) in enumerate(headers) if p[:len(path)] == path]

    def end_of(i: int) -> int:
        nxt = headers[i + 1][0] if i + 1 < len(headers) else len(text)
        return _block_end(text, headers[i][0], nxt)

    if mine:
        pieces, pos = [], 0
        for n, i in enumerate(mine):
            start, end = headers[i][0], end_of(i)
            pieces.append(text[pos:start])
            if n == 0:
                pieces.append(new)
            pos = end
        pieces.append(text[pos:])
        out, replaced = "".join(pieces), True
    else:
        node: Any = before
        for p in path:
            if not isinstance(node, dict) or p not in node:
                node = None
                break
            node = node[p]
        if node is not None:
            raise PresetWriteError(f"{source}: [{'.'.join(path)}] is written as an inline table or dotted keys; "
                                   f"make it a table of its own (or remove it) and run again")
        parent = path[:-1]
        siblings = [i for i, (_, p) in enumerate(headers) if p[:len(parent)] == parent and len(p) > len(parent)]
        if siblings:
            at = end_of(siblings[-1])
            head = text[:at]
            if not head.endswith(("\n", "\r")):
                head += newline
            out = head + newline + new + text[at:]
        else:
            head = text
            if head and not head.endswith(("\n", "\r")):
                head += newline
            out = head + (newline if head.strip() else "") + new
        replaced = False
    # The safety net: the new file must say exactly what the old one said, but for this one table.
    try:
        after = tomllib.loads(out)
    except tomllib.TOMLDecodeError:
        after = None
    expected = json.loads(json.dumps(before, default=str))
    node = expected
    for p in path[:-1]:
        node = node.setdefault(p, {})
    node[path[-1]] = dict(values)
    if after is None or json.loads(json.dumps(after, default=str)) != expected:
        raise PresetWriteError(f"{source}: cannot add [{'.'.join(path)}] without changing other settings; "
                               f"add it by hand")
    return out, replaced


def write_preset(config_file: str | os.PathLike[str], name: str, values: Mapping[str, Any], *, comment: str = "",
                 table_prefix: Sequence[str] = ()) -> PresetWrite:
    """Create or replace ``[presets.NAME]`` in a configuration file (``table_prefix`` ``("tool", "chunkscope")``
    for a pyproject.toml), leaving every other byte as it was; a missing file is created. Written to a
    temporary file beside it and moved into place, so a failure never leaves half a file.

    Raises:
        PresetWriteError: see `replace_table`; or the file cannot be read or written.
    """
    p = Path(config_file)
    path = (*table_prefix, "presets", name)
    try:
        raw = p.read_bytes()
        created = False
    except FileNotFoundError:
        raw, created = b"", True
    except OSError as exc:
        raise PresetWriteError(f"{p}: cannot read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PresetWriteError(f"{p}: not UTF-8 text; cannot write a preset into it") from None
    out, replaced = replace_table(text, path, values, comment=comment, source=str(p))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=str(p.parent) if str(p.parent) else ".")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(out.encode("utf-8"))
            if not created:
                try:
                    os.chmod(tmp, p.stat().st_mode & 0o7777)
                except OSError:
                    pass
            os.replace(tmp, p)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise PresetWriteError(f"{p}: cannot write ({exc.strerror or exc})") from None
    return PresetWrite(p, ".".join(_key(x) for x in path), created, replaced)

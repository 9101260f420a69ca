"""A fast copy of the ranks tiktoken's loader returned, kept in the cache folder so later processes skip the parse.

tiktoken's ``load_tiktoken_bpe`` stays the source of truth: it reads the rank file and checks it against tiktoken's
expected hash, then base64-decodes 100k lines in Python (cl100k_base: 120-150 ms, measured on this project's
machine; o200k_base twice that). Its result, a ``dict[bytes, int]``, is kept here as `marshal` data, which reads back
in about 25 ms: marshal builds plain values only and can run no code, unlike pickle. A copy is named, and headed, by
what its content depends on (the rank file's expected SHA-256, tiktoken's version, the interpreter's marshal format),
and carries the SHA-256 of its own data: a copy that is truncated, corrupt or made for something else is a miss,
and the caller runs the loader again and writes the copy anew. The digest catches damage, not tampering: the cache
folder is the user's own, as trusted as the installation.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import threading
from pathlib import Path

#: The first bytes of every copy; a new layout gets a new number.
_MAGIC = b"chunkscope-ranks 1\n"
_DIGEST_BYTES = 32  # SHA-256
#: A copy larger than this is not one (o200k_base's is about 3.5 MB): it is never read into memory.
_MAX_BYTES = 64 * 1024 * 1024


def cache_key(name: str, rank_sha256: str, tiktoken_version: str) -> str:
    """What a copy of ``name``'s ranks depends on: the rank file's hash, tiktoken's version and the marshal format
    of this interpreter (marshal data is not portable across Python versions)."""
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    return f"{name}-{rank_sha256}-tiktoken{tiktoken_version}-py{py}-marshal{marshal.version}"


def copy_path(folder: Path, key: str) -> Path:
    """Where the copy for ``key`` lives in ``folder``."""
    return folder / f"{key}.ranks"


def read_ranks(path: Path, key: str) -> dict[bytes, int] | None:
    """The ranks kept at ``path`` for ``key``; None when there is no intact copy made for that key."""
    try:
        with open(path, "rb") as f:
            blob = f.read(_MAX_BYTES + 1)
    except OSError:  # none yet, or unreadable: a miss
        return None
    head = _MAGIC + key.encode() + b"\n"
    if len(blob) > _MAX_BYTES or not blob.startswith(head):
        return None
    digest = blob[len(head):len(head) + _DIGEST_BYTES]
    data = memoryview(blob)[len(head) + _DIGEST_BYTES:]
    if hashlib.sha256(data).digest() != digest:
        return None
    try:
        ranks = marshal.loads(data)
    except (EOFError, ValueError, TypeError):  # data this interpreter's marshal cannot read
        return None
    if not isinstance(ranks, dict) or not ranks:
        return None
    return ranks


def write_ranks(path: Path, key: str, ranks: dict[bytes, int]) -> None:
    """Keep ``ranks`` at ``path`` for ``key``, or silently do without (a read-only or full cache folder)."""
    data = marshal.dumps(ranks)
    # Written aside, then renamed: a concurrent process never reads half a copy (and would only miss if it did).
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(_MAGIC + key.encode() + b"\n" + hashlib.sha256(data).digest())
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass

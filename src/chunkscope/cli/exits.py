"""The exit codes every command follows, and the one rule for a run whose output was written.

    0    done
    1    findings or failures in the documents: lint errors, a bar missed, or some files that could not be loaded
         or chunked (each reported on stderr; the output covers the others)
    2    usage or load error: bad arguments, config, parameters or queries file; no file could be used
    3    an unexpected error (one line; CHUNKSCOPE_DEBUG=1 shows the traceback)
    130  interrupted (Ctrl-C, or the core's `Cancelled`): one line "interrupted", after any partial output
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chunkscope.chunking.model import ChunkedDoc
    from chunkscope.document.loader import DocsTree

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_UNEXPECTED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class Interrupted(Exception):
    """Ctrl-C stopped a command after part of its output; the message says what that part covers."""


def documents_exit(tree: DocsTree, results: Sequence[ChunkedDoc] = ()) -> int:
    """The exit code of a run whose output is written: 1 when some file could not be loaded or chunked (each was
    reported, the output covers the others), else 0. The one rule every command follows."""
    return EXIT_FINDINGS if tree.problems or any(r.error for r in results) else EXIT_OK

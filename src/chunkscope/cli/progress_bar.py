"""The command line's feedback for long work: progress on stderr, and Ctrl-C as a request to stop.

Both speak the core's seam (`chunkscope.progress`). On a terminal a bar draws each `Progress` report (phase,
done/total, rate, time left, and the whole job's place for a sweep); when stderr is not a terminal (CI, a script,
a log file) a plain line says the same every `PLAIN_EVERY` seconds, with the time elapsed: no bar, no escape
codes. `graceful_interrupt` hands the work a `CancelToken` that the first Ctrl-C cancels.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TextIO

from chunkscope.progress import CancelToken, Progress, ProgressFn, format_seconds
from chunkscope.safe_text import visible
from chunkscope.cli.output import console

#: Seconds between two plain progress lines when stderr is not a terminal: often enough that a CI log shows the
#: job is alive (and where it is), seldom enough that a long job's log stays readable.
PLAIN_EVERY = 5.0


@contextmanager
def graceful_interrupt() -> Iterator[CancelToken]:
    """First Ctrl-C asks the work to stop after the current batch (the store stays consistent); a second one
    interrupts at once."""
    token = CancelToken()
    if threading.current_thread() is not threading.main_thread():
        yield token
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if token.cancelled:
            raise KeyboardInterrupt
        token.cancel()
        print("\nchunkscope: stopping after this batch (Ctrl-C again to abort)…", file=sys.stderr)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield token
    finally:
        signal.signal(signal.SIGINT, previous)


def _ignore(progress: Progress) -> None:
    return None


class PlainProgress:
    """A `ProgressFn` that writes one plain line (``chunkscope: index recursive: embedding: 120/410 texts · … ·
    35 s elapsed``) at most every ``every`` seconds: the first after ``every`` seconds, so short work says
    nothing."""

    def __init__(self, title: str, every: float = PLAIN_EVERY, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.title = title
        self.every = every
        self.stream = stream
        self.clock = clock
        self.started = self.last = clock()

    def __call__(self, p: Progress) -> None:
        now = self.clock()
        if now - self.last < self.every:
            return
        self.last = now
        # Labels come from documents and parameters: shown only through `visible`, on one line.
        line = visible(f"chunkscope: {self.title}: {p.describe()} · {format_seconds(now - self.started)} elapsed",
                       oneline=True)
        stream = self.stream or sys.stderr
        print(line, file=stream, flush=True)


@contextmanager
def progress_bar(title: str, quiet: bool = False) -> Iterator[ProgressFn]:
    """Progress of `title`'s work on stderr, fed `Progress` reports: a rich bar on a terminal, a plain line every
    `PLAIN_EVERY` seconds elsewhere, nothing when ``quiet``.

    The bar follows the innermost step; its text is the report's own line (phase, counts, rate, time left) so a
    sweep shows which configuration of how many it is on.
    """
    if quiet:
        yield _ignore
        return
    if not sys.stderr.isatty():
        yield PlainProgress(title)
        return
    from rich.progress import BarColumn, Progress as Bar, TextColumn, TimeElapsedColumn

    bar = Bar(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
              console=console(sys.stderr), transient=True)
    task = bar.add_task(visible(title, oneline=True), total=None)

    def on_progress(p: Progress) -> None:
        # Labels come from documents and parameters: shown only through `visible`.
        bar.update(task, description=visible(f"{title}: {p.describe()}", oneline=True),
                   completed=p.done, total=p.total or None)

    with bar:
        yield on_progress

"""The command line's feedback for long work: a progress bar on stderr, and Ctrl-C as a request to stop.

Both speak the core's seam (`chunkscope.progress`): the bar draws each `Progress` report (phase, done/total,
rate, time left, and the whole job's place for a sweep), and `graceful_interrupt` hands the work a `CancelToken`
that the first Ctrl-C cancels.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from chunkscope.progress import CancelToken, Progress, ProgressFn
from chunkscope.cli.common import console, visible


@contextmanager
def graceful_interrupt() -> Iterator[CancelToken]:
    """First Ctrl-C asks the work to stop after the current batch (the store stays consistent); a second one
    interrupts at once."""
    token = CancelToken()
    if threading.current_thread() is not threading.main_thread():
        yield token
        return

    def handler(signum, frame):  # noqa: ANN001 - signal handler signature
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


@contextmanager
def progress_bar(title: str, quiet: bool = False) -> Iterator[ProgressFn]:
    """A rich progress bar on stderr (nothing when ``quiet`` or stderr is not a terminal), fed `Progress` reports.

    The bar follows the innermost step; its text is the report's own line (phase, counts, rate, time left) so a
    sweep shows which configuration of how many it is on.
    """
    if quiet or not sys.stderr.isatty():
        yield _ignore
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

"""The command line's feedback for long work: progress on stderr, and Ctrl-C as a request to stop.

Both speak the core's seam (`chunkscope.progress`). On a terminal a bar draws each `Progress` report (phase,
done/total, rate, time left, and the whole job's place for a sweep); when stderr is not a terminal (CI, a script,
a log file) a plain line says the same every `PLAIN_EVERY` seconds, with the time elapsed: no bar, no escape
codes; while the work sends no report (an endpoint that does not answer), a timer repeats the last line, saying how
long it has waited. `graceful_interrupt` hands the work a `CancelToken` that the first Ctrl-C cancels.
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

from chunkscope.progress import CancelToken, Progress, ProgressFn, current_wait, format_seconds
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
    nothing. `beat` (called on a timer) writes the last report again when nothing was written for ``every``
    seconds, with what the work waits on (`chunkscope.progress.current_wait`), so waiting work is not silent."""

    def __init__(self, title: str, every: float = PLAIN_EVERY, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.title = title
        self.every = every
        self.stream = stream
        self.clock = clock
        self.started = self.last = self.reported = clock()
        self.latest: Progress | None = None
        # Reports come from the work's thread, beats from the timer's: one line at a time.
        self._lock = threading.Lock()

    def __call__(self, p: Progress) -> None:
        with self._lock:
            now = self.clock()
            self.latest, self.reported = p, now
            if now - self.last >= self.every:
                self._write(now, p.describe())

    def beat(self, only_waits: bool = False) -> None:
        """The last report again (or ``starting``) when nothing was written for ``every`` seconds, saying what
        the work waits on, or how long no report came; with ``only_waits``, only while something waits."""
        with self._lock:
            now = self.clock()
            if now - self.last < self.every:
                return
            wait = current_wait()
            if wait is not None and wait[1] >= self.every:
                why = f"waiting for {wait[0]} ({format_seconds(wait[1])})"
            elif only_waits:
                return
            else:
                why = f"no news for {format_seconds(now - self.reported)}"
            what = "starting" if self.latest is None else self.latest.describe()
            self._write(now, f"{what} · {why}")

    def _write(self, now: float, what: str) -> None:
        self.last = now
        # Labels come from documents and parameters: shown only through `visible`, on one line.
        line = visible(f"chunkscope: {self.title}: {what} · {format_seconds(now - self.started)} elapsed",
                       oneline=True)
        print(line, file=self.stream or sys.stderr, flush=True)


#: `progress_bar` blocks writing plain lines now: while one is open, it speaks for the waits (`waiting_notices`
#: stays quiet).
_open_plain: list[PlainProgress] = []


@contextmanager
def _beating(beat: Callable[[], None]) -> Iterator[None]:
    """Call ``beat`` about every second, on a daemon thread, until the block ends."""
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(1.0):
            beat()

    timer = threading.Thread(target=run, name="chunkscope-progress", daemon=True)
    timer.start()
    try:
        yield
    finally:
        stop.set()
        timer.join()


@contextmanager
def waiting_notices(title: str) -> Iterator[None]:
    """Around a whole command, when stderr is not a terminal: a plain line every `PLAIN_EVERY` seconds while it
    waits on something outside the process (an endpoint's reply) with no progress block open, as when a model's
    size is first asked for."""
    if not sys.stderr.isatty():
        plain = PlainProgress(title)

        def beat() -> None:
            if not _open_plain:
                plain.beat(only_waits=True)

        with _beating(beat):
            yield
        return
    yield


@contextmanager
def progress_bar(title: str, quiet: bool = False) -> Iterator[ProgressFn]:
    """Progress of `title`'s work on stderr, fed `Progress` reports: a rich bar on a terminal, a plain line every
    `PLAIN_EVERY` seconds elsewhere (also while no report comes), nothing when ``quiet``.

    The bar follows the innermost step; its text is the report's own line (phase, counts, rate, time left) so a
    sweep shows which configuration of how many it is on.
    """
    if quiet:
        yield _ignore
        return
    if not sys.stderr.isatty():
        plain = PlainProgress(title)
        _open_plain.append(plain)
        try:
            with _beating(plain.beat):
                yield plain
        finally:
            _open_plain.remove(plain)
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

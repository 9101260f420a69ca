"""Progress reports and cancellation for long work: one small type each, shared by the core, the CLI and the app.

Long work (embedding, indexing, evaluation, probing, sweeps, tuning, linting a tree) reports a `Progress` to an
optional ``on_progress`` callback and polls a `CancelToken` between units of work. Stopping raises `Cancelled`;
whatever finished before it is kept (vectors cached, points written), so a rerun starts where the last one stopped.

The app wires a worker's own cancellation into a token with ``CancelToken(poll=lambda: worker.is_cancelled)``; the
CLI sets a token from its Ctrl-C handler. Nothing here touches threads or signals itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from enum import Enum


class Phase(Enum):
    """What a long task is doing now; ``value`` is the word shown to a user."""

    LOAD = "loading"
    CHUNK = "chunking"
    LINT = "linting"
    EMBED = "embedding"
    INDEX = "indexing"
    QUERY = "asking"
    EVALUATE = "evaluating"
    PROBE = "probing"
    SWEEP = "sweeping"
    TUNE = "tuning"
    NEIGHBOURS = "finding neighbours"


@dataclass(frozen=True)
class Progress:
    """One report from a long task.

    ``done`` and ``total`` count the phase's own units (texts, points, questions, configurations); ``unit`` names
    them. ``started`` is the `time.monotonic` second the phase began, so rate and time left are exact from the
    first report on. ``label`` says which part of a larger job this is (a strategy, a grid point), ``cached`` how
    many of ``done`` came from a cache rather than new work (they do not count towards the rate).
    """

    phase: Phase
    done: int
    total: int
    unit: str = "items"
    started: float = field(default_factory=time.monotonic)
    label: str = ""
    cached: int = 0
    #: The larger job this step belongs to (configuration 3 of 12 of a sweep), when there is one.
    outer: Progress | None = None

    @property
    def elapsed(self) -> float:
        return max(0.0, time.monotonic() - self.started)

    @property
    def fraction(self) -> float:
        return 1.0 if self.total <= 0 else min(1.0, self.done / self.total)

    @property
    def rate(self) -> float | None:
        """New units per second since the phase began (cached ones excluded); None before there is a measure."""
        worked = self.done - self.cached
        if worked <= 0 or self.elapsed < 0.05:
            return None
        return worked / self.elapsed

    @property
    def seconds_left(self) -> float | None:
        """Time left at the current rate; None while unknown, 0 when done."""
        if self.done >= self.total:
            return 0.0
        r = self.rate
        return None if r is None else (self.total - self.done) / r

    def advanced(self, done: int, *, cached: int | None = None) -> Progress:
        """The same phase, further on."""
        return replace(self, done=done, cached=self.cached if cached is None else cached)

    def within(self, outer: Progress | None) -> Progress:
        """This step, reported as part of ``outer``."""
        return self if outer is None else replace(self, outer=outer)

    def describe(self) -> str:
        """One line for a status bar or a terminal: ``embedding recursive: 120/410 texts · 18/s · 16 s left``;
        a step of a larger job is prefixed with where that job is (``3/12 configurations · …``)."""
        mine = self._describe_own()
        if self.outer is None:
            return mine
        o = self.outer
        head = f"{o.phase.value} {o.done + 1 if o.done < o.total else o.done}/{o.total} {o.unit}"
        if o.label:
            head += f" ({o.label})"
        left = o.seconds_left
        if left is not None and o.done < o.total:
            head += f", ~{format_seconds(left)} left in all"
        return f"{head} · {mine}"

    def _describe_own(self) -> str:
        head = f"{self.phase.value} {self.label}".rstrip()
        parts = [f"{head}: {self.done:,}/{self.total:,} {self.unit}"]
        if self.cached:
            parts.append(f"{self.cached:,} cached")
        r = self.rate
        if r is not None:
            parts.append(f"{r:,.1f}/s" if r < 10 else f"{r:,.0f}/s")
        left = self.seconds_left
        if left is None:
            parts.append("time left: measuring")
        elif self.done < self.total:
            parts.append(f"{format_seconds(left)} left")
        return " · ".join(parts)


ProgressFn = Callable[[Progress], None]


def format_seconds(seconds: float) -> str:
    """``4 s``, ``2 min 05 s``, ``1 h 03 min``: short enough for a status bar."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


#: What each thread waits on outside the process now (an endpoint's reply), and since when: a front end's timer
#: says so while no `Progress` report can come (`current_wait`).
_WAITS: dict[int, tuple[str, float]] = {}
_WAITS_LOCK = threading.Lock()


@contextmanager
def waiting_on(what: str) -> Iterator[None]:
    """Mark this thread as waiting on ``what`` (``openai:m at https://…``) until the block ends."""
    key = threading.get_ident()
    with _WAITS_LOCK:
        _WAITS[key] = (what, time.monotonic())
    try:
        yield
    finally:
        with _WAITS_LOCK:
            _WAITS.pop(key, None)


def current_wait() -> tuple[str, float] | None:
    """The longest wait going on now: what it waits on and for how many seconds; None when nothing waits."""
    with _WAITS_LOCK:
        if not _WAITS:
            return None
        what, since = min(_WAITS.values(), key=lambda w: w[1])
    return what, time.monotonic() - since


class Cancelled(Exception):
    """Work stopped because its `CancelToken` was cancelled; everything finished so far is kept."""


class CancelToken:
    """Asks long work to stop between units of work.

    ``cancel()`` sets it from any thread; ``poll``, when given, is asked too (a Textual worker's ``is_cancelled``,
    a newer request having made this one stale). Work calls `raise_if_cancelled` between units.
    """

    __slots__ = ("_event", "_poll")

    def __init__(self, poll: Callable[[], bool] | None = None) -> None:
        self._event = threading.Event()
        self._poll = poll

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        if self._event.is_set():
            return True
        if self._poll is not None and self._poll():
            self._event.set()
            return True
        return False

    def raise_if_cancelled(self, what: str = "stopped") -> None:
        if self.cancelled:
            raise Cancelled(what)

    def __repr__(self) -> str:
        return f"CancelToken(cancelled={self._event.is_set()})"

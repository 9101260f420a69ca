"""Background work steps aside while a person is using the app.

Python runs one thread at a time: while a worker cuts or lints the tree, the UI thread gets the interpreter for at
most a few milliseconds at a time, so a key pressed then waits longer for its answer: the first Escape closing the
lint pane after the start (the tree still being linted) took 269 ms without this, 217 ms with it (medians of 5
fresh starts, interleaved, Rust book, 120x40; later Escapes are unchanged: 214 and 223 ms). The app notes each key, click, scroll and paste
(`InputQuiet.touch`, from `ChunkscopeApp.on_event`); long background work waits between its units of work
(`InputQuiet.wait`, reached through the cancellation poll it already calls between files) until no input has come
for `QUIET_SECONDS`, so the screen's answer to the key is drawn first. The wait never happens on the UI thread,
ends as soon as the work is cancelled, and a run of the work waits `LONGEST_WAIT_SECONDS` in all (someone holding
a key down must not stop the tree's totals for good).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: How long after the last input background work stays paused: a key's answer (a layout and a frame of the whole
#: screen) takes 50-150 ms of the interpreter on a slow machine.
QUIET_SECONDS = 0.3
#: The longest one run of background work (a whole tree's cut) is held back, in all.
LONGEST_WAIT_SECONDS = 5.0
#: How often a waiting worker looks again.
_STEP_SECONDS = 0.02


class InputQuiet:
    """When the last input came, and a wait for a pause in it (for worker threads)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 quiet: float = QUIET_SECONDS, longest: float = LONGEST_WAIT_SECONDS) -> None:
        self._clock = clock
        self._sleep = sleep
        self.quiet = quiet
        self.longest = longest
        self._last = float("-inf")  # a float assignment: safe to read from any thread

    def touch(self) -> None:
        """Input just came (called on the UI thread)."""
        self._last = self._clock()

    def wait(self, cancelled: Callable[[], bool] = lambda: False, longest: float | None = None) -> float:
        """Block this worker thread until input has paused for `quiet` seconds, ``cancelled()`` is true, or
        ``longest`` (default `longest`) seconds have passed; at once on the main thread. Returns the seconds
        waited."""
        if threading.current_thread() is threading.main_thread():
            return 0.0
        limit = self.longest if longest is None else longest
        start = self._clock()
        while not cancelled():
            now = self._clock()
            left = self._last + self.quiet - now
            if left <= 0 or now - start >= limit:
                break
            self._sleep(min(left, _STEP_SECONDS))
        return self._clock() - start

    def poll(self, cancelled: Callable[[], bool]) -> Callable[[], bool]:
        """``cancelled`` as a poll for work that calls it between units: each call first waits for a pause in the
        input (`wait`), then answers whether the work is cancelled. One run of the work waits `longest` seconds in
        all, not per unit: under input that never pauses (a key held down) a tree of hundreds of files would
        otherwise be held back for minutes."""
        left = [self.longest]

        def between_units() -> bool:
            if left[0] > 0:
                left[0] -= self.wait(cancelled, left[0])
            return cancelled()

        return between_units


def input_quiet_of(app: object) -> InputQuiet:
    """The app's `InputQuiet` (`ChunkscopeApp.input_quiet`); one that never waits for another app (a test's)."""
    quiet = getattr(app, "input_quiet", None)
    return quiet if isinstance(quiet, InputQuiet) else InputQuiet(quiet=0.0)

"""Typing pauses: the quiet time after the last keystroke before work starts, and a restartable timer for it."""

from __future__ import annotations

from typing import Callable

from textual.message_pump import MessagePump
from textual.timer import Timer

#: Seconds of quiet after the last keystroke before acting on a text field: one run per pause, not one per key.
DEBOUNCE_SECONDS = 0.3


class Debouncer:
    """Calls ``callback`` once, ``seconds`` after the last `poke`; every poke starts the wait again.

    The timer belongs to ``owner`` (it stops when the owner is removed) and the callback runs on the UI thread.
    """

    def __init__(self, owner: MessagePump, callback: Callable[[], object], *, seconds: float | None = None,
                 name: str = "debounce") -> None:
        self._owner = owner
        self._callback = callback
        #: None: the module's `DEBOUNCE_SECONDS`, read at each poke (tests may change it).
        self._seconds = seconds
        self._name = name
        self._timer: Timer | None = None

    @property
    def pending(self) -> bool:
        """Whether a call is waiting for the quiet time to pass."""
        return self._timer is not None

    def poke(self) -> None:
        """Another keystroke: (re)start the wait."""
        self.cancel()
        seconds = DEBOUNCE_SECONDS if self._seconds is None else self._seconds
        self._timer = self._owner.set_timer(seconds, self._fire, name=self._name)

    def cancel(self) -> None:
        """Drop the waiting call (the text became invalid, or something else replaced it)."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def flush(self) -> None:
        """Run the waiting call now (Enter: no need to wait for the pause)."""
        if self._timer is not None:
            self.cancel()
            self._callback()

    def _fire(self) -> None:
        self._timer = None
        self._callback()

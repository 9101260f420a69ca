"""A background worker's failure as one notification: the message screens and panes post, worded in one place."""

from __future__ import annotations

from textual.message import Message
from textual.worker import Worker

from chunkscope.safe_text import visible


class WorkerFailed(Message):
    """A worker of a screen or pane failed; it bubbles to the app, which notifies (the views keep what they had)."""

    def __init__(self, worker: Worker) -> None:
        super().__init__()
        self.worker = worker


def failure_text(worker: Worker) -> tuple[str, str]:
    """(message, title) of the notification for a failed worker: the error's type and text, the worker's name."""
    err = worker.error
    message = f"{type(err).__name__}: {err}" if err is not None else "failed"
    return visible(message, oneline=True), f"{visible(worker.name or 'background work', oneline=True)} failed"

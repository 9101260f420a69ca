"""The query pane's messages, in the pane's namespace (handlers are ``on_query_pane_...``); `QueryPane` names each
as its own (``QueryPane.Answered``), so they read as the pane's wherever they are handled."""

from __future__ import annotations

from typing import Any

from textual.message import Message
from textual.widget import Widget

from chunkscope.config.reader import ResolvedStrategy
from chunkscope.progress import Progress as WorkProgress
from chunkscope.tui.headless.search import Answer, Expected


class JumpTo(Message, namespace="query_pane"):
    """Show a hit's chunk in the source."""

    def __init__(self, pane: Widget, hit: Any) -> None:
        super().__init__()
        self.pane = pane
        self.hit = hit

    @property
    def control(self) -> Widget:
        return self.pane

class Indexed(Message, namespace="query_pane"):
    """Indexing finished (or stopped)."""

    def __init__(self, resolved: ResolvedStrategy, report: Any) -> None:
        super().__init__()
        self.resolved = resolved
        self.report = report

class Progress(Message, namespace="query_pane"):
    """Indexing progress; a flood collapses into the latest."""

    def __init__(self, progress: WorkProgress) -> None:
        super().__init__()
        self.progress = progress

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, Progress)

class IndexingChanged(Message, namespace="query_pane"):
    """Indexing started, moved on or ended (``text`` None): the screen shows it outside the pane too."""

    def __init__(self, text: str | None) -> None:
        super().__init__()
        self.text = text

class Answered(Message, namespace="query_pane"):
    """Hits for a question; ``search`` numbers the search it answers (a newer one makes it stale), and
    ``resolved`` is the strategy whose index answered."""

    def __init__(self, answer: Answer, search: int = 0, resolved: ResolvedStrategy | None = None) -> None:
        super().__init__()
        self.answer = answer
        self.search = search
        self.resolved = resolved

class ExpectationDropped(Message, namespace="query_pane"):
    """Another question was asked: the expected chunk, which belonged to the one before, no longer applies
    (the explorer, which holds it, clears it)."""

    def __init__(self, expected: Expected) -> None:
        super().__init__()
        self.expected = expected

class Warmed(Message, namespace="query_pane"):
    """The index of ``resolved`` was opened before any question and vouched for (`SearchSession.warm`)."""

    def __init__(self, resolved: ResolvedStrategy) -> None:
        super().__init__()
        self.resolved = resolved

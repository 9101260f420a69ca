"""The chunkscope app: global keys, the command palette, the user's keymap; the screens do the rest."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from textual import events
from textual.app import App
from textual.binding import Binding
from textual.dom import DOMNode
from textual.driver import Driver

from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import UnknownStrategy
from chunkscope.safe_text import visible
from chunkscope.config.reader import Config, ResolvedStrategy
from chunkscope.document.loader import DocsTree
from chunkscope.tui.failures import WorkerFailed, failure_text
from chunkscope.tui.input_quiet import InputQuiet
from chunkscope.tui.screens.explorer import ExplorerScreen
from chunkscope.tui.headless.session import resolve

if TYPE_CHECKING:
    from chunkscope.evaluation.queries import QueryCase
    from chunkscope.tui.widgets.query_pane import QueryPane


def commands_provider():
    """The palette's commands, imported when the palette first opens (not at start-up)."""
    from chunkscope.tui.commands import ChunkscopeCommands

    return ChunkscopeCommands


def files_provider():
    """The palette's pages of the tree (``open: <path>``), imported when the palette first opens."""
    from chunkscope.tui.commands import FileFinder

    return FileFinder


#: What a person does that the screen answers at once (a mouse merely moving over the terminal is not among them).
_INPUT_EVENTS = (events.Key, events.MouseDown, events.MouseUp, events.MouseScrollDown, events.MouseScrollUp,
                 events.Paste)


class ChunkscopeApp(App[int]):
    """See how a docs tree is cut into chunks, tune the strategy live, ask questions, lint."""

    #: The explorer's stylesheet with the app's: the explorer is the first screen (`get_default_screen`), which
    #: Textual does not read a stylesheet for (a pushed screen's is read when it is pushed).
    CSS_PATH = ["app.tcss", "screens/explorer.tcss"]
    TITLE = "chunkscope"
    COMMANDS = App.COMMANDS | {commands_provider, files_provider}

    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit", tooltip="leave chunkscope"),
        # Shown in the footer only where q types a letter (a text field): the footer shows one key per action.
        Binding("ctrl+q", "quit", "Quit", id="app.quit-anywhere", priority=True,
                tooltip="leave chunkscope, even from a text field"),
        Binding("question_mark,f1", "help", "Help", id="app.help", tooltip="keys, colours and commands"),
        Binding("ctrl+g", "find_file", "Go to page", id="app.find-file",
                tooltip="find a page of the tree by name (a few letters, fuzzy) and open it"),
        # The query pane's index build goes on behind a closed pane (the footer shows it): this stops it from
        # anywhere in the explorer. Priority, so a text field's "cut" does not take it while a build runs; at any
        # other time the key falls through to the field.
        Binding("ctrl+x", "stop_indexing", "Stop indexing", id="app.stop-indexing", priority=True,
                tooltip="stop the index build after the batch in progress; what is written is kept"),
    ]

    def __init__(self, tree: DocsTree, config: Config, resolved: ResolvedStrategy, *,
                 queries: Sequence[QueryCase] = (), queries_name: str = "") -> None:
        """Args:
            queries: labelled questions read from ``queries_name`` (``--queries``): the evaluation views start
                with them (``eval``'s metrics beside the probe's), and the picker (V) with the file named.
        """
        super().__init__()
        self.docs = tree
        self.config = config
        self.initial = resolved
        self.queries = list(queries)
        self.queries_name = queries_name
        #: When a person last pressed, clicked, scrolled or pasted: background work waits for a pause in that.
        self.input_quiet = InputQuiet()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, _INPUT_EVENTS):
            self.input_quiet.touch()  # before the event is handled: the workers step aside for its answer
        await super().on_event(event)

    def get_default_screen(self) -> ExplorerScreen:
        """The explorer is the app's first screen: made in its place, it is drawn in the app's first frame (pushed
        over Textual's blank default screen, the first paint came 90 ms later on the Rust book)."""
        return ExplorerScreen(self.docs, self.config, self.initial, queries=self.queries,
                              queries_name=self.queries_name)

    def on_mount(self) -> None:
        keymap = self.config.tui.get("keymap") or {}
        if isinstance(keymap, dict) and keymap:
            self.set_keymap({str(k): str(v) for k, v in keymap.items()})
        if self.docs.problems:
            shown = "\n".join(visible(str(p), oneline=True) for p in self.docs.problems[:5])
            more = f"\n… and {len(self.docs.problems) - 5} more" if len(self.docs.problems) > 5 else ""
            self.notify(shown + more, title=f"{len(self.docs.problems)} files skipped", severity="warning", timeout=10)

    def on_worker_failed(self, msg: WorkerFailed) -> None:
        """The one place a worker's failure becomes a notification (screens and panes post theirs)."""
        text, title = failure_text(msg.worker)
        self.notify(text, title=title, severity="error", timeout=8, markup=False)

    @property
    def explorer(self) -> ExplorerScreen:
        return next(s for s in self.screen_stack if isinstance(s, ExplorerScreen))

    def _index_pane(self) -> QueryPane | None:
        """The explorer's query pane while it builds an index, else None."""
        if not isinstance(self.screen, ExplorerScreen):
            return None
        if not self.screen.query("#query-pane"):
            return None
        from chunkscope.tui.widgets.query_pane import QueryPane  # loaded already: the pane is there

        pane = self.screen.query_one("#query-pane", QueryPane)
        return pane if pane.check_action("cancel_index", ()) else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop_indexing":
            return self._index_pane() is not None  # offered (and in the footer) only while an index is built
        return True

    def action_stop_indexing(self) -> None:
        pane = self._index_pane()
        if pane is not None:
            pane.action_cancel_index()

    def action_find_file(self) -> None:
        """Key ctrl+g: the palette with the tree's pages alone; a few letters of a name, Enter opens it."""
        from textual.command import CommandPalette

        self.push_screen(CommandPalette(providers=[files_provider()], placeholder="Go to a page by name…"))

    def action_help(self) -> None:
        from chunkscope.tui.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
            return
        from chunkscope.tui.screens.compare import CompareScreen
        from chunkscope.tui.screens.evaluation import EvaluationScreen, MissedList
        from chunkscope.tui.screens.files import FilesScreen, FilesTable
        from chunkscope.tui.screens.pick_pair import PickPairScreen
        from chunkscope.tui.widgets.lint_pane import LintPane
        from chunkscope.tui.widgets.query_pane import HitList, QueryPane
        from chunkscope.tui.widgets.source_view import SourceView

        def bindings(*owners: type[DOMNode]) -> list[Binding]:
            return [b for owner in owners for b in owner.BINDINGS if isinstance(b, Binding)]

        groups = [
            ("Everywhere", bindings(type(self))),
            ("Explorer", bindings(ExplorerScreen)),
            ("Source view", bindings(SourceView)),
            ("Query pane", bindings(QueryPane, HitList)),
            ("Lint pane", bindings(LintPane)),
            ("Files view", bindings(FilesScreen, FilesTable)),
            ("Compare mode", bindings(CompareScreen)),
            ("Evaluation", bindings(EvaluationScreen, MissedList)),
            ("Two configurations (V)", bindings(PickPairScreen)),
        ]
        keymap = {k: ",".join(v) if isinstance(v, (list, tuple)) else str(v) for k, v in (self._keymap or {}).items()}
        self.push_screen(HelpScreen(groups, keymap))

    def choose_strategy(self, name: str) -> None:
        """``strategy: <name>`` from the palette."""
        try:
            resolved = resolve(self.config, name)
        except (ParamError, UnknownStrategy) as exc:
            self.notify(visible(str(exc), oneline=True), severity="error")
            return
        while not isinstance(self.screen, ExplorerScreen) and len(self.screen_stack) > 1:
            self.pop_screen()
        self.explorer.set_strategy(resolved)

    def compare_with(self, name: str) -> None:
        """``compare: <name>`` from the palette."""
        while not isinstance(self.screen, ExplorerScreen) and len(self.screen_stack) > 1:
            self.pop_screen()
        try:
            self.explorer.action_compare(name)
        except (ParamError, UnknownStrategy) as exc:
            self.notify(visible(str(exc), oneline=True), severity="error")


def run_app(tree: DocsTree, config: Config, resolved: ResolvedStrategy, *, queries: Sequence[QueryCase] = (),
            queries_name: str = "") -> NoReturn:
    """Open the explorer on a loaded tree (with the labelled questions of ``--queries``, when given); the process
    ends with the app (the exit code is its own).

    Quitting never waits for background work. The app runs on an event loop of its own rather than under
    ``asyncio.run``, which joins every worker thread before it returns: a tree count, a probe's embedding batch
    or a strategy that never returns (threads cannot be stopped from outside) would hold the quit. The workers
    are cancelled with the app, and the explorer closes the query session's store and caches on its way out
    (`ExplorerScreen.close_session`). Then the process ends at once, as soon as the terminal is restored
    (`_ends_when_restored`): the interpreter's own teardown of the loaded tree, tokenizers and model took 1-2 s
    more on a blank terminal (``bench/bench_tui.py``, "q, idle").
    """
    import asyncio

    app = ChunkscopeApp(tree, config, resolved, queries=queries, queries_name=queries_name)
    app.driver_class = _ends_when_restored(app)
    value = app.run(loop=asyncio.new_event_loop())
    _end_process(app.return_code or int(value or 0))  # 1 when the app ended on an error (Textual printed it)


def _end_process(code: int) -> NoReturn:
    """End the process now, with what it printed flushed, without the interpreter's teardown (see `run_app`)."""
    import os
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


#: Every terminal mode Textual's Linux driver turns on for the app, turned off, in the order its own
#: ``stop_application_mode`` turns them off (Textual 8): bracketed paste, line wrap back on, in-band resize
#: reports, the four mouse modes and pixel mouse reports (which Textual turns on when the terminal answers its
#: in-band resize query, and its own restore leaves on), the Kitty keyboard protocol (popped before the alternate
#: screen is left), the alternate screen, the cursor shown, focus reports. A mode the terminal never had on
#: ignores its reset. tests/test_tui_start_quit.py checks on a real pseudo-terminal that every mode the app set
#: before its first frame is reset after (a pseudo-terminal answers no query, so the modes set on an answer are
#: checked by reading Textual's driver, not by that test).
_RESTORE_TERMINAL = ("\x1b[?2004l" "\x1b[?7h" "\x1b[?2048l"
                     "\x1b[?1000l" "\x1b[?1003l" "\x1b[?1015l" "\x1b[?1006l" "\x1b[?1016l"
                     "\x1b[<u" "\x1b[?1049l" "\x1b[?25h" "\x1b[?1004l")


def _ends_when_restored(app: ChunkscopeApp) -> type[Driver]:
    """The app's terminal driver, ending the process as soon as the terminal is restored on the way out.

    Textual would first wait for its input thread to notice the end (a 0.1 s ``select``, then another 0.1 s one
    with nothing to read: 100-200 ms of every quit, the bare app's too, bench/bench_tui.py "q"), then unmount every
    widget (the explorer's ~90: 30-75 ms) for a process that `run_app` ends right after. So on a quit the terminal
    is given back here, by the driver's public state alone (its writer, its saved terminal attributes): every mode
    Textual set is reset (`_RESTORE_TERMINAL`), the keys typed meanwhile are dropped (as Textual does), and the
    explorer's own step on its way out, closing the query session, is kept. The input thread is left waiting:
    the process ends under it. Textual's whole teardown is kept when the app is only suspended (still running),
    ends on an error (its return code is not 0: Textual prints the error after its teardown; chunkscope never
    exits with a message of its own, which Textual would print there too), or runs a driver without saved
    terminal attributes (not Linux or macOS).
    """
    base: Any = app.driver_class

    class EndsWhenRestored(base):
        def stop_application_mode(self) -> None:
            saved = getattr(self, "attrs_before", None)
            if app.is_running or app.return_code != 0 or saved is None:
                super().stop_application_mode()
                return
            import signal
            import termios

            signal.signal(signal.SIGWINCH, signal.SIG_DFL)  # a resize now must not reach a half-closed driver
            self.write(_RESTORE_TERMINAL)
            self.close()  # the writer thread writes what is queued, then ends
            try:
                termios.tcsetattr(self.fileno, termios.TCSANOW, saved)
                termios.tcflush(self.fileno, termios.TCIFLUSH)  # keys typed since q go nowhere, not to the shell
            except termios.error:
                pass
            for screen in app.screen_stack:
                if isinstance(screen, ExplorerScreen):
                    screen.close_session()
            _end_process(int(app.return_value or 0))

    return EndsWhenRestored

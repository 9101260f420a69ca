"""The docs tree: folders and files in load order, each file with its chunk count and a mark for its lint errors
(or warnings) before its name, so a long name cut by a narrow tree never hides it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath

from rich.cells import cell_len
from rich.text import Text
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from chunkscope.safe_text import visible
from chunkscope.document.loader import DocsTree, Problem
from chunkscope.tui.headless.session import TreeResult

#: How a file's lint mark looks: errors outrank warnings (shapes differ too, for a monochrome terminal).
ERROR_MARK = ("●", "bold #ff5f5f")
WARNING_MARK = ("▲", "#e5c07b")


def lint_mark(errors: int, warnings: int) -> tuple[str, str]:
    """(text, style) of a file's mark: ``●3`` for errors, else ``▲12`` for warnings, else nothing."""
    if not errors and not warnings:
        return "", ""
    symbol, style = ERROR_MARK if errors else WARNING_MARK
    n = errors or warnings
    return f"{symbol}{n if n < 100 else '99+'}", style


class DocsTreeView(Tree[str]):
    """Files of the docs tree (node data: the document's path; problems have no data)."""

    DEFAULT_CSS = """
    DocsTreeView {
        scrollbar-size-vertical: 1;
    }
    """

    class FileChosen(Message):
        """The cursor moved onto a file (the explorer opens it); ``picked``: by Enter or a click, not by moving."""

        def __init__(self, tree: "DocsTreeView", path: str, picked: bool = False) -> None:
            super().__init__()
            self.tree = tree
            self.path = path
            self.picked = picked

        @property
        def control(self) -> "DocsTreeView":
            return self.tree

    def __init__(self, docs: DocsTree, *, id: str | None = None) -> None:
        label = visible(docs.root.name or str(docs.root), oneline=True)
        super().__init__(label, id=id)
        self.docs = docs
        self.show_root = False
        self.guide_depth = 2
        self._leaves: dict[str, TreeNode[str]] = {}
        #: path → (chunks, whether cutting failed, lint errors, lint warnings) from the last tree run.
        self._counts: dict[str, tuple[int | None, bool, int, int]] = {}
        #: Cells the marks take: the widest mark of the tree, so names line up (0 when no file has one).
        self._mark_width = 0

    def on_mount(self) -> None:
        self.rebuild()

    def rebuild(self) -> None:
        """(Re)create the nodes from the documents and problems, keeping the cursor on the same file.

        A rebuild never opens a file: the cursor lands without a highlight message (a file that is gone leaves
        it on the first line, and the explorer then moves it to the file it shows instead).
        """
        with self.prevent(Tree.NodeHighlighted):
            self._rebuild()

    def _rebuild(self) -> None:
        current = self.cursor_node.data if self.cursor_node is not None else None
        self.clear()
        self._leaves.clear()
        folders: dict[tuple[str, ...], TreeNode[str]] = {(): self.root}
        problems = {p.path: p for p in self.docs.problems}
        entries: list[tuple[str, Problem | None]] = [(d.path, None) for d in self.docs.documents]
        entries += [(p.path, p) for p in self.docs.problems if p.path not in {d.path for d in self.docs.documents}]
        for path, problem in entries:
            parts = PurePosixPath(path).parts
            parent = self.root
            for depth in range(1, len(parts)):
                key = parts[:depth]
                node = folders.get(key)
                if node is None:
                    node = parent.add(Text(visible(parts[depth - 1], oneline=True) + "/", style="bold"), expand=True)
                    folders[key] = node
                parent = node
            if problem is not None:
                parent.add_leaf(Text.assemble(("   ✖ ", "bold red"), (visible(parts[-1], oneline=True), "dim strike"),
                                              (f"  {problem.code}", "red")))
                continue
            leaf = parent.add_leaf(self._label(path, problems.get(path) is not None), data=path)
            self._leaves[path] = leaf
        self.root.expand()
        self._lay_out()
        self.move_cursor(self._leaves.get(current) if current is not None else None)

    def _lay_out(self) -> None:
        """Number the lines of new nodes now (asking for the last line builds them): the cursor moves by line
        number, and a node not laid out yet has none, which would put the cursor on the first line."""
        self.last_line  # noqa: B018 - the property builds the line table

    def _label(self, path: str, problem: bool = False) -> Text:
        count, failed, errors, warnings = self._counts.get(path, (None, False, 0, 0))
        name = visible(PurePosixPath(path).name, oneline=True)
        label = Text()
        if failed:
            label.append("   ✖ ", style="bold red")
        elif count is None:
            label.append("   · ", style="dim")
        else:
            label.append(f"{count:>4} ", style="#8b949e")
        if self._mark_width:
            # Before the name, in a column of its own: the drawer is 38 cells and names run longer.
            mark, style = lint_mark(errors, warnings)
            label.append(mark, style=style)
            label.append(" " * (self._mark_width - cell_len(mark) + 1))
        label.append(name, style="yellow" if problem else "")
        return label

    def set_counts(self, result: TreeResult | None, lint_errors: dict[str, int] | None = None) -> None:
        """Show each file's chunk count and lint mark from a tree run; None clears them.

        Args:
            result: the tree run (its entries carry each file's lint errors and warnings).
            lint_errors: error counts by path, when they differ from the entries' own.
        """
        self._counts.clear()
        if result is not None:
            for path, e in result.entries.items():
                errors = e.lint_errors if lint_errors is None else lint_errors.get(path, 0)
                self._counts[path] = (len(e.chunks), e.error is not None, errors, e.lint_warnings)
        self._mark_width = max((cell_len(lint_mark(e, w)[0]) for _, _, e, w in self._counts.values()), default=0)
        for path, leaf in self._leaves.items():
            leaf.set_label(self._label(path))

    def show_chunk_counts(self, counts: Mapping[str, tuple[int, bool]]) -> None:
        """Each file's chunk count and whether its cut failed, without lint marks (stored totals, before the
        tree's own cut arrives with its lint: `set_counts`)."""
        self._counts.clear()
        for path, (n, failed) in counts.items():
            self._counts[path] = (n, failed, 0, 0)
        self._mark_width = 0
        for path, leaf in self._leaves.items():
            leaf.set_label(self._label(path))

    def select_path(self, path: str) -> None:
        """Put the cursor on a file."""
        leaf = self._leaves.get(path)
        if leaf is None:
            return
        if leaf.line < 0:
            self._lay_out()
        # NodeHighlighted follows as a message; the explorer ignores a file that is already open.
        self.move_cursor(leaf)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        event.stop()
        if event.node.data is not None:
            self.post_message(self.FileChosen(self, event.node.data))

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        event.stop()
        if event.node.data is not None:
            self.post_message(self.FileChosen(self, event.node.data, picked=True))

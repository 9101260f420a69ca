"""What the commands print with: one-line errors, the rich console that never interprets document text, sizes."""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, TextIO

from chunkscope.safe_text import redact_urls, visible
from chunkscope.cli.options import TRUST_FLAG
from chunkscope.wording import ALLOW_TREE_CONFIG, TRUST_TREE_ENV, install_hint

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


def error(msg: str, stream: TextIO | None = None) -> None:
    """A one-line error for the user (never a traceback)."""
    print(f"chunkscope: error: {visible(redact_urls(msg), oneline=True)}", file=stream or sys.stderr)


def warn(msg: str) -> None:
    """A one-line warning on stderr; the output goes on."""
    print(f"chunkscope: warning: {visible(redact_urls(msg), oneline=True)}", file=sys.stderr)


def confirm_spend(command: str, yes: bool) -> bool:
    """Whether to send requests that cost money (an LLM stage), after their cost was printed: ``--yes``, else the
    user's answer on a terminal; off a terminal nothing is sent without ``--yes`` (a CI job never waits on a
    prompt, nor spends without being told to)."""
    if yes:
        return True
    if not sys.stdin.isatty():
        print(f"chunkscope {command}: not a terminal, so nothing is sent without --yes", file=sys.stderr)
        return False
    try:
        answer = input("Send them? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def user_message(exc: BaseException) -> str:
    """The line a known error shows; a missing optional part says what to install."""
    from chunkscope.embedding.spec import EmbedderSpecError
    from chunkscope.evaluation.sweep import UnknownMetric
    from chunkscope.extras import MissingExtra
    from chunkscope.lint import UnknownRule

    if isinstance(exc, MissingExtra):
        return install_hint("this command", exc.extra, exc.package)
    # The core names what was wrong; the command line names the flag it came from.
    if isinstance(exc, UnknownMetric):
        return f"--metric {exc.metric!r}: {exc.expected}"
    if isinstance(exc, EmbedderSpecError):
        return f"--embedder: {exc}"
    if isinstance(exc, UnknownRule) and exc.source in ("select", "ignore"):
        return f"--{exc.source}: unknown rule {exc.rule!r} ({exc.known()})"
    # The trust rules' refusals (a tree's code, a key kept from a tree's URL) say how to allow the tree: here, the flag.
    return str(exc).replace(ALLOW_TREE_CONFIG, f"if you trust this docs tree, pass {TRUST_FLAG} (or set "
                                               f"{TRUST_TREE_ENV}=1)")


def console(stream: TextIO | None = None) -> Console:
    """A rich console that never interprets document text as markup and never emits raw control codes."""
    from rich.console import Console

    return Console(file=stream or sys.stdout, highlight=False, markup=False, emoji=False, soft_wrap=False)


def print_wrapped(con: Console, text: Text, indent: int) -> None:
    """`text` wrapped at spaces to the console's width, every line indented by `indent`; a word longer than a
    line (a ``path:line``, a URL) stays whole on a line of its own: cut, it could not be copied, grepped or
    clicked."""
    from rich.text import Text

    pad = Text(" " * indent)
    for line in text.divide(word_breaks(text.plain, max(16, con.width - indent))):
        line.rstrip()
        line.remove_suffix(" ")
        con.print(pad + line, soft_wrap=True)


def word_breaks(plain: str, width: int) -> list[int]:
    """Where to break `plain` into lines of at most `width` cells: at the start of a word, never inside one (a
    word wider than the line gets a line of its own)."""
    from rich.cells import cell_len

    breaks: list[int] = []
    used = cell_len(plain) - cell_len(plain.lstrip())  # a leading indent takes room too
    for word in re.finditer(r"\S+\s*", plain):
        size = cell_len(word.group().rstrip())
        if used and used + size > width:
            breaks.append(word.start())
            used = 0
        used += cell_len(word.group())
    return breaks


def human_bytes(n: float) -> str:
    """``1536`` → ``1.5 KB``: sizes for people, in binary units."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"

"""The ``chunkscope`` command line: ``chunkscope DOCS`` opens the app; subcommands serve authors and CI.

Each command lives in its own module under ``commands/`` with ``register(subparsers)``, listed once in
`commands.COMMAND_NAMES`; this module only dispatches and turns every expected failure into one line on stderr (never a
traceback). Every command exits by the table in `chunkscope.cli.exits` (0 done, 1 findings, 2 usage, 3 unexpected,
130 interrupted). Ctrl-C and the core's cancellation are handled here, in `main`, for every command.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys

from chunkscope import __version__
from chunkscope.progress import Cancelled
from chunkscope.cli.commands import COMMAND_NAMES, command_module
from chunkscope.cli.exits import EXIT_INTERRUPTED, EXIT_UNEXPECTED, EXIT_USAGE, Interrupted
from chunkscope.cli.output import error, user_message, warn
from chunkscope.cli.progress_bar import waiting_notices
from chunkscope.safe_text import redact_urls
from chunkscope.wording import plural

DESCRIPTION = """\
See exactly how your documentation is cut into chunks for retrieval, and what those chunks do when a
question is asked.

  chunkscope DOCS                      open the explorer on a docs folder
  chunkscope chunk DOCS -s recursive   print the chunks (table or --format jsonl)
  chunkscope lint DOCS                 find sections that chunk badly (exit 1 on errors)
  chunkscope query DOCS "question"     ask the local index, with scores and citations
"""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command in `COMMAND_NAMES`, or of the command ``only`` (the one a command line runs:
    no other command's module is imported)."""
    parser = argparse.ArgumentParser(
        prog="chunkscope", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"chunkscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in (only,) if only else COMMAND_NAMES:
        command_module(name).register(sub)
    return parser


def _known_errors() -> tuple[type[BaseException], ...]:
    """Exceptions whose message is meant for the user as is."""
    from chunkscope.chunking.params import ParamError
    from chunkscope.chunking.registry import UnknownStrategy
    from chunkscope.config.reader import ConfigError
    from chunkscope.document.loader import DocsError
    from chunkscope.embedding.encoders import EmbedError
    from chunkscope.embedding.spec import EmbedderSpecError
    from chunkscope.evaluation.baselines import BaselineError
    from chunkscope.evaluation.queries import QueriesError
    from chunkscope.extras import MissingExtra
    from chunkscope.llm.chat import LlmError
    from chunkscope.retrieval.search_modes import SearchModeError
    from chunkscope.retrieval.engine import StoreError
    from chunkscope.retrieval.rerankers.base import RerankError
    from chunkscope.tokens import TokenizerError

    return (ParamError, UnknownStrategy, ConfigError, DocsError, TokenizerError, EmbedError, MissingExtra,
            EmbedderSpecError, SearchModeError, StoreError, QueriesError, BaselineError, RerankError, LlmError)


def _mistyped_command(word: str, commands: set[str]) -> str | None:
    """The command ``word`` is a typo of, when it is no path on disk (``chunkscope stat docs``)."""
    if os.path.exists(word) or word.startswith("-") or os.sep in word:
        return None
    close = difflib.get_close_matches(word, sorted(commands - {"tui"}), n=1, cutoff=0.75)
    return close[0] if close else None


def _take_contexts_tally() -> tuple[int, int]:
    """The chunks cut with ``embed_prefix = "llm"`` since the last call: (without a cached context, in all), then
    zeroed; (0, 0) without looking when no strategy of this process asked for contexts (their module never loaded)."""
    if "chunkscope.llm.contextual" not in sys.modules:
        return 0, 0
    from chunkscope.llm.contextual import take_tally

    return take_tally()


def say_missing_contexts(docs: str | None) -> None:
    """After a command that chunked with ``embed_prefix = "llm"``: how many chunks had no cached context."""
    missing, seen = _take_contexts_tally()
    if missing:
        warn(f"{missing:,} of {plural(seen, 'chunk')} have no LLM context yet and were used without one: run "
              f"chunkscope contexts {docs or 'DOCS'} to write them (it shows the cost first)")


def main(argv: list[str] | None = None) -> int:
    """Run one command line; the exit code follows `chunkscope.cli.exits`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = set(COMMAND_NAMES)
    # "chunkscope DOCS" (or nothing) opens the app: anything that is not a command or an option is a path.
    if not argv or (argv[0] not in commands and argv[0] not in ("-h", "--help", "--version")):
        guess = _mistyped_command(argv[0], commands) if argv else None
        if guess:
            error(f"unknown command {argv[0]!r} (did you mean {guess}?); run chunkscope --help for the commands")
            return EXIT_USAGE
        argv = ["tui", *argv]
    parser = build_parser(only=argv[0] if argv[0] in commands else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        _take_contexts_tally()  # a count left by an earlier call (tests, the app) is not this command's
        # Without a terminal, a command waiting on an endpoint says so every few seconds (CI logs, scripts).
        with waiting_notices(argv[0]):
            code = int(args.func(args) or 0)
        say_missing_contexts(getattr(args, "docs", None))
        return code
    except KeyboardInterrupt:
        error("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # Output piped into `head` and closed: not an error worth a message.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (Interrupted, Cancelled) as exc:
        # A stop the first Ctrl-C asked for (the work ends after its batch), or a command's partial output.
        error(f"interrupted: {exc}" if str(exc) else "interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, never a traceback
        if os.environ.get("CHUNKSCOPE_DEBUG"):
            import traceback

            # The traceback, then the usual line and exit code; credentials in any URL it names are hidden.
            sys.stderr.write(redact_urls("".join(traceback.format_exception(exc))))
        if isinstance(exc, _known_errors()):
            error(user_message(exc))
            return EXIT_USAGE
        error(f"unexpected {type(exc).__name__}: {exc} (set CHUNKSCOPE_DEBUG=1 for a traceback)")
        return EXIT_UNEXPECTED

"""The ``chunkscope`` command line: ``chunkscope DOCS`` opens the app; subcommands serve authors and CI.

Each command lives in its own module with ``register(subparsers)``; this module only dispatches and turns
every expected failure into one line on stderr (never a traceback). Every command exits by one table:

    0    done
    1    findings or failures in the documents: lint errors, a bar missed, or some files that could not be loaded
         or chunked (each reported on stderr; the output covers the others)
    2    usage or load error: bad arguments, config, parameters or queries file; no file could be used
    130  interrupted (Ctrl-C, or the core's `Cancelled`): one line "interrupted", after any partial output

Ctrl-C and the core's cancellation are handled here, in `main`, for every command.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from chunkscope import __version__

#: The last row of the exit-code table (the rest are ``common.EXIT_OK``, ``EXIT_FINDINGS``, ``EXIT_USAGE``).
EXIT_INTERRUPTED = 130


class Interrupted(Exception):
    """Ctrl-C stopped a command after part of its output; the message says what that part covers."""


#: Modules that define commands, in the order ``--help`` lists them.
COMMAND_MODULES = ("cmd_core", "cmd_lint", "cmd_retrieval", "cmd_tuning", "cmd_tune", "cmd_tui")

DESCRIPTION = """\
See exactly how your documentation is cut into chunks for retrieval, and what those chunks do when a
question is asked.

  chunkscope DOCS                      open the explorer on a docs folder
  chunkscope chunk DOCS -s recursive   print the chunks (table or --format jsonl)
  chunkscope lint DOCS                 find sections that chunk badly (exit 1 on errors)
  chunkscope query DOCS "question"     ask the local index, with scores and citations
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chunkscope", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"chunkscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def _known_errors() -> tuple[type[BaseException], ...]:
    """Exceptions whose message is meant for the user as is."""
    from chunkscope.chunking.chunk import ParamError, UnknownStrategy
    from chunkscope.config.reader import ConfigError
    from chunkscope.document.loader import DocsError
    from chunkscope.tokens import TokenizerError

    from chunkscope.embedding.encoders import EmbedError
    from chunkscope.embedding.spec import EmbedderSpecError
    from chunkscope.evaluation.evaluate import BaselineError, QueriesError
    from chunkscope.extras import MissingExtra
    from chunkscope.retrieval.search_modes import SearchModeError
    from chunkscope.retrieval.store import StoreError

    errors: list[type[BaseException]] = [
        ParamError, UnknownStrategy, ConfigError, DocsError, TokenizerError, EmbedError, MissingExtra,
        EmbedderSpecError, SearchModeError, StoreError, QueriesError, BaselineError,
    ]
    return tuple(errors)


def _stops() -> tuple[type[BaseException], ...]:
    """Exceptions that mean the user stopped the work: exit 130, like Ctrl-C itself."""
    from chunkscope.progress import Cancelled

    return (Interrupted, Cancelled)


def _mistyped_command(word: str, commands: set[str]) -> str | None:
    """The command ``word`` is a typo of, when it is no path on disk (``chunkscope stat docs``)."""
    import difflib

    if os.path.exists(word) or word.startswith("-") or os.sep in word:
        return None
    close = difflib.get_close_matches(word, sorted(commands - {"tui"}), n=1, cutoff=0.75)
    return close[0] if close else None


def main(argv: list[str] | None = None) -> int:
    from chunkscope.cli.common import EXIT_USAGE, error, user_message

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    commands = set(parser._subparsers._group_actions[0].choices) if parser._subparsers else set()  # noqa: SLF001
    # "chunkscope DOCS" (or nothing) opens the app: anything that is not a command or an option is a path.
    if not argv or (argv[0] not in commands and argv[0] not in ("-h", "--help", "--version")):
        guess = _mistyped_command(argv[0], commands) if argv else None
        if guess:
            error(f"unknown command {argv[0]!r} (did you mean {guess}?); run chunkscope --help for the commands")
            return EXIT_USAGE
        argv = ["tui", *argv]
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        error("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # Output piped into `head` and closed: not an error worth a message.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, never a traceback
        if isinstance(exc, _stops()):
            # A stop the first Ctrl-C asked for (the work ends after its batch), or a command's partial output.
            error(f"interrupted: {exc}" if str(exc) else "interrupted")
            return EXIT_INTERRUPTED
        if os.environ.get("CHUNKSCOPE_DEBUG"):
            raise
        if isinstance(exc, _known_errors()):
            error(user_message(exc))
            return EXIT_USAGE
        error(f"unexpected {type(exc).__name__}: {exc} (set CHUNKSCOPE_DEBUG=1 for a traceback)")
        return 3

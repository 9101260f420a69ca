"""The commands, one module each, named after the command; `COMMAND_NAMES` is the one table the parser is built from.

Each module has ``register(subparsers)``. A command line imports only the module of the command it runs; they are
never imported inside ``try``: an import error in any of them fails ``chunkscope --help`` (which imports them all)
and the test suite instead of silently hiding a command.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: Every command, in the order ``chunkscope --help`` lists them; each is the module ``commands/<name>.py``.
COMMAND_NAMES: tuple[str, ...] = ("strategies", "chunk", "stats", "lint", "report", "index", "query", "compare", "eval",
                                  "probe", "questions", "contexts", "sweep", "tune", "tui")


def command_module(name: str) -> ModuleType:
    """One command's module, imported when it is asked for: a command (and the app, the most common start) loads
    its own module and what it needs, not the other commands' (about a third of the CLI's start-up)."""
    if name not in COMMAND_NAMES:
        raise KeyError(name)
    return importlib.import_module(f"{__name__}.{name}")


def all_commands() -> tuple[ModuleType, ...]:
    """Every command's module, in `COMMAND_NAMES` order (``--help``, and the tests, import them all)."""
    return tuple(command_module(name) for name in COMMAND_NAMES)

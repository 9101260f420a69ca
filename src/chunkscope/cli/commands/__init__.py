"""The commands, one module each, named after the command; `COMMANDS` is the one table the parser is built from.

Each module has ``register(subparsers)``. They are imported here plainly, never inside ``try``: an import error in
any of them fails ``chunkscope --help`` and the test suite instead of silently hiding a command.
"""

from __future__ import annotations

from types import ModuleType

from chunkscope.cli.commands import (chunk, compare, index, lint, probe, query, report, stats, strategies, sweep, tui,
                                     tune)
from chunkscope.cli.commands import eval as eval_  # the module; a bare `eval` here would hide the builtin

#: Every command, in the order ``chunkscope --help`` lists them.
COMMANDS: tuple[ModuleType, ...] = (strategies, chunk, stats, lint, report, index, query, compare, eval_, probe, sweep,
                                    tune, tui)

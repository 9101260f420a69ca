"""The registry of strategies: the built-ins by name, and those other packages register as entry points.

Other packages register a strategy in the ``chunkscope.strategies`` entry-point group (``name = "module:Class"``);
a built-in's name always wins, and a plugin that cannot be used is reported in one line naming its entry point.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chunkscope.chunking.strategy import Strategy

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from chunkscope.chunking.vectors import SentenceVectors


#: name → "module:Class"; modules are imported on first use so listing names stays cheap.
_BUILTIN = {
    "section-sentence": "chunkscope.chunking.strategies.section_sentence:SectionSentenceStrategy",
    "header-window": "chunkscope.chunking.strategies.header_window:HeaderWindowStrategy",
    "section": "chunkscope.chunking.strategies.section:SectionStrategy",
    "content-type": "chunkscope.chunking.strategies.content_type:ContentTypeStrategy",
    "recursive": "chunkscope.chunking.strategies.recursive:RecursiveStrategy",
    "fixed": "chunkscope.chunking.strategies.fixed:FixedStrategy",
    "semantic": "chunkscope.chunking.strategies.semantic:SemanticStrategy",
    "custom": "chunkscope.chunking.strategies.custom:CustomStrategy",
}


class UnknownStrategy(ValueError):
    """No strategy has that name."""


class StrategyPluginError(UnknownStrategy):
    """A strategy another package registers cannot be used; the one-line message names its entry point.

    A kind of `UnknownStrategy`, so every place that reports an unusable strategy name reports this one too.
    """


#: The entry-point group other packages register strategies in: ``name = "module:Class"``.
ENTRY_POINT_GROUP = "chunkscope.strategies"


@dataclass(frozen=True, slots=True)
class _Plugins:
    """What the installed packages register: usable entry points by name, and the ones set aside, with why."""

    entry_points: dict[str, "EntryPoint"]
    set_aside: tuple[str, ...]


def _describe(ep: "EntryPoint") -> str:
    dist = getattr(ep, "dist", None)
    origin = f" from {dist.name}" if dist is not None and getattr(dist, "name", None) else ""
    return f"entry point {ep.name!r} ({ep.value}{origin}) in {ENTRY_POINT_GROUP}"


@functools.lru_cache(maxsize=1)
def _plugins() -> _Plugins:
    """Read the entry points once per process (about 15 ms: importlib.metadata and a scan of every package).

    A name a built-in already has is set aside and reported, never used: a package installed for something
    else must not change what ``recursive`` means. A name two packages register keeps the first on sys.path.
    """
    import importlib.metadata

    try:
        found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception as exc:  # noqa: BLE001 - a broken package's metadata must not stop the built-ins
        return _Plugins({}, (f"cannot read the {ENTRY_POINT_GROUP} entry points: {_one_line(exc)}",))
    usable: dict[str, EntryPoint] = {}
    set_aside: list[str] = []
    for ep in found:
        if ep.name in _BUILTIN:
            set_aside.append(f"{_describe(ep)}: ignored, a built-in strategy has that name")
        elif ep.name in usable:
            set_aside.append(f"{_describe(ep)}: ignored, {_describe(usable[ep.name])} has that name already")
        else:
            usable[ep.name] = ep
    return _Plugins(usable, tuple(set_aside))


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _load_plugin(ep: "EntryPoint") -> type[Strategy]:
    """The Strategy class an entry point names, or a StrategyPluginError saying what is wrong with it."""
    try:
        cls = ep.load()
    except KeyboardInterrupt:
        raise  # the user's Ctrl-C
    except BaseException as exc:  # noqa: BLE001 - any failure of third-party code (SystemExit too): one line naming it
        raise StrategyPluginError(f"{_describe(ep)}: cannot be loaded: {_one_line(exc)}") from None
    if not (isinstance(cls, type) and issubclass(cls, Strategy)):
        raise StrategyPluginError(f"{_describe(ep)}: {ep.value} is not a subclass of chunkscope.Strategy")
    # The name shows in labels, config tables and messages; one that differs from the entry point's would make
    # `-s mine` print results as someone else's.
    if cls.name != ep.name:
        raise StrategyPluginError(f"{_describe(ep)}: the class's name is {cls.name!r}, not {ep.name!r}")
    return cls


def strategy_names() -> list[str]:
    """Every strategy name: the built-ins, then those other packages register, alphabetically."""
    return [*_BUILTIN, *sorted(_plugins().entry_points)]


def is_strategy_name(name: str) -> bool:
    """Whether a strategy has that name; a built-in's answers without looking through installed packages."""
    return name in _BUILTIN or name in _plugins().entry_points


def strategy_class(name: str) -> type[Strategy]:
    """The class of a strategy by name (built-ins first; a plugin is imported here, on first use).

    Raises:
        UnknownStrategy: no strategy has that name.
        StrategyPluginError: a plugin has it but cannot be loaded.
    """
    target = _BUILTIN.get(name)
    if target is not None:
        mod, cls = target.split(":")
        return getattr(importlib.import_module(mod), cls)
    ep = _plugins().entry_points.get(name)
    if ep is None:
        raise UnknownStrategy(f"unknown strategy {name!r}; choose one of {', '.join(strategy_names())}")
    return _load_plugin(ep)


def get_strategy(name: str, **params: Any) -> Strategy:
    """A configured strategy: ``get_strategy("recursive", chunk_size=384)``."""
    return strategy_class(name)(**params)


def list_strategies() -> list[type[Strategy]]:
    """The class of every usable strategy; a plugin that cannot be loaded is left out (see `plugin_problems`)."""
    out = []
    for n in strategy_names():
        try:
            out.append(strategy_class(n))
        except StrategyPluginError:
            continue
    return out


def plugin_problems() -> list[str]:
    """One line per registered strategy that cannot be used: set aside (a taken name) or failing to load.

    Loads every plugin to find out, so call it where the strategies are listed, not on every start.
    """
    problems = list(_plugins().set_aside)
    for ep in _plugins().entry_points.values():
        try:
            _load_plugin(ep)
        except StrategyPluginError as exc:
            problems.append(str(exc))
    return problems


def as_strategy(strategy: "str | Strategy", params: dict[str, Any], caller: str) -> Strategy:
    """A strategy from a name and its parameters, or a configured one as it is (then with no parameters)."""
    if isinstance(strategy, Strategy):
        if params:
            raise TypeError(f"{caller}: parameters {sorted(params)} given with a configured {strategy!r}")
        return strategy
    return get_strategy(strategy, **params)


#: The default model's sentence vectors (`chunking.vectors.SentenceVectors`), by "module:function": they embed,
#: a layer above this one, so they are loaded by name like a built-in strategy and never imported from here.
_DEFAULT_VECTORS = "chunkscope.embedding.sentence_vectors:default_sentence_vectors"


def default_sentence_vectors() -> "SentenceVectors":
    """The sentence vectors of the default model (all-MiniLM-L6-v2, through the embedding cache), for a strategy
    nobody gave an embedder's (``chunk_text(text, strategy="semantic")``).

    Raises:
        MissingExtra: the retrieval extra, which runs the model, is not installed (one line naming it).
    """
    module, name = _DEFAULT_VECTORS.split(":")
    provider: SentenceVectors = getattr(importlib.import_module(module), name)()
    return provider

"""custom: bring your own chunker, a Python function ``module:function`` or ``path/to/file.py:function``.

The function takes a document's text (the whole file as decoded, front matter included, so offsets agree with
chunkscope's) and returns either a list of strings, each found verbatim in the text, or a list of
``(start, end)`` character offsets. Strings are located in order, each searched from the previous chunk's end
(from just after its start with ``overlap = true``, for chunkers whose chunks overlap). Its chunks are checked as a
built-in's are: inside the text, in order, overlapping only when ``overlap`` says so, none inside the one before;
lint's ``uncovered`` rule finds the body text no chunk holds. Anything that cannot be placed is an error naming
the chunk, never a silent guess, and so is anything the function raises (``SystemExit`` included: only the user's
Ctrl-C, a ``KeyboardInterrupt``, goes through).
"""

from __future__ import annotations

import importlib
import importlib.util
import operator
import os
import sys
import zlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from chunkscope.chunking.model import Span
from chunkscope.chunking.params import Param, ParamError
from chunkscope.chunking.strategy import Limits, Strategy
from chunkscope.tokens import TOKENIZER_NAMES

if TYPE_CHECKING:
    from chunkscope.document.loader import Document


class CustomChunkerError(ParamError):
    """The user's chunker returned something chunkscope cannot place in the document; one line."""


class RefusedCallable(str):
    """A ``callable`` that must not be imported (one a docs tree's config names and the user has not allowed, see
    `chunkscope.config.trust`): the string as written, with the one-line ``refusal`` that `load_callable` raises
    instead of importing it. A callable given on the command line or in the user's own config is a plain ``str``.
    """

    refusal: str

    def __new__(cls, spec: str, refusal: str) -> "RefusedCallable":
        obj = super().__new__(cls, spec)
        obj.refusal = refusal
        return obj

    def __reduce__(self) -> tuple[type["RefusedCallable"], tuple[str, str]]:
        # copy.deepcopy (a config copied with the command line's settings) and pickling keep the mark.
        return (RefusedCallable, (str(self), self.refusal))


class CustomStrategy(Strategy):
    """Chunks from a user function: strings located in the source, or (start, end) offsets checked."""

    name: ClassVar[str] = "custom"
    seed: ClassVar[str] = ""
    description: ClassVar[str] = (
        "Your own chunker: a function 'module:function' (or 'file.py:function') that takes the document text and "
        "returns chunk strings (found verbatim, in order) or (start, end) offsets."
    )
    parameters: ClassVar[tuple[Param, ...]] = (
        Param("callable", str, "", "the chunker, as module:function or path/to/file.py:function (required)"),
        Param("tokenizer", str, "cl100k_base", f"tokenizer chunk sizes are shown in ({', '.join(TOKENIZER_NAMES)} or hf:<dir>)"),
        Param("overlap", bool, False, "chunks may overlap the previous one (a sliding window); else an overlap is an "
                                      "error"),
    )

    def validate(self) -> None:
        tok = self.params["tokenizer"]
        if tok not in TOKENIZER_NAMES and not tok.startswith("hf:"):
            raise ParamError(f"{self.name}: tokenizer must be one of {', '.join(TOKENIZER_NAMES)} or hf:<model dir>, got {tok!r}")
        self._fn = load_callable(self.params["callable"], self.name)

    def limits(self) -> Limits:
        return Limits(self.length_tokenizer, None)

    def spans(self, doc: "Document") -> list[Span]:
        spec = self.params["callable"]
        try:
            result = self._fn(doc.text)
        except KeyboardInterrupt:
            raise  # the user's Ctrl-C stops the command as everywhere else
        except BaseException as exc:  # the user's code, SystemExit included: its failure, in one line, never an exit
            raise CustomChunkerError(f"{self.name}: {spec} raised {type(exc).__name__}: {_one_line(str(exc))}") from exc
        if result is None or isinstance(result, (str, bytes)) or not hasattr(result, "__iter__"):
            raise CustomChunkerError(
                f"{self.name}: {spec} must return a list of strings or of (start, end) pairs, got {type(result).__name__}"
            )
        items = list(result)
        if not items:
            return []
        strings = [isinstance(x, str) for x in items]
        overlap = bool(self.params["overlap"])
        if all(strings):
            return locate_strings(doc.text, items, self.name, overlap=overlap)
        if any(strings):
            n = strings.index(not strings[0]) + 1
            raise CustomChunkerError(f"{self.name}: {spec} mixes strings and (start, end) pairs (chunk {n} differs from chunk 1)")
        return check_pairs(len(doc.text), items, self.name, overlap=overlap)


def locate_strings(text: str, pieces: list[str], strategy: str = "custom", *, overlap: bool = False) -> list[Span]:
    """Find each piece verbatim, searching from the previous chunk's end (``overlap``: from just after its start)."""
    spans: list[Span] = []
    for n, piece in enumerate(pieces, 1):
        if not piece:
            continue  # an empty string is no chunk and has no place
        prev = spans[-1] if spans else None
        at = text.find(piece, 0 if prev is None else prev.start + 1 if overlap else prev.end)
        if at == -1 and prev is not None and not overlap and text.find(piece, prev.start + 1) != -1:
            at = text.find(piece, prev.start + 1)  # found only overlapping the previous chunk: said below
        if at == -1:
            head = piece[:40]
            more = "…" if len(piece) > 40 else ""
            hint = " (it occurs earlier, before the previous chunk)" if piece in text else ""
            raise CustomChunkerError(
                f"{strategy}: chunk {n} is not in the document verbatim{hint}: {head!r}{more}"
            )
        spans.append(_checked(Span(at, at + len(piece)), prev, n, strategy, overlap))
    return spans


def _checked(span: Span, prev: Span | None, n: int, strategy: str, overlap: bool) -> Span:
    """``span`` when it may follow ``prev``: after it, or overlapping it when ``overlap`` allows, never inside it."""
    if prev is None or span.start >= prev.end:
        return span
    if span.end <= prev.end:
        raise CustomChunkerError(f"{strategy}: chunk {n} ({span.start}, {span.end}) lies inside chunk {n - 1} "
                                 f"({prev.start}, {prev.end}); it adds nothing")
    if not overlap:
        raise CustomChunkerError(f"{strategy}: chunk {n} ({span.start}, {span.end}) overlaps chunk {n - 1} "
                                 f"({prev.start}, {prev.end}); set overlap = true if your chunker means it")
    return span


def check_pairs(length: int, items: list[Any], strategy: str = "custom", *, overlap: bool = False) -> list[Span]:
    """Validate ``(start, end)`` pairs: integers, ``0 <= start < end <= length``, starts in order, overlapping the
    previous pair only with ``overlap``, never inside it."""
    spans: list[Span] = []
    for n, item in enumerate(items, 1):
        if isinstance(item, (str, bytes)) or not hasattr(item, "__len__") or len(item) != 2:
            raise CustomChunkerError(f"{strategy}: chunk {n} must be a string or a (start, end) pair, got {item!r}")
        try:
            if any(isinstance(v, bool) for v in item):
                raise TypeError
            start, end = operator.index(item[0]), operator.index(item[1])
        except TypeError:
            raise CustomChunkerError(f"{strategy}: chunk {n}: start and end must be integers, got {tuple(item)!r}") from None
        if not 0 <= start < end <= length:
            raise CustomChunkerError(
                f"{strategy}: chunk {n}: ({start}, {end}) is not a range of the text (need 0 <= start < end <= {length})"
            )
        if spans and start < spans[-1].start:
            raise CustomChunkerError(f"{strategy}: chunk {n} starts at {start}, before chunk {n - 1} ({spans[-1].start}); chunks must be in order")
        spans.append(_checked(Span(start, end), spans[-1] if spans else None, n, strategy, overlap))
    return spans


def load_callable(spec: str, strategy: str = "custom") -> Callable[[str], Any]:
    """Import ``module:function`` (the module may also be a ``.py`` file path); one-line errors.

    A `RefusedCallable` (a callable named by a docs tree's config the user has not allowed) is refused, never
    imported.
    """
    if isinstance(spec, RefusedCallable):
        raise ParamError(spec.refusal)
    spec = spec.strip()
    if not spec:
        raise ParamError(f"{strategy}: callable is required: give your chunker as module:function")
    mod_name, sep, fn_name = spec.rpartition(":")
    # "C:\\dir\\x.py:f" has two colons: rpartition keeps the drive in the module part.
    if not sep or not mod_name or not fn_name:
        raise ParamError(f"{strategy}: callable must look like module:function, got {spec!r}")
    try:
        if mod_name.endswith(".py") or "/" in mod_name or os.sep in mod_name:
            module = _import_file(Path(mod_name).expanduser(), strategy)
        else:
            module = _import_module(mod_name)
    except ParamError:
        raise
    except ModuleNotFoundError as exc:
        raise ParamError(f"{strategy}: cannot import {mod_name!r}: {exc}") from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a module that fails while importing (SystemExit too): syntax errors, its imports
        raise ParamError(f"{strategy}: importing {mod_name!r} failed: {type(exc).__name__}: {_one_line(str(exc))}") from None
    obj: Any = module
    for part in fn_name.split("."):  # "module:Class.method" works too
        if not hasattr(obj, part):
            raise ParamError(f"{strategy}: {mod_name!r} has no {fn_name!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ParamError(f"{strategy}: {spec} is a {type(obj).__name__}, not a function")
    return obj


def _import_module(name: str) -> ModuleType:
    """Import a module by name, also from the current folder (a console script's sys.path lacks it)."""
    cwd = os.getcwd()
    if cwd in sys.path or "" in sys.path:
        return importlib.import_module(name)
    sys.path.insert(0, cwd)
    try:
        return importlib.import_module(name)
    finally:
        try:
            sys.path.remove(cwd)
        except ValueError:
            pass


def _import_file(path: Path, strategy: str) -> ModuleType:
    """Load a module from a ``.py`` file without touching sys.path (re-read on every load: edits show)."""
    if not path.is_file():
        raise ParamError(f"{strategy}: no such file {str(path)!r}")
    name = f"chunkscope_custom_{zlib.crc32(str(path.resolve()).encode()):08x}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ParamError(f"{strategy}: cannot load {str(path)!r} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _one_line(msg: str) -> str:
    return " ".join(msg.split())[:200]

"""The Chunk, declared strategy parameters, the strategy base class and the registry of strategies.

Every built-in strategy returns chunks that are slices of their document: ``chunk.text ==
doc.text[chunk.start:chunk.end]``. Strategies decide *spans*; `ChunkBuilder` turns spans into chunks and fills
in everything derivable (lines, heading path, token counts, overlap with the previous chunk, the embed prefix).

A strategy declares its parameters (`Param`) and the order pairs of them must keep (`Constraint`); the base
class checks both, so the library, the CLI, the config file and the app refuse the same values with the same
line. Every strategy also takes ``embed_prefix`` (`EmbedPrefix`), declared once here.
"""

from __future__ import annotations

import functools
import importlib
import operator
import string
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Literal, Mapping, Sequence

from chunkscope.document.structure import first_content
from chunkscope.tokens import DEFAULT_EMBED_MODEL, SliceCounter, embed_tokenizer, get_tokenizer

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from chunkscope.document.loader import Document
    from chunkscope.embedding.spec import EmbedderSpec

#: Warning ids a strategy attaches itself (lint adds its own rule ids).
SPLIT_FENCE = "split-fence"
OVERSIZE = "oversize"


@dataclass(slots=True)
class Chunk:
    """One chunk of one document.

    ``start``/``end`` are character offsets into ``Document.text`` and ``text`` is exactly that slice. Lines are
    1-based and inclusive. ``overlap`` is the range this chunk shares with the previous one, if any.
    ``embed_tokens`` is counted lazily (see `count_embed_tokens`): word-piece counting costs more than chunking.
    """

    path: str
    index: int
    start: int
    end: int
    start_line: int
    end_line: int
    text: str
    tokens: int
    heading_path: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    overlap: tuple[int, int] | None = None
    embed_text_override: str | None = None
    embed_tokens: int | None = None

    @property
    def embed_text(self) -> str:
        """What is sent to the embedding model: the text, after the strategy's ``embed_prefix`` when one is set
        (the text itself stays the exact slice). ``embed_tokens`` counts this, prefix included."""
        return self.text if self.embed_text_override is None else self.embed_text_override

    @property
    def embed_offset(self) -> int | None:
        """Where the chunk's text starts inside `embed_text`: 0 without a prefix, the prefix's length with one;
        None when a strategy embeds a text that does not hold it. Maps an offset of the embedded text (where the
        model stops reading) back to the document: ``start + offset - embed_offset``."""
        embedded = self.embed_text_override
        if embedded is None:
            return 0
        # A prefix is put in front: the text is the tail. Searching from the left could find it in the prefix
        # (a short chunk whose words the heading repeats).
        if embedded.endswith(self.text):
            return len(embedded) - len(self.text)
        at = embedded.find(self.text)
        return at if at >= 0 else None

    @property
    def words(self) -> int:
        return len(self.text.split())

    def to_dict(self) -> dict[str, Any]:
        """The JSONL record of ``chunkscope chunk``."""
        return {
            "path": self.path,
            "index": self.index,
            "start": self.start,
            "end": self.end,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "text": self.text,
            "tokens": self.tokens,
            "embed_tokens": self.embed_tokens,
            "heading_path": list(self.heading_path),
            "metadata": self.metadata,
            "warnings": list(self.warnings),
            "overlap": list(self.overlap) if self.overlap else None,
            "embed_text": self.embed_text if self.embed_text_override is not None else None,
        }


@dataclass(slots=True)
class Span:
    """A strategy's decision: a range to cut, with the metadata and warnings only the strategy knows."""

    start: int
    end: int
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    embed_text: str | None = None


def keep_split_fences_no_chunk_holds(spans: list[Span], fence_containing: Callable[[int], tuple[int, int] | None]
                                     ) -> list[Span]:
    """``spans`` without the `SPLIT_FENCE` warnings whose fences another span holds whole.

    A strategy marks a span whose end falls inside a fenced code block; with overlapping spans, the next one may
    hold that block whole. Seed 001's check is that no code block is split *across chunks*, and lint's
    split-fence judges so (one whole copy is enough): the chunk's own mark must agree with it, or the chunk table
    shows an error that ``lint`` does not report. ``fence_containing(pos)``: the strategy's fence strictly
    containing ``pos``, if any.
    """
    bounds = [(sp.start, sp.end) for sp in spans]

    def held(fence: tuple[int, int]) -> bool:
        return any(a <= fence[0] and fence[1] <= b for a, b in bounds)

    out: list[Span] = []
    for sp in spans:
        if SPLIT_FENCE in sp.warnings:
            cut = [f for f in (fence_containing(sp.start), fence_containing(sp.end)) if f is not None]
            if cut and all(held(f) for f in cut):
                sp = replace(sp, warnings=[w for w in sp.warnings if w != SPLIT_FENCE])
        out.append(sp)
    return out


class ParamError(ValueError):
    """A strategy parameter is unknown or out of range: one line, shown as is."""


_TYPE_NAMES = {int: "integer", float: "number", str: "string", bool: "boolean", list: "list", dict: "table"}


@dataclass(frozen=True, slots=True)
class Param:
    """A declared strategy parameter: type, default, allowed range and help, for the CLI, config and TUI."""

    name: str
    type: type
    default: Any
    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] | None = None

    def describe(self) -> dict[str, Any]:
        rng = None
        if self.min is not None or self.max is not None:
            rng = [self.min, self.max]
        return {
            "name": self.name,
            "type": _TYPE_NAMES.get(self.type, self.type.__name__),
            "default": self.default,
            "range": rng,
            "choices": list(self.choices) if self.choices else None,
            "help": self.help,
        }

    def range_text(self) -> str:
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        if self.min is not None and self.max is not None:
            return f"{_fmt(self.min)}..{_fmt(self.max)}"
        if self.min is not None:
            return f">= {_fmt(self.min)}"
        if self.max is not None:
            return f"<= {_fmt(self.max)}"
        return ""

    def coerce(self, value: Any, strategy: str = "") -> Any:
        """Validate and convert a value (typed from TOML, or a string from ``--param k=v``)."""
        where = f"{strategy}: " if strategy else ""
        want = _TYPE_NAMES.get(self.type, self.type.__name__)
        try:
            if isinstance(value, str) and self.type is not str:
                value = _parse_text(value, self.type)
            if self.type is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if self.type is int and isinstance(value, float) and value.is_integer():
                value = int(value)
            if not isinstance(value, self.type) or (self.type is int and isinstance(value, bool)):
                raise TypeError
        except (TypeError, ValueError):
            article = "an" if want[:1] in "aeiou" else "a"
            raise ParamError(f"{where}{self.name} must be {article} {want}, got {value!r}") from None
        if self.choices and value not in self.choices:
            raise ParamError(f"{where}{self.name} must be {self.range_text()}, got {value!r}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
                raise ParamError(f"{where}{self.name} must be in {self.range_text()}, got {value!r}")
        return value


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


#: The orders a `Constraint` can ask for, with how a message says that one was broken.
_ORDERS: dict[str, tuple[Callable[[Any, Any], bool], str]] = {
    "<": (operator.lt, "must be below"),
    "<=": (operator.le, "must not exceed"),
}


@dataclass(frozen=True, slots=True)
class Constraint:
    """An order two parameters of a strategy must keep: ``Constraint("chunk_overlap", "<", "chunk_size")``.

    Declared once per strategy (`Strategy.constraints`) and checked by the base class, so every way values
    arrive (the library, ``-p k=v``, a config table, the app's parameter bar) is refused with the same line.

    ``default_follows``: when ``left`` was not given, its default is lowered to ``right`` instead of refused. A
    default nobody chose must not contradict a value someone did: ``max_tokens=40`` alone brings the default
    ``min_tokens`` of 50 down to 40, while ``max_tokens=40, min_tokens=50`` is an error. Only with ``<=``:
    meeting ``<`` by lowering would need a step size.
    """

    left: str
    op: Literal["<", "<="]
    right: str
    default_follows: bool = False

    def __post_init__(self) -> None:
        if self.op not in _ORDERS:
            raise ValueError(f"Constraint op must be one of {', '.join(_ORDERS)}, got {self.op!r}")
        if self.default_follows and self.op != "<=":
            raise ValueError(f"Constraint {self.left} {self.op} {self.right}: default_follows needs '<='")

    def holds(self, params: Mapping[str, Any]) -> bool:
        """Whether ``params`` (coerced values, both present) keep the order."""
        return _ORDERS[self.op][0](params[self.left], params[self.right])

    def message(self, strategy: str, params: Mapping[str, Any]) -> str:
        """``section: min_tokens (50) must not exceed max_tokens (10)``: both names and both values, one line."""
        where = f"{strategy}: " if strategy else ""
        return (f"{where}{self.left} ({params[self.left]}) {_ORDERS[self.op][1]} "
                f"{self.right} ({params[self.right]})")


class ConstraintError(ParamError):
    """Two parameters break a declared `Constraint`; the message names both and their values.

    ``names`` lets a view point at both fields; ``with_note`` adds where a value came from (a config file).
    """

    def __init__(self, strategy: str, constraint: Constraint, params: Mapping[str, Any], note: str = "") -> None:
        self.strategy = strategy
        self.constraint = constraint
        self.values = {constraint.left: params[constraint.left], constraint.right: params[constraint.right]}
        self.note = note
        msg = constraint.message(strategy, self.values)
        super().__init__(f"{msg} ({note})" if note else msg)

    @property
    def names(self) -> tuple[str, str]:
        """The two parameters, the one that must be smaller first."""
        return (self.constraint.left, self.constraint.right)

    def with_note(self, note: str) -> "ConstraintError":
        """The same error, saying in parentheses where a value came from."""
        return ConstraintError(self.strategy, self.constraint, self.values, note)


# --- embed prefix ---------------------------------------------------------------------------------------------

#: Named ``embed_prefix`` values, for the common cases; anything else is a template.
NAMED_PREFIXES: dict[str, str] = {
    "none": "",
    "title": "{title}\n\n",
    "heading": "{heading_path}\n\n",
    "breadcrumb": "{breadcrumb}\n\n",
}

#: Fields every chunk has for an ``embed_prefix`` template (the strategy's metadata adds its own and wins on a
#: clash). The same names and values as a citation template's (`retrieval.citation_fields`).
PREFIX_FIELDS: tuple[str, ...] = (
    "title", "heading", "heading_path", "breadcrumb", "path", "start_line", "end_line", "lines", "chunk_index",
    "chapter", "section", "chapter_id", "chapter_title", "module", "week",
)

#: The parameter every strategy takes, declared here once (`Strategy.__init_subclass__` adds it to each).
EMBED_PREFIX = Param(
    "embed_prefix", str, "none",
    "text put before each chunk's text for embedding only (the chunk stays an exact slice): none, title, heading "
    "(the heading trail), breadcrumb (title › trail), or a template over the chunk's fields such as "
    "'{title} › {heading_path}\\n\\n' (\\n is a line break)",
)


def is_empty_field(value: Any) -> bool:
    """A template field with nothing to show: None, "" or an empty list."""
    return value is None or value == "" or value == [] or value == ()


class FieldFormatter(string.Formatter):
    """str.format over a chunk's fields (embed prefixes here, citations in `chunkscope.retrieval.retriever`): a missing or
    empty field renders as nothing (and is counted in ``empty_fields``), a list as a " › " trail."""

    def __init__(self) -> None:
        super().__init__()
        self.empty_fields = 0

    def get_value(self, key, args, kwargs):  # noqa: ANN001 - string.Formatter's signature
        return kwargs.get(key) if isinstance(key, str) else None

    def get_field(self, field_name, args, kwargs):  # noqa: ANN001
        try:
            return super().get_field(field_name, args, kwargs)
        except (AttributeError, IndexError, KeyError, TypeError):  # heading_path[3] of a shallower chunk
            return None, field_name

    def format_field(self, value: Any, format_spec: str) -> str:
        if is_empty_field(value):
            self.empty_fields += 1
            return ""
        if isinstance(value, (list, tuple)):
            value = " › ".join(str(v) for v in value if not is_empty_field(v))
        try:
            return format(value, format_spec)
        except (TypeError, ValueError):
            return str(value)


@dataclass(frozen=True, slots=True)
class EmbedPrefix:
    """A parsed ``embed_prefix``: text put before a chunk's text for embedding, filled from the chunk's fields.

    ``template`` is in str.format syntax over `Strategy.prefix_fields`. In the value given, the two characters
    ``\\n`` stand for a line break: a command line or the app's one-line field cannot type one. A prefix that
    renders to whitespace only (a chunk with no heading under ``heading``) adds nothing.
    """

    template: str
    fields: frozenset[str]

    @classmethod
    def parse(cls, value: str, known: Sequence[str], strategy: str = "") -> "EmbedPrefix | None":
        """The prefix a parameter value asks for; None for ``none`` or an empty value.

        Raises:
            ParamError: the template does not parse, names no field inside braces, or names an unknown field.
        """
        where = f"{strategy}: " if strategy else ""
        key = value.strip()
        template = NAMED_PREFIXES.get(key, value).replace("\\n", "\n") if key else ""
        if not template.strip():
            return None
        try:
            parsed = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
        except ValueError as exc:  # an unmatched brace
            raise ParamError(f"{where}embed_prefix {value!r}: {exc} (write {{{{ or }}}} for a brace)") from None
        fields: set[str] = set()
        for name in parsed:
            base = name.replace("[", ".").split(".", 1)[0]
            if not base or base.isdigit():
                raise ParamError(f"{where}embed_prefix {value!r}: name a field inside braces, e.g. {{title}} "
                                 f"(fields: {', '.join(known)})")
            if base not in known:
                raise ParamError(f"{where}embed_prefix {value!r}: unknown field {base!r} (fields: {', '.join(known)})")
            fields.add(base)
        return cls(template, frozenset(fields))

    def apply(self, chunks: Sequence["Chunk"], doc: "Document") -> None:
        """Put the prefix before each chunk's embed text (``embed_tokens`` is counted later, prefix included)."""
        page = _document_fields(doc) if self.fields & _DOCUMENT_FIELDS else {}
        fmt = FieldFormatter()
        for c in chunks:
            values = {**page, **_chunk_fields(c, page.get("title")), **c.metadata}
            prefix = fmt.vformat(self.template, (), values)
            if prefix.strip():
                c.embed_text_override = prefix + c.embed_text


#: The fields read from the document (its numbering), computed once per document and only when used.
_DOCUMENT_FIELDS = frozenset({"title", "breadcrumb", "chapter", "section", "chapter_id", "chapter_title", "module",
                              "week"})


def _document_fields(doc: "Document") -> dict[str, Any]:
    from chunkscope.site.model import doc_numbering

    n = doc_numbering(doc)
    return {"title": n.chapter_title, "chapter": n.chapter, "section": n.section, "chapter_id": n.chapter_id,
            "chapter_title": n.chapter_title, "module": n.module, "week": n.week}


def _chunk_fields(c: "Chunk", title: str | None) -> dict[str, Any]:
    trail = list(c.heading_path)
    # The page title is usually its `#` heading too: the breadcrumb names it once.
    crumbs = trail[1:] if title and trail and trail[0] == title else trail
    return {
        "path": c.path,
        "start_line": c.start_line,
        "end_line": c.end_line,
        "lines": f"{c.start_line}-{c.end_line}" if c.end_line != c.start_line else str(c.start_line),
        "chunk_index": c.index,
        "heading": trail[-1] if trail else "",
        "heading_path": trail,
        "breadcrumb": [title, *crumbs] if title else crumbs,
    }


def _parse_text(text: str, typ: type) -> Any:
    import json

    t = text.strip()
    if typ is bool:
        low = t.lower()
        if low in ("true", "yes", "on", "1"):
            return True
        if low in ("false", "no", "off", "0"):
            return False
        raise ValueError(text)
    if typ is int:
        return int(t)
    if typ is float:
        return float(t)
    if typ is list:
        if t.startswith("["):
            v = json.loads(t)
            if not isinstance(v, list):
                raise ValueError(text)
            return v
        return [x.strip() for x in t.split(",") if x.strip()]
    if typ is dict:
        v = json.loads(t)
        if not isinstance(v, dict):
            raise ValueError(text)
        return v
    return t


@dataclass(frozen=True, slots=True)
class Limits:
    """What lint holds chunks to: a maximum and a minimum, counted in one tokenizer."""

    tokenizer: str
    max: int | None
    min: int | None = None
    #: The last chunk of a document may be short (seed 001: "except the last chunk").
    last_may_be_short: bool = False


class Strategy:
    """Base class of chunking strategies: declared parameters, validated once, and the span → chunk pipeline."""

    name: ClassVar[str] = ""
    seed: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: The strategy's parameters; ``embed_prefix`` is added to every subclass's tuple (`__init_subclass__`).
    parameters: ClassVar[tuple[Param, ...]] = (EMBED_PREFIX,)
    #: Orders pairs of parameters must keep (a minimum below its maximum, an overlap below its size), checked
    #: by `__init__` for every way values arrive; `validate` is for what a pair order cannot say.
    constraints: ClassVar[tuple[Constraint, ...]] = ()
    #: Metadata fields the strategy's seed requires (lint's missing-metadata checks these).
    required_metadata: ClassVar[tuple[str, ...]] = ()
    #: Every other metadata field its chunks carry (an ``embed_prefix`` template may name these too).
    metadata_fields: ClassVar[tuple[str, ...]] = ()
    #: Default citation template over the metadata, in str.format syntax with missing keys left empty.
    citation_template: ClassVar[str] = "{title} › {heading}"
    #: Whether `spans` reads the full Markdown parse (``doc.structure``) rather than only the outline.
    parses_markdown: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("parameters")
        if own is not None and all(p.name != EMBED_PREFIX.name for p in own):
            cls.parameters = (*own, EMBED_PREFIX)
        # A constraint over a name the strategy does not declare is a bug of the class: say so when it is defined.
        names = {p.name for p in cls.parameters}
        for c in cls.constraints:
            for n in (c.left, c.right):
                if n not in names:
                    raise TypeError(f"{cls.__name__}: constraint {c.left} {c.op} {c.right} names {n!r}, "
                                    f"which is not one of its parameters")

    def __init__(self, **params: Any) -> None:
        declared = {p.name: p for p in self.parameters}
        unknown = sorted(set(params) - set(declared))
        if unknown:
            names = ", ".join(declared) or "none"
            raise ParamError(f"{self.name}: unknown parameter {unknown[0]!r} (parameters: {names})")
        self.params: dict[str, Any] = {}
        for p in self.parameters:
            self.params[p.name] = p.coerce(params[p.name], self.name) if p.name in params else p.default
        self._settle_constraints(declared, given=params.keys())
        #: The parsed ``embed_prefix`` (None: chunks are embedded as they are).
        self.embed_prefix: EmbedPrefix | None = EmbedPrefix.parse(self.params[EMBED_PREFIX.name],
                                                                 self.prefix_fields(), self.name)
        self.validate()

    def _settle_constraints(self, declared: Mapping[str, Param], given: Iterable[str]) -> None:
        """Lower the defaults that follow a given value (`Constraint.default_follows`), then check every pair."""
        chosen = set(given)
        for c in self.constraints:
            if c.default_follows and c.left not in chosen and not c.holds(self.params):
                try:  # only to a value the parameter allows; else the check below reports the pair
                    self.params[c.left] = declared[c.left].coerce(self.params[c.right], self.name)
                except ParamError:
                    pass
        self.check_constraints(self.params)

    @classmethod
    def check_constraints(cls, params: Mapping[str, Any]) -> None:
        """Raise `ConstraintError` for the first declared constraint that ``params`` (coerced values) break.

        Every value is read as given, none follows: what a view asks of the values it shows.
        """
        for c in cls.constraints:
            if c.left in params and c.right in params and not c.holds(params):
                raise ConstraintError(cls.name, c, params)

    @classmethod
    def prefix_fields(cls) -> tuple[str, ...]:
        """The fields an ``embed_prefix`` template may name: every chunk's, then this strategy's metadata."""
        return tuple(dict.fromkeys((*PREFIX_FIELDS, *cls.required_metadata, *cls.metadata_fields)))

    def validate(self) -> None:
        """A strategy's own checks beyond its declared `constraints` (already checked); raise ParamError."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({args})"

    @property
    def length_tokenizer(self) -> str:
        """The tokenizer this strategy measures its limits in."""
        return self.params.get("encoding") or self.params.get("tokenizer") or "cl100k_base"

    def limits(self) -> Limits:
        return Limits(self.length_tokenizer, None)

    def counter(self, doc: "Document") -> SliceCounter:
        return get_tokenizer(self.length_tokenizer).counter(doc)

    def prefetch(self, doc: "Document") -> None:
        """Build what `chunk` will need of ``doc`` besides its tokens (called while a tree is being tokenized).

        The outline (every chunk's lines and heading path come from it), or the parse for strategies that read it.
        """
        if self.parses_markdown:
            doc.structure
        else:
            doc.outline

    def spans(self, doc: "Document") -> list[Span]:
        """Where to cut ``doc``: the one method a strategy must write."""
        raise TypeError(f"{type(self).__name__} must define spans()")

    def chunk(self, doc: "Document") -> list[Chunk]:
        """Cut ``doc`` into chunks (exact slices, in order).

        Raises:
            TypeError: ``doc`` is not a `Document` (a plain string: see `chunk_text` or `Document.from_text`).
        """
        from chunkscope.document.loader import Document

        # A string is refused, not wrapped: every chunk names its document's path and the document caches its
        # parse for the next strategy, so a wrapper invented here would cite "doc.md" and re-parse every call.
        if not isinstance(doc, Document):
            hint = ("; for a string use chunkscope.chunk_text(text, strategy=...) or chunk(Document.from_text(text))"
                    if isinstance(doc, str) else "")
            raise TypeError(f"{type(self).__name__}.chunk() takes a chunkscope Document, got {type(doc).__name__}{hint}")
        return ChunkBuilder(doc, self.counter(doc), self.embed_prefix).build(self.spans(doc))


def _heading_path(h) -> list[str]:
    return list(h.path) if h is not None else []


class ChunkBuilder:
    """Turns spans into chunks: lines, heading paths, token counts and overlaps, all derived from the source."""

    def __init__(self, doc: "Document", counter: SliceCounter, embed_prefix: EmbedPrefix | None = None) -> None:
        self.doc = doc
        self.counter = counter
        self.embed_prefix = embed_prefix

    def build(self, spans: Iterable[Span]) -> list[Chunk]:
        doc = self.doc
        # The outline, not the full parse: line numbers and heading paths never need more, and size-driven
        # strategies must not pay for a markdown-it parse (the outline equals the parse's answer exactly).
        st = doc.outline
        text = doc.text
        chunks: list[Chunk] = []
        prev: Chunk | None = None
        for sp in spans:
            if sp.end <= sp.start:
                continue
            overlap = None
            if prev is not None and sp.start < prev.end:
                overlap = (sp.start, min(prev.end, sp.end))
            last = sp.end - 1 if sp.end > sp.start else sp.start
            c = Chunk(
                path=doc.path,
                index=len(chunks),
                start=sp.start,
                end=sp.end,
                start_line=st.line_of(sp.start),
                end_line=st.line_of(last),
                text=text[sp.start:sp.end],
                tokens=self.counter.count(sp.start, sp.end),
                heading_path=_heading_path(st.heading_of(first_content(text, sp.start, sp.end), sp.end)),
                metadata=sp.metadata,
                warnings=list(dict.fromkeys(sp.warnings)),
                overlap=overlap,
                embed_text_override=sp.embed_text,
            )
            chunks.append(c)
            prev = c
        if self.embed_prefix is not None:
            self.embed_prefix.apply(chunks, doc)
        return chunks


def count_embed_tokens(chunks: Sequence[Chunk], model: str | EmbedderSpec = DEFAULT_EMBED_MODEL) -> None:
    """Fill ``embed_tokens`` of every chunk that lacks it, in one batch through the embedder's own tokenizer (a
    local model's word pieces, an ``openai:`` endpoint's cl100k_base tokens: `tokens.embed_tokenizer`)."""
    todo = [c for c in chunks if c.embed_tokens is None]
    if not todo:
        return
    counts = embed_tokenizer(model).count_batch([c.embed_text for c in todo])
    for c, n in zip(todo, counts):
        c.embed_tokens = n


# --- registry -------------------------------------------------------------------------------------------------

#: name → "module:Class"; modules are imported on first use so listing names stays cheap.
_BUILTIN = {
    "section-sentence": "chunkscope.chunking.strategies.section_sentence:SectionSentenceStrategy",
    "header-window": "chunkscope.chunking.strategies.header_window:HeaderWindowStrategy",
    "section": "chunkscope.chunking.strategies.section:SectionStrategy",
    "content-type": "chunkscope.chunking.strategies.content_type:ContentTypeStrategy",
    "recursive": "chunkscope.chunking.strategies.recursive:RecursiveStrategy",
    "fixed": "chunkscope.chunking.strategies.fixed:FixedStrategy",
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
    except Exception as exc:  # noqa: BLE001 - any failure of third-party code becomes one line naming it
        raise StrategyPluginError(f"{_describe(ep)}: cannot be loaded: {_one_line(exc)}") from None
    if not (isinstance(cls, type) and issubclass(cls, Strategy)):
        raise StrategyPluginError(f"{_describe(ep)}: {ep.value} is not a subclass of chunkscope.chunking.chunk.Strategy")
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


def chunk_text(text: str, strategy: "str | Strategy" = "recursive", path: str = "doc.md", **params: Any) -> list[Chunk]:
    """Chunk a string: ``chunk_text(markdown, "section-sentence", max_tokens=384)``.

    The string is read as a Markdown file at ``path`` would be (front matter parsed, see `Document.from_text`);
    ``path`` also names the chunks and feeds the metadata read from paths (chapter numbers, routes).

    Args:
        text: Markdown or MDX source; every chunk is ``text[chunk.start:chunk.end]``.
        strategy: a strategy name (built-in or plugin) or a configured `Strategy`.
        path: the document's path, as it would be relative to a docs root.
        **params: the strategy's parameters (only with a name: a configured Strategy has its own).

    Raises:
        TypeError: ``text`` is not a string, or parameters were given with a configured Strategy.
        UnknownStrategy: no strategy has that name.
        ParamError: a parameter is unknown or out of range.
    """
    from chunkscope.document.loader import Document

    if not isinstance(text, str):
        raise TypeError(f"chunk_text() takes a str, got {type(text).__name__}")
    return as_strategy(strategy, params, "chunk_text()").chunk(Document.from_text(text, path=path))


def as_strategy(strategy: "str | Strategy", params: dict[str, Any], caller: str) -> Strategy:
    """A strategy from a name and its parameters, or a configured one as it is (then with no parameters)."""
    if isinstance(strategy, Strategy):
        if params:
            raise TypeError(f"{caller}: parameters {sorted(params)} given with a configured {strategy!r}")
        return strategy
    return get_strategy(strategy, **params)


# --- many documents -------------------------------------------------------------------------------------------


@dataclass
class ChunkedDoc:
    """The chunks of one document, or why there are none."""

    doc: "Document"
    chunks: list[Chunk]
    error: str | None = None


def chunk_documents(docs: Sequence["Document"], strategy: Strategy) -> list[ChunkedDoc]:
    """Chunk many documents; one document's failure is recorded on it and never stops the rest.

    The tree is tokenized on a background thread (tiktoken releases the GIL) while this thread builds what needs
    no tokens (each document's outline or parse); then the documents are chunked in order.
    """
    from chunkscope.tokens import TIKTOKEN_NAMES, prepare

    if strategy.length_tokenizer in TIKTOKEN_NAMES:
        prepare(docs, strategy.length_tokenizer)
        for d in docs:
            try:
                strategy.prefetch(d)
            except Exception:  # noqa: BLE001 - only a head start; chunking the document reports its problem
                pass
    out: list[ChunkedDoc] = []
    for d in docs:
        try:
            out.append(ChunkedDoc(d, strategy.chunk(d)))
        except (ParamError, ValueError, LookupError) as exc:
            # Strategy-level problems specific to this text (a custom callable's output not found verbatim, …).
            out.append(ChunkedDoc(d, [], f"{type(exc).__name__}: {exc}" if not isinstance(exc, ParamError) else str(exc)))
    return out

"""The strategy base class (declared parameters, validated once; spans in, chunks out) and `ChunkBuilder`.

A strategy decides only *spans*; `ChunkBuilder` fills in everything derivable from the source (lines, heading
path, token counts, overlap with the previous chunk, the embed prefix).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Mapping

from chunkscope.chunking.model import Chunk, Span
from chunkscope.chunking.params import Constraint, ConstraintError, Param, ParamError
from chunkscope.chunking.prefix import EMBED_PREFIX, PREFIX_FIELDS, EmbedPrefix
from chunkscope.document.structure import first_content

if TYPE_CHECKING:
    from chunkscope.chunking.contexts import ChunkContexts
    from chunkscope.document.loader import Document
    from chunkscope.document.structure import Heading
    from chunkscope.tokens import SliceCounter


#: A strategy's candidate parameter values for ``chunkscope tune`` (`Strategy.search_space`). A key naming one
#: parameter lists its values: ``{"chunk_size": (256, 512)}``. A key naming several parameters that move together
#: lists settings of them, one mapping each: ``{("max_words", "min_words"): ({"max_words": 300, "min_words": 80},
#: {})}``; an empty setting keeps their defaults. The tuner tries every combination of the keys' candidates.
SearchSpace = Mapping[str | tuple[str, ...], tuple[Any, ...]]


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
    #: What ``chunkscope tune`` tries of this strategy's parameters (see `SearchSpace`); empty: only its defaults.
    search_space: ClassVar[SearchSpace] = {}
    #: Whether `spans` reads the full Markdown parse (``doc.structure``) rather than only the outline.
    parses_markdown: ClassVar[bool] = False
    #: Where an ``embed_prefix = "llm"`` prefix comes from (`use_contexts`); None until someone gives one.
    chunk_contexts: "ChunkContexts | None" = None

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
        cls.search_axes()  # a search space over unknown names or bad values is a bug of the class, too

    @classmethod
    def search_axes(cls) -> list[list[dict[str, Any]]]:
        """`search_space` as the tuner's axes: per key, one parameter setting per candidate, values as declared.

        Raises:
            TypeError: a key names a parameter the strategy does not declare, a joint key's setting is not a
                mapping over its names, or a value is out of its parameter's range.
        """
        declared = {p.name: p for p in cls.parameters}
        axes: list[list[dict[str, Any]]] = []
        for key, candidates in cls.search_space.items():
            names = (key,) if isinstance(key, str) else tuple(key)
            for n in names:
                if n not in declared:
                    raise TypeError(f"{cls.__name__}: search_space names {n!r}, which is not one of its parameters")
            settings = [{key: v} for v in candidates] if isinstance(key, str) else list(candidates)
            axis: list[dict[str, Any]] = []
            for setting in settings:
                if not isinstance(setting, Mapping) or not set(setting) <= set(names):
                    raise TypeError(f"{cls.__name__}: search_space[{key!r}]: {setting!r} is not a setting of "
                                    f"{', '.join(names)}")
                try:
                    for n, v in setting.items():
                        declared[n].coerce(v, cls.name)
                except ParamError as exc:
                    raise TypeError(f"{cls.__name__}: search_space: {exc}") from None
                axis.append(dict(setting))
            axes.append(axis)
        return axes

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

    @property
    def uses_contexts(self) -> bool:
        """Whether the chunks' prefix is a generated context (``embed_prefix = "llm"``)."""
        return self.embed_prefix is not None and self.embed_prefix.contextual

    def use_contexts(self, contexts: "ChunkContexts") -> None:
        """Read ``embed_prefix = "llm"`` contexts from ``contexts`` (given by whoever knows the chat model)."""
        self.chunk_contexts = contexts

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
        from chunkscope.tokens import get_tokenizer  # here: the app's first frame does without the tokenizers

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
        return ChunkBuilder(doc, self.counter(doc), self.embed_prefix, self.chunk_contexts).build(self.spans(doc))


def _heading_path(h: "Heading | None") -> list[str]:
    return list(h.path) if h is not None else []


class ChunkBuilder:
    """Turns spans into chunks: lines, heading paths, token counts and overlaps, all derived from the source."""

    def __init__(self, doc: "Document", counter: SliceCounter, embed_prefix: EmbedPrefix | None = None,
                 contexts: "ChunkContexts | None" = None) -> None:
        self.doc = doc
        self.counter = counter
        self.embed_prefix = embed_prefix
        self.contexts = contexts

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
            self.embed_prefix.apply(chunks, doc, self.contexts)
        return chunks


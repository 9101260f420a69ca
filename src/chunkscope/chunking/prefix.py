"""The ``embed_prefix`` template language: text put before a chunk's text for embedding only.

Every strategy takes ``embed_prefix`` (`EMBED_PREFIX`, declared once here); `EmbedPrefix` parses its value and
fills it from each chunk's fields. `FieldFormatter` is shared with citation templates. ``llm`` (`LLM_PREFIX`) is
not a template: each chunk's prefix is a sentence a chat model wrote about it, read from a `ChunkContexts` provider.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from chunkscope.chunking.params import Param, ParamError

if TYPE_CHECKING:
    from chunkscope.chunking.contexts import ChunkContexts
    from chunkscope.chunking.model import Chunk
    from chunkscope.document.loader import Document


#: Named ``embed_prefix`` values, for the common cases; anything else is a template.
NAMED_PREFIXES: dict[str, str] = {
    "none": "",
    "title": "{title}\n\n",
    "heading": "{heading_path}\n\n",
    "breadcrumb": "{breadcrumb}\n\n",
}

#: The ``embed_prefix`` value asking for contextual retrieval: a chat model's sentence situating the chunk in its
#: page (`chunkscope.llm.contextual`), then a blank line.
LLM_PREFIX = "llm"


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
    "(the heading trail), breadcrumb (title › trail), llm (a sentence a chat model wrote situating the chunk in "
    "its page: [llm] model, then chunkscope contexts DOCS), or a template over the chunk's fields such as "
    "'{title} › {heading_path}\\n\\n' (\\n is a line break)",
)


def is_empty_field(value: Any) -> bool:
    """A template field with nothing to show: None, "" or an empty list."""
    return value is None or value == "" or value == [] or value == ()


class FieldFormatter(string.Formatter):
    """str.format over a chunk's fields (embed prefixes here, citations in `chunkscope.retrieval.retriever`): a
    missing or empty field renders as nothing (and is counted in ``empty_fields``), a list as a " › " trail."""

    def __init__(self) -> None:
        super().__init__()
        self.empty_fields = 0

    def get_value(self, key: int | str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        return kwargs.get(key) if isinstance(key, str) else None

    def get_field(self, field_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
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
    #: ``llm``: the prefix is the chunk's generated context (`ChunkContexts`), not the template.
    contextual: bool = False

    @classmethod
    def parse(cls, value: str, known: Sequence[str], strategy: str = "") -> "EmbedPrefix | None":
        """The prefix a parameter value asks for; None for ``none`` or an empty value.

        Raises:
            ParamError: the template does not parse, names no field inside braces, or names an unknown field.
        """
        where = f"{strategy}: " if strategy else ""
        key = value.strip()
        if key == LLM_PREFIX:
            return cls("", frozenset(), contextual=True)
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

    def apply(self, chunks: Sequence["Chunk"], doc: "Document", contexts: "ChunkContexts | None" = None) -> None:
        """Put the prefix before each chunk's embed text (``embed_tokens`` is counted later, prefix included).

        Raises:
            ParamError: the prefix is ``llm`` and no `ChunkContexts` provider was given.
        """
        if self.contextual:
            _apply_contexts(chunks, doc, contexts)
            return
        page = _document_fields(doc) if self.fields & _DOCUMENT_FIELDS else {}
        fmt = FieldFormatter()
        for c in chunks:
            values = {**page, **_chunk_fields(c, page.get("title")), **c.metadata}
            prefix = fmt.vformat(self.template, (), values)
            if prefix.strip():
                c.embed_text_override = prefix + c.embed_text


def _apply_contexts(chunks: Sequence["Chunk"], doc: "Document", contexts: "ChunkContexts | None") -> None:
    if contexts is None:
        raise ParamError("embed_prefix = llm needs a chat model: set [llm] model (openai:MODEL) and url in "
                         "chunkscope.toml, then run chunkscope contexts DOCS")
    found = contexts.lookup(doc.text, [c.text for c in chunks])
    for c, context in zip(chunks, found):
        if context and context.strip():
            # After the strategy's own embed text (a table's header row): the context situates what is embedded.
            c.embed_text_override = context.strip() + "\n\n" + c.embed_text


#: The fields read from the document (its numbering), computed once per document and only when used.
_DOCUMENT_FIELDS = frozenset({"title", "breadcrumb", "chapter", "section", "chapter_id", "chapter_title", "module",
                              "week"})


def _document_fields(doc: "Document") -> dict[str, Any]:
    from chunkscope.site.numbering import doc_numbering

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


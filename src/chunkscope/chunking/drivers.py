"""The drivers: chunk one string (`chunk_text`, the library's one-call start) or a whole tree of documents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from chunkscope.chunking.model import Chunk, ChunkedDoc
from chunkscope.chunking.params import ParamError
from chunkscope.chunking.registry import as_strategy

if TYPE_CHECKING:
    from chunkscope.chunking.strategy import Strategy
    from chunkscope.document.loader import Document


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
        except KeyboardInterrupt:
            raise  # the user's Ctrl-C
        except BaseException as exc:
            if isinstance(exc, Exception):
                raise  # a bug: the command's one "unexpected" line
            # SystemExit and its kind from a plugin's code: that strategy's failure here, never the end of the run.
            out.append(ChunkedDoc(d, [], f"{strategy.name} raised {type(exc).__name__}: {exc}"))
    return out

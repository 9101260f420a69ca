"""A LlamaIndex ``NodeParser`` that cuts with any chunkscope strategy and keeps each chunk's place.

``ChunkscopeNodeParser("section-sentence", max_tokens=384).get_nodes_from_documents(docs)`` gives TextNodes whose
text is exactly ``text[start_char_idx:end_char_idx]`` of their document and whose metadata holds ``start``,
``end``, ``start_line``, ``heading_path``, ``url`` and the strategy's own fields (see `chunk_metadata`).
Needs the ``llama-index`` extra: ``pip install 'chunkscope[llama-index]'``.

Network: importing llama-index-core and parsing with this class fetch nothing and set no environment variable
(checked by tests/test_integrations.py with sockets refused). LlamaIndex itself downloads NLTK data only for
its stop words and sentence tokenizer, and loads a tiktoken encoding only through its ``get_tokenizer``; both
ship in llama-index-core's ``_static`` folder, and this parser calls neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chunkscope.integrations import chunk_metadata, doc_path, missing_extra

try:
    from llama_index.core.bridge.pydantic import Field, PrivateAttr
    from llama_index.core.node_parser import NodeParser
    from llama_index.core.schema import (
        BaseNode,
        MetadataMode,
        NodeRelationship,
        TextNode,
    )
    from llama_index.core.utils import get_tqdm_iterable
except ImportError as exc:  # one line saying what to install, not a bare "No module named ..."
    raise missing_extra("llama-index", "llama-index-core", exc) from exc

from chunkscope.chunking.registry import as_strategy
from chunkscope.chunking.strategy import Strategy
from chunkscope.document.loader import Document

__all__ = ["ChunkscopeNodeParser"]


class ChunkscopeNodeParser(NodeParser):
    """Parse LlamaIndex documents into nodes with a chunkscope strategy.

    ``ChunkscopeNodeParser(strategy="recursive", chunk_size=384)``: the strategy by name or configured, its
    parameters as keywords, and NodeParser's own fields (``include_metadata``, ``include_prev_next_rel``,
    ``callback_manager``, ``id_func``) as usual. The keys chunkscope adds are left out of what is embedded and
    shown to the LLM, so a node is embedded as its text, as chunkscope embeds it.
    """

    strategy: str = Field(default="recursive", description="The chunkscope strategy's name.")
    params: dict[str, Any] = Field(default_factory=dict, description="The strategy's parameters.")
    path: str = Field(default="doc.md", description="The path a document stands for when its metadata names "
                      "none (source or file_path).")
    docs_root: str | None = Field(default=None, description="A source or file_path under this folder is taken "
                                  "relative to it.")
    site_url: str | None = Field(default=None, description="The published site's base URL, for url.")
    _strategy: Strategy = PrivateAttr()

    def __init__(self, strategy: str | Strategy = "recursive", **kwargs: Any) -> None:
        own = {k: kwargs.pop(k) for k in list(kwargs) if k in type(self).model_fields and k != "params"}
        params = {**kwargs.pop("params", {}), **kwargs}
        strat = as_strategy(strategy, params, type(self).__name__)
        # The name and every parameter value are fields, so to_dict() (and an IngestionPipeline's cache key)
        # changes whenever the cuts would.
        fields: dict[str, Any] = {"strategy": strat.name, "params": dict(strat.params), **own}
        super().__init__(**fields)
        self._strategy = strat

    @classmethod
    def class_name(cls) -> str:
        return "ChunkscopeNodeParser"

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
                     ) -> list[BaseNode]:
        out: list[BaseNode] = []
        for node in get_tqdm_iterable(nodes, show_progress, "Parsing nodes"):
            base = node.metadata if self.include_metadata else {}
            doc = Document.from_text(node.get_content(metadata_mode=MetadataMode.NONE),
                                     path=doc_path(node.metadata, self.path, self.docs_root))
            # One relationship object for all the node's chunks: building it hashes the whole document.
            source = {NodeRelationship.SOURCE: node.as_related_node_info()}
            for c in self._strategy.chunk(doc):
                meta = chunk_metadata(doc, c, self.site_url, base)
                added = [k for k in meta if k not in base]
                out.append(TextNode(
                    id_=self.id_func(c.index, node),
                    text=c.text,
                    start_char_idx=c.start,
                    end_char_idx=c.end,
                    metadata=meta,
                    excluded_embed_metadata_keys=[*node.excluded_embed_metadata_keys, *added],
                    excluded_llm_metadata_keys=[*node.excluded_llm_metadata_keys, *added],
                    metadata_seperator=node.metadata_separator,
                    metadata_template=node.metadata_template,
                    text_template=node.text_template,
                    relationships=dict(source),
                ))
        return out

    def _postprocess_parsed_nodes(self, nodes: list[BaseNode], parent_doc_map: dict[str, Any]) -> list[BaseNode]:
        # NodeParser re-finds each node's text in its document with str.find from just past the previous node's
        # start, which lands on an earlier copy of a repeated passage; the strategy's offsets are exact.
        exact = {n.node_id: (n.start_char_idx, n.end_char_idx) for n in nodes if isinstance(n, TextNode)}
        nodes = super()._postprocess_parsed_nodes(nodes, parent_doc_map)
        for n in nodes:
            if isinstance(n, TextNode) and n.node_id in exact:
                n.start_char_idx, n.end_char_idx = exact[n.node_id]
        return nodes


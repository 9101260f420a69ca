"""The options several commands share, defined once: the docs argument, strategy and config, store and embedder,
search mode, the probe's questions, and ``--json``."""

from __future__ import annotations

import argparse

from chunkscope.wording import TRUST_TREE_ENV

#: The flag that allows the docs tree's own config (README: "What a docs tree's config may do").
TRUST_FLAG = "--trust-tree-config"
#: The help of ``--config`` wherever it appears.
CONFIG_HELP = "config file (default: chunkscope.toml or pyproject.toml nearest the docs)"


def add_docs_arg(p: argparse.ArgumentParser, optional: bool = False) -> None:
    """DOCS: the folder or file every command reads."""
    if optional:
        p.add_argument("docs", nargs="?", default=".", metavar="DOCS", help="docs folder or Markdown file (default: .)")
    else:
        p.add_argument("docs", metavar="DOCS", help="docs folder or a single Markdown/MDX file")
    # Every command reads the tree's config, so every command takes the allowance (README: "What a docs tree's
    # config may do"); CHUNKSCOPE_TRUST_TREE_CONFIG=1 gives it in CI.
    p.add_argument(TRUST_FLAG, dest="trust_tree_config", action="store_true",
                   help="trust the docs tree's chunkscope.toml: send API keys to the URLs it names and run the "
                        f"code it names (else only URLs and code you name; or set {TRUST_TREE_ENV}=1)")


def add_strategy_args(p: argparse.ArgumentParser, multiple: bool = False, *, strategy_help: str | None = None,
                      param_help: str | None = None, config_help: str = CONFIG_HELP) -> None:
    """``--strategy`` (repeatable when `multiple`), ``--param`` and ``--config``."""
    if multiple:
        p.add_argument("--strategy", "-s", action="append", metavar="NAME",
                       help=strategy_help or "strategy or preset (repeat to compare); default from config, else "
                                             "the preset 'default' (recursive sized to the embedder)")
    else:
        p.add_argument("--strategy", "-s", metavar="NAME",
                       help=strategy_help or "strategy or preset (default from config, else the preset 'default': "
                                             "recursive sized to the embedder)")
    p.add_argument("--param", "-p", action="append", metavar="KEY=VALUE",
                   help=param_help or "override a strategy parameter (repeatable); lists as JSON, e.g. "
                                      "'separators=[\"\\n\\n\", \" \"]'")
    p.add_argument("--config", metavar="FILE", help=config_help)


def add_store_args(p: argparse.ArgumentParser) -> None:
    """The flags every retrieval command shares: where the vectors live and which embedder makes them."""
    p.add_argument("--qdrant-url", metavar="URL",
                   help="a Qdrant server (default: the embedded local store; API key from QDRANT_API_KEY)")
    p.add_argument("--embedder", "--model", dest="embedder", metavar="MODEL",
                   help="all-MiniLM-L6-v2 (default, offline), st:PATH (a local sentence-transformers model) or "
                        "openai:MODEL (an OpenAI-compatible endpoint, see --embed-url); default: [embedder] model")
    p.add_argument("--embed-url", metavar="URL",
                   help="base URL of the openai: endpoint, e.g. http://localhost:11434/v1 for Ollama "
                        "(default: [embedder] url, else https://api.openai.com/v1; key from OPENAI_API_KEY or "
                        "[embedder] api_key_env)")


def add_search_arg(p: argparse.ArgumentParser, several: bool = False) -> None:
    """``--search MODE`` (or several modes, compared side by side, when `several`)."""
    more = ("; several, comma-separated, are compared side by side (also --grid search=dense,hybrid)"
            if several else "")
    p.add_argument("--search", metavar="MODE",
                   help="how questions are matched: dense (the embedder's vectors), keyword (BM25, scored by Qdrant) "
                        f"or hybrid (both, fused by reciprocal rank); default: [query] search, else dense{more}")


def add_rerank_args(p: argparse.ArgumentParser, compare: bool = False) -> None:
    """``--rerank MODEL``, ``--rerank-url URL`` and ``--rerank-depth N``: the rerank stage after search."""
    also = "; the table shows each strategy without and with it" if compare else ""
    p.add_argument("--rerank", metavar="MODEL",
                   help="re-score the search's candidates as a chatbot's reranker would: st:PATH (a local "
                        "sentence-transformers CrossEncoder folder) or http:MODEL (a rerank endpoint, see "
                        f"--rerank-url); default: [rerank] model{also}")
    p.add_argument("--rerank-url", metavar="URL",
                   help="base URL of the http: endpoint (POST URL/rerank, Cohere/Jina/TEI/vLLM shape); key from "
                        "RERANK_API_KEY or [rerank] api_key_env")
    p.add_argument("--rerank-depth", type=int, metavar="N",
                   help="how many search candidates the reranker re-scores (default: [rerank] depth, else 50)")


def add_parent_arg(p: argparse.ArgumentParser, compare: bool = False) -> None:
    """``--parent KIND``: small-to-big, what each hit returns (`chunkscope.retrieval.parents`)."""
    also = "; the table shows each strategy's chunks and their parents side by side" if compare else ""
    p.add_argument("--parent", metavar="KIND",
                   help="return each hit's parent, as a small-to-big bot sends it: section, window:N (N tokens each "
                        "side), page, or none; hits sharing a parent are merged (default: the preset's parent, else "
                        f"[retrieval] parent, else none){also}")


def add_probe_args(p: argparse.ArgumentParser) -> None:
    """Which section headings the label-free probe asks (``probe``, ``sweep --probe``)."""
    p.add_argument("--levels", default="2-4", metavar="A-B", help="heading levels that become questions (default 2-4)")
    p.add_argument("--max-queries", type=int, default=None, metavar="N",
                   help="use N questions spread evenly over the tree (deterministic)")
    p.add_argument("--keep-duplicates", action="store_true",
                   help="also ask headings whose text occurs more than once in the tree (e.g. every 'Summary')")


def add_json_arg(p: argparse.ArgumentParser, what: str = "machine-readable output") -> None:
    """``--json``."""
    p.add_argument("--json", action="store_true", help=what)

"""``chunkscope contexts``: a chat model writes the ``embed_prefix = "llm"`` context of every chunk that has none.

This is the one command that asks the model for contexts. The cost (requests, tokens in, tokens out at most) is
printed before anything is sent; on a terminal the command asks before it goes on, elsewhere it needs ``--yes``.
Every other command and the app read the contexts cached here and say how many chunks still have none: they never
wait on a model, and nothing is spent that the user did not see priced.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from chunkscope.chunking.drivers import chunk_documents
from chunkscope.llm.chat import ChatClient, LlmError
from chunkscope.safe_text import redact_url, visible
from chunkscope.wording import plural
from chunkscope.cli.context import load_context, strategies_from_args
from chunkscope.cli.exits import EXIT_USAGE, Interrupted, documents_exit
from chunkscope.cli.output import confirm_spend
from chunkscope.cli.options import add_docs_arg, add_strategy_args
from chunkscope.cli.progress_bar import graceful_interrupt

if TYPE_CHECKING:
    from chunkscope.chunking.model import ChunkedDoc
    from chunkscope.llm.contextual import Todo


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("contexts", help='have the [llm] chat model write the context of each chunk for '
                                        'embed_prefix = "llm" (contextual retrieval)')
    add_docs_arg(p)
    add_strategy_args(p)
    p.add_argument("--yes", "-y", action="store_true", help="send the requests without asking (needed off a terminal)")
    p.set_defaults(func=cmd_contexts)


def _say(line: str) -> None:
    print(visible(line, oneline=True), file=sys.stderr)


def cmd_contexts(args: argparse.Namespace) -> int:
    # Here, not at the top: `chunkscope --help` and every other command start without the cache's modules.
    from chunkscope.llm.contextual import CachedContexts, ContextWriter, Todo, take_tally, context_key, estimate

    ctx = load_context(args)
    resolved = strategies_from_args(args, ctx.config)[0]
    provider = resolved.strategy.chunk_contexts
    if not resolved.strategy.uses_contexts or not isinstance(provider, CachedContexts):
        _say(f"chunkscope contexts: {resolved.label} does not use embed_prefix = \"llm\": set it for the strategy "
             "in chunkscope.toml (or pass -p embed_prefix=llm)")
        return EXIT_USAGE
    spec = provider.spec
    todo: dict[str, "Todo"] = {}  # by key: a chunk text repeated in a page is asked once
    total = 0
    failed: list[ChunkedDoc] = []  # the documents the strategy could not chunk: said here, and the exit code says so
    for r in chunk_documents(ctx.tree.documents, resolved.strategy):
        if r.error:
            _say(f"{r.doc.path}: chunk-error: {r.error}")
            failed.append(r)
            continue
        total += len(r.chunks)
        known = provider.lookup(r.doc.text, [c.text for c in r.chunks])
        for c, context in zip(r.chunks, known):
            if context is None:
                todo.setdefault(context_key(provider.identity, r.doc.text, c.text),
                                Todo(r.doc.text, c.start, c.end, r.doc.path))
    take_tally()  # what is missing is said here, after the writing
    if not todo:
        if total:  # nothing chunked at all: the failures above are the whole story
            _say(f"all {plural(total, 'chunk')} of {resolved.label} have a context from {spec.name}")
        return documents_exit(ctx.tree, failed)
    from chunkscope.tokens import get_tokenizer

    sent, out = estimate(list(todo.values()), get_tokenizer("cl100k_base").count)
    _say(f"{len(todo):,} of {plural(total, 'chunk')} have no context: {plural(len(todo), 'request')} to {spec.name} "
         f"at {redact_url(spec.url)}, about {sent:,} tokens in and at most {out:,} out (cl100k estimate)")
    if not confirm_spend("contexts", args.yes):
        return EXIT_USAGE
    client = ChatClient(spec)
    writer = ContextWriter(client, provider.cache)
    written = 0
    failure: str | None = None
    try:
        with graceful_interrupt() as token:
            for t in todo.values():
                if token.cancelled:
                    break
                try:
                    writer.write(t)
                except LlmError as exc:
                    # The endpoint is down or refuses: every next request would fail the same way.
                    failure = str(exc)
                    break
                written += 1
                if written % 50 == 0:
                    _say(f"wrote {written}/{len(todo)} contexts")
            stopped = token.cancelled
    finally:
        client.close()
    if failure:
        _say(f"failed: {failure}")
    used = client.usage
    spent = (f"; the endpoint counted {used.prompt_tokens:,} tokens in and {used.completion_tokens:,} out"
             if used.prompt_tokens or used.completion_tokens else "")
    left = len(todo) - written
    _say(f"wrote {plural(written, 'context')} ({left:,} still missing; the next run asks only for those){spent}")
    if stopped:
        raise Interrupted(f"{plural(written, 'context')} written before the stop")
    return EXIT_USAGE if failure else documents_exit(ctx.tree, failed)

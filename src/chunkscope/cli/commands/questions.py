"""``chunkscope questions``: a chat model writes labelled questions for `eval` from the tree's own sections.

The cost (tokens in, tokens out at most, requests) is printed before anything is sent; on a terminal the command
asks before it goes on, elsewhere it needs ``--yes``. Rows go to ``--out`` (or standard output) as JSONL that
``chunkscope eval --queries`` reads unchanged; what was repaired or refused is said on stderr, one line each.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from chunkscope.evaluation.question_gen import MIN_BODY_WORDS, Plan, generate, plan_questions
from chunkscope.llm.chat import ChatClient, ChatSpec
from chunkscope.safe_text import redact_url, visible
from chunkscope.wording import plural
from chunkscope.cli.context import load_context
from chunkscope.cli.exits import EXIT_USAGE, Interrupted, documents_exit
from chunkscope.cli.output import confirm_spend
from chunkscope.cli.options import CONFIG_HELP, add_docs_arg
from chunkscope.cli.progress_bar import graceful_interrupt


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("questions", help="have a chat model write labelled questions for eval from the tree's sections")
    add_docs_arg(p)
    p.add_argument("--llm", metavar="MODEL",
                   help="openai:MODEL, a model behind an OpenAI-compatible /chat/completions endpoint "
                        "(default: [llm] model)")
    p.add_argument("--llm-url", metavar="URL",
                   help="the endpoint's base URL, e.g. http://localhost:11434/v1 for Ollama (default: [llm] url, "
                        "else https://api.openai.com/v1; key from OPENAI_API_KEY or [llm] api_key_env)")
    p.add_argument("-n", type=int, default=20, metavar="N", help="about how many questions to write (default 20)")
    p.add_argument("--per-section", type=int, default=2, metavar="K",
                   help="questions asked of each sampled section (default 2)")
    p.add_argument("--out", "-o", metavar="FILE", help="write the questions here (JSONL; default: standard output)")
    p.add_argument("--yes", "-y", action="store_true", help="send the requests without asking (needed off a terminal)")
    p.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    p.set_defaults(func=cmd_questions)


def _say(line: str) -> None:
    print(visible(line, oneline=True), file=sys.stderr)


def _estimate_line(plan: Plan, spec: ChatSpec) -> str:
    from chunkscope.tokens import get_tokenizer

    count = get_tokenizer("cl100k_base").count
    sent, out = plan.estimate(count)
    return (f"{plural(plan.sections, 'section')} of {plural(plan.eligible, 'section')} with text, in "
            f"{plural(len(plan.requests), 'page')}: {plural(len(plan.requests), 'request')} to {spec.name} at "
            f"{redact_url(spec.url)}, about {sent:,} tokens in and at most {out:,} out (cl100k estimate)")


def cmd_questions(args: argparse.Namespace) -> int:
    if args.n < 1 or args.per_section < 1:
        _say("chunkscope questions: -n and --per-section must be at least 1")
        return EXIT_USAGE
    ctx = load_context(args)
    spec = ctx.config.chat_model(args.llm, args.llm_url)
    if spec is None:
        _say("chunkscope questions: no chat model: give --llm openai:MODEL (and --llm-url for a local server) "
             "or set [llm] model in chunkscope.toml")
        return EXIT_USAGE
    plan = plan_questions(ctx.tree, args.n, args.per_section)
    if not plan.requests:
        _say(f"chunkscope questions: {args.docs}: no section has {plural(MIN_BODY_WORDS, 'word')} of text under its heading "
             "to ask about")
        return EXIT_USAGE
    _say(_estimate_line(plan, spec))
    if not confirm_spend("questions", args.yes):
        return EXIT_USAGE
    client = ChatClient(spec)
    try:
        with graceful_interrupt() as token:
            outcome = generate(ctx.tree, plan, client, model_name=f"openai:{spec.name}",
                               on_page=lambda n, total: _say(f"asked {n}/{total} pages"),
                               should_stop=lambda: token.cancelled)
            stopped = token.cancelled
    finally:
        client.close()
    for line in outcome.failed_pages:
        _say(f"failed: {line}")
    for line in outcome.repaired:
        _say(f"repaired: {line}")
    for line in outcome.refused:
        _say(f"refused: {line}")
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in outcome.rows)
    if args.out:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            _say(f"chunkscope: {args.out}: cannot write the questions: {exc.strerror or exc}")
            return EXIT_USAGE
    else:
        sys.stdout.write(text)
    used = client.usage
    spent = (f"; the endpoint counted {used.prompt_tokens:,} tokens in and {used.completion_tokens:,} out"
             if used.prompt_tokens or used.completion_tokens else "")
    where = f" to {args.out}" if args.out else ""
    _say(f"wrote {plural(len(outcome.rows), 'question')}{where} ({len(outcome.repaired)} repaired, "
         f"{len(outcome.refused)} refused, {plural(len(outcome.failed_pages), 'page')} failed){spent}")
    if stopped:
        raise Interrupted(f"{plural(len(outcome.rows), 'question')} written before the stop")
    if not outcome.rows and outcome.failed_pages:
        return EXIT_USAGE
    return documents_exit(ctx.tree)  # 1 when a file could not be read (said first, by the loader)


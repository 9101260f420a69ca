"""Questions nobody has to write: a chat model reads sections of the tree and writes labelled questions for `eval`.

The plan (`plan_questions`) samples sections evenly over the tree in reading order (the probe's sections with a
body of at least `MIN_BODY_WORDS` words), groups them by page, and makes one request per page, so the cost is known
before anything is sent (`Plan.estimate`: cl100k tokens in, the output cap out). The model is asked for questions
a reader would type, each with the heading of the section that answers it and a sentence copied from that section
as evidence.

Every row is checked before it is kept (`check_row`), because a model's labels are not to be trusted:

- **the heading must exist on the page.** A heading written a little differently (case, spacing, its number, its
  slug) is repaired to the page's own; one that names no heading of the page is refused.
- **the section must answer it:** the evidence, spaces aside, must occur in the named section. Found in another
  section of the page, the row is repaired to that section; found nowhere, it is refused.
- **it must not copy its heading:** a question whose words are the heading's words (and question words) is refused:
  the heading probe already asks those.
- a question asked twice is kept once.

A heading that occurs twice on one page would make ``expect.heading`` point at the first; such rows name the
section by ``expect.anchor`` instead. Each row kept is resolved once more by `eval`'s own reader
(`chunkscope.evaluation.regions.resolve_region`), so the file `eval` reads is the file written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from chunkscope.evaluation.probe import ProbeSection, even_sample, probe_sections
from chunkscope.evaluation.queries import Expect, QueriesError, QueryCase
from chunkscope.evaluation.regions import NUMBER_PREFIX, resolve_region

if TYPE_CHECKING:
    from chunkscope.document.loader import DocsTree

#: Sections with fewer words than this under their heading give no question worth asking.
MIN_BODY_WORDS = 30
#: A section's text is cut to this many characters in the prompt (about 1,000 tokens): enough to ask about, and the
#: cost of a long page stays bounded.
MAX_SECTION_CHARS = 4000
#: Output tokens allowed per question asked (a question, its heading and one sentence of evidence).
OUTPUT_TOKENS_PER_QUESTION = 120
#: The statuses of a refused key: every other page would be refused alike, so the run stops at the first.
KEY_REFUSED = (401, 403)

SYSTEM_PROMPT = (
    "You write test questions for a documentation search engine. Each question is one a reader of these docs "
    "would type into a search box or ask a chatbot, answered by one section below. Do not copy or rephrase the "
    "section heading as the question. Answer with JSON only."
)

_WORD = re.compile(r"\w+")
#: Words a question adds to its heading without asking anything else ("What is ownership?" for "Ownership").
_QUESTION_WORDS = frozenset(
    "a an and are can could define describe do does explain for how i in is it of on or should the this to use "
    "used using what whats when where which who why with you your".split())


class ChatModel(Protocol):
    """What the generator needs of a chat endpoint (`chunkscope.llm.chat.ChatClient`)."""

    def complete(self, system: str, user: str, *, max_tokens: int, temperature: float = 0.0) -> str: ...


@dataclass(frozen=True)
class PageRequest:
    """One request: the sampled sections of one page, and how many questions each should get."""

    path: str
    sections: tuple[ProbeSection, ...]
    per_section: int
    prompt: str

    @property
    def max_tokens(self) -> int:
        return OUTPUT_TOKENS_PER_QUESTION * self.per_section * len(self.sections) + 50


@dataclass
class Plan:
    """What will be asked: the requests, and the sections left out and why."""

    requests: list[PageRequest]
    eligible: int  # sections with a body long enough to ask about
    headings: int  # headings at the sampled levels

    @property
    def sections(self) -> int:
        return sum(len(r.sections) for r in self.requests)

    def estimate(self, count: Callable[[str], int]) -> tuple[int, int]:
        """(input tokens, output tokens at most) of the whole plan; ``count`` counts a text's tokens."""
        sent = sum(count(SYSTEM_PROMPT) + count(r.prompt) for r in self.requests)
        return sent, sum(r.max_tokens for r in self.requests)


@dataclass
class Outcome:
    """What became of the model's rows: kept (some repaired), refused with reasons, pages that failed."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)  # "path:line: what was repaired"
    refused: list[str] = field(default_factory=list)  # "path: why"
    failed_pages: list[str] = field(default_factory=list)  # "path: why"


def own_span(tree: "DocsTree", section: ProbeSection) -> tuple[int, int]:
    """The text a section holds itself: its body up to the next heading of any level (its subsections are
    sections of their own, asked about and credited on their own). Empty when the heading has no text of its own."""
    doc = tree.get(section.path)
    if doc is None:
        return section.start, section.start
    nxt = next((h.start for h in doc.outline.headings if h.start > section.heading_start), len(doc.text))
    end = min(section.end, nxt)
    return (section.start, end) if section.start < end else (section.start, section.start)


def _section_text(tree: "DocsTree", section: ProbeSection) -> str:
    doc = tree.get(section.path)
    start, end = own_span(tree, section)
    body = doc.text[start:end].strip() if doc is not None else ""
    return body if len(body) <= MAX_SECTION_CHARS else body[:MAX_SECTION_CHARS].rsplit(" ", 1)[0] + " …"


def build_prompt(tree: "DocsTree", path: str, sections: Sequence[ProbeSection], per_section: int) -> str:
    """The user message for one page's sections."""
    parts = [
        f"Page: {path}",
        f"Write {per_section} question{'s' if per_section != 1 else ''} for each section below. Each question "
        "must be answered by its section; the evidence is one sentence copied exactly from that section that "
        "answers it.",
        'Reply with JSON: {"questions": [{"heading": "<the section heading exactly as given>", '
        '"question": "...", "evidence": "..."}]}',
    ]
    for s in sections:
        parts.append(f"### Section heading: {s.heading}\n{_section_text(tree, s)}")
    return "\n\n".join(parts)


def plan_questions(tree: "DocsTree", count: int, per_section: int = 2) -> Plan:
    """The requests for about ``count`` questions, ``per_section`` per section, sampled evenly over the tree."""
    if count < 1 or per_section < 1:
        raise ValueError("the number of questions and questions per section must be at least 1")
    probe = probe_sections(tree, unique=False)
    docs = {d.path: d for d in tree.documents}

    def own_words(s: ProbeSection) -> int:
        start, end = own_span(tree, s)
        return len(_WORD.findall(docs[s.path].text[start:end]))

    eligible = [s for s in probe.sections if own_words(s) >= MIN_BODY_WORDS]
    wanted = -(-count // per_section)  # sections to ask, rounded up
    sample = even_sample(eligible, wanted)
    by_page: dict[str, list[ProbeSection]] = {}
    for s in sample:
        by_page.setdefault(s.path, []).append(s)
    requests = [PageRequest(path, tuple(ss), per_section, build_prompt(tree, path, ss, per_section))
                for path, ss in by_page.items()]
    return Plan(requests, len(eligible), probe.headings)


def parse_reply(content: str) -> list[dict[str, Any]]:
    """The question objects of a model's reply: JSON, perhaps inside a code fence or after some words.

    Raises:
        ValueError: no JSON object with a ``questions`` list in it.
    """
    start, end = content.find("{"), content.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("the reply holds no JSON object")
    try:
        data = json.loads(content[start:end + 1])
    except json.JSONDecodeError as exc:
        raise ValueError(f"the reply is not valid JSON ({exc.msg})") from None
    items = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ValueError('the reply has no "questions" list')
    return [q for q in items if isinstance(q, dict)]


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


def _bare(heading: str) -> str:
    return _squash(NUMBER_PREFIX.sub("", heading, count=1)).strip(" #:.")


def copies_heading(question: str, heading: str) -> bool:
    """Whether ``question`` only restates ``heading``: no word of it beyond the heading's and question words."""
    own = {w.casefold() for w in _WORD.findall(NUMBER_PREFIX.sub("", heading, count=1))}
    extra = {w.casefold() for w in _WORD.findall(question)} - own - _QUESTION_WORDS
    return not extra


def _matching(named: str, sections: Sequence[ProbeSection]) -> list[ProbeSection]:
    """The page's sections the model's heading names: exactly, else by the same words, number or slug aside
    (several where the page repeats a heading)."""
    exact = [s for s in sections if s.heading == named]
    if exact:
        return exact
    want = _bare(named)
    return [s for s in sections if _bare(s.heading) == want or s.anchor == named.strip().lstrip("#")]


def _holding(tree: "DocsTree", evidence: str, sections: Sequence[ProbeSection]) -> ProbeSection | None:
    """The section whose own text holds ``evidence`` (spaces and case aside); the first such, None for none."""
    want = _squash(evidence)
    if len(want) < 10:  # a few words are found anywhere and prove nothing
        return None
    doc = tree.get(sections[0].path) if sections else None
    if doc is None:
        return None
    for s in sections:
        start, end = own_span(tree, s)
        if want in _squash(doc.text[start:end]):
            return s
    return None


def check_row(tree: "DocsTree", path: str, item: dict[str, Any], asked: Sequence[ProbeSection],
              page_sections: Sequence[ProbeSection]) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """One row of the model's reply checked: (the row to write or None, what was repaired, why it was refused).

    ``asked`` are the sections the request showed; ``page_sections`` every section of the page (the evidence may
    come from one of them).
    """
    doc = tree.get(path)
    question, named, evidence = item.get("question"), item.get("heading"), item.get("evidence")
    if not isinstance(question, str) or not question.strip():
        return None, None, "a row without a question"
    question = " ".join(question.split())
    if doc is None:
        return None, None, f"{question!r}: the page is gone"
    if not isinstance(named, str) or not named.strip():
        return None, None, f"{question!r}: no heading given"
    named_sections = _matching(named, page_sections)
    if not named_sections:
        return None, None, f"{question!r}: heading {named!r} is not on the page"
    if not isinstance(evidence, str) or not evidence.strip():
        return None, None, f"{question!r}: no evidence from the section"
    # Of the sections so named (a page may repeat "Examples"), the one holding the evidence; else any section.
    holder = _holding(tree, evidence, named_sections) or _holding(tree, evidence, page_sections)
    if holder is None:
        return None, None, f"{question!r}: the evidence is not in the page's text"
    section, repaired = holder, None
    if holder not in named_sections:
        repaired = f"heading {named!r} → {holder.heading!r} (where the evidence is)"
    elif holder.heading != named:
        repaired = f"heading {named!r} → {holder.heading!r}"
    if copies_heading(question, section.heading):
        return None, None, f"{question!r}: only restates its heading {section.heading!r}"
    twins = sum(1 for s in page_sections if _squash(s.heading) == _squash(section.heading))
    expect = ({"path": path, "anchor": section.anchor} if twins > 1
              else {"path": path, "heading": section.heading})
    row = {"query": question, "expect": expect, "evidence": " ".join(evidence.split())}
    # `eval` must read it as written: resolved by eval's own reader, it must be the section meant.
    case = QueryCase(question, Expect(**expect), path, section.line)
    try:
        region = resolve_region(tree, case)
    except QueriesError:
        return None, None, f"{question!r}: eval cannot find {expect}"
    if region.start != section.heading_start:
        return None, None, f"{question!r}: eval would read another section for {expect}"
    return row, repaired, None


def generate(tree: "DocsTree", plan: Plan, model: ChatModel, *, model_name: str,
             on_page: Callable[[int, int], None] | None = None,
             should_stop: Callable[[], bool] | None = None) -> Outcome:
    """Ask ``model`` the plan's requests, one page at a time, and keep the rows that pass `check_row`.

    A page whose request fails or whose reply cannot be read is recorded in ``failed_pages`` and the others go on.
    The caller catches the endpoint's own errors that should end the run (a refused key) by letting
    ``model.complete`` raise: those are not per-page problems.
    """
    from chunkscope.llm.chat import LlmError

    out = Outcome()
    seen: set[str] = set()
    by_page: dict[str, list[ProbeSection]] = {}  # every section of each page, in reading order
    for s in probe_sections(tree, min_level=1, max_level=6, unique=False).sections:
        by_page.setdefault(s.path, []).append(s)
    for n, request in enumerate(plan.requests, 1):
        if should_stop is not None and should_stop():
            break
        try:
            content = model.complete(SYSTEM_PROMPT, request.prompt, max_tokens=request.max_tokens)
            items = parse_reply(content)
        except ValueError as exc:
            out.failed_pages.append(f"{request.path}: {exc}")
            continue
        except LlmError as exc:
            if exc.status in KEY_REFUSED or not exc.reached:
                raise  # every other page would fail the same way
            out.failed_pages.append(f"{request.path}: {exc}")
            continue
        page_sections = by_page.get(request.path, [])
        for item in items:
            row, repaired, refused = check_row(tree, request.path, item, request.sections, page_sections)
            if refused is not None:
                out.refused.append(f"{request.path}: {refused}")
                continue
            assert row is not None
            key = _squash(row["query"])
            if key in seen:
                out.refused.append(f"{request.path}: {row['query']!r}: asked twice")
                continue
            seen.add(key)
            row["id"] = f"gen-{len(out.rows) + 1:03d}"
            row["generated_by"] = model_name
            out.rows.append(row)
            if repaired is not None:
                out.repaired.append(f"{request.path}: {row['id']}: {repaired}")
        if on_page is not None:
            on_page(n, len(plan.requests))
    return out

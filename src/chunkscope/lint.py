"""Lint: the seeds' validation checklists as rules an author can run in CI.

Each rule looks at the chunks a strategy produced for a document, next to the document's parsed structure, and
reports a `Finding` at the line an author should look at: the line where a boundary cuts a block, or the first
line of the offending chunk. The rules, with their default severities, live in `RULES`.

Lint never chunks on its own account when it is handed chunks: `annotate_chunks` works on the chunks
``chunkscope chunk`` (or the TUI) already made, and `lint_tree` chunks the tree once with `chunk_documents`
unless the caller passes the results in. Everything here is headless: no rich, no textual.

Configuration (``[lint]`` in chunkscope.toml)::

    [lint]
    select = ["oversize", "split-fence"]        # only these rules (default: all)
    ignore = ["duplicate"]                      # never these
    severity = { undersize = "error", duplicate = "off" }
    thresholds = { oversize = 400, undersize = 50, embed-truncation = 256 }
    per_path_ignores = { "drafts/*.md" = ["oversize"] }

Inline, in a document: ``<!-- chunkscope: ignore split-fence, oversize -->`` silences those rules (or ``all``)
for the next block; ``<!-- chunkscope: ignore-file duplicate -->`` anywhere silences them for the whole file.
In MDX, ``{/* chunkscope: ignore split-fence */}`` does the same.
"""

from __future__ import annotations

import fnmatch
import re
from bisect import bisect_right
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from .chunk import Chunk, ChunkedDoc, Limits, Strategy, chunk_documents
from .config import ConfigError
from .docs import is_marked_root, load_docs
from .strategies.code_cuts import boundary_lines, code_lines, fence_margin, needed_cuts
from .structure import first_content
from .tokens import DEFAULT_EMBED_MODEL, embed_tokenizer, get_tokenizer

if TYPE_CHECKING:
    from .config import Config
    from .docs import DocsTree, Document
    from .structure import Block, Structure

ERROR, WARNING, OFF = "error", "warning", "off"
SEVERITIES = (ERROR, WARNING, OFF)


@dataclass(frozen=True, slots=True)
class Rule:
    """One lint rule: a stable id, its default severity, what it means and how to fix it."""

    id: str
    severity: str
    summary: str
    hint: str
    #: What ``[lint] thresholds`` sets for this rule, or None when it takes no threshold.
    threshold: str | None = None


#: Every rule, in the order reports list them.
RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        Rule("oversize", ERROR,
             "a chunk is over the strategy's token limit (or the configured budget)",
             "split the section with a subheading, or move a long code block or table into its own section",
             "maximum tokens per chunk, in the strategy's tokenizer"),
        Rule("undersize", WARNING,
             "a chunk is under the strategy's minimum size",
             "merge the short section into its neighbour, or give it enough text to stand on its own",
             "minimum tokens per chunk, in the strategy's tokenizer"),
        Rule("split-fence", ERROR,
             "a chunk boundary falls inside a fenced code block",
             "shorten the code block below the limit, or split it into several blocks with prose between them"),
        Rule("split-table", ERROR,
             "a chunk boundary falls inside a table (the continuation loses the header row)",
             "split the table into smaller tables, each with its own header row"),
        Rule("split-list", WARNING,
             "a chunk boundary falls inside a list that would fit in one chunk",
             "move the list so it starts a section, or shorten the text before it"),
        Rule("split-admonition", WARNING,
             "a chunk boundary falls inside a ::: admonition",
             "shorten the admonition, or move it so it does not straddle a chunk boundary"),
        Rule("split-equation", WARNING,
             "a $$ math block is cut off from the sentence that leads into it or follows it (its explanation)",
             "keep the equation and its explanation together: shorten the text around them or add a subheading"),
        Rule("dangling-heading", WARNING,
             "a chunk ends with a heading whose content is in the next chunk",
             "the heading's section starts too late in the chunk; shorten the text before it"),
        Rule("missing-metadata", WARNING,
             "a chunk lacks a metadata field its strategy requires",
             "add the front matter field or the heading the strategy reads the value from"),
        Rule("embed-truncation", WARNING,
             "a chunk's embed text is longer than the embedding model reads (the tail is invisible to retrieval)",
             "use a smaller chunk size, or an embedding model with a longer max_seq_length",
             "maximum word pieces the embedding model reads, with [CLS] and [SEP]"),
        Rule("duplicate", WARNING,
             "two chunks have the same text",
             "remove the repeated text, or reword one copy so each chunk says something of its own"),
    )
}

#: Kinds a boundary must not fall inside, per rule.
_SPLIT_RULES = {
    "fence": "split-fence",
    "code": "split-fence",
    "table": "split-table",
    "list": "split-list",
    "admonition": "split-admonition",
}
#: The end of a sentence inside a paragraph: terminal punctuation (and closing quotes) before whitespace. An
#: abbreviation ("e.g. x") also matches, which only makes split-equation more lenient, never wrong.
_SENTENCE_END = re.compile(r"[.!?][\"')\]”’]*\s+")
#: Blocks that hold content themselves (not containers): "the chunk's last block" is one of these.
_LEAF_KINDS = frozenset({"heading", "paragraph", "fence", "code", "table", "math", "html", "jsx", "mdx_esm", "hr"})


@dataclass(slots=True)
class Finding:
    """One problem: where (1-based line and column), which rule, how bad, what and how to fix it."""

    path: str
    line: int
    column: int
    rule: str
    severity: str
    message: str
    chunk_index: int | None
    hint: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LintReport:
    """Everything a lint run found, with counts for the summary and the chunks it looked at."""

    findings: list[Finding]
    by_rule: dict[str, int]
    errors: int
    warnings: int
    chunks_by_path: dict[str, list[Chunk]]
    #: Documents the strategy could not chunk (path → reason); they were not linted.
    failed: dict[str, str] = field(default_factory=dict)
    #: Remarks about the documents themselves, e.g. an unknown rule id in an inline comment.
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 when no finding is an error, 1 otherwise (what CI reads)."""
        return 1 if self.errors else 0


# --- settings -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LintSettings:
    """The ``[lint]`` configuration and command-line choices, validated."""

    enabled: frozenset[str]
    severity: dict[str, str]
    thresholds: dict[str, int]
    per_path_ignores: tuple[tuple[str, frozenset[str]], ...]
    embed_model: str = DEFAULT_EMBED_MODEL

    def severity_of(self, rule: str) -> str:
        return self.severity.get(rule, RULES[rule].severity)

    def ignored_for(self, path: str) -> frozenset[str]:
        out: set[str] = set()
        for pattern, rules in self.per_path_ignores:
            if _glob_match(path, pattern):
                out |= rules
        return frozenset(out)


def _glob_match(path: str, pattern: str) -> bool:
    if fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, pattern.rstrip("/") + "/*"):
        return True
    return pattern.startswith("**/") and fnmatch.fnmatchcase(path, pattern[3:])


def _split_ids(items: Iterable[str] | str | None) -> list[str]:
    """``["a,b", "c"]`` or ``"a, b c"`` → ``["a", "b", "c"]``."""
    if items is None:
        return []
    if isinstance(items, str):
        items = [items]
    out: list[str] = []
    for item in items:
        out.extend(x for x in re.split(r"[\s,]+", str(item)) if x)
    return out


class UnknownRule(ConfigError):
    """A rule id lint does not have; ``source`` is where it was named ("select", "ignore", or a config key)."""

    def __init__(self, rule: str, source: str) -> None:
        self.rule, self.source = rule, source
        super().__init__(f"{source}: unknown rule {rule!r} ({self.known()})")

    @staticmethod
    def known() -> str:
        return f"rules: {', '.join(RULES)}"


def _check_ids(ids: Iterable[str], where: str) -> None:
    for rid in ids:
        if rid not in RULES:
            raise UnknownRule(rid, where)


def lint_settings(cfg: "Config | None" = None, select: Iterable[str] | str | None = None,
                  ignore: Iterable[str] | str | None = None) -> LintSettings:
    """Validate ``[lint]`` and the command line's ``--select``/``--ignore`` (which add to the config's ignore).

    Raises:
        ConfigError: an unknown rule id, severity or threshold, or a value of the wrong type; one line naming
            the file and key.
    """
    raw = dict(cfg.lint) if cfg is not None else {}
    where = f"{cfg.source}: [lint]" if cfg is not None and cfg.source else "[lint]"

    def id_list(key: str) -> list[str] | None:
        if key not in raw:
            return None
        v = raw[key]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise ConfigError(f"{where} {key} must be a list of rule ids")
        _check_ids(v, f"{where} {key}")
        return list(v)

    def table(key: str) -> dict[str, Any]:
        v = raw.get(key, {})
        if not isinstance(v, dict):
            raise ConfigError(f"{where} {key} must be a table")
        return v

    cfg_select = id_list("select")
    cfg_ignore = id_list("ignore") or []
    cli_select = _split_ids(select)
    cli_ignore = _split_ids(ignore)
    _check_ids(cli_select, "select")
    _check_ids(cli_ignore, "ignore")

    severity: dict[str, str] = {}
    for rid, sev in table("severity").items():
        _check_ids([rid], f"{where} severity")
        if sev not in SEVERITIES:
            raise ConfigError(f"{where} severity.{rid} must be one of {', '.join(SEVERITIES)}, got {sev!r}")
        severity[rid] = sev

    thresholds: dict[str, int] = {}
    for rid, value in table("thresholds").items():
        _check_ids([rid], f"{where} thresholds")
        if RULES[rid].threshold is None:
            takes = ", ".join(r.id for r in RULES.values() if r.threshold)
            raise ConfigError(f"{where} thresholds.{rid}: this rule takes no threshold (rules that do: {takes})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0 or int(value) != value:
            raise ConfigError(f"{where} thresholds.{rid} must be a positive whole number, got {value!r}")
        thresholds[rid] = int(value)

    per_path: list[tuple[str, frozenset[str]]] = []
    for pattern, rules in table("per_path_ignores").items():
        if isinstance(rules, str):
            rules = [rules]
        if not isinstance(rules, list) or not all(isinstance(x, str) for x in rules):
            raise ConfigError(f"{where} per_path_ignores.{pattern!r} must be a list of rule ids")
        ids = set(rules)
        if "all" in ids:
            ids = set(RULES)
        _check_ids(ids, f"{where} per_path_ignores.{pattern!r}")
        per_path.append((pattern, frozenset(ids)))

    chosen = cli_select or cfg_select or list(RULES)
    enabled = {r for r in chosen if r not in cfg_ignore and r not in cli_ignore and severity.get(r) != OFF}
    model = cfg.embed_model if cfg is not None else DEFAULT_EMBED_MODEL
    return LintSettings(frozenset(enabled), severity, thresholds, tuple(per_path), model)


# --- inline directives ----------------------------------------------------------------------------------------

_DIRECTIVE = re.compile(
    r"(?:<!--|\{/\*)\s*chunkscope:\s*(ignore-file|ignore)\b(.*?)\s*(?:-->|\*/\})", re.S
)
#: Anchored by ``match(text, start, end)``: the block is one comment and nothing else.
_COMMENT_ONLY = re.compile(r"(?:(?:<!--(?:(?!-->).)*-->|\{/\*(?:(?!\*/\}).)*\*/\})\s*)+\Z", re.S)


def _is_comment(text: str, b: "Block") -> bool:
    """A block that is nothing but an HTML (or MDX) comment: invisible to a reader, skipped by the rules."""
    if b.kind not in ("html", "paragraph", "jsx") or not text.startswith(("<!--", "{/*"), b.start):
        return False
    return _COMMENT_ONLY.match(text, b.start, b.end) is not None


@dataclass
class _Directives:
    """What a document's inline comments silence: rule ids for the whole file, and per line range."""

    file: frozenset[str] = frozenset()
    ranges: list[tuple[int, int, frozenset[str]]] = field(default_factory=list)
    unknown: list[tuple[int, str]] = field(default_factory=list)

    def silences(self, rule: str, line: int) -> bool:
        if rule in self.file:
            return True
        return any(a <= line <= b and rule in ids for a, b, ids in self.ranges)


def _directives(doc: "Document") -> _Directives:
    text = doc.text
    out = _Directives()
    if "chunkscope:" not in text:
        return out  # the common case, at C speed
    st = doc.structure
    code = [(b.start, b.end) for b in st.blocks if b.kind in ("fence", "code")]
    blocks = st.blocks
    starts = [b.start for b in blocks]
    file_ids: set[str] = set()
    for m in _DIRECTIVE.finditer(text):
        if any(s <= m.start() < e for s, e in code):
            continue  # an example of the syntax inside a code block, not a directive
        line = st.line_of(m.start())
        ids: set[str] = set()
        for rid in _split_ids(m.group(2)):
            if rid == "all":
                ids |= set(RULES)
            elif rid in RULES:
                ids.add(rid)
            else:
                out.unknown.append((line, rid))
        if m.group(1) == "ignore-file":
            file_ids |= ids
            continue
        # The next block after the comment, skipping other comments (several directives may stack up).
        i = bisect_right(starts, m.end() - 1)
        while i < len(blocks) and _is_comment(text, blocks[i]):
            i += 1
        if i < len(blocks):
            b = blocks[i]
            out.ranges.append((b.start_line, b.end_line, frozenset(ids)))
    out.file = frozenset(file_ids)
    return out


# --- the document under lint ----------------------------------------------------------------------------------


class _DocLint:
    """One document's chunks next to its structure, with the lookups the rules share."""

    def __init__(self, doc: "Document", chunks: Sequence[Chunk], strategy: Strategy, settings: LintSettings) -> None:
        self.doc = doc
        self.text = doc.text
        # Line numbers come from the outline (the same line table as the parse); the parse itself is made only
        # when a rule that reads blocks runs, so `--select` without them lints a size-only strategy's chunks
        # without parsing the Markdown.
        self.lines = doc.cache.get("structure") or doc.outline
        self.chunks = chunks
        self.strategy = strategy
        self.settings = settings
        self.limits: Limits = strategy.limits()
        self.starts = [c.start for c in chunks]
        # Prefix maxima of chunk ends (and which chunk reaches that far): "does any chunk starting at or before
        # x reach y" in one bisect, for any overlap pattern.
        self.reach: list[int] = []
        self.reach_idx: list[int] = []
        best, best_i = -1, -1
        for i, c in enumerate(chunks):
            if c.end > best:
                best, best_i = c.end, i
            self.reach.append(best)
            self.reach_idx.append(best_i)
        self._counter = None
        self._budget_for: Callable[[Chunk], Any] | None = getattr(strategy, "budget_for", None)

    # -- helpers

    @property
    def counter(self):
        """Exact slice counts in the tokenizer the limits are stated in."""
        if self._counter is None:
            self._counter = get_tokenizer(self.limits.tokenizer).counter(self.doc)
        return self._counter

    def tokens_of(self, c: Chunk) -> int:
        if self.limits.tokenizer == self.strategy.length_tokenizer:
            return c.tokens
        return self.counter.count(c.start, c.end)

    def budget(self, c: Chunk) -> int | None:
        """The most tokens chunk ``c`` may hold: the configured budget, else the strategy's own."""
        if "oversize" in self.settings.thresholds:
            return self.settings.thresholds["oversize"]
        if self._budget_for is not None:
            b = self._budget_for(c)
            if b is not None:
                return int(b)
        return self.limits.max

    def first_content(self, start: int, end: int) -> int:
        return first_content(self.text, start, end)

    def trimmed(self, start: int, end: int) -> tuple[int, int]:
        text = self.text
        while end > start and text[end - 1].isspace():
            end -= 1
        return start, end

    @property
    def st(self) -> "Structure":
        """The document's block structure (parsed on first use)."""
        return self.doc.structure

    def position(self, offset: int) -> tuple[int, int]:
        line = self.lines.line_of(offset)
        return line, offset - self.lines.line_starts[line - 1] + 1

    def cut_inside(self, start: int, end: int) -> tuple[int, int] | None:
        """Where ``[start, end)`` is split between chunks: (boundary offset, list position of the chunk ending there).

        None when some chunk holds the whole range (with overlapping chunks, one whole copy is enough) or when
        no chunk reaches into it. The boundary is the end of the farthest-reaching chunk that holds ``start``:
        every split range has one, strictly inside it.
        """
        i = bisect_right(self.starts, start) - 1
        if i < 0:
            return None
        reach = self.reach[i]
        if reach >= end or reach <= start:
            return None
        return reach, self.reach_idx[i]

    def finding(self, rule: str, offset: int, message: str, chunk_index: int | None) -> Finding:
        line, col = self.position(offset)
        r = RULES[rule]
        return Finding(self.doc.path, line, col, rule, self.settings.severity_of(rule), message, chunk_index, r.hint)

    def chunk_finding(self, rule: str, c: Chunk, message: str) -> Finding:
        return self.finding(rule, self.first_content(c.start, c.end), message, c.index)

    # -- rules

    def units(self, n: int) -> str:
        """``"57 words"`` or ``"612 cl100k_base tokens"``: counts in the unit the limits are stated in."""
        tok = self.limits.tokenizer
        return f"{n} words" if tok == "words" else f"{n} {tok} tokens"

    def sizes(self, enabled: frozenset[str]) -> list[Finding]:
        out: list[Finding] = []
        minimum = self.settings.thresholds.get("undersize", self.limits.min)
        last = len(self.chunks) - 1
        for pos, c in enumerate(self.chunks):
            if not c.text.strip():
                continue
            n = None
            if "oversize" in enabled:
                cap = self.budget(c)
                if cap is not None:
                    n = self.tokens_of(c)
                    if n > cap:
                        out.append(self.chunk_finding(
                            "oversize", c, f"chunk {c.index} is {self.units(n)}, over the limit of {cap} by {n - cap}"))
            if "undersize" in enabled and minimum is not None:
                if pos == last and self.limits.last_may_be_short:
                    continue
                n = self.tokens_of(c) if n is None else n
                if n < minimum:
                    out.append(self.chunk_finding(
                        "undersize", c, f"chunk {c.index} is {self.units(n)}, under the minimum of {minimum}"))
        return out

    def splits(self, enabled: frozenset[str]) -> list[Finding]:
        """split-fence, split-table, split-list, split-admonition: one pass over the blocks."""
        out: list[Finding] = []
        seen: set[tuple[str, int]] = set()  # nested blocks cut by the same boundary are reported once
        for b in self.st.blocks:
            rule = _SPLIT_RULES.get(b.kind)
            if rule is None or rule not in enabled:
                continue
            bs, be = self.trimmed(b.start, b.end)
            cut = self.cut_inside(bs, be)
            if cut is None:
                continue
            boundary, pos = cut
            c = self.chunks[pos]
            ci = c.index
            at = self.first_content(boundary, be)
            key = (rule, self.lines.line_of(at))
            if key in seen:
                continue
            lines = f"lines {b.start_line}-{b.end_line}"
            if rule == "split-list":
                cap = self.budget(c)
                n = self.counter.count(bs, be)
                if cap is not None and n > cap:
                    continue  # a list longer than a chunk has to be split; the seed allows it at item boundaries
                fits = f" although it fits in one chunk ({self.units(n)}"
                msg = f"chunk {ci} ends inside the list at {lines},{fits}" + (f", limit {cap})" if cap else ")")
            elif rule == "split-fence":
                fence = self._fence_finding(b, bs, be, c)
                if fence is not None:
                    seen.add(key)
                    out.append(fence)
                    continue
                what = f"the {b.language} code block" if b.language else "the code block"
                msg = f"chunk {ci} ends inside {what} at {lines}; the rest continues in the next chunk"
                msg += self._size_note(c, bs, be)
            elif rule == "split-table":
                msg = (f"chunk {ci} ends inside the table at {lines}: the rows from line {self.lines.line_of(at)} on "
                       f"lose the header row" + self._size_note(c, bs, be))
            else:
                kind = b.info.split(None, 1)[0] if b.info else ""
                msg = f"chunk {ci} ends inside the :::{kind} admonition at {lines}"
            seen.add(key)
            out.append(self.finding(rule, at, msg, ci))
        return out

    def _fence_finding(self, b: "Block", bs: int, be: int, c: Chunk) -> Finding | None:
        """split-fence for a code block over the limit, which seed 000 asks to split "by function/class".

        Cut only where the rule allows (`code_cuts.needed_cuts`: between top-level definitions, between the
        methods of a class that is itself over the limit; at a definition's first line, or its decorator or
        comment), the block is reported as a warning that names every cut; one cut inside a body, or inside a
        class that fits whole, makes it an error, reported at that cut. None for a block that fits (any cut of it
        is an error, reported as before). A severity set in the configuration applies to both.
        """
        cap = self.budget(c)
        n = self.counter.count(bs, be)
        if cap is None or n <= cap:
            return None
        cuts = self._fence_cuts(bs, be)
        if not cuts:
            return None
        code = code_lines(self.text, self.lines.line_starts, bs, be, fence_margin(self.lines.line_starts, b.start))
        # A cut one level in (between methods) is what the seed asks only when the class around it is over the
        # limit too: the same recursion as the strategy's, counted in the limit's tokenizer.
        allowed = needed_cuts(code, be, lambda s, e: self.counter.count(*self._trim_both(s, e)) <= cap)
        line_start = self.lines.line_starts
        mid = [(p, ci) for p, ci in cuts if line_start[self.lines.line_of(p) - 1] not in allowed]
        what = f"the {b.language} code block" if b.language else "the code block"
        size = f"the block alone is {self.units(n)}, over the limit of {cap}"
        if mid:
            at, ci = mid[0]
            where = (", inside a definition that fits in one chunk"
                     if line_start[self.lines.line_of(at) - 1] in boundary_lines(code) else
                     ", not at a definition boundary")
            msg = (f"chunk {ci} ends inside {what} at lines {b.start_line}-{b.end_line} at line "
                   f"{self.lines.line_of(at)}{where} ({size}; cut it between functions or classes instead)")
            return self.finding("split-fence", at, msg, ci)
        at, ci = cuts[0]
        where = sorted({self.lines.line_of(p) for p, _ in cuts})
        before = f"line {where[0]}" if len(where) == 1 else f"lines {', '.join(map(str, where))}"
        msg = (f"chunk {ci} ends inside {what} at lines {b.start_line}-{b.end_line}, between definitions: {size}, "
               f"and is split before {before}")
        f = self.finding("split-fence", at, msg, ci)
        if "split-fence" not in self.settings.severity:
            f.severity = WARNING  # what the seed prescribes: still shown, so the author knows it was split
        return f

    def _trim_both(self, start: int, end: int) -> tuple[int, int]:
        return self.first_content(start, end), self.trimmed(start, end)[1]

    def _fence_cuts(self, bs: int, be: int) -> list[tuple[int, int]]:
        """Every place a chunk starts or ends inside ``[bs, be)`` with code on both sides: (the first character
        after the cut, the index of the chunk holding the code before it), in order."""
        text = self.text
        out: dict[int, int] = {}
        prev: Chunk | None = None
        for c in self.chunks:
            if bs < c.start < be and text[bs:c.start].strip() and prev is not None:
                out.setdefault(c.start, prev.index)
            if bs < c.end < be and text[c.end:be].strip():
                out.setdefault(self.first_content(c.end, be), c.index)
            prev = c
        return sorted(out.items())

    def _size_note(self, c: Chunk, bs: int, be: int) -> str:
        cap = self.budget(c)
        if cap is None:
            return ""
        n = self.counter.count(bs, be)
        return f" (the block alone is {self.units(n)}, over the limit of {cap})" if n > cap else ""

    def equations(self) -> list[Finding]:
        """split-equation: a boundary falls between a $$ block and the paragraph right before or after it (or
        inside the block), and no overlapping chunk holds both sides."""
        out: list[Finding] = []
        blocks = self.st.blocks
        text = self.text
        for i, m in enumerate(blocks):
            if m.kind != "math":
                continue
            ms, me = self.trimmed(m.start, m.end)
            for step in (-1, 1):
                j = i + step
                # The neighbour at the same depth, skipping comments and (going back) the previous sibling's
                # children.
                while 0 <= j < len(blocks) and (blocks[j].depth > m.depth or _is_comment(text, blocks[j])):
                    j += step
                if not (0 <= j < len(blocks)) or blocks[j].depth != m.depth or blocks[j].kind != "paragraph":
                    continue
                p = blocks[j]
                ps, pe = self.trimmed(p.start, p.end)
                # What must share a chunk with the equation is the sentence next to it: the one that leads into
                # it, or the "where x is ..." after it. A sentence splitter cutting elsewhere in the paragraph
                # leaves the explanation with its equation.
                if step < 0:
                    lo, hi = self._last_sentence_start(ps, pe), me
                    part = "sentence that leads into it"
                else:
                    lo, hi = ms, self._first_sentence_end(ps, pe)
                    part = "sentence that follows it"
                cut = self.cut_inside(lo, hi)
                if cut is None:
                    continue
                out.append(self.finding(
                    "split-equation", ms,
                    f"the equation at lines {m.start_line}-{m.end_line} is not in one chunk with the {part} "
                    f"(line {self.lines.line_of(lo if step < 0 else ps)})", self.chunks[cut[1]].index))
                break  # one finding per equation
        return out

    def _last_sentence_start(self, ps: int, pe: int) -> int:
        last = None
        for last in _SENTENCE_END.finditer(self.text, ps, pe):
            pass
        return last.end() if last is not None else ps

    def _first_sentence_end(self, ps: int, pe: int) -> int:
        m = _SENTENCE_END.search(self.text, ps, pe)
        return m.start() + 1 if m is not None else pe

    def dangling_headings(self) -> list[Finding]:
        out: list[Finding] = []
        text = self.text
        leaves = [b for b in self.st.blocks if b.kind in _LEAF_KINDS and not _is_comment(text, b)]
        leaf_starts = [b.start for b in leaves]
        n = len(self.chunks)
        for pos, c in enumerate(self.chunks):
            if pos == n - 1 or self.chunks[pos + 1].end <= c.end:
                continue  # nothing of the document comes after this chunk
            i = bisect_right(leaf_starts, c.end - 1) - 1
            if i < 0:
                continue
            b = leaves[i]
            if b.kind == "heading" and b.start >= c.start and self.trimmed(b.start, b.end)[1] <= c.end:
                out.append(self.finding(
                    "dangling-heading", b.start,
                    f"chunk {c.index} ends with the heading {b.text!r}; its content starts in chunk {c.index + 1}",
                    c.index))
        return out

    def metadata(self) -> list[Finding]:
        out: list[Finding] = []
        required = tuple(getattr(self.strategy, "required_metadata", ()) or ())
        if not required:
            return out
        for c in self.chunks:
            # An empty url_anchor is the page itself (content under the H1, which has no id), not a gap.
            missing = [k for k in required if _empty(c.metadata.get(k)) and not (k == "url_anchor" and c.metadata.get(k) == "")]
            if missing:
                names = ", ".join(missing)
                out.append(self.chunk_finding(
                    "missing-metadata", c, f"chunk {c.index} has no {names} metadata (required by {self.strategy.name or 'the strategy'})"))
        return out

    def truncation(self, embed: "_EmbedCheck") -> list[Finding]:
        out: list[Finding] = []
        for c in self.chunks:
            hit = embed.check(c)
            if hit is None:
                continue
            pieces, off = hit
            msg = (f"chunk {c.index}'s embed text is {pieces} word pieces; {embed.model} reads {embed.limit} "
                   f"(with [CLS]/[SEP])")
            where = self._doc_offset(c, off)
            if where is not None:
                lost = max(0.0, min(1.0, (c.end - where) / max(1, c.end - c.start)))
                msg += f", so the text from line {self.lines.line_of(where)} on ({lost:.0%} of the chunk) is not embedded"
            else:
                msg += ", so the end of its embed text is not embedded"
            out.append(self.chunk_finding("embed-truncation", c, msg))
        return out

    def _doc_offset(self, c: Chunk, off: int) -> int | None:
        """Map an offset in the chunk's embed text back to the document (None when it lies in added text)."""
        if c.embed_text_override is None:
            return c.start + off
        p = c.embed_text_override.find(c.text)
        if p < 0 or off < p:
            return None
        return c.start + min(off - p, len(c.text))


def _empty(v: Any) -> bool:
    return v is None or (isinstance(v, (str, list, tuple, dict, set)) and len(v) == 0) or (isinstance(v, str) and not v.strip())


# --- embed truncation -----------------------------------------------------------------------------------------


class _EmbedCheck:
    """Word-piece counts of chunks' embed texts against the embedding model's ``max_seq_length``.

    Counting every chunk with the model's tokenizer would cost as much as chunking the tree; the word-piece
    tokenizer counts by cached runs (see `WordPieceTokenizer.count_batch`) and chunks that certainly fit are
    skipped (`WordPieceTokenizer.may_exceed`), which keeps lint within 1.5x a chunking run.
    """

    def __init__(self, model: str, limit: int | None = None) -> None:
        self.model = model
        self.tok = embed_tokenizer(model)
        self.limit = limit or self.tok.max_seq_length

    def count(self, chunks: Iterable[Chunk]) -> None:
        """Fill ``embed_tokens`` (exactly what `count_embed_tokens` would) of chunks that could be truncated."""
        todo = [c for c in chunks if c.embed_tokens is None and self.tok.may_exceed(c.embed_text, self.limit)]
        if todo:
            for c, n in zip(todo, self.tok.count_batch([c.embed_text for c in todo])):
                c.embed_tokens = n

    def check(self, c: Chunk) -> tuple[int, int] | None:
        """(pieces, char offset in the embed text where reading stops) for a truncated chunk, else None."""
        n = c.embed_tokens
        if n is None or n <= self.limit:
            return None
        return n, self.tok.truncation_offset(c.embed_text, self.limit)


# --- duplicates -----------------------------------------------------------------------------------------------


class _Duplicates:
    """First occurrence of every chunk text (hash lookups), across one document or a whole tree."""

    def __init__(self) -> None:
        self.first: dict[str, tuple[str, int, int]] = {}

    def earlier(self, doc: "Document", c: Chunk) -> tuple[str, int, int] | None:
        """(path, line, index) of the first chunk with ``c``'s text; None when ``c`` is that first (now kept)."""
        key = c.text.strip()
        if not key:
            return None
        prev = self.first.get(key)
        if prev is None:
            self.first[key] = (doc.path, doc.line_of(first_content(doc.text, c.start, c.end)), c.index)
        return prev

    def check(self, dl: _DocLint, display: Callable[[str], str]) -> list[Finding]:
        out: list[Finding] = []
        for c in dl.chunks:
            prev = self.earlier(dl.doc, c)
            if prev is not None:
                path, line, idx = prev
                out.append(dl.chunk_finding(
                    "duplicate", c, f"chunk {c.index} has the same text as chunk {idx} at {display(path)}:{line}"))
        return out


def _remember_earlier_pages(dups: _Duplicates, tree: "DocsTree", strategy: Strategy, cfg: "Config | None") -> None:
    """A file linted on its own is judged as in its tree: the chunks of the pages read before it are the first
    occurrences, so `duplicate` names the same earlier chunk that a run over the whole tree names."""
    loaded = {d.path for d in tree.documents}
    full = load_docs(tree.root, ignore=cfg.ignore if cfg is not None else (),
                     **({"max_bytes": cfg.max_file_bytes} if cfg is not None else {}))
    first = next((i for i, d in enumerate(full.documents) if d.path in loaded), None)
    if first is None:  # the file is not a page of the tree as read now (ignored, or the tree was built by hand)
        return
    for r in chunk_documents(full.documents[:first], strategy):
        for c in r.chunks:
            dups.earlier(r.doc, c)


# --- running the rules ----------------------------------------------------------------------------------------


def _strategy_of(x: Any) -> Strategy:
    """A `Strategy` from a strategy or a `config.ResolvedStrategy`."""
    return x.strategy if not isinstance(x, Strategy) and hasattr(x, "strategy") else x


def _lint_document(doc: "Document", chunks: Sequence[Chunk], strategy: Strategy, settings: LintSettings,
                   embed: _EmbedCheck | None, dups: _Duplicates | None, display: Callable[[str], str],
                   notes: list[str] | None = None) -> list[Finding]:
    """Run every enabled rule on one document's chunks, drop what is silenced, and mark the chunks."""
    enabled = settings.enabled - settings.ignored_for(doc.path)
    if not chunks or not enabled:
        return []
    dl = _DocLint(doc, chunks, strategy, settings)
    directives = _directives(doc)
    if notes is not None:
        for line, rid in directives.unknown:
            notes.append(f"{display(doc.path)}:{line}: unknown rule {rid!r} in a chunkscope comment (rules: {', '.join(RULES)})")
    enabled = enabled - directives.file
    found: list[Finding] = []
    if enabled & {"oversize", "undersize"}:
        found += dl.sizes(enabled)
    if enabled & set(_SPLIT_RULES.values()):
        found += dl.splits(enabled)
    if "split-equation" in enabled:
        found += dl.equations()
    if "dangling-heading" in enabled:
        found += dl.dangling_headings()
    if "missing-metadata" in enabled:
        found += dl.metadata()
    if "embed-truncation" in enabled and embed is not None:
        found += dl.truncation(embed)
    if "duplicate" in enabled and dups is not None:
        found += dups.check(dl, display)
    if directives.ranges:
        found = [f for f in found if not directives.silences(f.rule, f.line)]
    by_index = {c.index: c for c in chunks}
    for f in found:
        c = by_index.get(f.chunk_index) if f.chunk_index is not None else None
        if c is not None and f.rule not in c.warnings:
            c.warnings.append(f.rule)
        f.path = display(f.path)
    found.sort(key=lambda f: (f.line, f.column, list(RULES).index(f.rule)))
    return found


def annotate_chunks(doc: "Document", chunks: Sequence[Chunk], strategy: Any, cfg: "Config | None" = None) -> list[Finding]:
    """Lint one document's chunks and add each finding's rule id to its chunk's ``warnings`` (once).

    Duplicates are looked for within the document only (`lint_tree` looks across the tree).
    """
    strategy = _strategy_of(strategy)
    settings = lint_settings(cfg)
    embed = None
    if "embed-truncation" in settings.enabled:
        embed = _EmbedCheck(settings.embed_model, settings.thresholds.get("embed-truncation"))
        embed.count(chunks)
    return _lint_document(doc, chunks, strategy, settings, embed, _Duplicates(), lambda p: p)


class LintCancelled(Exception):
    """`lint_tree` stopped because its ``should_stop`` said so (a newer request made this one stale)."""


def lint_tree(tree: "DocsTree", strategy: Any, cfg: "Config | None" = None, select: Iterable[str] | str | None = None,
              ignore: Iterable[str] | str | None = None, *, results: Sequence[ChunkedDoc] | None = None,
              display: Callable[[str], str] | None = None, should_stop: Callable[[], bool] | None = None) -> LintReport:
    """Lint every document of a tree with one strategy (a `Strategy` or a `config.ResolvedStrategy`).

    Args:
        results: chunks already made for this tree and strategy (e.g. by ``cli.cmd_core.chunk_tree``); when
            omitted the tree is chunked here, once.
        display: maps a document's path (relative to the docs root) to the path findings should show.
        should_stop: polled between documents; when it returns True the run ends with `LintCancelled`.

    Raises:
        ConfigError: bad ``[lint]`` settings or an unknown rule in ``select``/``ignore``.
        LintCancelled: ``should_stop`` returned True.
    """
    strat = _strategy_of(strategy)
    settings = lint_settings(cfg, select, ignore)
    show = display or (lambda p: p)
    if results is None:
        results = chunk_documents(tree.documents, strat)
    embed = None
    if "embed-truncation" in settings.enabled:
        embed = _EmbedCheck(settings.embed_model, settings.thresholds.get("embed-truncation"))
        embed.count(c for r in results if r.error is None and "embed-truncation" not in settings.ignored_for(r.doc.path) for c in r.chunks)
    dups = _Duplicates()
    # Only a marked docs root is a tree of pages; a file's folder taken as its root may hold unrelated pages.
    if tree.partial and "duplicate" in settings.enabled and is_marked_root(Path(tree.root)):
        _remember_earlier_pages(dups, tree, strat, cfg)
    findings: list[Finding] = []
    notes: list[str] = []
    failed: dict[str, str] = {}
    chunks_by_path: dict[str, list[Chunk]] = {}
    for r in results:
        if should_stop is not None and should_stop():
            raise LintCancelled("lint stopped")
        chunks_by_path[r.doc.path] = r.chunks
        if r.error:
            failed[r.doc.path] = r.error
            continue
        findings += _lint_document(r.doc, r.chunks, strat, settings, embed, dups, show, notes)
    by_rule = {rid: 0 for rid in RULES}
    for f in findings:
        by_rule[f.rule] += 1
    by_rule = {k: v for k, v in by_rule.items() if v}
    errors = sum(1 for f in findings if f.severity == ERROR)
    return LintReport(findings, by_rule, errors, len(findings) - errors, chunks_by_path, failed, notes)

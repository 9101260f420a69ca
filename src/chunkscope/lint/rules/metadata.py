"""missing-metadata: a chunk without a metadata field its strategy says every chunk carries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chunkscope.lint.findings import WARNING
from chunkscope.lint.rule import Rule

if TYPE_CHECKING:
    from chunkscope.lint.context import LintContext
    from chunkscope.lint.findings import Finding


def _empty(v: Any) -> bool:
    """No value: None, an empty collection, or a string of whitespace."""
    if isinstance(v, str):
        return not v.strip()
    return v is None or (isinstance(v, (list, tuple, dict, set)) and len(v) == 0)


class MissingMetadata(Rule):
    id = "missing-metadata"
    severity = WARNING
    summary = "a chunk lacks a metadata field its strategy requires"
    hint = "add the front matter field or the heading the strategy reads the value from"

    def check(self, ctx: LintContext) -> list[Finding]:
        out: list[Finding] = []
        required = tuple(getattr(ctx.strategy, "required_metadata", ()) or ())
        if not required:
            return out
        name = ctx.strategy.name or "the strategy"
        for c in ctx.chunks:
            # An empty url_anchor is the page itself (content under the H1, which has no id), not a gap.
            missing = [k for k in required
                       if _empty(c.metadata.get(k)) and not (k == "url_anchor" and c.metadata.get(k) == "")]
            if missing:
                out.append(ctx.chunk_finding(
                    self, c, f"chunk {c.index} has no {', '.join(missing)} metadata (required by {name})"))
        return out

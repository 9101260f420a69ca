"""Text from documents made safe for a terminal: `json_line` escapes what json leaves raw and terminals obey."""

from __future__ import annotations

import json

from hypothesis import given, strategies as st

from chunkscope.safe_text import json_line

#: What a terminal obeys that ``json.dumps(ensure_ascii=False)`` leaves raw: C1 controls and bidi overrides.
OBEYED = [*map(chr, range(0x80, 0xA0)), *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))]


@given(st.text(alphabet=st.one_of(st.sampled_from(OBEYED), st.characters()), max_size=60))
def test_json_line_escapes_every_obeyed_character_and_reads_back_the_same(text: str) -> None:
    line = json_line({"text": text})
    assert not any(c in line for c in OBEYED)
    assert json.loads(line) == {"text": text}
    # Nothing else is escaped: the line is json's own apart from those characters.
    assert line == "".join(f"\\u{ord(c):04x}" if c in OBEYED else c
                           for c in json.dumps({"text": text}, ensure_ascii=False))

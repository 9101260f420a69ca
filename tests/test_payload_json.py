"""Payloads are JSON as stored: a chunk's metadata and the retriever's additions come out as a JSON round-trip
would give them (tuples as lists, other keys and objects as text), and never share lists or dicts with the chunk."""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

from chunkscope.chunking.model import Chunk
from chunkscope.retrieval.payload import META_KEY, META_KEYS_KEY, chunk_payload


def _chunk(metadata: dict[Any, Any]) -> Chunk:
    return Chunk(path="a.md", index=0, start=0, end=5, start_line=1, end_line=1, text="hello", tokens=1,
                 heading_path=["A"], metadata=metadata)


def _round_trip(value: object) -> object:
    return json.loads(json.dumps(value, default=str))


def test_metadata_is_stored_as_json_gives_it() -> None:
    odd: dict[Any, Any] = {"span": (1, 2), 3: "int key", "where": PurePosixPath("x/y.md"), "nested": [{"t": (4,)}], "f": 1.5}
    plain: dict[Any, Any] = {"section": "2.1", "n": 3, "ok": True, "none": None, "tags": ["a", {"b": [1, 2.5]}]}
    for meta in (odd, plain):
        payload = chunk_payload(_chunk(meta), {"citation": "A › B", "url": ("/a", "#b")})
        assert payload[META_KEY] == _round_trip(meta)
        assert json.dumps(payload[META_KEY]) == json.dumps(_round_trip(meta))  # key order and types alike
        assert payload[META_KEYS_KEY] == sorted(str(k) for k in meta)
        assert payload["citation"] == "A › B" and payload["url"] == ["/a", "#b"]


def test_payload_shares_nothing_with_the_chunk() -> None:
    meta: dict[str, object] = {"tags": ["a"], "inner": {"k": ["v"]}}
    chunk = _chunk(meta)
    payload = chunk_payload(chunk)
    payload[META_KEY]["tags"].append("b")
    payload[META_KEY]["inner"]["k"].append("w")
    assert chunk.metadata == {"tags": ["a"], "inner": {"k": ["v"]}}

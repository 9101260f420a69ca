"""Names and ids in the vector store: the per-tree workspace, collection names, owners, point ids, signatures.

Point ids are uuid5 of (owning tree, doc path, start, end, sha256(text)), so re-indexing overwrites and never
duplicates, and two trees never share an id. A collection's points belong to one docs tree (its resolved root,
`owner_key`), named in the collection's name, so two trees sharing a store (a configured folder, or a server)
never delete, rewrite or return each other's points.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from pathlib import Path
from typing import Any, Mapping

from chunkscope.paths import cache_home
from chunkscope.retrieval.payload import signature

#: Qdrant's namespace for chunkscope point ids (a fixed random uuid: ids are stable across versions).
POINT_NAMESPACE = uuid.UUID("6a1c0a52-7f0b-4f39-9d0c-2b7f3f0e8c11")
#: Every chunkscope collection's name starts so (other collections of a shared server are left alone).
COLLECTION_PREFIX = "cs_"


def _slug(text: str, limit: int = 40) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[-limit:].strip("-") or "x"


def workspace_dir(docs_root: str | os.PathLike[str]) -> Path:
    """The per-docs-tree folder under the cache (``workspaces/<slug-of-abs-root>-<short hash>``)."""
    root = str(Path(docs_root).expanduser().resolve())
    return cache_home() / "workspaces" / f"{_slug(root)}-{hashlib.sha1(root.encode()).hexdigest()[:8]}"


def params_hash(params: Mapping[str, Any]) -> str:
    return hashlib.sha1(json.dumps(dict(params), sort_keys=True, default=str).encode()).hexdigest()[:10]


def owner_key(docs_root: str | os.PathLike[str]) -> str:
    """The docs tree owning a collection: ``<slug of the resolved root's tail>-<sha1(root)[:10]>``."""
    root = str(Path(docs_root).expanduser().resolve())
    return f"{_slug(root, 24)}-{hashlib.sha1(root.encode()).hexdigest()[:10]}"


def collection_name(strategy: str, params: Mapping[str, Any], model_id: str, owner: str = "") -> str:
    """``cs_<strategy>_<sha1(params)[:10]>_<model slug>_<owner>``: a parameter change, another model or another
    docs tree (``owner``, from `owner_key`) gets a collection of its own."""
    name = f"{COLLECTION_PREFIX}{_slug(strategy, 48)}_{params_hash(params)}_{_slug(model_id, 48)}"
    return f"{name}_{owner}" if owner else name


def point_id(path: str, start: int, end: int, text: str, owner: str = "") -> str:
    """A content-addressed id; ``owner`` keeps the same file and text of two trees two distinct points."""
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    key = f"{path}\x00{start}\x00{end}\x00{sha}"
    return str(uuid.uuid5(POINT_NAMESPACE, f"{owner}\x00{key}" if owner else key))


def payload_sig(payload: Mapping[str, Any], embed_text: str, model_id: str, avgdl: float) -> str:
    """What a stored point must match to be left alone: its payload, the text embedded, the model, and the
    collection's mean length its keyword weights were computed with (see `chunkscope.retrieval.sparse`), which the
    signature also records in the clear (`chunkscope.retrieval.payload.signature`)."""
    h = hashlib.sha1(json.dumps(payload, sort_keys=True).encode())
    h.update(b"\x00" + hashlib.sha256(embed_text.encode("utf-8")).digest() + model_id.encode())
    return signature(h.hexdigest(), avgdl)

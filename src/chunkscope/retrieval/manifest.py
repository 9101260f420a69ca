"""What an indexed collection was made from: per file its stamp, content hash and points, kept beside the store.

A manifest belongs to one collection (docs tree + strategy and parameters + embedder) in one store, with the
settings that shape its payloads (citation template, site URL, how the tree is read); another value of any of
them is another manifest (`manifest_file`). It lets a question on an indexed, unchanged tree answer from the
store without reading, chunking or re-checking a single file, and an index pass re-read, re-chunk and re-embed
only the files that changed:

- `Manifest.changes` tells in milliseconds what changed, from stats alone: a file whose size and modification
  time are those recorded is unchanged; one whose stamp moved is read and its text hashed
  (`chunkscope.retrieval.retriever.Retriever` does, through `stored_tree`), so a touched but unedited file is
  not re-chunked. Files coming, going or moving show in their folder's modification time; the Docusaurus and
  chunkscope config files around the tree are stamped too. Either kind of change asks for the whole tree to be
  read again (the reading order and the site's URLs may differ), and still only changed files are re-chunked.
- A file modified within `RACY_NS` of the manifest's writing is hashed next time whatever its stamp says: a
  second edit in the same clock tick, with the same size, would otherwise go unseen (git's "racy clean" rule).

The file is JSON, written to a temporary file and moved into place (`os.replace`), so a crash leaves the old
manifest or the new one, never half of one; a manifest that cannot be read or does not match its collection is
treated as absent, and the next index pass is a full one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Collection, Mapping

from chunkscope.chunking.model import ChunkedDoc
from chunkscope.document.loader import (SKIPPED_DIRS, DocsTree, Document, Problem, is_site_root, read_document,
                                        site_docs_above)
from chunkscope.progress import CancelToken, ProgressFn
from chunkscope.retrieval.ids import point_id, workspace_dir
from chunkscope.retrieval.indexing import index_chunks
from chunkscope.retrieval.payload import chunk_payload
from chunkscope.retrieval.store import IndexReport, Store
from chunkscope.site.config import CONFIG_NAMES, SiteConfig

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.chunking.strategy import Strategy
    from chunkscope.config.reader import Config
    from chunkscope.embedding.embedder import Embedder

#: Bumped when the manifest's meaning changes: an older manifest is then ignored (a full pass rewrites it).
MANIFEST_VERSION = 1
#: Files modified this close (ns) to the manifest's writing are hashed on the next look whatever their stamp.
RACY_NS = 2_000_000_000
#: The folder, in the tree's workspace, holding one manifest per collection and settings.
MANIFEST_DIR = "manifests"
#: Files around a docs root whose change may move its root, its site settings or its URLs.
_INPUT_NAMES = (*CONFIG_NAMES, "versions.json", "chunkscope.toml",
                *(f"sidebars.{ext}" for ext in ("js", "ts", "mjs", "cjs", "mts", "cts", "json", "yaml", "yml")))

#: (size, mtime_ns) of a file, or None where there is none.
Stamp = tuple[int, int] | None


class ManifestError(ValueError):
    """A manifest file that cannot be used (unreadable, truncated, another version or another collection)."""


def content_hash(text: str) -> str:
    """sha256 of a document's decoded text (what every offset indexes into)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def tree_settings(config: "Config") -> dict[str, Any]:
    """What of the configuration decides which files a tree holds and what its pages' URLs are."""
    return json.loads(json.dumps({"ignore": list(config.ignore), "max_file_bytes": config.max_file_bytes,
                                  "trust_tree": config.trust_tree, "site": dict(config.site)}, default=str))


def expected_root(docs: str | os.PathLike[str]) -> Path | None:
    """The docs root `load_docs` gives a folder, as far as it can be told without reading the site's config: the
    folder itself, or a Docusaurus site root's ``docs/``. None for a single file or a folder inside a site's docs
    (a partial load keeps no manifest) or a path that is no folder."""
    p = Path(docs)
    if not p.is_dir() or site_docs_above(p) is not None:  # a folder inside a site's docs: a partial load too
        return None
    return p / "docs" if is_site_root(p) and (p / "docs").is_dir() else p


def _stamp(path: Path) -> Stamp:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _mtime(path: Path) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def folder_stamps(root: Path) -> dict[str, int]:
    """Every folder the loader may walk (relative path -> mtime_ns): a file added, removed or renamed in one of
    them moves its time. Hidden and build folders are skipped as the loader skips them."""
    out: dict[str, int] = {}
    for folder, dirs, _ in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS]
        try:
            out[Path(folder).relative_to(root).as_posix()] = os.stat(folder).st_mtime_ns
        except OSError:
            continue
    return out


def input_stamps(root: Path, problems: Collection[Problem] = ()) -> dict[str, Stamp]:
    """The config files around ``root`` (present or not) and the files it could not read, by absolute path."""
    out: dict[str, Stamp] = {}
    for folder in (root, *list(root.parents)[:3]):
        for name in _INPUT_NAMES:
            out[str(folder / name)] = _stamp(folder / name)
    for p in problems:
        file = root / p.path
        if p.path not in (".", "") and file.is_file():
            out[str(file)] = _stamp(file)
    return out


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One indexed file: its stamp and content hash, and what indexing made of it."""

    size: int  # -1: its stamp is not to be trusted (it changed while it was indexed); hash it next time
    mtime_ns: int
    sha256: str
    #: The ids of its points in the collection.
    points: tuple[str, ...]
    #: How many chunks the strategy cut (a strategy emitting one span twice stores one point).
    chunks: int = 0
    #: Chunks longer than the embedder reads.
    truncated: int = 0
    #: The strategy's metadata keys its chunks carry (what a payload filter may name).
    fields: tuple[str, ...] = ()
    #: Why the strategy could not chunk it.
    error: str | None = None

    def restamped(self, size: int, mtime_ns: int) -> "FileRecord":
        return FileRecord(size, mtime_ns, self.sha256, self.points, self.chunks, self.truncated, self.fields,
                          self.error)


@dataclass(frozen=True, slots=True)
class Changes:
    """How the files on disk differ from a manifest, from stats alone."""

    #: Files whose stamp moved (their text may or may not differ: hash them).
    modified: tuple[str, ...] = ()
    #: Recorded files no longer there.
    removed: tuple[str, ...] = ()
    #: Folders or config files changed: files may have come, gone or moved, settings or URLs may differ.
    structural: bool = False

    def __bool__(self) -> bool:
        return self.structural or bool(self.modified or self.removed)


@dataclass
class Manifest:
    """What a collection was made from (see the module docstring)."""

    identity: dict[str, Any]
    root: str
    collection: str
    #: The payload keys every point has (besides its strategy's metadata keys, per file).
    core_fields: list[str] = field(default_factory=list)
    site: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    folders: dict[str, int] = field(default_factory=dict)
    inputs: dict[str, Stamp] = field(default_factory=dict)
    #: Every indexed file, in reading order.
    files: dict[str, FileRecord] = field(default_factory=dict)
    written_ns: int = 0

    @property
    def point_count(self) -> int:
        return sum(len(r.points) for r in self.files.values())

    def fields(self) -> set[str]:
        """Every key a payload filter may name."""
        out = set(self.core_fields)
        for r in self.files.values():
            out.update(r.fields)
        return out

    def site_config(self) -> SiteConfig | None:
        if self.site is None:
            return None
        d = dict(self.site)
        for key in ("include", "exclude", "released"):
            d[key] = tuple(d.get(key) or ())
        return SiteConfig(**d)

    def changes(self) -> Changes:
        """What changed on disk since the manifest was written: stats only, no file is read."""
        root = Path(self.root)
        racy = self.written_ns - RACY_NS
        structural = any(_mtime(root / rel) != ns or ns >= racy for rel, ns in self.folders.items()) \
            or any(_stamp(Path(p)) != st for p, st in self.inputs.items())
        modified: list[str] = []
        removed: list[str] = []
        for rel, rec in self.files.items():
            st = _stamp(root / rel)
            if st is None:
                removed.append(rel)
            elif rec.size < 0 or st != (rec.size, rec.mtime_ns) or rec.mtime_ns >= racy:
                modified.append(rel)
        return Changes(tuple(modified), tuple(removed), structural or bool(removed))

    # -- JSON --

    def to_json(self) -> dict[str, Any]:
        return {
            "version": MANIFEST_VERSION, "identity": self.identity, "root": self.root, "collection": self.collection,
            "core_fields": self.core_fields, "site": self.site, "notes": self.notes,
            "problems": [[p.path, p.code, p.message] for p in self.problems],
            "folders": self.folders, "inputs": {k: list(v) if v else None for k, v in self.inputs.items()},
            "written_ns": self.written_ns,
            "files": {rel: [r.size, r.mtime_ns, r.sha256, list(r.points), r.chunks, r.truncated, list(r.fields),
                            r.error] for rel, r in self.files.items()},
        }

    @classmethod
    def from_json(cls, data: Any) -> "Manifest":
        """Raises `ManifestError` for anything but a manifest of this version, whole."""
        try:
            if data["version"] != MANIFEST_VERSION:
                raise ManifestError(f"manifest version {data['version']!r}")
            files: dict[str, FileRecord] = {}
            for rel, (size, mtime, sha, points, chunks, truncated, fields, error) in data["files"].items():
                files[str(rel)] = FileRecord(int(size), int(mtime), str(sha), tuple(map(str, points)), int(chunks),
                                             int(truncated), tuple(map(str, fields)),
                                             None if error is None else str(error))
            inputs: dict[str, Stamp] = {}
            for k, v in data["inputs"].items():
                inputs[str(k)] = None if v is None else (int(v[0]), int(v[1]))
            site = data["site"]
            return cls(
                identity=dict(data["identity"]), root=str(data["root"]), collection=str(data["collection"]),
                core_fields=[str(f) for f in data["core_fields"]],
                site=None if site is None else dict(site), notes=[str(n) for n in data["notes"]],
                problems=[Problem(str(p), str(c), str(m)) for p, c, m in data["problems"]],
                folders={str(k): int(v) for k, v in data["folders"].items()}, inputs=inputs,
                files=files, written_ns=int(data["written_ns"]))
        except ManifestError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ManifestError(f"malformed manifest ({type(exc).__name__}: {exc})") from None


def site_dict(site: SiteConfig | None) -> dict[str, Any] | None:
    """A site's settings as JSON (restored by `Manifest.site_config`)."""
    return None if site is None else json.loads(json.dumps(asdict(site), default=str))


@dataclass(frozen=True)
class ManifestFile:
    """Where the manifest of one collection and its settings lives, and what it must match to be used."""

    path: Path
    identity: Mapping[str, Any]

    def load(self) -> Manifest | None:
        """The manifest, or None when there is none, it cannot be read (truncated, corrupt) or it was written for
        other settings: each means a full pass, never an error."""
        try:
            data = json.loads(self.path.read_bytes())
            m = Manifest.from_json(data)
        except (OSError, ValueError, RecursionError):
            return None
        if m.identity != _jsonable(self.identity):
            return None
        return m

    def save(self, manifest: Manifest) -> None:
        """Write atomically: a temporary file beside it, then `os.replace`. A failure to write only loses speed
        (the next pass is a full one), so it is not raised."""
        manifest.identity = _jsonable(self.identity)
        manifest.written_ns = time.time_ns()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".manifest-", suffix=".tmp", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(manifest.to_json(), fh, separators=(",", ":"))
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            pass

    def discard(self) -> None:
        """Forget the manifest (the collection is being rebuilt)."""
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def manifest_file(root: str | os.PathLike[str], identity: Mapping[str, Any]) -> ManifestFile:
    """The manifest of a docs tree's collection for ``identity`` (collection, store, embedder, payload and tree
    settings), in the tree's workspace: one file per distinct identity."""
    digest = hashlib.sha256(json.dumps(_jsonable(identity), sort_keys=True).encode()).hexdigest()[:20]
    return ManifestFile(workspace_dir(root) / MANIFEST_DIR / f"{digest}.json", identity)


@dataclass
class StoredTree:
    """A tree as its manifest knows it: the documents whose stamp moved, read again; every other file unread."""

    tree: DocsTree
    #: Paths indexed and unchanged on disk, not read.
    unread: frozenset[str]
    manifest: Manifest


def stored_tree(manifest: Manifest, max_bytes: int) -> StoredTree | None:
    """The tree of an indexed collection without loading it, when no file came, went or moved and no config
    around it changed (None otherwise: load the tree). Files whose stamp moved are read; the rest are not."""
    changes = manifest.changes()
    if changes.structural:
        return None
    root = Path(manifest.root)
    site = manifest.site_config()
    docs: list[Document] = []
    problems = [p for p in manifest.problems if p.path not in changes.modified]
    for rel in changes.modified:
        doc, probs = read_document(root / rel, rel, max_bytes)
        problems.extend(probs)
        if doc is not None:
            doc.site = site
            docs.append(doc)
    tree = DocsTree(root=root, documents=docs, problems=problems, site=site, notes=list(manifest.notes))
    return StoredTree(tree, frozenset(manifest.files) - set(changes.modified), manifest)


@dataclass
class Refresh:
    """What `refresh` did: the index report, the manifest now in force, the documents the strategy failed on."""

    report: IndexReport
    manifest: Manifest | None
    #: `ChunkedDoc`s with an ``error``: those chunked now, and the stored failures of files left alone.
    failures: list[ChunkedDoc]


def refresh(store: Store, collection: str, tree: DocsTree, strategy: "Strategy", embedder: "Embedder",
            stored: Manifest | None, file: ManifestFile, *, unread: Collection[str] = (),
            extra: Callable[["Chunk"], Mapping[str, Any]] | None = None, on_progress: ProgressFn | None = None,
            cancel: CancelToken | None = None, label: str = "") -> Refresh:
    """Bring ``collection`` in step with ``tree``, chunking only what the manifest does not vouch for.

    With no manifest (``stored`` None) every document is chunked and the whole collection compared, as a pass
    without one would. With one, only documents whose text hash differs from their record (or that are new) are
    chunked; their points and those of removed files are rewritten or deleted (`index_chunks`' ``scope``) and
    every other point is left alone. ``unread`` are paths the caller vouches are unchanged on disk but did not
    load (`stored_tree`): neither chunked nor removed. The manifest is saved unless the pass was cancelled.
    """
    from chunkscope.chunking.drivers import chunk_documents

    root = Path(os.path.abspath(tree.root))
    if stored is not None and (stored.root != str(root) or stored.site != site_dict(tree.site)):
        stored = None  # the site's settings changed: every page's URL may differ
    docs = list(tree.documents)
    hashes = {d.path: content_hash(d.text) for d in docs}
    scope: set[str] | None = None
    if stored is None:
        if unread:
            raise ValueError("a tree read from its manifest needs that manifest")  # would delete unread files' points
        todo = docs
    else:
        present = set(hashes) | set(unread)
        removed = {p for p in stored.files if p not in present}
        todo = [d for d in docs if (rec := stored.files.get(d.path)) is None or rec.sha256 != hashes[d.path]]
        scope = {d.path for d in todo} | removed
    results = chunk_documents(todo, strategy) if todo else []
    chunks = [c for r in results for c in r.chunks]
    uncounted = [c for c in chunks if c.embed_tokens is None]
    if uncounted:
        # Word-piece counts go into the payload (a UI shows which chunks the model reads only partly).
        for c, n in zip(uncounted, embedder.count_tokens([c.embed_text for c in uncounted])):
            c.embed_tokens = n
    owner = store.owner(collection)
    # Each chunk's point id, worked out once: for the writes and for the manifest's record of each file's points.
    ids = {id(c): point_id(c.path, c.start, c.end, c.text, owner) for c in chunks}
    if scope is None or scope:
        report = index_chunks(store, chunks, embedder, collection, on_progress=on_progress, cancel=cancel,
                              extra=extra, scope=scope, label=label, ids=[ids[id(c)] for c in chunks])
    else:
        report = IndexReport(collection=collection)
    failures = [r for r in results if r.error]
    rechunked = {d.path for d in todo}
    files: dict[str, FileRecord] = {}
    order = list(stored.files) if unread and stored is not None else [d.path for d in docs]
    fresh = {r.doc.path: r for r in results}
    by_path = {d.path: d for d in docs}
    limit = getattr(embedder, "max_seq_length", None) or 0
    for rel in order:
        old = stored.files.get(rel) if stored is not None else None
        doc = by_path.get(rel)
        if doc is None:
            if old is not None and rel in unread:
                files[rel] = old
            continue
        size, mtime = _doc_stamp(root / rel, doc)
        r = fresh.get(rel)
        if rel not in rechunked and old is not None:
            files[rel] = old.restamped(size, mtime)
            if old.error:
                failures.append(ChunkedDoc(doc, [], old.error))
            continue
        if r is None:
            continue
        points = tuple(dict.fromkeys(ids[id(c)] for c in r.chunks))
        long = sum(1 for c in r.chunks if limit and c.embed_tokens is not None and c.embed_tokens > limit)
        files[rel] = FileRecord(size, mtime, hashes[rel], points, len(r.chunks), long,
                                tuple(sorted({k for c in r.chunks for k in (c.metadata or {})})), r.error)
    if unread and stored is not None:
        for rel in unread:  # files the tree did not load keep their failures
            unread_rec = files.get(rel)
            if unread_rec is not None and unread_rec.error:
                failures.append(ChunkedDoc(Document(rel, ""), [], unread_rec.error))
    if stored is not None:
        # The report speaks for the whole collection, as a pass over every chunk would.
        for rel, kept in files.items():
            if rel not in rechunked:
                report.chunks += kept.chunks
                report.unchanged += len(kept.points)
                report.truncated += kept.truncated
    if report.cancelled:
        return Refresh(report, stored, failures)
    if stored is not None and not scope and files == stored.files and list(tree.problems) == stored.problems \
            and not any(r.mtime_ns >= stored.written_ns - RACY_NS for r in files.values()):
        return Refresh(report, stored, failures)  # nothing changed, nothing racy: nothing to write
    core = sorted(chunk_payload(chunks[0])) if chunks else (stored.core_fields if stored is not None else [])
    manifest = Manifest(identity={}, root=str(root), collection=collection, core_fields=list(core),
                        site=site_dict(tree.site), notes=list(tree.notes), problems=list(tree.problems),
                        folders=folder_stamps(root), inputs=input_stamps(root, tree.problems), files=files)
    file.save(manifest)
    return Refresh(report, manifest, failures)


def _doc_stamp(file: Path, doc: Document) -> tuple[int, int]:
    """The stamp to record for a loaded document: its size now and the time it had when read; size -1 when the
    file changed since (its next look hashes it)."""
    try:
        st = file.stat()
    except OSError:
        return -1, doc.mtime_ns
    return (st.st_size if st.st_mtime_ns == doc.mtime_ns else -1), doc.mtime_ns

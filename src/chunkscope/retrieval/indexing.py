"""Keeping a collection in step with a tree's chunks: embed what changed, hand the store its points.

`index_chunks` writes only points that are missing or whose payload changed, in batches of `BATCH` in chunk
order, and deletes points of chunks that no longer exist only after every write succeeded: stopping between
batches (a cancelled `CancelToken` or Ctrl-C) leaves a collection whose points are each complete, and the next
pass finishes the job. A pass given a ``scope`` (the paths of a partial load, e.g. one file) writes and deletes
only points of those paths.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Collection, Mapping, Sequence

from chunkscope.progress import CancelToken, Phase, Progress, ProgressFn
from chunkscope.retrieval.engine import PointData
from chunkscope.retrieval.ids import payload_sig, point_id
from chunkscope.retrieval.payload import SIGNATURE_KEY, chunk_payload
from chunkscope.retrieval.sparse import Bm25Encoder, average_length
from chunkscope.retrieval.store import IndexReport, Store

if TYPE_CHECKING:
    from chunkscope.chunking.model import Chunk
    from chunkscope.embedding.embedder import Embedder

#: Points written per store call (and per embedding batch): small enough that stopping is prompt.
BATCH = 64


def index_chunks(store: Store, chunks: Sequence["Chunk"], embedder: "Embedder", collection: str, *,
                 on_progress: ProgressFn | None = None, cancel: CancelToken | None = None,
                 extra: Callable[["Chunk"], Mapping[str, Any]] | None = None, scope: Collection[str] | None = None,
                 label: str = "", ids: Sequence[str] | None = None) -> IndexReport:
    """Make the collection hold exactly ``chunks``: write missing or changed points, then delete stale ones.

    Args:
        store: the store holding ``collection``.
        chunks: every chunk of the docs tree for this strategy, in order.
        embedder: gives the vectors (its cache makes already-seen texts free).
        collection: the name `Store.use` gave.
        on_progress: a `Phase.INDEX` report after every batch (points written of points to write; ``cached``
            counts those whose vector came from the embedding cache). ``label`` names the job in it.
        cancel: checked between batches; when cancelled, the pass stops, stale points are kept, and the report
            says ``cancelled``.
        extra: per-chunk payload additions (citation, url) from the retriever.
        scope: the paths ``chunks`` stand for (a partial load: one file of the tree); points of other paths
            are neither compared nor deleted. None: ``chunks`` are the whole tree.
        ids: each chunk's `point_id` under the collection's owner, in ``chunks``' order, where the caller has
            them already; None: worked out here.
    """
    t0 = time.perf_counter()
    name = collection
    store.ensure_collection(name, embedder.dim)
    # Keyword weights are normalised by a mean chunk length fixed when the collection is first written (the
    # chunks given then) and read back from any point afterwards: an edit, or indexing one file, then rewrites
    # only the points that changed, and an unchanged tree costs no term extraction at all. (The mean drifts
    # from the tree's as it grows; BM25's length normalisation is a soft one, and a rebuild refreshes it.)
    bm25 = Bm25Encoder()
    # Each chunk's terms are extracted once: for the mean length (a new collection) and for its sparse vector.
    term_ids: dict[int, list[int]] = {}

    def terms_of(c: "Chunk") -> list[int]:
        found = term_ids.get(id(c))
        if found is None:
            found = term_ids[id(c)] = bm25.term_ids(c.embed_text)
        return found

    avgdl = store.stored_avgdl(name) or average_length(len(terms_of(c)) for c in chunks)
    if ids is not None and len(ids) != len(chunks):
        raise ValueError(f"{len(ids)} point ids for {len(chunks)} chunks")
    if scope is not None:
        # Never write what the scope would not delete.
        if ids is not None:
            ids = [i for i, c in zip(ids, chunks) if c.path in scope]
        chunks = [c for c in chunks if c.path in scope]
    if ids is None:
        owner = store.owner(name)
        ids = [point_id(c.path, c.start, c.end, c.text, owner) for c in chunks]
    report = IndexReport(collection=name, chunks=len(chunks))
    existing = store.point_sigs(name, scope)
    wanted: dict[str, tuple["Chunk", dict[str, Any], str]] = {}
    for pid, c in zip(ids, chunks):
        if pid in wanted:
            continue  # a strategy emitting the same span twice: one point
        payload = chunk_payload(c, extra(c) if extra else None)
        sig = payload_sig(payload, c.embed_text, embedder.model_id, avgdl)
        payload[SIGNATURE_KEY] = sig
        wanted[pid] = (c, payload, sig)
    todo = [(pid, c, payload) for pid, (c, payload, sig) in wanted.items() if existing.get(pid) != sig]
    # Over every chunk of the collection, not only those written now: a re-run that embeds nothing must not
    # report that nothing is truncated.
    limit = getattr(embedder, "max_seq_length", None)
    if limit:
        report.truncated = sum(1 for c, _, _ in wanted.values() if c.embed_tokens is not None and c.embed_tokens > limit)
    report.unchanged = len(wanted) - len(todo)
    total = len(todo)
    started = Progress(Phase.INDEX, 0, total, unit="points", label=label)

    def progress() -> None:
        if on_progress is not None:
            on_progress(started.advanced(report.upserted, cached=report.cached))

    progress()
    for i in range(0, total, BATCH):
        if cancel is not None and cancel.cancelled:
            report.cancelled = True
            break
        batch = todo[i:i + BATCH]
        embedded = embedder.embed([c.embed_text for _, c, _ in batch], token_counts=[c.embed_tokens for _, c, _ in batch])
        report.embedded += embedded.stats.misses
        report.cached += embedded.stats.hits
        if embedded.stats.misses:
            report.device = embedded.stats.device or report.device
        store.write(name, [PointData(pid, v.tolist(), bm25.document(terms_of(c), avgdl), payload)
                           for (pid, c, payload), v in zip(batch, embedded.vectors)])
        report.upserted += len(batch)
        progress()
    if not report.cancelled:
        stale = [pid for pid in existing if pid not in wanted]
        store.delete_ids(name, stale)
        report.deleted = len(stale)
    report.seconds = time.perf_counter() - t0
    return report

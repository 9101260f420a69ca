"""A store survives its process being killed: `kill -9` during `index` and Ctrl-C during `tune` leave a store that
opens, and a re-run makes it equal, point for point (ids, payloads, vectors), to a clean run's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkscope.retrieval.ids import workspace_dir
from chunkscope.retrieval.store import Store

pytestmark = [pytest.mark.model, pytest.mark.slow]

#: Distinct paragraphs: the model embeds each once; every file repeats them, so the tree has many points for few
#: embeddings and the write is long enough to be interrupted.
PARAGRAPHS = [f"Topic {i}: the {w} keeps its {v} in a {n} until the {e} ends, then hands it over."
              for i, (w, v, n, e) in enumerate(
                  (w, v, n, e) for w in ("owner", "borrower", "thread", "server") for v in ("value", "lock", "buffer")
                  for n, e in (("box", "scope"), ("vector", "request")))]
FILES = 60
STRATEGY = ["-s", "recursive", "-p", "chunk_size=32", "-p", "chunk_overlap=0"]


def _tree(root: Path) -> Path:
    root.mkdir(parents=True)
    for f in range(FILES):
        body = "\n\n".join(f"## Part {i}\n\n{p}" for i, p in enumerate(PARAGRAPHS))
        (root / f"doc{f:02d}.md").write_text(f"# Document {f}\n\n{body}\n", encoding="utf-8")
    return root


def _run(*args: str, **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "chunkscope", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=os.environ.copy(), **kw)


def _finish(*args: str) -> None:
    proc = _run(*args)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err


def _snapshot(docs: Path) -> dict[str, dict[str, tuple[dict[str, Any], list[float]]]]:
    """Every collection of the tree's store: point id -> (payload, dense vector)."""
    out: dict[str, dict[str, tuple[dict[str, Any], list[float]]]] = {}
    with Store(docs) as store:
        for name in store.engine.collections():
            points: dict[str, tuple[dict[str, Any], list[float]]] = {}
            offset = None
            while True:
                found, offset = store.engine.scroll(name, None, None, with_dense=True, offset=offset)
                for f in found:
                    assert f.dense is not None
                    points[f.id] = (dict(f.payload), list(f.dense))
                if offset is None:
                    break
            out[name] = points
    return out


def _assert_same(got: dict[str, tuple[dict[str, Any], list[float]]],
                 want: dict[str, tuple[dict[str, Any], list[float]]]) -> None:
    assert sorted(got) == sorted(want)
    for pid, (payload, dense) in want.items():
        assert got[pid][0] == payload, pid
        np.testing.assert_array_equal(np.asarray(got[pid][1], dtype=np.float32), np.asarray(dense, dtype=np.float32))


def _wait_for_collection(docs: Path, proc: subprocess.Popen[str], timeout: float = 300) -> None:
    """Until the process has created a collection (its shard folder) and so is writing points."""
    edge = workspace_dir(docs) / "edge"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the process ended before it could be interrupted: {proc.stderr.read() if proc.stderr else ''}")
        if edge.is_dir() and any(p.is_dir() and p.name.startswith("cs_") for p in edge.iterdir()):
            return
        time.sleep(0.02)
    pytest.fail("no collection was created in time")


def test_kill_9_during_index_then_a_rerun_matches_a_clean_run(tmp_path: Path) -> None:
    docs = _tree(tmp_path / "docs")
    _finish("index", str(docs), *STRATEGY)  # the clean run; also fills the embedding cache
    clean = _snapshot(docs)
    (name, points), = clean.items()
    assert len(points) >= FILES * len(PARAGRAPHS)

    proc = _run("index", str(docs), *STRATEGY, "--rebuild")
    _wait_for_collection(docs, proc)
    time.sleep(0.3)
    assert proc.poll() is None, "index finished before the kill: the test proves nothing"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)

    # The killed store opens (the write-ahead log replays), holding part of the points at most.
    partial = _snapshot(docs)
    assert set(partial.get(name, {})) <= set(points)
    _finish("index", str(docs), *STRATEGY)
    _assert_same(_snapshot(docs)[name], points)


def test_ctrl_c_during_tune_then_a_rerun_matches_a_clean_run(tmp_path: Path) -> None:
    docs = _tree(tmp_path / "docs")
    _finish("index", str(docs), *STRATEGY)
    clean = _snapshot(docs)
    (name, points), = clean.items()

    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"query": p, "expect": {"path": f"doc{i:02d}.md", "heading": f"Part {i}"}})
                               + "\n" for i, p in enumerate(PARAGRAPHS)), encoding="utf-8")
    # tune indexes the tree once per candidate configuration, into collections of the same store.
    proc = _run("tune", str(docs), str(queries), "--budget", "120s", "--strategy", "recursive")
    _wait_for_collection(docs, proc)
    deadline = time.monotonic() + 300
    while len(_collections(docs)) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, f"tune finished before Ctrl-C: the test proves nothing ({proc.communicate()[1]})"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err

    after = _snapshot(docs)  # every collection opens
    assert set(after[name]) <= set(points)
    _finish("index", str(docs), *STRATEGY)
    _assert_same(_snapshot(docs)[name], points)


def _collections(docs: Path) -> list[str]:
    edge = workspace_dir(docs) / "edge"
    return [p.name for p in edge.iterdir() if p.is_dir() and p.name.startswith("cs_")] if edge.is_dir() else []

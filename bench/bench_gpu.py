"""A CUDA GPU against the CPU for bulk embedding: where chunkscope embeds, `index` and `tune` on both, the same vectors.

    python bench/bench_gpu.py [DOCS] [--copies 2] [--budget 60s] [--timeout 300] [--work DIR] [--out FILE]

Issue #22's GPU targets, each a ratio measured in this run (on a machine without a GPU both rows are the CPU,
and the table says so):

* Where: `chunkscope.embedding.device.bulk_device()` and the device an `Embedder` reports after embedding a few
  hundred paragraphs of DOCS with chunkscope's own choice (``device`` unset) and with ``device = "cpu"``.
* `index` of a tree of ``--copies`` copies of DOCS with a fresh vector cache, as a fresh process: with
  ``[embedder] device = "cpu"`` in a config file against chunkscope's choice. Target: at least 5x faster on the GPU.
  Both start from the same ONNX export (made once first, timed apart), so neither pays torch's export.
* The vectors both runs cached for the same chunk texts: cosine >= 0.999 for every one.
* `tune DOCS --budget B` with a fresh cache, CPU against chunkscope's choice: the configurations each measured.
  Target: at least 3x as many on the GPU.

Every step runs as its own process under a time limit, so a step that hangs or fails is one row of the table
and the rest still runs. ``--work`` keeps every command's output (``*.out``, ``*.err``) for a look afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import _setup
from _setup import emit, load, table

DEFAULT_CORPUS = _setup.REPO.parent / "shared" / "corpus" / "rust-book"
MODEL = "all-MiniLM-L6-v2"
#: Paragraphs embedded in process to learn which device embeds (over the embedder's bulk threshold of 64).
SAMPLE = 256
MIN_COSINE = 0.999


@dataclass
class Run:
    """One command's outcome: wall and CPU seconds (the child's user + system), exit status, what it printed."""

    name: str
    rc: int | None  # None: stopped at its time limit
    wall: float
    cpu: float
    out: str
    err: str
    data: dict = field(default_factory=dict)

    @property
    def status(self) -> str:
        return "timed out" if self.rc is None else ("ok" if self.rc == 0 else f"exit {self.rc}")


def run(name: str, cmd: list[str], env: dict[str, str], timeout: float, work: Path) -> Run:
    """``cmd`` as a fresh process, its output kept in ``work/name.out|.err``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as exc:
        rc = None
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    (work / f"{name}.out").write_text(out, encoding="utf-8")
    (work / f"{name}.err").write_text(err, encoding="utf-8")
    last = (err.strip().splitlines() or ["-"])[-1]
    emit(f"- {name}: {'timed out' if rc is None else f'exit {rc}'} in {wall:.1f}s wall, {cpu:.1f}s CPU"
         + ("" if rc == 0 else f" (last line: {last[:200]})"))
    return Run(name, rc, wall, cpu, out, err)


def environment() -> list[list[object]]:
    """What the machine offers and what chunkscope chooses for bulk embedding."""
    from chunkscope.embedding.device import bulk_device, nvidia_driver_present, onnx_cuda_available

    rows: list[list[object]] = [["python", sys.version.split()[0]], ["NVIDIA driver", nvidia_driver_present()]]
    try:
        import torch

        rows.append(["torch", torch.__version__])
        rows.append(["torch sees CUDA", torch.cuda.is_available()])
        if torch.cuda.is_available():
            rows.append(["GPU", torch.cuda.get_device_name(0)])
    except ImportError:
        rows.append(["torch", "not installed"])
    rows.append(["ONNX Runtime CUDA provider", onnx_cuda_available()])
    where = bulk_device()
    rows.append(["bulk_device()", f"{where.runtime} on {where.device}"])
    rows.append(["CPU cores", os.cpu_count()])
    return rows


def sample_paragraphs(docs: Path, n: int) -> list[str]:
    """The first ``n`` distinct paragraphs of the tree's Markdown files (text enough to load the bulk encoder)."""
    seen: dict[str, None] = {}
    for path in sorted(docs.rglob("*.md")):
        for para in path.read_text(encoding="utf-8", errors="replace").split("\n\n"):
            if len(para.strip()) > 40:
                seen.setdefault(para.strip(), None)
            if len(seen) >= n:
                return list(seen)
    return list(seen)


def devices_in_process(docs: Path) -> tuple[list[list[object]], float | None]:
    """Which device an `Embedder` reports with chunkscope's choice and with the CPU forced, and the lowest cosine
    between the two for the same paragraphs."""
    from chunkscope.embedding.embedder import Embedder

    texts = sample_paragraphs(docs, SAMPLE)
    rows: list[list[object]] = []
    vecs = {}
    for label, device in (("chunkscope's choice", None), ("device = cpu", "cpu")):
        emb = Embedder(MODEL, device=device, use_cache=False)
        t0 = time.perf_counter()
        got = emb.embed(texts)
        rows.append([label, len(texts), got.stats.device, f"{time.perf_counter() - t0:.2f}"])
        vecs[label] = got.vectors
    a, b = vecs["chunkscope's choice"], vecs["device = cpu"]
    return rows, float(np.min(np.sum(a * b, axis=1))) if len(a) else None


def cached_cosines(cache_a: Path, cache_b: Path) -> tuple[int, int, float | None]:
    """(texts in both caches, texts under `MIN_COSINE`, the lowest cosine) for the vectors two runs cached."""
    from chunkscope.embedding.cache import CACHE_FILE, EmbeddingCache

    def shas(cache: Path) -> set[str]:
        # The cache's API answers given shas; which shas it holds is read from its table (a bench may look).
        with sqlite3.connect(cache / "embeddings" / CACHE_FILE) as conn:
            return {r[0] for r in conn.execute("SELECT sha FROM vectors WHERE model = ?", (MODEL,))}

    common = sorted(shas(cache_a) & shas(cache_b))
    if not common:
        return 0, 0, None
    with EmbeddingCache(cache_a / "embeddings" / CACHE_FILE) as ca, \
            EmbeddingCache(cache_b / "embeddings" / CACHE_FILE) as cb:
        va, vb = ca.get_many(MODEL, common), cb.get_many(MODEL, common)
    cos = np.array([float(np.dot(va[s][0], vb[s][0])) for s in common])
    return len(common), int(np.sum(cos < MIN_COSINE)), float(cos.min())


def fresh_cache(work: Path, name: str, onnx_from: Path) -> Path:
    """An empty cache folder holding only the ONNX export (made once, so no run pays torch's export)."""
    cache = work / f"cache-{name}"
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    if (onnx_from / "onnx").is_dir():
        shutil.copytree(onnx_from / "onnx", cache / "onnx")
    return cache


def json_of(r: Run) -> dict:
    try:
        return json.loads(r.out) if r.rc == 0 else {}
    except ValueError:
        return {}


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("docs", nargs="?", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--copies", type=int, default=2,
                    help="copies of DOCS in the indexed tree (their texts repeat: the vectors are those of one copy)")
    ap.add_argument("--budget", default="60s", help="tune's --budget for each run (0: skip tune)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds each command may take")
    ap.add_argument("--work", type=Path, help="folder for the trees, caches and each command's output (kept)")
    ap.add_argument("--out", type=Path, help="also write the report here")
    args = ap.parse_args()
    if not args.docs.is_dir():
        print(f"{args.docs}: no such folder; give a docs folder", file=sys.stderr)
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-gpu-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        return bench(args, work.resolve())
    finally:
        if args.out:
            _setup.write_report(args.out)


def bench(args: argparse.Namespace, work: Path) -> int:
    py = sys.executable
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join([str(_setup.REPO / "src"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    cli = [py, "-m", "chunkscope"]
    cpu_config = work / "cpu.toml"
    cpu_config.write_text('[embedder]\ndevice = "cpu"\n', encoding="utf-8")
    emit(f"# bench_gpu: {args.docs} x {args.copies}, load {load()}, work {work}")
    emit()
    emit(table(["what", "here"], environment()))
    emit()

    tree = work / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    for i in range(args.copies):
        shutil.copytree(args.docs, tree / f"copy{i + 1}")

    emit("## Steps")
    base = work / "cache-base"
    shutil.rmtree(base, ignore_errors=True)
    export = run("export", [py, "-c", "import sys; from chunkscope.embedding.backends.onnx_export import ensure_onnx; "
                            "from chunkscope.paths import default_model_dir; "
                            "print(ensure_onnx(default_model_dir(), sys.argv[1]))", str(base)],
                 env, args.timeout, work)

    index: dict[str, Run] = {}
    caches: dict[str, Path] = {}
    for mode in ("cpu", "auto"):
        caches[mode] = fresh_cache(work, f"index-{mode}", base)
        cmd = [*cli, "index", str(tree), "--json"] + (["--config", str(cpu_config)] if mode == "cpu" else [])
        index[mode] = run(f"index-{mode}", cmd, {**env, "CHUNKSCOPE_CACHE": str(caches[mode])}, args.timeout, work)
        index[mode].data = json_of(index[mode])

    sample_rows: list[list[object]] = []
    sample_min: float | None = None
    try:
        # In this process the cache is the base one, whose ONNX export the CPU side loads (no second export).
        os.environ["CHUNKSCOPE_CACHE"] = str(base)
        sample_rows, sample_min = devices_in_process(args.docs)
    except Exception as exc:  # a bench reports what broke and goes on to the next step
        emit(f"- in-process embedding failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    try:
        n_common, n_low, low = cached_cosines(caches["cpu"], caches["auto"])
    except Exception as exc:
        emit(f"- reading the vector caches failed: {type(exc).__name__}: {exc}")
        n_common, n_low, low = 0, 0, None

    tune: dict[str, Run] = {}
    if args.budget not in ("0", "0s", "none"):
        for mode in ("cpu", "auto"):
            cache = fresh_cache(work, f"tune-{mode}", base)
            cmd = [*cli, "tune", str(args.docs), "--budget", args.budget, "--json"] + (
                ["--config", str(cpu_config)] if mode == "cpu" else [])
            tune[mode] = run(f"tune-{mode}", cmd, {**env, "CHUNKSCOPE_CACHE": str(cache)},
                             args.timeout, work)
            tune[mode].data = json_of(tune[mode])
    emit()

    emit(f"## Where chunkscope embeds (in process, {SAMPLE} paragraphs, no cache)")
    emit(table(["device setting", "texts", "device reported", "seconds"], sample_rows))
    emit(f"Lowest cosine between the two: {sample_min if sample_min is None else f'{sample_min:.6f}'}")
    emit()

    emit(f"## `index` of {args.copies} copies, fresh vector cache (ONNX export made once first: "
         f"{export.wall:.1f}s, {export.status})")
    rows = []
    for mode, label in (("cpu", "[embedder] device = \"cpu\""), ("auto", "chunkscope's choice")):
        r, d = index[mode], index[mode].data
        said = sorted({w for w in ("cuda", "gpu", "cpu", "onnx", "torch") if w in (r.out + r.err).lower()})
        rows.append([label, r.status, d.get("chunks", "-"), d.get("embedded", "-"), f"{r.wall:.1f}", f"{r.cpu:.1f}",
                     f"{d['seconds']:.1f}" if "seconds" in d else "-", ", ".join(said) or "-"])
    emit(table(["device", "status", "chunks", "embedded", "wall s", "CPU s", "index's own s",
                "device words in its output"], rows))
    emit(f"CPU / chunkscope's choice, wall: **{ratio(index['cpu'].wall, index['auto'].wall)}** (target >= 5x on a GPU)")
    emit()
    emit("## The same chunk texts, vectors from both `index` runs")
    emit(table(["texts in both caches", f"cosine < {MIN_COSINE}", "lowest cosine"],
               [[n_common, n_low, "-" if low is None else f"{low:.6f}"]]))
    emit()
    if tune:
        emit(f"## `tune {args.docs.name} --budget {args.budget}`, fresh cache")
        rows = []
        for mode, label in (("cpu", "[embedder] device = \"cpu\""), ("auto", "chunkscope's choice")):
            r, d = tune[mode], tune[mode].data
            trials = d.get("trials", [])
            rows.append([label, r.status, len(trials), len({t["label"] for t in trials}), d.get("chunkings", "-"),
                         (d.get("cache") or {}).get("embedded", "-"), d.get("budget_spent", "-"), f"{r.wall:.1f}",
                         f"{r.cpu:.1f}"])
        emit(table(["device", "status", "trials measured", "distinct configurations", "chunkings in the space",
                    "texts embedded", "budget spent", "wall s", "CPU s"], rows))
        n_cpu, n_auto = (len(tune[m].data.get("trials", [])) for m in ("cpu", "auto"))
        emit(f"chunkscope's choice / CPU, trials: **{ratio(n_auto, n_cpu)}** (target >= 3x on a GPU)")
        emit()
    emit(f"Load at the end: {load()}. Each command's output: {work}/*.out, *.err")
    failed = [r.name for r in (export, *index.values(), *tune.values()) if r.rc != 0]
    return 1 if failed or n_low else 0


if __name__ == "__main__":
    sys.exit(main())

"""Tune benchmark: the label-free ``tuned`` preset against every seed strategy, on questions tune never saw.

    python bench/bench_tune.py [--rust PATH] [--attrs PATH] [--rust-budget 10m] [--attrs-budget 5m]
                               [--labelled] [--out /tmp/bench_tune.md]

Target (issue #12): on each tree, the label-free ``tuned`` preset's hit@5 on the held-aside questions is at least
5 points above the best seed strategy's (each at its defaults) on the same questions; MRR and passage IoU@5 are
reported beside it.

Per tree, as a user would, in subprocesses of the installed command line:

1. ``chunkscope tune DOCS --budget B --write --write-best-so-far --config CFG --json``: label-free (no questions
   at all); the winner (the best so far, when tune says it has no answer) goes to ``[presets.tuned]`` of a
   configuration file in a scratch folder (the corpora are read-only, and nothing is written beside them). Its
   wall time is measured here, start to exit.
2. ``chunkscope eval DOCS HELDOUT --config CFG -s tuned -s recursive -s fixed -s section -s section-sentence
   -s header-window -s content-type``: the tuned preset (with the search mode tune chose) and the six seeds at
   their defaults (dense search), on the held-aside questions.

Held-aside questions: the Rust book's are the whole of ``bench/rust_book_queries.jsonl`` (50) and the
``heldout`` rows of ``bench/rust_book_tune_queries.jsonl`` (24); attrs' are the ``heldout`` rows of
``bench/attrs_queries.jsonl`` (27). Label-free tune sees none of them (nor the ``tune`` rows). With
``--labelled`` the bench also runs ``tune DOCS TUNE_ROWS`` on the ``tune`` rows and scores its winner on the same
held-aside questions. Every expectation of every file is checked against the tree first.

Vectors come from ``CHUNKSCOPE_CACHE`` (or the user cache): a warm cache lets tune measure more within the same
budget, so the report says how many texts tune embedded and how many came from the cache, and the load average.
The tables go to stdout and to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _setup import REPO, emit, load, table, write_report

BENCH = REPO / "bench"
DEFAULT_RUST = REPO.parent / "shared" / "corpus" / "rust-book"
DEFAULT_ATTRS = Path(os.environ.get("CHUNKSCOPE_ATTRS_DOCS", "/tmp/sdists/attrs-26.1.0/docs"))
SEEDS = ("recursive", "fixed", "section", "section-sentence", "header-window", "content-type")
TARGET_POINTS = 5.0


def rows_of(path: Path) -> list[dict]:
    return [json.loads(s) for s in path.read_text(encoding="utf-8").splitlines()
            if s.strip() and not s.lstrip().startswith("#")]


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def check_expectations(docs: Path, files: list[Path]) -> None:
    """Every question of every file names a section that exists (fails loudly before any work)."""
    from chunkscope.document.loader import load_docs
    from chunkscope.evaluation.queries import load_queries
    from chunkscope.evaluation.regions import resolve_region

    tree = load_docs(docs)
    for f in files:
        for q in load_queries(f):
            resolve_region(tree, q)


def chunkscope(*args: str) -> tuple[int, str, str, float]:
    """Run the command line; (exit code, stdout, stderr, wall seconds)."""
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "chunkscope", *args], capture_output=True, text=True, check=False,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return p.returncode, p.stdout, p.stderr, time.perf_counter() - t0


def run_tree(name: str, docs: Path, heldout: Path, tune_rows: Path | None, budget: str, scratch: Path,
             labelled: bool) -> dict:
    cfg = scratch / f"{name}-chunkscope.toml"
    cfg.write_text(f"# scratch configuration of bench_tune.py for {name}\n", encoding="utf-8")
    emit(f"\n## {name}: `{docs}`\n")
    emit(f"load average before tune: {load()}")
    # --write-best-so-far: the bench measures what tune found even when tune says it is no answer (and says so).
    rc, out, err, seconds = chunkscope("tune", str(docs), "--budget", budget, "--write", "--write-best-so-far",
                                       "--config", str(cfg), "--json")
    if rc != 0:
        raise SystemExit(f"tune failed ({rc}): {err.strip()[-2000:]}")
    tuned = json.loads(out)
    best = tuned["best"]
    emit(f"label-free tune: {seconds:.0f} s wall time (budget {budget}); {len(tuned['trials'])} trials over "
         f"{len(tuned['rungs'])} rungs; embedded {tuned['cache']['embedded']:,} texts, "
         f"{tuned['cache']['cached']:,} from the cache; load average after: {load()}")
    if tuned.get("no_answer"):
        emit(f"tune says this is no answer: {tuned['no_answer']} (the whole search needs about "
             f"{tuned['needed_budget']} s); the best so far is measured below")
    emit()
    emit(table(["rung", "part of the tree", "probe questions", "measured", "seconds", "stopped"],
               [[r["rung"], f"{r['fraction']:.0%} ({r['documents']} files)", r["questions"],
                 f"{r['measured']} of {r['planned']}", f"{r['seconds']:.0f}", r["stopped"] or ""]
                for r in tuned["rungs"]]))
    emit()
    emit(f"winner (rung {best['rung']}): `{best['label']}`, label-free score {best['score']:.3f}; parts: "
         + ", ".join(f"{k} {v:.3f}" for k, v in best["parts"].items() if v is not None))
    if tuned.get("reference"):
        ref = tuned["reference"]
        emit(f"tune's own evidence, best seed on the same rung: `{ref['label']}`, score {ref['score']:.3f}; parts: "
             + ", ".join(f"{k} {v:.3f}" for k, v in ref["parts"].items() if v is not None))
    emit(f"written: `[{tuned['written']['table']}]` = {json.dumps(tuned['preset'])}")
    labels = ["tuned", *SEEDS]
    extra: list[str] = []
    modes = {"tuned": tuned["preset"].get("search", "dense")}
    if labelled and tune_rows is not None:
        lcfg = scratch / f"{name}-labelled.toml"
        lcfg.write_text("", encoding="utf-8")
        rc, out, err, lsec = chunkscope("tune", str(docs), str(tune_rows), "--budget", budget, "--write",
                                        "--write-best-so-far", "--config", str(lcfg), "--json")
        if rc != 0:
            raise SystemExit(f"labelled tune failed ({rc}): {err.strip()[-2000:]}")
        lt = json.loads(out)
        emit(f"labelled tune on {lt['queries']} `tune` rows: {lsec:.0f} s; winner `{lt['best']['label']}`")
        # The labelled winner as a preset of the same file, under another name, for the one eval below.
        from chunkscope.config.presets import write_preset

        write_preset(cfg, "tuned-labelled", lt["preset"], comment="bench_tune.py: tune on the tune rows")
        extra = ["tuned-labelled"]
        modes["tuned-labelled"] = lt["preset"].get("search", "dense")
    rc, out, err, esec = chunkscope("eval", str(docs), str(heldout), "--config", str(cfg), "-k", "1,5", "--json",
                                    *[a for label in [*labels[:1], *extra, *labels[1:]] for a in ("-s", label)])
    if rc not in (0, 1):
        raise SystemExit(f"eval failed ({rc}): {err.strip()[-2000:]}")
    results = {r["strategy_label"]: r for r in json.loads(out)["results"]}
    n = len(next(iter(results.values()))["per_query"])
    emit(f"\nheld-aside questions: {n} (`eval -s tuned` and the seeds at their defaults, {esec:.0f} s)\n")
    seeds_best = max(results[s]["metrics"]["hit@5"] for s in SEEDS)
    rows = []
    for label in ["tuned", *extra, *SEEDS]:
        r = results[label]
        m = r["metrics"]
        search = modes.get(label, "dense")  # the seeds at their defaults: dense
        rows.append([f"**{label}**" if label == "tuned" else label, search, r["chunks"], f"{m['hit@5']:.3f}",
                     f"{m['mrr']:.3f}", f"{m['passage_iou@5']:.3f}",
                     f"{(m['hit@5'] - seeds_best) * 100:+.1f}"])
    emit(table(["configuration", "search", "chunks", "hit@5", "MRR", "passage IoU@5", "hit@5 vs best seed (points)"],
               rows))
    margin = (results["tuned"]["metrics"]["hit@5"] - seeds_best) * 100
    verdict = "met" if margin >= TARGET_POINTS else "NOT met"
    emit(f"\nmargin: tuned hit@5 {results['tuned']['metrics']['hit@5']:.3f} − best seed {seeds_best:.3f} = "
         f"{margin:+.1f} points (target ≥ +{TARGET_POINTS:.0f}: {verdict}); tune took {seconds:.0f} s")
    return {"tree": name, "margin": margin, "tune_seconds": seconds, "questions": n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rust", type=Path, default=DEFAULT_RUST)
    ap.add_argument("--attrs", type=Path, default=DEFAULT_ATTRS)
    ap.add_argument("--rust-budget", default="10m")
    ap.add_argument("--attrs-budget", default="5m")
    ap.add_argument("--only", choices=("rust", "attrs"), help="run one tree")
    ap.add_argument("--labelled", action="store_true", help="also tune on the tune rows and score that winner")
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench_tune.md"))
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="cs-bench-tune-"))
    emit("# bench_tune: label-free `tune` against the seed strategies, on held-aside questions")
    emit(f"\ncache: `{os.environ.get('CHUNKSCOPE_CACHE', '(user cache)')}`; scratch: `{scratch}`; "
         f"{os.cpu_count()} cores; load average {load()}")
    done = []
    trees = []
    if args.only in (None, "rust"):
        if not args.rust.is_dir():
            print(f"Rust book not found: {args.rust}", file=sys.stderr)
            return 2
        tune_file = BENCH / "rust_book_tune_queries.jsonl"
        rows = rows_of(tune_file)
        heldout = write_rows(scratch / "rust-heldout.jsonl",
                             rows_of(BENCH / "rust_book_queries.jsonl") + [r for r in rows if r["split"] == "heldout"])
        tune_rows = write_rows(scratch / "rust-tune.jsonl", [r for r in rows if r["split"] == "tune"])
        check_expectations(args.rust, [tune_file, BENCH / "rust_book_queries.jsonl"])
        trees.append(("Rust book", args.rust, heldout, tune_rows, args.rust_budget))
    if args.only in (None, "attrs"):
        if not args.attrs.is_dir():
            print(f"attrs docs not found: {args.attrs} (give --attrs or set CHUNKSCOPE_ATTRS_DOCS)", file=sys.stderr)
            return 2
        qfile = BENCH / "attrs_queries.jsonl"
        rows = rows_of(qfile)
        heldout = write_rows(scratch / "attrs-heldout.jsonl", [r for r in rows if r["split"] == "heldout"])
        tune_rows = write_rows(scratch / "attrs-tune.jsonl", [r for r in rows if r["split"] == "tune"])
        check_expectations(args.attrs, [qfile])
        trees.append(("attrs", args.attrs, heldout, tune_rows, args.attrs_budget))
    for name, docs, heldout, tune_rows, budget in trees:
        done.append(run_tree(name, docs, heldout, tune_rows, budget, scratch, args.labelled))
    emit("\n## summary\n")
    emit(table(["tree", "held-aside questions", "tuned − best seed, hit@5 (points)", "target +5", "tune wall time"],
               [[d["tree"], d["questions"], f"{d['margin']:+.1f}", "met" if d["margin"] >= TARGET_POINTS else "NOT met",
                 f"{d['tune_seconds']:.0f} s"] for d in done]))
    write_report(args.out)
    print(f"\n(written to {args.out})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

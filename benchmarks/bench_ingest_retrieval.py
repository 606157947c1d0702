#!/usr/bin/env python
"""Ingest and retrieval benchmark (a script, not a test).

1. Cold ingest of the Astro corpus into a fresh temporary CITEDOCS_HOME (parse, embed, write).
2. A no-change re-ingest of the same folder.
3. Every dev-set question plus a lowercased, punctuation-free variant of each (>= 100 queries)
   through hybrid+rerank, with per-stage latency p50/p95 (bm25, dense, fuse, rerank, total);
   the same queries without the rerank for comparison.
4. Scale: the stored chunks (with their vectors, slightly perturbed, never re-embedded) are
   replicated into a separate ~100k-chunk corpus through the store's apply_ingest, and the same
   queries are timed there without rerank (bm25, dense, fuse, total).

Prints a Markdown table and writes everything as JSON to --out. --quick skips step 4;
--ingest-only stops after step 2 (the cold-ingest speed, issue #12 item 3).
--database-url runs it all on PostgreSQL + pgvector (an empty database) instead of SQLite;
--copy-from SQLITE_FILE then replaces the cold ingest by a copy of that index (no re-embedding).
--home DIR runs on an existing index instead (no ingest; DIR is kept, and a synthetic corpus already
there at the requested size is reused, so two code versions can be timed on the same data).

    python benchmarks/bench_ingest_retrieval.py --out benchmarks/results.json
    python benchmarks/bench_ingest_retrieval.py --database-url postgresql://... --copy-from ~/.local/share/citedocs/citedocs.sqlite3
    python benchmarks/bench_ingest_retrieval.py --home /tmp/copy-of-an-astro-home --scale 100000
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CASES = ROOT / "evals" / "astro-dev.jsonl"
STAGES = ("encode", "bm25", "dense", "fuse", "rerank", "total")


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else float("nan")


def summarize(samples: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {
        stage: {
            "n": len(values),
            "p50_ms": percentile(values, 50),
            "p95_ms": percentile(values, 95),
            "mean_ms": statistics.fmean(values),
            "max_ms": max(values),
        }
        for stage, values in samples.items()
        if values
    }


class PhaseClock:
    """Progress callback that timestamps the end of the parse and embed phases of one ingest."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.last: dict[str, float] = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        self.last[phase] = time.perf_counter()

    def phases(self, finished: float) -> dict[str, float]:
        parse_end = self.last.get("parse", self.started)
        embed_end = self.last.get("embed", parse_end)
        return {
            "parse_s": parse_end - self.started,
            "embed_s": embed_end - parse_end,
            "write_s": finished - embed_end,
        }


def build_queries(cases_path: Path) -> list[str]:
    from citedocs.eval.cases import load_cases
    from citedocs.retrieve.rewrite import standalone_query_fallback

    originals = [standalone_query_fallback(c.question, c.history) for c in load_cases(cases_path)]
    variants = [" ".join(re.sub(r"[?!,;]", " ", q).lower().split()) for q in originals]
    return originals + variants


def time_queries(services, corpus: str, queries: list[str], rerank: bool, k: int = 8) -> dict[str, list[float]]:
    from citedocs.retrieve.hybrid import RetrievalConfig

    info = services.corpus(corpus)
    config = RetrievalConfig(mode="hybrid", rerank=rerank)
    samples: dict[str, list[float]] = {s: [] for s in STAGES if rerank or s != "rerank"}
    for query in queries:
        started = time.perf_counter()
        result = services.retriever.retrieve(info.name, query, k, config)
        total = (time.perf_counter() - started) * 1000
        for stage, ms in result.stage_ms.items():
            samples[stage].append(ms)
        samples["total"].append(total)
    return samples


def warm_up(services, corpus: str, rerank: bool) -> float:
    """First query on a corpus: loads its vector matrix into the cache (and warms the models)."""
    from citedocs.retrieve.hybrid import RetrievalConfig

    info = services.corpus(corpus)
    started = time.perf_counter()
    services.retriever.retrieve(info.name, "warm up query", 8, RetrievalConfig(rerank=rerank))
    return time.perf_counter() - started


def replicate(services, source: str, target: str, size: int, seed: int = 7) -> dict[str, float]:
    """Copy the source corpus' chunks and vectors into ``target`` until it holds ``size`` chunks."""
    from citedocs.index.store import ChunkVectors, CorpusInfo, IngestChanges
    from citedocs.types import ChunkId

    store = services.store
    exported = list(store.export_chunks(source))
    ids = [chunk.id for chunk, _ in exported]
    chunks = {chunk.id: chunk for chunk, _ in exported}
    matrix = np.stack([vectors.sentence for _, vectors in exported])
    rng = np.random.default_rng(seed)
    info = services.corpus(source)
    written = 0
    replica = 0
    started = time.perf_counter()
    while written < size:
        take = min(len(ids), size - written)
        noise = rng.normal(0.0, 0.02, size=(take, matrix.shape[1])).astype(np.float32)
        vectors = matrix[:take] + noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        upserts = []
        for cid, vector in zip(ids[:take], vectors):
            chunk = chunks[cid]
            prefix = f"r{replica:03d}"
            page, _, rest = chunk.id.partition("#")
            upserts.append(
                (
                    dataclasses.replace(
                        chunk,
                        id=ChunkId(f"{prefix}/{page}#{rest}"),
                        doc_path=f"{prefix}/{chunk.doc_path}",
                        url=chunk.url.replace(info.base_url, f"{info.base_url}{prefix}/", 1),
                        text=f"{chunk.text}\n\n(copy {replica})",
                    ),
                    ChunkVectors(vector, None),  # no rerank is timed at this scale
                )
            )
        written += take
        store.apply_ingest(
            IngestChanges(
                corpus=CorpusInfo(
                    name=target,
                    base_url=info.base_url,
                    source_dir=f"synthetic:{source}",
                    version=f"synthetic-{written}",
                    pipeline=info.pipeline,
                    chunk_count=written,
                    updated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                ),
                upsert_chunks=upserts,
            )
        )
        replica += 1
        if replica % 5 == 0 or written >= size:
            print(f"  replicated {written}/{size} chunks", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - started
    return {"chunks": written, "replicas": replica, "write_s": seconds, "chunks_per_s": written / seconds}


def database_mb(store) -> float:
    if getattr(store, "url", None):
        import psycopg

        with psycopg.connect(store.url) as conn:
            return conn.execute("SELECT pg_database_size(current_database())").fetchone()[0] / 1e6
    return sum(p.stat().st_size for p in store.path.parent.glob(store.path.name + "*")) / 1e6


def resident_mb() -> float:
    """This process's resident memory (Linux), after a garbage collection."""
    import gc

    gc.collect()
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def fmt(value: float) -> str:
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def markdown(report: dict) -> str:
    lines = []
    env = report["environment"]
    lines.append(f"Store: {report['store']}")
    lines.append(
        f"Machine: {env['cpus']} CPUs, torch threads {env['torch_threads']}, load average at start "
        f"{env['load_at_start']}, at end {env['load_at_end']}; {env['python']} on {env['platform']}"
    )
    lines.append("")
    lines.append("| ingest | files | chunks | embedded | seconds | chunks/s | CPU s | parse s | embed s | write s |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    if "copy" in report["ingest"]:
        copy = report["ingest"]["copy"]
        lines.append(f"| copy from SQLite (no embedding) | | {copy['chunks']} | 0 | {copy['seconds']:.1f} | | | | | |")
    for name in ("cold", "no_change"):
        if name not in report["ingest"]:
            continue
        r = report["ingest"][name]
        lines.append(
            f"| {name.replace('_', '-')} | {r['files']} | {r['chunks']} | {r['embedded']} | {r['seconds']:.1f} | "
            f"{r['chunks'] / r['seconds']:.0f} | {r.get('cpu_s', float('nan')):.0f} | "
            f"{r['parse_s']:.1f} | {r['embed_s']:.1f} | {r['write_s']:.2f} |"
        )
    lines.append(f"\nModel load (bi-encoder + reranker): {report['ingest']['model_load_s']:.1f} s\n")
    lines.append("| retrieval run | chunks | queries | stage | p50 ms | p95 ms | mean ms |")
    lines.append("|---|---|---|---|---|---|---|")
    for run in report["retrieval"]:
        for stage in STAGES:
            s = run["stages"].get(stage)
            if s:
                lines.append(
                    f"| {run['name']} | {run['chunks']} | {run['queries']} | {stage} | {fmt(s['p50_ms'])} | "
                    f"{fmt(s['p95_ms'])} | {fmt(s['mean_ms'])} |"
                )
    for run in report["retrieval"]:
        lines.append(f"\n{run['name']}: first query (loads the vector matrix) {run['first_query_s'] * 1000:.0f} ms")
    if report.get("scale"):
        s = report["scale"]
        lines.append(
            f"\nSynthetic corpus: {s['chunks']} chunks ({s['replicas']} replicas) written in {s['write_s']:.0f} s "
            f"({s['chunks_per_s']:.0f} chunks/s, no embedding); database {s['db_mb']:.0f} MB"
        )
        if "bm25_index_build_s" in s:
            lines.append(
                f"BM25 impact index: built in {s['bm25_index_build_s']:.1f} s on first use, {s['bm25_index_mb']:.0f} MB of arrays, "
                f"resident memory +{s['bm25_index_rss_mb']:.0f} MB"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="write the JSON report here")
    parser.add_argument("--quick", action="store_true", help="skip the ~100k-chunk scale run")
    parser.add_argument("--ingest-only", action="store_true", help="stop after the cold and no-change ingests")
    parser.add_argument("--docs", type=Path, help="docs folder (default: the bundled Astro docs)")
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES, help="JSONL case file for the queries")
    parser.add_argument("--scale", type=int, default=100_000, help="chunks in the synthetic corpus")
    parser.add_argument("--keep", action="store_true", help="keep the temporary CITEDOCS_HOME")
    parser.add_argument("--database-url", help="an empty PostgreSQL + pgvector database to run on instead of SQLite")
    parser.add_argument("--copy-from", type=Path, help="with --database-url: copy this SQLite index instead of a cold ingest")
    parser.add_argument("--home", type=Path, help="an existing CITEDOCS_HOME holding the Astro index: no ingest, kept")
    parser.add_argument("--scale-only", action="store_true", help="time only the synthetic corpus, not the Astro one")
    args = parser.parse_args()

    home = args.home or Path(tempfile.mkdtemp(prefix="citedocs-bench-"))
    os.environ["CITEDOCS_HOME"] = str(home)
    from citedocs import config
    from citedocs.service import Services

    docs = args.docs or config.bundled_astro_docs()
    corpus = config.ASTRO_CORPUS_NAME
    report: dict = {
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "environment": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_at_start": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        },
        "docs": str(docs),
        "store": "postgresql" if args.database_url else "sqlite",
        "retrieval": [],
    }
    try:
        from citedocs.index import copy_corpus, open_store

        services = Services(store=open_store(args.database_url or config.database_path()))
        started = time.perf_counter()
        services.encoder
        services.retriever  # builds the reranker too
        report["ingest"] = {"model_load_s": time.perf_counter() - started}
        import torch

        report["environment"]["torch_threads"] = torch.get_num_threads()

        if args.copy_from:
            started = time.perf_counter()
            source = open_store(args.copy_from)
            copied = copy_corpus(source, services.store, corpus)
            source.close()
            report["ingest"]["copy"] = {"chunks": copied, "seconds": time.perf_counter() - started}
        for name in () if args.home else ("no_change",) if args.copy_from else ("cold", "no_change"):
            print(f"ingest ({name}) of {docs} ...", file=sys.stderr, flush=True)
            clock = PhaseClock()
            cpu_started = time.process_time()
            result = services.ingest(docs, corpus, config.ASTRO_BASE_URL, clock)
            finished = time.perf_counter()
            cpu_s = time.process_time() - cpu_started  # all threads: less sensitive to other jobs than wall time
            report["ingest"][name] = {
                "files": result.files_seen,
                "chunks": result.added + result.changed + result.unchanged,
                "embedded": result.added + result.changed,
                "skipped": len(result.skipped),
                "seconds": finished - clock.started,
                "cpu_s": cpu_s,
                **clock.phases(finished),
            }

        queries = [] if args.ingest_only else build_queries(args.cases)
        astro_chunks = services.corpus(corpus).chunk_count
        for rerank in () if (args.scale_only or args.ingest_only) else (True, False):
            name = "astro hybrid+rerank" if rerank else "astro hybrid (no rerank)"
            print(f"{name}: {len(queries)} queries ...", file=sys.stderr, flush=True)
            first = warm_up(services, corpus, rerank)
            samples = time_queries(services, corpus, queries, rerank)
            report["retrieval"].append(
                {"name": name, "chunks": astro_chunks, "queries": len(queries), "first_query_s": first,
                 "stages": summarize(samples)}
            )

        if not (args.quick or args.ingest_only):
            target = f"{corpus}-x{args.scale // 1000}k"
            existing = services.store.get_corpus(target)
            if args.home and existing and existing.chunk_count == args.scale:
                scale = {"chunks": existing.chunk_count, "replicas": 0, "write_s": float("nan"), "chunks_per_s": float("nan")}
            else:
                print(f"replicating into {target} ...", file=sys.stderr, flush=True)
                scale = replicate(services, corpus, target, args.scale)
            scale["db_mb"] = database_mb(services.store)
            report["scale"] = scale
            if hasattr(services.store, "bm25_index"):  # the in-memory BM25 impact index, built on first use
                rss_before, started = resident_mb(), time.perf_counter()
                index = services.store.bm25_index(target)
                scale["bm25_index_build_s"] = time.perf_counter() - started
                scale["bm25_index_mb"] = index.nbytes / 1e6
                scale["bm25_index_rss_mb"] = resident_mb() - rss_before
            name = f"{scale['chunks'] // 1000}k hybrid (no rerank)"
            print(f"{name}: {len(queries)} queries ...", file=sys.stderr, flush=True)
            first = warm_up(services, target, rerank=False)
            samples = time_queries(services, target, queries, rerank=False)
            report["retrieval"].append(
                {"name": name, "chunks": scale["chunks"], "queries": len(queries), "first_query_s": first,
                 "stages": summarize(samples)}
            )
        services.store.close()
    finally:
        report["environment"]["load_at_end"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
        if args.keep or args.home:
            print(f"kept {home}", file=sys.stderr)
        else:
            shutil.rmtree(home, ignore_errors=True)

    report["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    table = markdown(report)
    print(table)
    report["markdown"] = table
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
        print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

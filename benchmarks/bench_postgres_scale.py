#!/usr/bin/env python
"""citedocs on PostgreSQL + pgvector at scale (a script, not a test): a corpus of --chunks chunks,
its write rate, its size on disk, hybrid+rerank retrieval latency on one and on 8 concurrent
clients, the memory of a `citedocs serve` process, and /ask throughput of one vs two processes.

How the corpus is built (embedding 100k chunks takes hours on 2 cores): the real Astro index
(every chunk with its sentence vector and packed token vectors, from a SQLite index) is copied into
the database, then replicated into one corpus until it holds --chunks chunks. Each replica's
chunks keep the real text with a line naming the replica appended (so every copy is a distinct
chunk and the lexical index holds ~N/4312 times each real posting list: longer than natural
postings, a pessimistic case for BM25), the real token vectors (the reranker's input), and the
real sentence vector plus Gaussian noise (sigma 0.02 per dimension, renormalised), so the HNSW graph
holds N distinct points. Writes go through the store's own ingest transaction (chunk rows,
postings, HNSW inserts), one transaction per replica: what an ingest costs after embedding.

    python benchmarks/bench_postgres_scale.py --source /path/to/astro/citedocs.sqlite3 \
        [--database-url postgresql://...]  [--chunks 100000] [--seconds 30] [--out results.json]

Without --database-url it starts its own server (scripts/local_postgres.py, fsync on) in a
temporary folder and removes it after. The /ask load clients wait a 503's Retry-After before their
next request, as a well-behaved client does.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import platform
import resource
import re
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from datetime import datetime, timezone
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_shed import DEFAULT_CASES, cpu_seconds, free_port, load_questions, percentile, rss_mb, serving  # noqa: E402

SOURCE_CORPUS = "astro"


@contextmanager
def own_server():
    folder = Path(tempfile.mkdtemp(prefix="citedocs-bench-pg-"))
    script = [sys.executable, str(ROOT / "scripts" / "local_postgres.py")]
    url = subprocess.run([*script, "start", str(folder / "data"), "--port", str(free_port())],
                         check=True, capture_output=True, text=True).stdout.strip()
    try:
        yield url
    finally:
        subprocess.run([*script, "stop", str(folder / "data")], check=False)
        subprocess.run(["rm", "-rf", str(folder)], check=False)


def database(server: str, name: str, reuse: bool) -> str:
    """The benchmark's database on ``server``: dropped and created again, unless ``reuse`` and it exists."""
    import psycopg

    with psycopg.connect(server, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not (reuse and exists):
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
    return server.rsplit("/", 1)[0] + "/" + name


def replicate(store, source: str, target: str, size: int, token_format: str, seed: int = 7) -> dict:
    from citedocs.index.store import ChunkVectors, CorpusInfo, IngestChanges
    from citedocs.index.token_codec import INT8, PackedTokens
    from citedocs.types import ChunkId

    exported = list(store.export_chunks(source))
    info = store.get_corpus(source)
    pipeline = info.pipeline
    if token_format != INT8:  # what ingest with setting token_format would have stored: the int8 rows, re-packed
        pipeline, found = re.subn(rf"(\+tokens\d+)-{INT8}\b", rf"\1-{token_format}", pipeline)
        if not found:
            raise SystemExit(f"--token-format {token_format} needs a source ingested with int8 token vectors; got {info.pipeline}")
        dim = len(exported[0][1].sentence)
        exported = [
            (chunk, ChunkVectors(vectors.sentence, vectors.tokens and PackedTokens.pack(vectors.tokens.unpack(dim), token_format)))
            for chunk, vectors in exported
        ]
    matrix = np.stack([vectors.sentence for _, vectors in exported])
    rng = np.random.default_rng(seed)
    written = replica = 0
    started = time.perf_counter()
    per_batch = []
    while written < size:
        take = min(len(exported), size - written)
        noisy = matrix[:take] + rng.normal(0.0, 0.02, size=(take, matrix.shape[1])).astype(np.float32)
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        prefix = f"r{replica:03d}"
        upserts = [
            (
                dataclasses.replace(
                    chunk,
                    id=ChunkId(f"{prefix}/{chunk.id}"),
                    doc_path=f"{prefix}/{chunk.doc_path}",
                    url=chunk.url.replace(info.base_url, f"{info.base_url}{prefix}/", 1),
                    text=f"{chunk.text}\n\nReplica {replica} of {chunk.doc_path}.",
                ),
                ChunkVectors(vector, vectors.tokens),
            )
            for (chunk, vectors), vector in zip(exported[:take], noisy)
        ]
        batch_started = time.perf_counter()
        store.apply_ingest(IngestChanges(
            corpus=CorpusInfo(target, info.base_url, f"synthetic:{source}", f"synthetic-{written + take}",
                              pipeline, written + take, datetime.now(timezone.utc).isoformat(timespec="seconds")),
            upsert_chunks=upserts,
        ))  # fmt: skip
        per_batch.append(take / (time.perf_counter() - batch_started))
        written += take
        replica += 1
        print(f"  {written}/{size} chunks written ({per_batch[-1]:.0f} chunks/s)", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - started
    return {"chunks": written, "transactions": replica, "write_s": round(seconds, 1),
            "chunks_per_s": round(written / seconds, 1), "first_batch_chunks_per_s": round(per_batch[0], 1),
            "last_batch_chunks_per_s": round(per_batch[-1], 1)}  # fmt: skip


def sizes_mb(url: str, dim: int) -> dict:
    import psycopg

    with psycopg.connect(url) as conn:
        one = lambda sql: conn.execute(sql).fetchone()[0] / 1e6  # noqa: E731
        return {
            "database": round(one("SELECT pg_database_size(current_database())")),
            "chunks_table_with_toast": round(one("SELECT pg_table_size('chunks')")),
            "postings_table": round(one("SELECT pg_table_size('postings')")),
            "postings_indexes": round(one("SELECT pg_indexes_size('postings')")),
            "hnsw_index": round(one(f"SELECT pg_relation_size('chunks_dense_hnsw_{dim}')")),
        }


def retrieval_latency(services, corpus: str, questions: list[str], clients: int) -> dict:
    """hybrid+rerank (the /ask retrieval: k=8) per query, ``clients`` threads in this process at once."""
    from citedocs.retrieve.hybrid import RetrievalConfig

    config = RetrievalConfig(mode="hybrid", rerank=True)
    samples: list[float] = []
    lock = threading.Lock()

    def run(offset: int) -> None:
        for n in range(offset, len(questions), clients):
            started = time.perf_counter()
            services.retriever.retrieve(corpus, questions[n], 8, config)
            with lock:
                samples.append(time.perf_counter() - started)

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(run, range(clients)))
    wall = time.perf_counter() - started
    return {"clients": clients, "queries": len(samples), "queries_per_s": round(len(samples) / wall, 2),
            "p50_ms": round(percentile(samples, 0.5) * 1000, 1), "p95_ms": round(percentile(samples, 0.95) * 1000, 1)}  # fmt: skip


async def ask_load(bases: list[str], questions: list[str], clients: int, seconds: float) -> list[tuple]:
    results: list[tuple] = []
    until = time.monotonic() + seconds

    async def client(i: int) -> None:
        base = bases[i % len(bases)]
        async with httpx.AsyncClient(timeout=120) as http:
            n = i
            while time.monotonic() < until:
                started = time.monotonic()
                response = await http.post(f"{base}/ask", json={"question": questions[n % len(questions)]})
                results.append((response.status_code, time.monotonic() - started))
                n += clients
                if response.status_code == 503:  # shed by the server's gate: wait as told, like a polite client
                    await asyncio.sleep(float(response.headers.get("retry-after", "1")))

    await asyncio.gather(*(client(i) for i in range(clients)))
    return results


def throughput(home: Path, url: str, corpus: str, processes: int, questions: list[str], clients: int, seconds: float) -> dict:
    env = {"CITEDOCS_DATABASE_URL": url, "CITEDOCS_BACKEND": "extractive", "CITEDOCS_WORKERS": "1"}
    with ExitStack() as stack:
        servers = [stack.enter_context(serving(home, corpus, env)) for _ in range(processes)]
        for server in servers:  # the first answers build the BM25 index and warm the models
            for question in questions[:3]:
                httpx.post(f"{server.base}/ask", json={"question": question}, timeout=600).raise_for_status()
        warm_rss = [round(rss_mb(s.pid, "VmRSS")) for s in servers]
        with psycopg_conn(url) as conn:  # the servers' pooled connections: their backends' CPU is the database's share
            backends = [r[0] for r in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")]
        before = cpu_accounts(servers, backends)
        results = asyncio.run(ask_load([s.base for s in servers], questions, clients, seconds))
        cpu = {k: round(after - before[k], 1) if isinstance(after, float) else [round(a - b, 1) for a, b in zip(after, before[k])]
               for k, after in cpu_accounts(servers, backends).items()}
        peak = [round(rss_mb(s.pid, "VmHWM")) for s in servers]
    ok = [s for status, s in results if status == 200]
    cpu["other_work_on_the_machine"] = round(cpu["machine_busy"] - sum(cpu["servers"]) - cpu["postgres_backends"] - cpu["load_generator"], 1)
    return {"processes": processes, "clients": clients, "seconds": seconds,
            "statuses": {str(k): sum(1 for s, _ in results if s == k) for k in {s for s, _ in results}},
            "answers_per_s": round(len(ok) / seconds, 2),
            "p50_ms": round(percentile(ok, 0.5) * 1000), "p95_ms": round(percentile(ok, 0.95) * 1000),
            "rss_mb_after_warm_up": warm_rss, "rss_mb_peak": peak,
            "cpu_s": cpu, "answers_per_server_cpu_s": round(len(ok) / max(sum(cpu["servers"]), 1e-9), 2)}  # fmt: skip


def cpu_accounts(servers, backends: list[int]) -> dict:
    """CPU seconds used so far: the machine in all (every core, every process), each server process, the
    PostgreSQL backends serving them, and this process (the load generator)."""
    first = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]  # user nice system idle iowait irq softirq steal
    ticks = [int(x) for x in first]
    own = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "machine_capacity": time.monotonic() * len(os.sched_getaffinity(0)),
        "machine_busy": (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK"),
        "servers": [cpu_seconds(s.pid) for s in servers],
        "postgres_backends": sum(cpu_seconds(pid) for pid in backends),
        "load_generator": own.ru_utime + own.ru_stime,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, required=True, help="a SQLite index holding the Astro corpus")
    parser.add_argument("--database-url", help="a PostgreSQL server (its maintenance database); default: start one")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each /ask throughput run")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--reuse", action="store_true",
                        help="with --database-url: keep a synthetic corpus of this size from an earlier run (no write timing)")
    parser.add_argument("--token-format", default="int8", choices=("int8", "pool3-q2"),
                        help="how the corpus stores the reranker's token vectors (setting token_format); default int8")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ["TQDM_DISABLE"] = "1"

    from citedocs.index import copy_corpus, open_store
    from citedocs.retrieve.hybrid import RetrievalConfig
    from citedocs.service import Services

    questions = load_questions(args.cases)
    report: dict = {
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "environment": {"cores": len(os.sched_getaffinity(0)), "cpu": platform.processor() or platform.machine(),
                        "load_at_start": " ".join(f"{x:.1f}" for x in os.getloadavg())},
    }  # fmt: skip
    target = f"{SOURCE_CORPUS}-x{args.chunks // 1000}k-{args.token_format}"
    report["token_format"] = args.token_format
    with ExitStack() as stack:
        server = args.database_url or stack.enter_context(own_server())
        url = database(server, "citedocs_scale", args.reuse)
        services = Services(store=open_store(url), backend="extractive")
        report["environment"].update(server_versions(url))
        existing = services.store.get_corpus(target)
        if args.reuse and existing and existing.chunk_count == args.chunks:
            print(f"reusing {target} ({existing.chunk_count} chunks)", file=sys.stderr, flush=True)
        else:
            source = open_store(args.source)
            copy_corpus(source, services.store, SOURCE_CORPUS)
            source.close()
            print(f"replicating {SOURCE_CORPUS} into {target} ...", file=sys.stderr, flush=True)
            report["ingest"] = replicate(services.store, SOURCE_CORPUS, target, args.chunks, args.token_format)
        dim = len(next(services.store.export_chunks(target))[1].sentence)
        with psycopg_conn(url) as conn:
            conn.execute("VACUUM ANALYZE")
        report["size_mb"] = sizes_mb(url, dim)

        started = time.perf_counter()
        index = services.store.bm25_index(target)
        report["bm25_index"] = {"build_s": round(time.perf_counter() - started, 1), "mb": round(index.nbytes / 1e6, 1)}
        services.retriever.retrieve(target, questions[0], 8, RetrievalConfig())  # warm the models
        report["retrieval"] = [retrieval_latency(services, target, questions, n) for n in (1, args.clients)]
        services.store.close()

        home = Path(tempfile.mkdtemp(prefix="citedocs-bench-home-"))
        report["serve"] = [throughput(home, url, target, n, questions, args.clients, args.seconds) for n in (1, 2)]
    report["environment"]["load_at_end"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


@contextmanager
def psycopg_conn(url: str):
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        yield conn


def server_versions(url: str) -> dict:
    with psycopg_conn(url) as conn:
        return {
            "postgresql": conn.execute("SHOW server_version").fetchone()[0],
            "pgvector": conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0],
        }


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Insights over a large history: 100k synthetic traces on SQLite and on PostgreSQL (a script, not a test).

The traces are shaped like real ones (the stages, thresholds and eight retrieved chunks a real
answer stores: about 3 kB each) with the corpus's own chunk ids: 30 days, 35 % refused, three
citations an answer, 5 % with feedback, and a docs change since (2 % of the chunks changed, 1 %
of the answers cite a section that is gone). They are written
in bulk with the columns ``save_trace`` would write (TraceColumns), so setting up takes seconds,
not the hours 100k real answers would. Then it times the report a docs team reads:

- ``summary``: the whole report without the gap grouping (counts per day and reason, latency
  percentiles, feedback, most- and never-cited pages, answers a docs change affected);
- ``gaps``: the gap grouping alone, over the newest ``insights_gap_limit`` (500) refused or
  down-voted questions: their payloads and the clustering (questions encoded as the report does).

    python benchmarks/bench_insights.py --index /work/cache/astro-seed/citedocs.sqlite3 [--traces 100000]
        [--postgres URL | --no-postgres] [--rounds 3] [--json out.json]

The SQLite index is copied first (it is not changed); for PostgreSQL the corpus is copied into a fresh
database of the server at URL, else of a throwaway server this script starts (scripts/local_postgres.py).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from citedocs.index import copy_corpus
from citedocs.index.sqlite import SQLiteStore
from citedocs.index.store import TraceColumns
from citedocs.insights import Insights, InsightsRange, cluster_questions
from citedocs.models.encoders import bi_encoder

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "evals" / "astro-dev.jsonl"
REASONS = (  # refusal reasons, weighted roughly as the dev sets' refusals fall
    ("low_retrieval_confidence", 5),
    ("question_terms_not_in_docs", 3),
    ("no_relevant_passage", 1),
    ("nothing_verifiable", 1),
)
COMMENTS = ("outdated", "missing the config example", "wrong page", "did not answer the question")


def synthetic_traces(corpus: str, tenant: str, chunk_ids: list[str], count: int, seed: int = 7):
    """(trace row, citations, feedback) tuples for ``count`` traces over the last 30 days."""
    rng = random.Random(seed)
    questions = [json.loads(line)["question"] for line in CASES.read_text().splitlines() if line.strip()]
    now = datetime.now(timezone.utc)
    reasons = [r for r, weight in REASONS for _ in range(weight)]
    for n in range(count):
        created = (now - timedelta(seconds=rng.uniform(0, 30 * 86400))).isoformat(timespec="seconds")
        refused = rng.random() < 0.35
        reason = rng.choice(reasons) if refused else ""
        base = rng.choice(questions)
        question = f"{base} ({n % 97})"
        retrieved = rng.sample(chunk_ids, 8)
        cited = [] if refused else retrieved[:3]
        payload = {
            "trace_id": f"bench{n:07d}",
            "created_at": created,
            "question": question,
            "history": [],
            "corpus": corpus,
            "backend": "extractive",
            "thresholds": {"min_retrieval_margin": 0.173, "support_min_coverage": 0.5, "support_min_similarity": 0.5},
            "retrieved": [
                {"id": cid, "score": 0.03 - i / 1000, "stages": {"bm25_rank": i, "bm25_score": 9.1, "dense_rank": i,
                                                               "dense_score": 0.61, "fused_score": 0.03, "rerank_score": 0.8}}
                for i, cid in enumerate(retrieved)
            ],
            "refused": refused,
            "refusal_reason": f"{reason}: the docs don't mention Kubernetes." if refused else None,
            "missing_terms": ["Kubernetes"] if reason == "question_terms_not_in_docs" else [],
            "cited_ids": cited,
            "cited_hashes": {},  # filled in by fill()
            "latency_ms": {"retrieve": 80.0, "total": round(rng.lognormvariate(6.5, 0.6), 1)},
        }
        feedback = None
        if rng.random() < 0.05:
            down = rng.random() < 0.66
            feedback = ("down" if down else "up", rng.choice(COMMENTS) if down and rng.random() < 0.5 else None, created)
        yield payload, base, feedback


def fill(store, corpus: str, tenant: str, count: int) -> None:
    hashes = store.chunk_hashes(corpus)
    ids = sorted(hashes)
    traces, citations, feedback = [], [], []
    # a docs change since: 2 % of the chunks read otherwise now (their citations kept an older hash),
    # and 1 % of the answers cited a section that is gone
    changed = set(random.Random(11).sample(ids, len(ids) // 50))
    for n, (payload, _question, verdict) in enumerate(synthetic_traces(corpus, tenant, ids, count)):
        if payload["cited_ids"] and n % 100 == 0:
            payload["cited_ids"][-1] = "removed-page#gone/1"
        payload["cited_hashes"] = {cid: "0" * 16 if cid in changed else hashes.get(cid, "1" * 16) for cid in payload["cited_ids"]}
        columns = TraceColumns.of(payload)
        traces.append(
            (payload["trace_id"], corpus, payload["created_at"], json.dumps(payload), tenant, *columns.row())
        )
        citations += [
            (payload["trace_id"], tenant, corpus, payload["created_at"], cid, digest) for cid, digest in columns.citations
        ]
        if verdict:
            feedback.append((payload["trace_id"], *verdict))
    if isinstance(store, SQLiteStore):
        db = store._db
        db.execute("BEGIN")
        db.executemany("INSERT INTO traces (trace_id, corpus, created_at, payload, tenant, question, refused, reason,"
                       " latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", traces)
        db.executemany("INSERT INTO trace_citations VALUES (?, ?, ?, ?, ?, ?)", citations)
        db.executemany("INSERT INTO feedback (trace_id, verdict, comment, created_at) VALUES (?, ?, ?, ?)", feedback)
        db.execute("COMMIT")
        db.execute("ANALYZE")
        return
    import psycopg

    with store._pool.connection() as conn, conn.cursor() as cursor:
        with cursor.copy("COPY traces (trace_id, corpus, created_at, payload, tenant, question, refused, reason, latency_ms)"
                         " FROM STDIN") as copy:
            for row in traces:
                copy.write_row((*row[:6], bool(row[6]), *row[7:]))
        with cursor.copy("COPY trace_citations FROM STDIN") as copy:
            for row in citations:
                copy.write_row(row)
        with cursor.copy("COPY feedback (trace_id, verdict, comment, created_at) FROM STDIN") as copy:
            for row in feedback:
                copy.write_row(row)
    with psycopg.connect(store.url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")  # the state autovacuum keeps a table in (index-only scans need it)


def measure(store, corpus: str, tenant: str, rounds: int, encoder) -> dict:
    corpora = store.list_corpora(tenant)
    scope = InsightsRange(tenant, None, datetime.now(timezone.utc) - timedelta(days=31))
    summary, summary_cpu, gaps = [], [], []
    report = None
    for _ in range(rounds):
        started, cpu = time.perf_counter(), time.process_time()
        report = Insights(store, corpora, encoder.encode, 500).report(scope, gaps=False)
        summary.append(time.perf_counter() - started)
        summary_cpu.append(time.process_time() - cpu)
        insights = Insights(store, corpora, encoder.encode, 500)
        started = time.perf_counter()
        grouped = insights.gaps(scope.filter())
        gaps.append(time.perf_counter() - started)
    return {
        "traces": report["questions"],
        "refused": report["refused"],
        "affected_answers": report["affected_answers"]["count"],
        "summary_s": [round(s, 3) for s in summary],
        "summary_median_s": round(statistics.median(summary), 3),
        # this process's CPU time: SQLite runs in it, so on a loaded machine this is close to the
        # quiet-machine wall time; PostgreSQL's work is in its server process and not counted here
        "summary_cpu_median_s": round(statistics.median(summary_cpu), 3),
        "gaps_s": [round(s, 3) for s in gaps],
        "gaps_median_s": round(statistics.median(gaps), 3),
        "gap_groups": len(grouped["groups"]),
        "gap_questions": grouped["considered"],
    }


def postgres_url(given: str | None) -> tuple[str, Path | None]:
    if given:
        return given, None
    data = Path(tempfile.mkdtemp(prefix="citedocs-bench-pg-")) / "data"
    script = [sys.executable, str(ROOT / "scripts" / "local_postgres.py")]
    port = 55000 + os.getpid() % 1000
    url = subprocess.run([*script, "start", str(data), "--port", str(port), "--fast"], check=True,
                         capture_output=True, text=True).stdout.strip()
    return url, data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="a SQLite index holding --corpus (copied, not changed)")
    parser.add_argument("--corpus", default="astro")
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", help="a PostgreSQL server URL (default: start a throwaway one)")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    tenant = "default"
    encoder = bi_encoder()
    encoder.encode(["warm up"])
    cluster_questions(encoder.encode(["warm up", "scikit-learn's import (2-3 s) is paid once a process"]))
    results = {}
    work = Path(tempfile.mkdtemp(prefix="citedocs-bench-insights-"))
    try:
        shutil.copy(args.index, work / "citedocs.sqlite3")
        sqlite = SQLiteStore(work / "citedocs.sqlite3")
        started = time.perf_counter()
        fill(sqlite, args.corpus, tenant, args.traces)
        print(f"sqlite: wrote {args.traces} traces in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        results["sqlite"] = measure(sqlite, args.corpus, tenant, args.rounds, encoder)
        results["sqlite"]["load_average"] = [round(x, 2) for x in os.getloadavg()]
        print(json.dumps({"sqlite": results["sqlite"]}), file=sys.stderr)
        if not args.no_postgres:
            from citedocs.index.postgres import PostgresStore
            import psycopg

            server, data = postgres_url(args.postgres)
            try:
                name = f"citedocs_bench_insights_{os.getpid()}"
                with psycopg.connect(server, autocommit=True) as conn:
                    conn.execute(f'CREATE DATABASE "{name}"')
                postgres = PostgresStore(server.rsplit("/", 1)[0] + "/" + name)
                started = time.perf_counter()
                copy_corpus(sqlite, postgres, args.corpus)
                fill(postgres, args.corpus, tenant, args.traces)
                print(f"postgres: copied the corpus and wrote the traces in {time.perf_counter() - started:.1f} s", file=sys.stderr)
                results["postgres"] = measure(postgres, args.corpus, tenant, args.rounds, encoder)
                results["postgres"]["load_average"] = [round(x, 2) for x in os.getloadavg()]
                postgres.close()
            finally:
                if data is not None:
                    subprocess.run([sys.executable, str(ROOT / "scripts" / "local_postgres.py"), "stop", str(data)], check=False)
                    shutil.rmtree(data.parent, ignore_errors=True)
        sqlite.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["machine"] = {"cpus": os.cpu_count(), "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

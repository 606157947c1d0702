#!/usr/bin/env python
"""Throughput and latency of `citedocs serve` under load (a script, not a test): loopback only, bounded.

Copies an index (default: the reference Astro index) into a fresh temporary CITEDOCS_HOME, starts
one real `citedocs serve` on it (extractive backend, per-IP rate limit off: every client is
127.0.0.1; workers, threads and the gate as the server decides them, or as the environment sets
them), then for each level of concurrency (1, 4, 16, 64 closed-loop httpx clients) asks dev-set
questions on ``/ask`` for a fixed time. Each client starts at its own place in the question list
and walks through it, so concurrent requests ask different questions; the server keeps no answer
cache, and the only caches a repeated question can hit are those of the pipeline itself (docs/benchmarks/latency.md,
"Server under load", says which). After a 503 a client waits its Retry-After, as a
well-behaved client does. Prints one Markdown table: requests/s (answered), p50/p95/p99 of the
answered requests, and every status seen, per level, with the load average and server RSS.

    python benchmarks/bench_serve.py [--index ~/.local/share/citedocs/citedocs.sqlite3] [--corpus astro]
        [--levels 1,4,16,64] [--seconds 20] [--out results-serve.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

from citedocs import config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_shed import DEFAULT_CASES, cpu_seconds, load_questions, percentile, rss_mb, run_load, serving  # noqa: E402

WARMUP_REQUESTS = 4  # the first answers load lazily built state; they are not measured


def warm_up(base: str, questions: list[str]) -> None:
    with httpx.Client(timeout=120) as http:
        for question in questions[:WARMUP_REQUESTS]:
            http.post(f"{base}/ask", json={"question": question}).raise_for_status()


def level(base: str, pid: int, questions: list[str], clients: int, seconds: float) -> dict:
    load_before = os.getloadavg()[0]
    cpu_before = cpu_seconds(pid)
    results, peak_rss = asyncio.run(run_load(base, questions, clients, seconds, pid))
    cpu_used = cpu_seconds(pid) - cpu_before
    ok = [s for status, s in results if status == 200]
    return {
        "clients": clients,
        "seconds": seconds,
        "answered_per_s": round(len(ok) / seconds, 2),
        "p50_s": percentile(ok, 0.5),
        "p95_s": percentile(ok, 0.95),
        "p99_s": percentile(ok, 0.99),
        # server CPU per answer (503s included in the CPU): on a shared machine this, not requests/s,
        # says what the server costs; cores / this is what it would serve with the cores to itself
        "server_cpu_ms_per_answer": round(1000 * cpu_used / len(ok), 1) if ok else None,
        "statuses": dict(sorted(Counter(str(status) for status, _ in results).items())),
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "server_rss_mb_peak": round(peak_rss),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--index", type=Path, default=config.database_path(), help="a citedocs.sqlite3 to copy (never written; default: your own index, as `make demo` built it)"
    )
    parser.add_argument("--corpus", default="astro")
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES, help="JSONL with a `question` per line")
    parser.add_argument("--levels", default="1,4,16,64", help="concurrent clients per level, comma-separated")
    parser.add_argument("--seconds", type=float, default=20.0, help="duration of each level")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]
    if not all(1 <= n <= 256 for n in levels) or not 1 <= args.seconds <= 120:
        parser.error("keep it bounded: 1-256 clients per level, 1-120 seconds per level")
    if not args.index.is_file():
        parser.error(f"--index {args.index} is not a file; point it at a CITEDOCS_HOME's citedocs.sqlite3")

    questions = load_questions(args.cases)
    env = {"CITEDOCS_BACKEND": "extractive"}
    with tempfile.TemporaryDirectory(prefix="citedocs-bench-serve-") as home:
        shutil.copyfile(args.index, Path(home) / "citedocs.sqlite3")
        with serving(Path(home), args.corpus, env) as server:
            warm_up(server.base, questions)
            idle_rss = rss_mb(server.pid, "VmRSS")
            rows = []
            for clients in levels:
                rows.append(level(server.base, server.pid, questions, clients, args.seconds))
                time.sleep(2)  # let the queue drain between levels
    report = {
        "cores": len(os.sched_getaffinity(0)),
        "distinct_questions": len(questions),
        "settings": {k: v for k, v in os.environ.items() if k.startswith(("CITEDOCS_MAX", "CITEDOCS_WORKERS", "CITEDOCS_THREADS"))},
        "server_rss_mb_idle": round(idle_rss),
        "levels": rows,
    }
    print(json.dumps({k: v for k, v in report.items() if k != "levels"}))
    print("| clients | answered/s | p50 s | p95 s | p99 s | statuses | server CPU ms / answer | load avg (start → end) | server RSS peak MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        statuses = ", ".join(f"{k}: {v}" for k, v in row["statuses"].items())
        load = f"{row['load_average'][0]} → {row['load_average'][1]}"
        print(
            f"| {row['clients']} | {row['answered_per_s']} | {row['p50_s']} | {row['p95_s']} | {row['p99_s']} "
            f"| {statuses} | {row['server_cpu_ms_per_answer']} | {load} | {row['server_rss_mb_peak']} |"
        )
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Query latency on an existing index, without ingesting anything (a script, not a test).

The dev questions and their lowercased variants (as bench_ingest_retrieval.py builds them) run
through hybrid+rerank and plain hybrid; prints p50/p95 per stage, the BLAS and torch thread counts
the process ran with and the load average. Meant for before/after comparisons of one change on
the same index: run it alternately with each version and compare medians from the same session.

    CITEDOCS_HOME=DIR python benchmarks/bench_query.py [--corpus astro] [--rounds 2] [--limit N] [--no-plain]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ingest_retrieval import DEFAULT_CASES, build_queries, summarize, time_queries, warm_up  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="astro")
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--rounds", type=int, default=1, help="passes over the queries")
    parser.add_argument("--limit", type=int, help="only the first N queries (a quick look on a busy machine)")
    parser.add_argument("--no-plain", action="store_true", help="hybrid+rerank only")
    args = parser.parse_args()
    import torch
    from threadpoolctl import threadpool_info

    from citedocs.service import Services

    services = Services.open()
    queries = build_queries(args.cases)[: args.limit] * args.rounds
    load_before = os.getloadavg()[0]
    report = {}
    for label, rerank in (("hybrid+rerank", True), ("hybrid", False))[: 1 if args.no_plain else 2]:
        warm_up(services, args.corpus, rerank)
        report[label] = summarize(time_queries(services, args.corpus, queries, rerank))
    blas = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
    print(json.dumps({"threads": {"torch": torch.get_num_threads(), "blas": blas}, "queries": len(queries),
                      "load_average": [load_before, os.getloadavg()[0]]}))
    print("| mode | stage | p50 ms | p95 ms |\n|---|---|---|---|")
    for label, stages in report.items():
        for stage, figures in stages.items():
            print(f"| {label} | {stage} | {figures['p50_ms']:.1f} | {figures['p95_ms']:.1f} |")


if __name__ == "__main__":
    main()

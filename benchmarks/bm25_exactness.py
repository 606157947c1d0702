#!/usr/bin/env python
"""The impact index against FTS5's own bm25() on an existing SQLite index (a check, not a test).

For every question of a case file (and, with --variants, the bench's lowercased variant of each),
compares ``SQLiteStore.lexical_search`` (impact index) with ``SQLiteStore.fts5_search`` (FTS5's
bm25()) at k = 50, OR and match_all: ids, order and scores must be identical.

    CITEDOCS_HOME=... python benchmarks/bm25_exactness.py --corpus astro --cases evals/astro-dev.jsonl
    python benchmarks/bm25_exactness.py --home H --corpus astro-x100k --cases evals/astro-dev.jsonl --variants --or-only
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ingest_retrieval import DEFAULT_CASES, build_queries  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, help="CITEDOCS_HOME (default: the configured one)")
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--variants", action="store_true", help="add the bench's lowercased variant of each question")
    parser.add_argument("--or-only", action="store_true", help="skip the match_all comparisons")
    args = parser.parse_args()
    if args.home:
        os.environ["CITEDOCS_HOME"] = str(args.home)
    from citedocs import config
    from citedocs.index.sqlite import SQLiteStore
    from citedocs.text import query_terms

    store = SQLiteStore(config.database_path())
    queries = build_queries(args.cases)
    if not args.variants:
        queries = queries[: len(queries) // 2]
    started = time.perf_counter()
    store.bm25_index(args.corpus)
    print(f"index built in {time.perf_counter() - started:.1f} s", flush=True)
    same = runs = 0
    fast_s = fts5_s = 0.0
    for question in queries:
        terms = query_terms(question)
        for match_all in (False,) if args.or_only else (False, True):
            t0 = time.perf_counter()
            fast = store.lexical_search(args.corpus, terms, 50, match_all)
            t1 = time.perf_counter()
            reference = store.fts5_search(args.corpus, terms, 50, match_all)
            fast_s, fts5_s = fast_s + t1 - t0, fts5_s + time.perf_counter() - t1
            runs += 1
            same += fast == reference
            if fast != reference:
                print(f"DIFFERS: {terms} match_all={match_all}")
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"{args.corpus}: {same}/{runs} identical (ids, order, scores); impact {fast_s / runs * 1000:.1f} ms a query,"
        f" FTS5 {fts5_s / runs * 1000:.1f} ms; load average {load}"
    )
    return 0 if same == runs else 1


if __name__ == "__main__":
    raise SystemExit(main())

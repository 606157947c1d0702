#!/usr/bin/env python
"""How a serve process gets a corpus's BM25 index on PostgreSQL (a script, not a test): built from
the postings (what the first process after a new corpus version does) against loaded from the
snapshot that process stores for the others. Each way runs in a fresh process, --rounds times,
reporting seconds and the process's peak RSS, and checks that both give the same arrays.

    python benchmarks/bench_bm25_load.py --database-url postgresql://.../citedocs_scale \
        --corpus astro-x1000k-pool3-q2 [--rounds 3] [--out results.json]

The database is one `bench_postgres_scale.py` filled (its `citedocs_scale` database). Building
deletes the corpus's stored snapshot first, and the last build stores it again.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ONE_RUN = """
import hashlib, json, resource, sys, time
import numpy as np
from citedocs.index.postgres import PostgresStore
url, corpus, way = sys.argv[1:4]
store = PostgresStore(url)
if way == "build":
    with store._connection() as conn:
        conn.execute("DELETE FROM bm25_snapshots WHERE corpus = %s", (corpus,))
started = time.perf_counter()
index = store.bm25_index(corpus)
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
digest = hashlib.sha256()
for array in (index._chunks, index._tf_part, index._indptr):
    digest.update(np.ascontiguousarray(array).tobytes())
digest.update("\\0".join(index.chunk_ids).encode())
store.close()  # after a build: waits for the snapshot's write
print(json.dumps({"seconds": round(seconds, 2), "peak_rss_mb": round(peak), "arrays_mb": round(index.nbytes / 1e6, 1),
                  "sha256": digest.hexdigest()[:16]}))
"""


def run(url: str, corpus: str, way: str) -> dict:
    done = subprocess.run([sys.executable, "-c", ONE_RUN, url, corpus, way], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report: dict = {"corpus": args.corpus}
    for way in ("build", "load"):
        runs = [run(args.database_url, args.corpus, way) for _ in range(args.rounds)]
        print(way, runs, file=sys.stderr, flush=True)
        report[way] = {"median_s": statistics.median(r["seconds"] for r in runs),
                       "median_peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in runs), "runs": runs}  # fmt: skip
    report["same_arrays"] = len({r["sha256"] for way in ("build", "load") for r in report[way]["runs"]}) == 1
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0 if report["same_arrays"] else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Cold ingest speed per encoder runtime (a script, not a test).

Runs ``citedocs ingest`` on the same docs folder into a fresh temporary CITEDOCS_HOME once per
runtime and round, alternating the order each round so machine load hits every runtime alike, and
prints chunks/s (wall) and CPU seconds per 1000 chunks (the ingest process's user+system time, which
other jobs on a shared machine disturb less than wall time), with the load average around each run
and the CPU's VNNI flag. The ONNX graphs must already be built (``make install`` does it).

    python benchmarks/bench_ingest_runtimes.py evals/corpora/flask-docs \\
        --base-url https://flask.palletsprojects.com/en/stable/ --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cpu_has_vnni() -> bool:
    """AVX-512 VNNI, from cpuid as numpy's kernel dispatch reads it (ONNX Runtime's int8 kernels use it when present)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_features__
    return bool(__cpu_features__.get("AVX512VNNI"))


def load() -> float:
    return os.getloadavg()[0]


def ingest_once(docs: Path, base_url: str | None, runtime: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="citedocs-bench-runtime-") as home:
        env = {**os.environ, "CITEDOCS_HOME": home, "CITEDOCS_ENCODER_RUNTIME": runtime}
        command = [sys.executable, "-m", "citedocs.cli", "ingest", str(docs), "--corpus", "bench"]
        command += ["--base-url", base_url] if base_url else []
        before, load_before, started = resource.getrusage(resource.RUSAGE_CHILDREN), load(), time.perf_counter()
        out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    chunks = int(re.search(r"chunks: (\d+) added", " ".join(out.split())).group(1))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"runtime": runtime, "chunks": chunks, "wall_s": wall, "chunks_per_s": chunks / wall, "cpu_s": cpu,
            "cpu_s_per_1000_chunks": 1000 * cpu / chunks, "load_before": load_before, "load_after": load()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("docs", type=Path)
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--runtimes", default="onnx-fp32,onnx-int8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="write every run as JSON here")
    args = parser.parse_args()

    runtimes = args.runtimes.split(",")
    runs = []
    for round_ in range(args.rounds):
        for runtime in runtimes if round_ % 2 == 0 else runtimes[::-1]:
            run = ingest_once(args.docs, args.base_url, runtime)
            runs.append(run)
            print(f"round {round_ + 1} {runtime}: {run['chunks']} chunks in {run['wall_s']:.1f} s = {run['chunks_per_s']:.1f} "
                  f"chunks/s, {run['cpu_s']:.1f} CPU s (load {run['load_before']:.1f} -> {run['load_after']:.1f})", flush=True)
    print(f"\nCPU with AVX-512 VNNI: {cpu_has_vnni()}; {os.cpu_count()} logical CPUs")
    print("| runtime | runs | chunks/s (median) | CPU s per 1000 chunks (median) | load average during runs |")
    print("|---|---|---|---|---|")
    for runtime in runtimes:
        mine = [r for r in runs if r["runtime"] == runtime]
        loads = [x for r in mine for x in (r["load_before"], r["load_after"])]
        print(f"| {runtime} | {len(mine)} | {statistics.median(r['chunks_per_s'] for r in mine):.1f} | "
              f"{statistics.median(r['cpu_s_per_1000_chunks'] for r in mine):.0f} | {min(loads):.1f}-{max(loads):.1f} |")
    if args.out:
        args.out.write_text(json.dumps({"vnni": cpu_has_vnni(), "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

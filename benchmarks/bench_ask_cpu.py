#!/usr/bin/env python
"""CPU time of one extractive /ask, in process, without HTTP (a script, not a test).

Runs the first N dev questions through ``Services.ask`` three times in one process: the first
pass finds every cache empty (cold: each docs sentence is embedded), the next two find the
sentences the first pass embedded (warm). Prints CPU ms (``time.process_time``, which a busy
machine inflates far less than wall time) and wall ms per answer, with the load average. Set
``CITEDOCS_THREADS=1`` to measure what one server worker spends.

    CITEDOCS_HOME=DIR CITEDOCS_THREADS=1 python benchmarks/bench_ask_cpu.py [--limit 30] [--corpus astro]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CASES = ROOT / "evals" / "astro-dev.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="astro")
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--limit", type=int, default=30)
    args = parser.parse_args()
    from citedocs.contract import AskRequest
    from citedocs.service import Services

    questions = [json.loads(line)["question"] for line in args.cases.read_text().splitlines() if line.strip()]
    services = Services.open(backend="extractive")
    services.ask(AskRequest(question=questions[0], corpus=args.corpus))  # loads the models
    measured = questions[1 : 1 + args.limit]
    for label in ("cold", "warm", "warm again"):
        load, cpu, wall = os.getloadavg()[0], time.process_time(), time.perf_counter()
        for question in measured:
            services.ask(AskRequest(question=question, corpus=args.corpus))
        n = len(measured)
        print(
            f"{label}: {1000 * (time.process_time() - cpu) / n:.1f} CPU ms / answer, "
            f"{1000 * (time.perf_counter() - wall) / n:.1f} wall ms, {n} questions, load average {load:.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()

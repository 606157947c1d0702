#!/usr/bin/env python
"""What a provider fallback costs (a script, not a test): answers through two stand-in providers
(tests/openai_standin.py, separate processes on loopback, streaming ~50 words a second) while the
first fails a seeded share of its requests: HTTP 500, HTTP 429 with Retry-After: 1, and a process
death mid-stream (the stand-in is restarted for the next request).

Prints the share of answers that needed the second provider, and answer latency p50/p95 when the
first answered against when the answer fell back, per kind of failure. The stand-ins' answers are
quotes of the first retrieved chunk, so this measures the plumbing, never answer quality.

    python benchmarks/bench_provider_fallback.py [--answers 60] [--seed 7]
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
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STANDIN = ROOT / "tests" / "openai_standin.py"
PAGES = ("guides/deploy/heroku.mdx", "recipes/add-yaml-support.mdx", "reference/errors/missing-sharp.mdx", "guides/backend/index.mdx")
QUESTIONS = (
    "How do I deploy my Astro site to Heroku?",
    "How do I import YAML files into my Astro components?",
    "What should I do about the MissingSharp error?",
    "Which backend services can I use with Astro?",
)
MIX = {"ok": 0.7, "500": 0.1, "429:1": 0.1, "die:4": 0.1}


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(port: int, script: str, log: Path) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, str(STANDIN), "--port", str(port), "--script", script, "--log", str(log)], stdout=subprocess.PIPE
    )
    process.stdout.readline()
    return process


def percentile(values: list[float], q: float) -> float | None:
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1], 1) if len(values) > 1 else (values[0] if values else None)


def copy_pages(docs: Path) -> Path:
    """The benchmark's four Astro pages, copied into ``docs``."""
    for page in PAGES:
        (docs / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "evals" / "corpora" / "astro-docs" / "docs" / page, docs / page)
    return docs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="fallback-bench-"))
    docs = copy_pages(home / "docs")
    primary_port, backup_port = free_port(), free_port()
    providers = [
        {"name": "primary", "base_url": f"http://127.0.0.1:{primary_port}/v1", "model": "a", "structured": "off", "retries": 1},
        {"name": "backup", "base_url": f"http://127.0.0.1:{backup_port}/v1", "model": "b", "structured": "off"},
    ]
    os.environ.update(
        CITEDOCS_HOME=str(home), CITEDOCS_DATABASE_URL="", CITEDOCS_BACKEND="providers", CITEDOCS_LLM_GRADE="off",
        CITEDOCS_LLM_VERIFY="off", CITEDOCS_LLM_ANSWER="write", CITEDOCS_SUGGESTED_QUESTIONS="off",
        CITEDOCS_LLM_PROVIDERS=json.dumps(providers), CITEDOCS_LLM_BREAKER_FAILURES="1000",
    )
    from citedocs.contract import AskRequest
    from citedocs.service import Services

    services = Services.open()
    services.ingest(docs, "bench", "https://docs.astro.build/en/")
    rng = random.Random(args.seed)
    steps = rng.choices(list(MIX), weights=list(MIX.values()), k=args.answers)
    backup = start(backup_port, "", home / "backup.jsonl")
    primary = None
    latencies: dict[str, list[float]] = defaultdict(list)
    fell_back = 0
    try:
        for n, step in enumerate(steps):
            # a fresh first provider per answer: its first request behaves as drawn, a retry gets "ok"
            if primary is not None and primary.poll() is None:
                primary.kill()
                primary.wait()
            primary = start(primary_port, step, home / "primary.jsonl")
            started = time.perf_counter()
            response = services.ask(AskRequest(question=QUESTIONS[n % len(QUESTIONS)], corpus="bench"))
            elapsed = (time.perf_counter() - started) * 1000
            trace = services.trace(response.trace_id)
            assert not response.refused, response.refusal_reason
            if trace["provider"] != "primary":
                fell_back += 1
            latencies[step].append(elapsed)
            latencies["all"].append(elapsed)
    finally:
        for process in (primary, backup):
            if process is not None and process.poll() is None:
                process.kill()
    print(f"{args.answers} answers, first provider's failure mix {MIX} (seed {args.seed}); retries = 1 on the first provider")
    print(f"answers that needed the second provider: {fell_back} ({fell_back / args.answers:.0%})")
    for step, values in latencies.items():
        print(f"{step:>6}: {len(values):3d} answers, p50 {percentile(values, 50)} ms, p95 {percentile(values, 95)} ms")


if __name__ == "__main__":
    main()

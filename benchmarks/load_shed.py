#!/usr/bin/env python
"""Load test of one `citedocs serve` process (a script, not a test): loopback only, bounded.

Starts `citedocs serve` on 127.0.0.1 over an existing CITEDOCS_HOME (``--home``), then runs
``--clients`` closed-loop clients for ``--seconds``, each asking dev-set questions one after the
other on ``/ask`` (after a 503, waiting its Retry-After as a well-behaved client does). Reports successes and their latency (p50/p99/max), 503 `overloaded` answers and
how fast they came back, any other status, throughput, and the server's peak RSS. The per-IP
rate limit is switched off (every client is 127.0.0.1): this measures the load-shedding gate.

    python benchmarks/load_shed.py --home ~/.local/share/citedocs --corpus astro --clients 64 --seconds 30
    python benchmarks/load_shed.py --home H --corpus C --clients 1 --seconds 30   # capacity, no contention

Extra server settings go through the environment as usual (CITEDOCS_MAX_IN_FLIGHT, CITEDOCS_MAX_QUEUE,
CITEDOCS_MAX_QUEUE_WAIT_S, CITEDOCS_BACKEND, ...). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CASES = ROOT.parent / "shared" / "evals" / "astro-dev.jsonl"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mb(pid: int, field: str) -> float:
    """VmRSS (now) or VmHWM (peak) of a process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


async def client(base: str, questions: list[str], offset: int, until: float, results: list) -> None:
    async with httpx.AsyncClient(timeout=120) as http:
        n = offset
        while time.monotonic() < until:
            started = time.monotonic()
            try:
                response = await http.post(f"{base}/ask", json={"question": questions[n % len(questions)]})
                status = response.status_code
            except httpx.HTTPError as exc:
                status = type(exc).__name__
            results.append((status, time.monotonic() - started))
            n += 1
            if status == 503:  # a well-behaved client waits as told before asking again
                await asyncio.sleep(float(response.headers.get("retry-after", "1")))


async def run_load(base: str, questions: list[str], clients: int, seconds: float, pid: int) -> tuple[list, float]:
    results: list = []
    until = time.monotonic() + seconds
    peak = 0.0

    async def sample_rss() -> None:
        nonlocal peak
        while time.monotonic() < until:
            peak = max(peak, rss_mb(pid, "VmRSS"))
            await asyncio.sleep(0.5)

    await asyncio.gather(sample_rss(), *(client(base, questions, i, until, results) for i in range(clients)))
    return results, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, required=True, help="CITEDOCS_HOME holding the index")
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES, help="JSONL with a `question` per line")
    args = parser.parse_args()
    if not 1 <= args.clients <= 256 or not 1 <= args.seconds <= 600:
        parser.error("keep it bounded: 1-256 clients, 1-600 seconds")

    questions = [json.loads(line)["question"] for line in args.cases.read_text().splitlines() if line.strip()]
    port = free_port()
    env = {**os.environ, "CITEDOCS_HOME": str(args.home), "CITEDOCS_CORPUS": args.corpus, "CITEDOCS_RATE_LIMIT_PER_MINUTE": "0"}
    server = subprocess.Popen(
        [sys.executable, "-m", "citedocs.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 180
        while time.time() < deadline:
            try:
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            sys.exit("citedocs serve did not become ready")
        idle_rss = rss_mb(server.pid, "VmRSS")
        load_before = os.getloadavg()
        results, peak_rss = asyncio.run(run_load(base, questions, args.clients, args.seconds, server.pid))
        peak_hwm = rss_mb(server.pid, "VmHWM")
    finally:
        server.terminate()
        server.wait(timeout=30)

    ok = [s for status, s in results if status == 200]
    shed = [s for status, s in results if status == 503]
    print(json.dumps({
        "clients": args.clients,
        "seconds": args.seconds,
        "cores": len(os.sched_getaffinity(0)),
        "load_average_before": load_before,
        "settings": {k: v for k, v in os.environ.items() if k.startswith("CITEDOCS_MAX") or k == "CITEDOCS_BACKEND"},
        "statuses": dict(Counter(str(status) for status, _ in results)),
        "answered_per_s": round(len(ok) / args.seconds, 2),
        "success_latency_s": {"p50": percentile(ok, 0.5), "p99": percentile(ok, 0.99), "max": percentile(ok, 1.0)},
        "shed_latency_s": {"p50": percentile(shed, 0.5), "p99": percentile(shed, 0.99), "max": percentile(shed, 1.0)},
        "server_rss_mb": {"idle": round(idle_rss), "peak_sampled": round(peak_rss), "peak_hwm": round(peak_hwm)},
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()

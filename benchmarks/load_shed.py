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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CASES = ROOT / "evals" / "astro-dev.jsonl"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _descendants(pid: int) -> list[int]:
    try:
        children = [int(c) for t in Path(f"/proc/{pid}/task").iterdir() for c in (t / "children").read_text().split()]
    except OSError:
        return []
    return children + [d for c in children for d in _descendants(c)]


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) used so far by a process and its live children (the server's workers)."""
    total = 0
    for member in (pid, *_descendants(pid)):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
    return total / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int, field: str) -> float:
    """VmRSS (now) or VmHWM (peak) of a process and its children (the server's workers), in MB."""
    total = 0.0
    for member in (pid, *_descendants(pid)):
        try:
            lines = Path(f"/proc/{member}/status").read_text().splitlines()
        except OSError:
            continue
        total += next((int(line.split()[1]) / 1024 for line in lines if line.startswith(field + ":")), 0.0)
    return total


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


def load_questions(cases: Path) -> list[str]:
    return [json.loads(line)["question"] for line in cases.read_text().splitlines() if line.strip()]


@dataclass
class Server:
    pid: int
    base: str


@contextmanager
def serving(home: Path, corpus: str, extra_env: dict[str, str] | None = None) -> Iterator[Server]:
    """A `citedocs serve` on a free loopback port over ``home``, ready when yielded, stopped after.
    The per-IP rate limit is off: every load client is 127.0.0.1."""
    port = free_port()
    env = {
        **os.environ,
        "CITEDOCS_HOME": str(home),
        "CITEDOCS_CORPUS": corpus,
        "CITEDOCS_RATE_LIMIT_PER_MINUTE": "0",
        **(extra_env or {}),
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "citedocs.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            if server.poll() is not None:
                sys.exit(f"citedocs serve exited with status {server.returncode} before it was ready")
            try:
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        else:
            sys.exit("citedocs serve did not become ready")
        yield Server(server.pid, base)
    finally:
        server.terminate()
        server.wait(timeout=60)


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

    questions = load_questions(args.cases)
    with serving(args.home, args.corpus) as server:
        idle_rss = rss_mb(server.pid, "VmRSS")
        load_before = os.getloadavg()
        results, peak_rss = asyncio.run(run_load(server.base, questions, args.clients, args.seconds, server.pid))
        peak_hwm = rss_mb(server.pid, "VmHWM")

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

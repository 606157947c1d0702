"""`citedocs serve` runs one worker process per core, each with one torch thread (threads.py): the
cores answer different requests at once. Every worker must answer exactly as one process does."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from citedocs import threads

from conftest import running_server

QUESTIONS = (
    "How do I deploy my Astro site to Heroku?",
    "How can I import YAML files in Astro?",
    "What does the MissingSharp error mean and how do I fix it?",
    "Which backend services can I use with Astro?",
)


def answers(base: str, rounds: int) -> list[dict]:
    def ask(question: str) -> dict:
        response = httpx.post(f"{base}/ask", json={"question": question}, timeout=120)
        assert response.status_code == 200, response.text
        body = response.json()
        return {"question": question, "answer": body["answer"], "citations": [c["id"] for c in body["citations"]]}

    # 3 at once: the kernel, not the load, picks a worker for each connection, and one worker (1 slot +
    # 2 queue places on 2 cores) must be able to take them all without shedding
    with ThreadPoolExecutor(3) as pool:
        return list(pool.map(ask, QUESTIONS * rounds))


def started_workers(log_path: Path, expected: int = 2, timeout_s: float = 180) -> set[int]:
    """The pids of the uvicorn worker processes that have started serving (the first answers /readyz
    while the second may still be loading its models)."""
    deadline = time.time() + timeout_s
    while True:
        records = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
        pids = {r["pid"] for r in records if r["msg"].startswith("Started server process")}
        if len(pids) >= expected or time.time() > deadline:
            return pids
        time.sleep(0.5)


def test_two_workers_answer_exactly_like_one_process_each_on_its_own_torch_thread(small_home: Path):
    patient = {"CITEDOCS_DATABASE_URL": "", "CITEDOCS_MAX_QUEUE_WAIT_S": "300"}  # answers, not shedding, are tested here
    with running_server(small_home, CITEDOCS_WORKERS="1", **patient) as (base, _):
        single = answers(base, rounds=1)
    with running_server(small_home, CITEDOCS_WORKERS="2", **patient) as (base, log_path):
        assert len(started_workers(log_path)) == 2
        multi = answers(base, rounds=2)
        gauges = [httpx.get(f"{base}/metrics", timeout=10).text for _ in range(4)]
    assert multi == single * 2  # every worker, cold or warm cache, gives the single process's answers
    per_worker = max(1, threads.usable_cores() // 2)
    for text in gauges:
        found = dict(re.findall(r'^citedocs_threads\{library="(\w+)"\} ([\d.]+)$', text, re.M))
        assert found["torch"] == f"{per_worker}.0" and found["blas"] == "1.0"


def test_the_local_backend_keeps_one_worker_and_the_setting_overrides():
    assert threads.serve_workers("local") == 1
    assert threads.serve_workers("extractive") == threads.usable_cores()


def test_a_bad_workers_setting_is_a_clear_error(small_home: Path):
    result = subprocess.run(
        [sys.executable, "-m", "citedocs.cli", "serve", "--port", "1"],
        env={**os.environ, "CITEDOCS_HOME": str(small_home), "CITEDOCS_WORKERS": "0", "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "CITEDOCS_WORKERS" in result.stderr and "at least 1" in result.stderr

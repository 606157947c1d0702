"""Thread counts are decided in one place (citedocs/threads.py) and hold in every citedocs process.

OpenBLAS threads spin-waiting beside torch's made each query ~4x slower on 2 cores (issue #12),
so these check the real processes: the CLI's and a running ``citedocs serve``'s.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import httpx
from typer.testing import CliRunner

from citedocs import threads
from citedocs.cli import app

from conftest import running_server


def cli_threads(**env: str) -> dict:
    """``citedocs threads --json`` run as its own process (its entry point applies the plan)."""
    out = subprocess.run(
        [sys.executable, "-m", "citedocs.cli", "threads", "--json"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_cli_process_runs_blas_on_one_thread_even_when_the_environment_asks_for_more():
    report = cli_threads(OPENBLAS_NUM_THREADS="2", CITEDOCS_THREADS="")
    assert report["applied"]["blas"] == 1
    assert report["applied"]["torch"] == report["planned"]["torch"] == threads.usable_cores()
    assert report["applied"]["llama"] == 1  # writing tokens: a second thread collapses when a core is busy
    assert report["applied"]["llama_prompt"] == threads.usable_cores()  # prompts: every core (2 here)


def test_citedocs_threads_setting_sizes_torch_and_llama_but_never_blas():
    report = cli_threads(CITEDOCS_THREADS="1")
    assert report["applied"] == {"torch": 1, "blas": 1, "llama": 1, "llama_prompt": 1}
    report = cli_threads(CITEDOCS_THREADS="3")
    assert report["applied"] == {"torch": 3, "blas": 1, "llama": 3, "llama_prompt": 3}


def test_a_bad_threads_setting_is_a_clear_error():
    result = subprocess.run(
        [sys.executable, "-m", "citedocs.cli", "threads"],
        env={**os.environ, "CITEDOCS_THREADS": "0", "COLUMNS": "200"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "CITEDOCS_THREADS" in result.stderr and "at least 1" in result.stderr


def test_running_server_reports_the_thread_counts_it_runs_with(tmp_home, small_docs):
    ingested = CliRunner().invoke(app, ["ingest", str(small_docs), "--corpus", "small"])
    assert ingested.exit_code == 0, ingested.output
    with running_server(tmp_home, CITEDOCS_CORPUS="small", OPENBLAS_NUM_THREADS="2", CITEDOCS_THREADS="1") as (base, _):
        metrics = httpx.get(f"{base}/metrics", timeout=10).text
    gauges = dict(re.findall(r'^citedocs_threads\{library="(\w+)"\} ([\d.]+)$', metrics, re.M))
    assert gauges == {"torch": "1.0", "blas": "1.0", "llama": "1.0", "llama_prompt": "1.0"}

"""Several `citedocs serve` processes on one PostgreSQL behave as one service, and survive the
database going away.

Every server here is a real process (conftest.running_server) and every database a real
PostgreSQL with pgvector (conftest: the portable Debian build).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from conftest import copy_astro_pages, fresh_database, running_server, throwaway_postgres, write_docs

CORPUS = "small"
pg_only = pytest.mark.parametrize("store_backend", ["postgres"], scope="session")
SERVER_ENV = {"CITEDOCS_BACKEND": "extractive", "CITEDOCS_CORPUS": CORPUS}


def ingest(docs: Path, **env: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "citedocs.cli", "ingest", str(docs), "--corpus", CORPUS],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pg_only
def test_two_servers_on_one_database_share_one_rate_limit(tmp_home, small_docs, tmp_path):
    ingest(small_docs)
    env = {**SERVER_ENV, "CITEDOCS_RATE_LIMIT_PER_MINUTE": "6"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with running_server(tmp_path / "a", **env) as (first, _), running_server(tmp_path / "b", **env) as (second, _):
        # the same caller (auth off: its IP) alternates between the two servers
        codes = [httpx.get(f"{(first, second)[i % 2]}/corpora", timeout=30).status_code for i in range(10)]
    # six requests of burst for the caller in all, not six per server
    assert codes == [200] * 6 + [429] * 4, codes


@pg_only
def test_a_new_corpus_version_is_served_by_every_server_from_its_next_request(tmp_home, small_docs, tmp_path):
    ingest(small_docs)
    question = {"question": "Which port does the zephyr relay listen on?"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with running_server(tmp_path / "a", **SERVER_ENV) as (first, _), running_server(tmp_path / "b", **SERVER_ENV) as (second, _):
        before = [httpx.post(f"{base}/ask", json=question, timeout=60).json() for base in (first, second)]
        assert before[0]["corpus_version"] == before[1]["corpus_version"]
        assert all(answer["refused"] for answer in before), before

        write_docs(small_docs, {"guides/zephyr-relay.md": (
            "# Zephyr relay\n\nThe zephyr relay listens on port 7443 by default. "
            "Set the ZEPHYR_PORT variable to make the zephyr relay listen on another port.\n"
        )})
        ingest(small_docs)  # a separate process, like a worker on a third machine
        switched = time.monotonic()
        after = [httpx.post(f"{base}/ask", json=question, timeout=60).json() for base in (first, second)]
        elapsed = time.monotonic() - switched
    assert after[0]["corpus_version"] == after[1]["corpus_version"] != before[0]["corpus_version"]
    for answer in after:
        assert not answer["refused"] and "7443" in answer["answer"], answer
        assert any("zephyr-relay" in c["url"] for c in answer["citations"]), answer["citations"]
    assert elapsed < 30, f"the new version took {elapsed:.1f}s to be served by both servers"


def test_a_database_restart_fails_requests_fast_with_503_then_service_resumes_without_a_restart(
    tmp_path, astro_docs, monkeypatch
):
    home = tmp_path / "home"
    home.mkdir()
    copy_astro_pages(docs := tmp_path / "docs")
    with throwaway_postgres() as database:
        url = fresh_database(database.url, "restart")
        monkeypatch.setenv("CITEDOCS_DATABASE_URL", url)
        ingest(docs, CITEDOCS_HOME=str(home))
        question = {"question": "How do I deploy my Astro site to Heroku?"}
        with running_server(home, **SERVER_ENV, CITEDOCS_RATE_LIMIT_PER_MINUTE="0") as (base, log):
            assert httpx.post(f"{base}/ask", json=question, timeout=60).status_code == 200

            def ask(_: int) -> tuple[int, str, float]:
                started = time.monotonic()
                response = httpx.post(f"{base}/ask", json=question, timeout=60)
                return response.status_code, response.json().get("error", ""), time.monotonic() - started

            database.stop()
            with ThreadPoolExecutor(4) as pool:  # several callers at once while the database is down
                down = list(pool.map(ask, range(8)))
            assert {(code, error) for code, error, _ in down} == {(503, "store_unavailable")}, down
            assert max(seconds for _, _, seconds in down) < 15, down
            assert httpx.get(f"{base}/readyz", timeout=30).status_code == 503

            database.start()
            # the connection pool reconnects with a growing back-off, so the first request after the
            # restart may still wait for it: service resumes within a bounded time, by itself
            deadline = time.monotonic() + 60
            while ask(0)[0] != 200:
                assert time.monotonic() < deadline, "service did not resume within 60 s of the database restart"
            with ThreadPoolExecutor(4) as pool:
                up = list(pool.map(ask, range(8)))
            assert {code for code, _, _ in up} == {200}, up
            assert httpx.get(f"{base}/readyz", timeout=30).status_code == 200
            assert "Traceback" not in log.read_text(), log.read_text()[-6000:]


def test_a_wrong_database_url_stops_serve_with_an_error_naming_the_setting(tmp_path, postgres_server):
    wrong = postgres_server.rsplit("/", 1)[0] + "/no_such_database"
    done = subprocess.run(
        [sys.executable, "-m", "citedocs.cli", "serve", "--port", "1"],
        env={**os.environ, "CITEDOCS_HOME": str(tmp_path), "CITEDOCS_DATABASE_URL": wrong, "COLUMNS": "200"},
        capture_output=True, text=True, timeout=120,
    )
    out = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2, out
    assert "CITEDOCS_DATABASE_URL" in out and "no_such_database" in out and "Traceback" not in out


@pg_only
def test_a_server_killed_mid_request_leaves_the_others_serving_what_it_wrote(tmp_home, small_docs, tmp_path):
    ingest(small_docs)
    question = {"question": "How do I deploy my Astro site to Heroku?"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    env = {**SERVER_ENV, "CITEDOCS_RATE_LIMIT_PER_MINUTE": "0"}
    with running_server(tmp_path / "a", **env) as (doomed, log), running_server(tmp_path / "b", **env) as (survivor, _):
        pid = next(json.loads(line)["pid"] for line in log.read_text().splitlines() if line.startswith("{"))
        answered = httpx.post(f"{doomed}/ask", json=question, timeout=60).json()

        def ask_doomed(_: int) -> str:
            try:
                return str(httpx.post(f"{doomed}/ask", json=question, timeout=60).status_code)
            except httpx.HTTPError as exc:
                return type(exc).__name__

        with ThreadPoolExecutor(4) as pool:
            # more requests than the server can answer in the 0.3 s before the kill (a cached answer
            # takes ~30 ms): some are in flight or still to come when it dies, whatever the machine
            pending = [pool.submit(ask_doomed, i) for i in range(400)]
            time.sleep(0.3)
            os.kill(pid, signal.SIGKILL)
            outcomes = [p.result() for p in pending]
        assert any(not outcome.isdigit() for outcome in outcomes), outcomes  # some died with the server
        # the survivor answers, and reads what the killed server had written
        again = httpx.post(f"{survivor}/ask", json=question, timeout=60)
        assert again.status_code == 200 and again.json()["answer"] == answered["answer"]
        trace = httpx.get(f"{survivor}/traces/{answered['trace_id']}", timeout=30)
        assert trace.status_code == 200, trace.text

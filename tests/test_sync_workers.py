"""Sync jobs survive their workers: a real `citedocs worker` process killed with SIGKILL mid-embed
leaves the live version answering and its job is retried by the next worker; on PostgreSQL two
workers share one queue (procrastinate) and a killed one's job is neither lost nor run twice.

Fault injection (labelled): CITEDOCS_FAULT_PAUSE_IN_EMBED makes the killed worker pause after each
embedded group, so the kill lands mid-embed, before the ingest's write transaction."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from citedocs.service import Services
from citedocs.sync.service import Syncs

from conftest import ASTRO_BASE_URL, copy_astro_pages, store_env, write_docs

ZEBRA = "---\ntitle: Zebra crossings\n---\n\n## Zebra crossing\n\nA unique zebra paragraph about striped crossings.\n"
STALL_S = "2"


@pytest.fixture
def syncs(tmp_home: Path) -> Syncs:
    services = Services.open()
    yield Syncs(services)
    services.store.close()


def start_worker(syncs: Syncs, home: Path, *args: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "citedocs.cli", "worker", *args],
        env={**os.environ, "CITEDOCS_HOME": str(home), **store_env(syncs.services), "CITEDOCS_JOB_STALL_S": STALL_S, **env},
        stdout=subprocess.DEVNULL,
        stderr=open(home / f"worker-{time.monotonic_ns()}.log", "w"),
    )


def wait_until(predicate, timeout_s: float, what: str):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def corpus_with_an_edit(syncs: Syncs, root: Path, name: str) -> str:
    """Ingest a small corpus, remember its folder, then add a page so the next sync has to embed."""
    docs = copy_astro_pages(root / name)
    syncs.services.ingest(docs, name, ASTRO_BASE_URL)
    syncs.remember_ingested(name, "folder", str(docs), "default", {"base_url": ASTRO_BASE_URL})
    write_docs(docs, {"guides/zebra.mdx": ZEBRA})
    return syncs.services.corpus(name).version


def kill(process: subprocess.Popen) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL


def stop(*processes: subprocess.Popen) -> None:
    for process in processes:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.mark.parametrize("store_backend", ["sqlite", "postgres"], scope="session")
def test_a_worker_killed_mid_embed_leaves_the_live_version_and_its_job_is_retried(syncs, tmp_home, tmp_path):
    live = corpus_with_an_edit(syncs, tmp_path, "killed")
    job, _ = syncs.start("killed", "admin")
    doomed = start_worker(syncs, tmp_home, CITEDOCS_FAULT_PAUSE_IN_EMBED="300")
    rescuer = None
    try:
        wait_until(lambda: syncs.job(job.id).progress.get("phase") == "embed", 180, "the worker to embed")
        kill(doomed)
        assert syncs.job(job.id).status == "running"  # as the dead worker left it
        assert syncs.services.corpus("killed").version == live
        assert syncs.services.search("Heroku deploy", "killed", 3).hits
        assert not any(h.chunk.doc_path == "guides/zebra.mdx" for h in syncs.services.search("zebra crossing", "killed", 5).hits)

        rescuer = start_worker(syncs, tmp_home)
        done = wait_until(lambda: (j := syncs.job(job.id)).status not in ("queued", "running") and j, 240, "the retried job")
    finally:
        stop(doomed, *([rescuer] if rescuer else []))
    assert done.status == "succeeded" and done.attempts == 2, done
    assert done.worker != job.worker and "guides/zebra#zebra-crossing/1" in done.report["changed_chunk_ids"]
    assert syncs.services.search("zebra crossing", "killed", 3).hits[0].chunk.doc_path == "guides/zebra.mdx"


@pytest.mark.parametrize("store_backend", ["postgres"], scope="session")
def test_two_workers_on_postgresql_share_the_queue_and_a_killed_ones_job_is_not_lost_or_run_twice(syncs, tmp_home, tmp_path):
    names = [f"shared-{n}" for n in range(4)]
    for name in names:
        corpus_with_an_edit(syncs, tmp_path, name)
    jobs = [syncs.start(name, "admin")[0] for name in names]
    # the fault pause keeps each job running a while, so both workers are busy at once
    first = start_worker(syncs, tmp_home, CITEDOCS_FAULT_PAUSE_IN_EMBED="3")
    second = start_worker(syncs, tmp_home, CITEDOCS_FAULT_PAUSE_IN_EMBED="3")
    third = None
    try:
        running = wait_until(
            lambda: [j for j in (syncs.job(j.id) for j in jobs) if j.status == "running" and j.progress.get("phase") == "embed"],
            180,
            "a job mid-embed",
        )
        victim = running[0]
        kill(first if victim.worker.endswith(f":{first.pid}") else second)
        third = start_worker(syncs, tmp_home)
        ended = wait_until(
            lambda: all((j := syncs.job(x.id)).status not in ("queued", "running") for x in jobs) and [syncs.job(x.id) for x in jobs],
            300,
            "every job to end",
        )
    finally:
        stop(first, second, *([third] if third else []))
    assert [j.status for j in ended] == ["succeeded"] * len(jobs), [(j.id, j.status, j.error) for j in ended]
    retried = next(j for j in ended if j.id == victim.id)
    assert retried.attempts == 2 and retried.worker != victim.worker
    assert all(j.attempts == 1 for j in ended if j.id != victim.id)  # no job ran twice
    assert len({j.worker for j in ended}) >= 2  # the work was shared


@pytest.fixture
def own_postgres(tmp_path_factory) -> tuple[str, Path]:
    """A PostgreSQL server of this test's own (it is restarted mid-job), and its data folder."""
    import tempfile

    from conftest import ROOT, fresh_database
    from fake_llm import free_port

    data = Path(tempfile.mkdtemp(prefix="citedocs-test-pg-restart-")) / "data"
    port = free_port()
    script = [sys.executable, str(ROOT / "scripts" / "local_postgres.py")]
    url = subprocess.run([*script, "start", str(data), "--port", str(port), "--fast"], check=True, capture_output=True, text=True).stdout.strip()
    try:
        yield fresh_database(url, "restart"), data, port
    finally:
        subprocess.run([*script, "stop", str(data)], check=False, capture_output=True)


def test_the_database_restarting_mid_job_leaves_the_live_version_and_the_job_ends(own_postgres, tmp_path, monkeypatch):
    from conftest import ROOT
    from citedocs.index.postgres import PostgresStore

    url, data, port = own_postgres
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("CITEDOCS_HOME", str(home))
    syncs = Syncs(Services(store=PostgresStore(url)))
    try:
        live = corpus_with_an_edit(syncs, tmp_path, "restarted")
        job, _ = syncs.start("restarted", "admin")
        worker = start_worker(syncs, home, CITEDOCS_FAULT_PAUSE_IN_EMBED="6")
        try:
            wait_until(lambda: syncs.job(job.id).progress.get("phase") == "embed", 180, "the worker to embed")
            script = [sys.executable, str(ROOT / "scripts" / "local_postgres.py")]
            subprocess.run([*script, "stop", str(data)], check=True, capture_output=True)
            time.sleep(8)  # the worker's write finds the database gone
            subprocess.run([*script, "start", str(data), "--port", str(port), "--fast"], check=True, capture_output=True)

            def ended():
                try:
                    current = syncs.job(job.id)
                except Exception:  # this test's own pool reconnecting
                    return None
                return current if current.status not in ("queued", "running") else None

            done = wait_until(ended, 240, "the job to end after the restart")
        finally:
            stop(worker)
        assert done.status == "succeeded", done
        # the write either waited in the connection pool until the server was back (one run) or
        # failed and the run was queued again (two runs); never failed, never stuck
        assert done.attempts in (1, 2)
        assert syncs.services.corpus("restarted").version != live
        assert syncs.services.search("zebra crossing", "restarted", 3).hits[0].chunk.doc_path == "guides/zebra.mdx"
    finally:
        syncs.store.close()

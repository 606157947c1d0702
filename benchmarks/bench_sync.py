#!/usr/bin/env python
"""Keeping corpora in sync, measured (a script, not a test; figures in docs/benchmarks/sync.md).

    python benchmarks/bench_sync.py nochange --index /work/cache/astro-seed/citedocs.sqlite3 [--runs 5]
        A no-change sync of the full Astro corpus: the index is copied into a fresh home, the corpus's
        source is the bundled Astro docs folder, and `sync` (job created, source read, every file
        hashed, nothing embedded, job recorded) is timed end to end, --runs times.

    python benchmarks/bench_sync.py process --index /work/cache/astro-seed/citedocs.sqlite3 [--runs 5]
        The same no-change sync as cron or CI runs it: `citedocs sync astro` and `citedocs ingest DOCS`
        (DOCS: the folder the index was ingested from) as new processes (imports, settings, store, job), each timed end to end, wall clock and the
        CPU time the process used (user + system: what the machine's other load does not inflate).

    python benchmarks/bench_sync.py webhook --index /work/cache/astro-seed/citedocs.sqlite3 [--runs 3]
        One edited page, webhook to searchable: a real `citedocs serve` (its in-process worker) over a
        copy of the index and of the docs; per run one page gets a new paragraph, a signed webhook is
        POSTed, and the clock stops when a search of the index finds the new paragraph.

    python benchmarks/bench_sync.py drain [--jobs 10]
        Two `citedocs worker` processes on one PostgreSQL (a throwaway server, scripts/local_postgres.py)
        drain --jobs sync jobs of small corpora (each with one new page); one worker is killed with
        SIGKILL mid-embed once it has ended a job. Reports, per job, its runs and the worker that ended
        it: none may be lost or ended twice. Both workers pause 1 s after each embedded group (the
        labelled fault injection CITEDOCS_FAULT_PAUSE_IN_EMBED) so that the jobs overlap.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from citedocs import config

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
PAGE = "guides/environment-variables.mdx"
# drain: fault injection (labelled) in both workers, 1 s after each embedded group, so that a small
# corpus's sync lasts long enough for the two workers' jobs to overlap and for a kill to land mid-embed
PAUSE = {"CITEDOCS_FAULT_PAUSE_IN_EMBED": "1"}


def _home_with(index: Path) -> Path:
    home = Path(tempfile.mkdtemp(prefix="citedocs-bench-sync-"))
    shutil.copy(index, home / "citedocs.sqlite3")
    return home


def nochange(args) -> dict:
    from citedocs.service import Services
    from citedocs.sync.service import Syncs
    from citedocs.sync.worker import JobRunner

    home = _home_with(args.index)
    os.environ["CITEDOCS_HOME"] = str(home)
    os.environ.pop("CITEDOCS_DATABASE_URL", None)
    syncs = Syncs(Services.open(home / "citedocs.sqlite3"))
    syncs.remember_ingested(config.ASTRO_CORPUS_NAME, "folder", str(config.bundled_astro_docs()), "default", {})
    syncs.services.encoder  # the model loads once per process, before the clock starts (a worker keeps it)
    times, reports = [], []
    for _ in range(args.runs):
        started = time.perf_counter()
        job, _ = syncs.start(config.ASTRO_CORPUS_NAME, "cli", queue=False)
        job = JobRunner(syncs, job.worker).run(job)
        times.append(time.perf_counter() - started)
        reports.append(job.report)
    last = reports[-1]
    shutil.rmtree(home, ignore_errors=True)
    return {
        "what": "no-change sync of the Astro corpus",
        "files": last["files_seen"],
        "chunks_unchanged": last["chunks"]["unchanged"],
        "embedded": last["chunks"]["added"] + last["chunks"]["changed"],
        "seconds_each": [round(t, 3) for t in times],
        "median_s": round(statistics.median(times), 3),
        "ingest_seconds_each": [r["seconds"] for r in reports],
    }


def process(args) -> dict:
    import resource
    import sqlite3

    home = _home_with(args.index)
    with sqlite3.connect(home / "citedocs.sqlite3") as db:  # the folder the index was ingested from
        (docs,) = db.execute("SELECT source_dir FROM corpora WHERE name = ?", (config.ASTRO_CORPUS_NAME,)).fetchone()
    env = os.environ | {"CITEDOCS_HOME": str(home), "COLUMNS": "200"}
    env.pop("CITEDOCS_DATABASE_URL", None)
    commands = {
        "citedocs sync astro": ["sync", config.ASTRO_CORPUS_NAME],
        "citedocs ingest DOCS --corpus astro": ["ingest", docs, "--corpus", config.ASTRO_CORPUS_NAME],
    }
    cli = [sys.executable, "-m", "citedocs.cli"]
    result: dict = {"what": "no-change sync and ingest of the Astro corpus, each a new process"}
    for name, argv in commands.items():
        walls, cpus, outputs = [], [], []
        for _ in range(args.runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            run = subprocess.run([*cli, *argv], env=env, capture_output=True, text=True, check=True)
            walls.append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            outputs.append(run.stdout)
        result[name] = {
            "wall_s_each": [round(t, 2) for t in walls],
            "wall_median_s": round(statistics.median(walls), 2),
            "cpu_s_each": [round(t, 2) for t in cpus],
            "cpu_median_s": round(statistics.median(cpus), 2),
            "nothing_embedded": all("0 added, 0 changed, 0 removed" in out for out in outputs),
        }
    shutil.rmtree(home, ignore_errors=True)
    return result


def webhook(args) -> dict:
    from conftest import running_server

    from citedocs.service import Services
    from citedocs.sync.service import Syncs
    from citedocs.sync.webhook import sign

    home = _home_with(args.index)
    docs = home / "docs"
    shutil.copytree(config.bundled_astro_docs(), docs)
    services = Services.open(home / "citedocs.sqlite3")
    syncs = Syncs(services)
    syncs.set_source(config.ASTRO_CORPUS_NAME, "folder", str(docs))
    secret = syncs.rotate_webhook_secret(config.ASTRO_CORPUS_NAME)
    admin = services.create_key("default", "bench", admin=True)[1]
    runs = []
    env = {"CITEDOCS_DATABASE_URL": "", "CITEDOCS_BACKEND": "extractive", "CITEDOCS_RATE_LIMIT_PER_MINUTE": "0"}
    with running_server(home, **env) as (base, _):
        for n in range(args.runs):
            marker = f"quokka{uuid.uuid4().hex[:8]}"
            with open(docs / PAGE, "a", encoding="utf-8") as page:
                page.write(f"\n\n## Benchmark note {n}\n\nThe {marker} setting is a benchmark paragraph.\n")
            body = json.dumps({"ref": "refs/heads/main"}).encode()
            stamp = str(int(time.time()))
            headers = {"X-Citedocs-Signature": sign(secret, body, stamp, marker), "X-Citedocs-Timestamp": stamp, "X-Citedocs-Delivery": marker}
            started = time.perf_counter()
            job = httpx.post(f"{base}/hooks/corpora/{config.ASTRO_CORPUS_NAME}", content=body, headers=headers).json()["job"]
            while not any(marker in h.chunk.text for h in services.search(f"{marker} setting", config.ASTRO_CORPUS_NAME, 3).hits):
                time.sleep(0.1)
            elapsed = time.perf_counter() - started
            done = httpx.get(f"{base}/admin/jobs/{job['id']}", headers={"Authorization": f"Bearer {admin}"}).json()["job"]
            runs.append({"seconds": round(elapsed, 2), "job_seconds": done["report"]["seconds"] if done["report"] else None,
                         "embedded": len(done["report"]["changed_chunk_ids"]) if done["report"] else None})
    services.store.close()
    shutil.rmtree(home, ignore_errors=True)
    return {"what": "one edited page: webhook to searchable (Astro corpus)", "runs": runs,
            "median_s": statistics.median(r["seconds"] for r in runs)}


def drain(args) -> dict:
    from conftest import copy_astro_pages, fresh_database, write_docs
    from fake_llm import free_port

    from citedocs.index.postgres import PostgresStore
    from citedocs.service import Services
    from citedocs.sync.service import Syncs

    scratch = Path(tempfile.mkdtemp(prefix="citedocs-bench-drain-"))
    script = [sys.executable, str(ROOT / "scripts" / "local_postgres.py")]
    server = subprocess.run([*script, "start", str(scratch / "pg"), "--port", str(free_port()), "--fast"],
                            check=True, capture_output=True, text=True).stdout.strip()
    workers: list[subprocess.Popen] = []
    try:
        url = fresh_database(server, "drain")
        os.environ["CITEDOCS_HOME"] = str(scratch / "home")
        syncs = Syncs(Services(store=PostgresStore(url)))
        names = [f"drain-{n:02d}" for n in range(args.jobs)]
        for name in names:
            docs = copy_astro_pages(scratch / "docs" / name)
            syncs.services.ingest(docs, name, config.ASTRO_BASE_URL)
            syncs.remember_ingested(name, "folder", str(docs), "default", {"base_url": config.ASTRO_BASE_URL})
            write_docs(docs, {"guides/new.mdx": f"---\ntitle: New {name}\n---\n\n## New page\n\nA new page of {name}.\n"})
        env = {**os.environ, "CITEDOCS_DATABASE_URL": url, "CITEDOCS_JOB_STALL_S": "5"}

        def worker(**extra: str) -> subprocess.Popen:
            log = open(scratch / f"worker-{len(workers)}.log", "w")
            process = subprocess.Popen([sys.executable, "-m", "citedocs.cli", "worker"], env={**env, **extra},
                                       stdout=subprocess.DEVNULL, stderr=log)
            workers.append(process)
            return process

        doomed = worker(**PAUSE)
        worker(**PAUSE)
        while sum("sync worker" in (scratch / f"worker-{n}.log").read_text() for n in range(2)) < 2:
            time.sleep(0.2)  # both have loaded the model
        started = time.perf_counter()
        jobs = [syncs.start(name, "admin")[0].id for name in names]
        killed_job, deadline = None, time.time() + 300
        while killed_job is None and time.time() < deadline:  # midway: once the doomed worker has ended a job, kill it mid-embed of its next
            current = [syncs.job(j) for j in jobs]
            mine = [j for j in current if j.worker and j.worker.endswith(f":{doomed.pid}")]
            if not any(j.status == "succeeded" for j in mine):
                time.sleep(0.1)
                continue
            for job in mine:
                if job.status == "running" and job.progress.get("phase") == "embed":
                    os.kill(doomed.pid, signal.SIGKILL)
                    killed_job = job.id
                    break
            time.sleep(0.1)
        if killed_job is None:
            raise SystemExit("the doomed worker never ended a job and started another: nothing was killed")
        killed_at = time.perf_counter() - started
        while any(syncs.job(j).status in ("queued", "running") for j in jobs):
            time.sleep(0.2)
        elapsed = time.perf_counter() - started
        ended = [syncs.job(j) for j in jobs]
        by_worker = {}
        for job in ended:
            by_worker[job.worker] = by_worker.get(job.worker, 0) + 1
        syncs.store.close()
        return {
            "what": f"two workers on one PostgreSQL drain {args.jobs} sync jobs; one SIGKILLed mid-embed",
            "seconds": round(elapsed, 1),
            "killed_after_s": round(killed_at, 1),
            "statuses": sorted({j.status for j in ended}),
            "lost": sum(j.status != "succeeded" for j in ended),
            "runs": {j.corpus: j.attempts for j in ended},
            "killed_job_runs": next(j.attempts for j in ended if j.id == killed_job),
            "jobs_ended_per_worker": by_worker,
        }
    finally:
        for process in workers:
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=30)
        subprocess.run([*script, "stop", str(scratch / "pg")], check=False, capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    for name in ("nochange", "process", "webhook"):
        cmd = sub.add_parser(name)
        cmd.add_argument("--index", type=Path, default=config.database_path())
        cmd.add_argument("--runs", type=int, default=3 if name == "webhook" else 5)
    sub.add_parser("drain").add_argument("--jobs", type=int, default=10)
    args = parser.parse_args()
    result = {"nochange": nochange, "process": process, "webhook": webhook, "drain": drain}[args.what](args)
    result["load_average_1m"] = round(os.getloadavg()[0], 2)
    result["cores"] = os.cpu_count()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

"""Workers: run queued sync jobs, retry those whose worker died, start scheduled syncs.

- SQLite: the jobs table is the queue; one worker (in `citedocs serve`, or `citedocs worker`)
  claims the oldest queued job with one UPDATE and runs it.
- PostgreSQL: the queue is PostgreSQL itself through procrastinate (docs/how-to/keep-in-sync.md
  says why that library): each queued job is deferred as a procrastinate job locked on its corpus,
  so any number of workers on any number of machines share the work and one corpus never has two
  syncs running. The jobs table stays the record the admin routes and the CLI read.

Every running job sends a heartbeat every few seconds. A job whose heartbeat is older than
``job_stall_s`` lost its worker (killed, machine gone) and is queued again, up to
``job_max_attempts`` runs; on PostgreSQL procrastinate's own worker heartbeats also release the
dead worker's job and its corpus lock. A run that died never committed its ingest, so the live
version is the one from before.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import sys
import threading
from datetime import timedelta
from functools import lru_cache

from .. import config
from ..index.store import CorpusOwnedByOtherTenant, StoreFull, StoreUnavailable, SyncJob
from ..ingest.admission import PolicyError
from ..ingest.crawl import CrawlError
from ..ingest.pipeline import IngestError, ProgressFn
from ..service import UnknownCorpus
from .archive import ArchiveRejected
from .service import Syncs, name_unavailable, now, stamp
from .sources import SourceError, next_sync_after

log = logging.getLogger("citedocs.sync")
TASK = "citedocs.sync"
POLL_S = 1.0
# what a job reports as its own failure (the message says what to fix); anything else is logged with its traceback
JOB_ERRORS = (SourceError, IngestError, CrawlError, PolicyError, ArchiveRejected, UnknownCorpus, StoreFull)


def store_errors() -> tuple[type[BaseException], ...]:
    """The store going away (database restarted, connection lost): the job is retried, not failed.
    psycopg's error only where psycopg is loaded (a PostgreSQL store loaded it): a SQLite process
    does not pay for importing it."""
    psycopg = sys.modules.get("psycopg")
    return (sqlite3.OperationalError, StoreUnavailable) + ((psycopg.OperationalError,) if psycopg else ())


def heartbeat_s() -> float:
    return max(0.5, min(5.0, config.setting("job_stall_s") / 4))


class JobRunner:
    """Runs one claimed job with a heartbeat, and records how it ended."""

    def __init__(self, syncs: Syncs, name: str) -> None:
        self.syncs = syncs
        self.store = syncs.store
        self.name = name

    def run(self, job: SyncJob, on_progress: ProgressFn | None = None) -> SyncJob | None:
        """Run a job this worker claimed (status running, worker = this name); the job as it ended."""
        state: dict = {}
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(heartbeat_s()):
                try:
                    self.store.update_job(job.id, heartbeat_at=stamp(), progress=dict(state))
                except Exception as exc:  # the store is away; the job's own writes will say so
                    log.warning("sync job heartbeat failed", extra={"job": job.id, "error": str(exc)})

        def progress(phase: str, done: int, total: int) -> None:
            new_phase = phase != state.get("phase")
            state.update(phase=phase, done=done, total=total)
            if new_phase:  # at once; the counts within a phase go with the heartbeats
                self.store.update_job(job.id, heartbeat_at=stamp(), progress=dict(state))
            if on_progress:
                on_progress(phase, done, total)

        beating = threading.Thread(target=beat, name=f"citedocs-heartbeat-{job.id}", daemon=True)
        beating.start()
        log.info("sync job started", extra={"job": job.id, "corpus": job.corpus, "attempt": job.attempts})
        status, report, error = "failed", None, None
        try:
            status, report = self.syncs.execute(job, progress)
        except CorpusOwnedByOtherTenant:  # the store's message names the owner; the job is read by its corpus's tenant
            error = str(name_unavailable(job.corpus))
        except JOB_ERRORS as exc:
            error = str(exc)
        except store_errors() as exc:
            status, error = "retry", f"the database went away during the sync ({str(exc).strip()[:300]})"
        except Exception as exc:  # a bug or an unexpected fault: the job fails, the worker carries on
            log.exception("sync job crashed", extra={"job": job.id})
            error = f"{type(exc).__name__}: {exc}"
        finally:
            stop.set()
            beating.join()
        current = self.store.get_job(job.id)
        if current is None or current.status != "running" or current.worker != self.name or current.attempts != job.attempts:
            log.warning("sync job was taken over while it ran; its result is dropped", extra={"job": job.id})
            return current
        if status == "retry":
            return requeue(self.syncs, current, error or "")
        log.info("sync job ended", extra={"job": job.id, "status": status, "error": error})
        ended = self.store.update_job(  # an upload's archive is dropped once its job has ended
            job.id, status=status, report=report, error=error, finished_at=stamp(), heartbeat_at=stamp(), progress=state, archive=None
        )
        return self.syncs.record_ended(ended, self.name)


def requeue(syncs: Syncs, job: SyncJob, why: str) -> SyncJob | None:
    """Queue a job again after a run that could not finish, or fail it after job_max_attempts runs."""
    store = syncs.store
    if job.attempts >= config.setting("job_max_attempts"):
        failed = store.update_job(
            job.id, status="failed", finished_at=stamp(), error=f"gave up after {job.attempts} run(s); the last: {why}", archive=None
        )
        return syncs.record_ended(failed, job.worker or "worker")
    queued = store.update_job(job.id, status="queued", worker=None, error=f"retrying: {why}", progress={})
    if queued is not None:
        submit(syncs.services, queued)
    return queued


def requeue_stale(syncs: Syncs) -> None:
    """Queue again the running jobs whose worker stopped sending heartbeats (it died)."""
    stall = config.setting("job_stall_s")
    for job in syncs.store.stale_jobs(stamp(now() - timedelta(seconds=stall))):
        phase = job.progress.get("phase", "its start")
        requeue(syncs, job, f"worker {job.worker} stopped reporting during {phase} (no heartbeat for {stall:.0f}s)")


def schedule_due(syncs: Syncs) -> None:
    """Start the syncs whose schedule is due; of several workers, the one that moves the date starts it."""
    at = now()
    for source in syncs.store.list_sources():
        every = source.options.get("every")
        if not every or not source.next_sync_at or source.next_sync_at > stamp(at):
            continue
        if syncs.store.move_next_sync(source.corpus, source.next_sync_at, next_sync_after(at, every)):
            try:
                syncs.start(source.corpus, "schedule")
            except Exception:
                log.exception("could not start a scheduled sync", extra={"corpus": source.corpus})


def maintain(syncs: Syncs) -> None:
    requeue_stale(syncs)
    schedule_due(syncs)


# the queue ---------------------------------------------------------------------------------------
def submit(services, job: SyncJob) -> None:
    """Hand a queued job to the workers: on PostgreSQL defer it through procrastinate; on SQLite the
    worker reads the jobs table itself."""
    url = getattr(services.store, "url", None)
    if url:
        _deferrer(url).configure_task(TASK, lock=f"corpus:{job.corpus}").defer(job_id=job.id)


@lru_cache(maxsize=None)
def _deferrer(url: str):
    import procrastinate

    ensure_queue_schema(url)
    app = procrastinate.App(connector=procrastinate.SyncPsycopgConnector(conninfo=url))
    app.open()
    return app


def ensure_queue_schema(url: str) -> None:
    """Create procrastinate's tables once per database (under an advisory lock: workers start at once)."""
    import psycopg
    from procrastinate.schema import SchemaManager

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtext('citedocs-procrastinate-schema'))")
        try:
            if conn.execute("SELECT to_regclass('procrastinate_jobs')").fetchone()[0] is None:
                conn.execute(SchemaManager.get_schema())
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext('citedocs-procrastinate-schema'))")


# workers -----------------------------------------------------------------------------------------
def work(syncs: Syncs, name: str, stop: threading.Event, once: bool = False) -> None:
    """Run jobs until ``stop`` is set (``once``: until no job is queued)."""
    if getattr(syncs.store, "url", None):
        asyncio.run(_work_postgres(syncs, name, stop, once))
    else:
        _work_sqlite(syncs, name, stop, once)


def _work_sqlite(syncs: Syncs, name: str, stop: threading.Event, once: bool) -> None:
    runner = JobRunner(syncs, name)
    while not stop.is_set():
        try:
            maintain(syncs)
            job = syncs.store.claim_job(name, stamp())
            if job is not None:
                runner.run(job)
                continue
        except Exception:  # the store is away: try again at the next poll
            log.exception("sync worker round failed")
        if once:
            return
        stop.wait(POLL_S)


async def _work_postgres(syncs: Syncs, name: str, stop: threading.Event, once: bool) -> None:
    import procrastinate

    url = syncs.store.url  # type: ignore[attr-defined]
    ensure_queue_schema(url)
    runner = JobRunner(syncs, name)
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

    @app.task(name=TASK, pass_context=False)
    def run_job(job_id: str) -> None:  # procrastinate runs a sync task in a thread
        job = syncs.store.claim_job(name, stamp(), job_id)
        if job is not None:  # else it ran already, or another worker holds it
            runner.run(job)

    stall = config.setting("job_stall_s")
    async with app.open_async():
        worker = asyncio.create_task(
            app.run_worker_async(
                name=name,
                concurrency=1,
                wait=not once,
                install_signal_handlers=False,
                update_heartbeat_interval=heartbeat_s(),
                stalled_worker_timeout=stall,
                fetch_job_polling_interval=POLL_S * 5,
                delete_jobs="successful",
            )
        )
        while not worker.done():
            if stop.is_set():
                worker.cancel()
                break
            try:
                # a dead worker's procrastinate job holds its corpus lock: put it back (its run_job then
                # finds the row queued again by requeue_stale, or finished, and does what is left)
                for stalled in await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=stall):
                    await app.job_manager.retry_job(stalled)
                await asyncio.to_thread(maintain, syncs)
            except store_errors() as exc:  # an outage, not a bug: said in one line, the next round retries
                log.warning("sync worker round skipped, the database is unavailable: %s", exc)
            except Exception:
                log.exception("sync worker round failed")
            await asyncio.sleep(POLL_S)
        try:
            await worker
        except asyncio.CancelledError:
            pass


def start_in_process(services) -> threading.Event:
    """The worker inside `citedocs serve` (setting sync_worker): a daemon thread; set the event to stop it."""
    from .service import worker_name

    stop = threading.Event()
    syncs = Syncs(services)
    thread = threading.Thread(target=work, args=(syncs, worker_name("serve"), stop), name="citedocs-sync-worker", daemon=True)
    thread.start()
    return stop

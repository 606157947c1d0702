"""Keeping corpora in sync: sources, sync jobs, webhooks and uploads, over ``citedocs.service``.

The CLI (`citedocs sources|sync|jobs|worker`) and the admin routes are thin adapters over ``Syncs``.
A sync job is a row in the store's jobs table (both backends); workers (``worker.py``) run it. The
job re-reads the corpus's source and runs the ordinary incremental ingest, whose single write
transaction is the atomic switch to the new version: whatever happens to a job before that
commit, the live version keeps answering.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

from .. import config, telemetry
from ..auth import RateLimited
from ..index.store import ApiKey, CorpusOwnedByOtherTenant, CorpusSource, SyncJob
from ..ingest.crawl import CrawlSettings, crawl_scope
from ..ingest import inventory
from ..ingest.admission import remembered_policy, resolve_policy
from ..ingest.planted import sentence_sha256
from ..ingest.pipeline import IngestReport, ProgressFn
from ..service import InvalidName, Services, UnknownCorpus, check_name
from . import archive, gate, sources, webhook
from .sources import SourceError

TRIGGERS = ("cli", "admin", "webhook", "schedule", "upload")


class UnknownJob(LookupError):
    def __init__(self, job_id: str) -> None:
        super().__init__(f"no sync job with id {job_id!r}; `citedocs jobs list` (or GET /admin/jobs) shows the job ids")


def now() -> datetime:
    return datetime.now(timezone.utc)


def stamp(at: datetime | None = None) -> str:
    return (at or now()).isoformat(timespec="milliseconds")


def new_job_id() -> str:
    return "job_" + secrets.token_hex(8)


def uploads_dir(corpus: str) -> Path:
    return config.home() / "uploads" / corpus


class Syncs:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.store = services.store

    # sources -------------------------------------------------------------------------------------
    def set_source(
        self, corpus: str, kind: str, location: str, options: dict | None = None, tenant: str = config.DEFAULT_TENANT
    ) -> CorpusSource:
        """Remember where ``corpus`` is read from (replacing what was remembered; the webhook secret stays)."""
        check_name("corpus", corpus)
        check_name("tenant", tenant)
        sources.check_kind(kind)
        options = {k: v for k, v in (options or {}).items() if v is not None}
        existing_corpus = self.store.get_corpus(corpus)
        if existing_corpus is not None and existing_corpus.tenant != tenant:
            raise CorpusOwnedByOtherTenant(f"corpus {corpus!r} belongs to tenant {existing_corpus.tenant!r}; pick another corpus name")
        if kind in ("folder", "git", "archive"):
            location = str(Path(location).expanduser().resolve())
        else:
            crawl_scope(location)  # raises CrawlError on a URL that is not http(s)
        if options.get("every"):
            sources.parse_every(options["every"])
        if options.get("eval"):
            options["eval"] = str(Path(options["eval"]).expanduser().resolve())
            if not Path(options["eval"]).is_file():
                raise SourceError(f"eval file not found: {options['eval']}")
        previous = self.store.get_source(corpus)
        source = CorpusSource(
            corpus=corpus,
            tenant=tenant,
            kind=kind,
            location=location,
            options=options,
            webhook_secret=previous.webhook_secret if previous else None,
            next_sync_at=sources.next_sync_after(now(), options["every"]) if options.get("every") else None,
            updated_at=stamp(),
        )
        self.store.save_source(source)
        return source

    def remember_ingested(self, corpus: str, kind: str, location: str, tenant: str, options: dict) -> None:
        """After `citedocs ingest`: remember the folder or site it read, unless the corpus already
        remembers that very location (a git source, a schedule or a gate stay as they are)."""
        if kind != "crawl":
            location = str(Path(location).expanduser().resolve())
        previous = self.store.get_source(corpus)
        if previous is not None and previous.location == location:
            return
        self.set_source(corpus, kind, location, options, tenant)

    def source(self, corpus: str, tenant: str | None = None) -> CorpusSource:
        """The corpus's remembered source; a corpus indexed before sources were remembered is read
        again from the folder its last ingest read."""
        stored = self.store.get_source(corpus)
        info = self.store.get_corpus(corpus)
        owner = stored.tenant if stored else info.tenant if info else None
        if owner is None or (tenant is not None and owner != tenant):
            raise UnknownCorpus(corpus, sorted({c.name for c in self.store.list_corpora(tenant)} | {s.corpus for s in self.store.list_sources(tenant)}))
        if stored is not None:
            return stored
        assert info is not None
        return CorpusSource(corpus, info.tenant, "folder", info.source_dir, {"base_url": info.base_url}, updated_at=info.updated_at)

    def rotate_webhook_secret(self, corpus: str) -> str:
        """A new webhook secret for ``corpus`` (the old one stops working); shown once. An operator's
        action (the CLI): in the audit log."""
        source = self.source(corpus)
        secret = webhook.new_secret()
        self.store.save_source(replace(source, webhook_secret=secret, updated_at=stamp()))
        self.services.audit(None, "webhook.secret", corpus, tenant=source.tenant)
        return secret

    # jobs ----------------------------------------------------------------------------------------
    def start(
        self,
        corpus: str,
        trigger: str,
        tenant: str | None = None,
        queue: bool = True,
        by: ApiKey | None = None,
    ) -> tuple[SyncJob, bool]:
        """Queue a sync of ``corpus`` (for ``tenant``'s caller; None: the operator). A corpus with a
        queued or running sync gets that job back, with False. ``queue=False``: the job is created
        running, for this process to run (`citedocs sync`). A sync someone asked for (``trigger``
        cli or admin, ``by`` an admin key or None for the operator's CLI) goes to the audit log,
        whatever its outcome; a scheduled one does not."""
        if trigger not in ("cli", "admin"):  # a scheduled sync (uploads and webhooks audit their whole request)
            return self._start(corpus, trigger, tenant, queue=queue)
        return self._audited("corpus.sync", corpus, by, tenant, "cli", lambda: self._start(corpus, trigger, tenant, queue=queue))

    def _start(
        self, corpus: str, trigger: str, tenant: str | None = None, archive_bytes: bytes | None = None, queue: bool = True
    ) -> tuple[SyncJob, bool]:
        source = self.source(corpus, tenant)
        at = stamp()
        job = SyncJob(
            id=new_job_id(),
            corpus=corpus,
            tenant=source.tenant,
            trigger=trigger,
            status="queued" if queue else "running",
            created_at=at,
            attempts=0 if queue else 1,
            started_at=None if queue else at,
            heartbeat_at=None if queue else at,
            worker=None if queue else worker_name("cli"),
        )
        job, created = self.store.create_job(job, archive_bytes)
        if created and queue:
            from .worker import submit

            submit(self.services, job)
        return job, created

    def upload(
        self, corpus: str, data: bytes, by: ApiKey, base_url: str | None = None, docs_format: str | None = None
    ) -> SyncJob:
        """Check an uploaded archive whole (``archive.inspect``: raises ArchiveRejected with the
        report), make ``corpus``'s source that upload, and queue its sync. A new corpus is created
        for the tenant of ``by`` (an admin key); the live version of an existing one serves until the
        new one is complete. The audit log gets the outcome."""
        job, _ = self._audited(
            "corpus.upload", corpus, by, by.tenant, "cli",
            lambda: (self._upload(corpus, data, by.tenant, base_url, docs_format), True),
            detail=lambda job: f"{len(data):,} bytes; {job.id}",
        )  # fmt: skip
        return job

    def _upload(self, corpus: str, data: bytes, tenant: str, base_url: str | None, docs_format: str | None) -> SyncJob:
        check_name("corpus", corpus)
        limit = config.setting("max_upload_bytes")
        if len(data) > limit:
            raise archive.ArchiveRejected(f"the archive is {len(data):,} bytes, over the {limit:,}-byte limit (max_upload_bytes)", [])
        archive.inspect(data, archive.Limits.from_settings())
        info = self.store.get_corpus(corpus)
        stored = self.store.get_source(corpus)
        owner = stored.tenant if stored else info.tenant if info else tenant
        if owner != tenant:
            raise CorpusOwnedByOtherTenant(f"corpus {corpus!r} belongs to another tenant; pick another corpus name")
        options = dict(stored.options) if stored and stored.kind == "archive" else {}
        options.update({k: v for k, v in {"base_url": base_url, "format": docs_format}.items() if v})
        if stored is None or stored.kind != "archive" or options != stored.options:
            self.set_source(corpus, "archive", str(uploads_dir(corpus) / "current"), options, tenant)
        job, created = self._start(corpus, "upload", tenant, data)
        if not created:
            raise JobBusy(job)
        return job

    def job(self, job_id: str, tenant: str | None = None) -> SyncJob:
        job = self.store.get_job(job_id)
        if job is None or (tenant is not None and job.tenant != tenant):
            raise UnknownJob(job_id)
        return job

    def jobs(self, tenant: str | None = None, corpus: str | None = None, limit: int = 50) -> list[SyncJob]:
        return self.store.list_jobs(tenant, corpus, limit)

    def overview(self, tenant: str | None = None) -> list[dict]:
        """Every corpus of ``tenant`` with its source, live version, last sync and next scheduled sync."""
        corpora = {c.name: c for c in self.store.list_corpora(tenant) if c.tenant != gate.GATE_TENANT}
        stored = {s.corpus: s for s in self.store.list_sources(tenant)}
        rows = []
        for name in sorted(corpora.keys() | stored.keys()):
            info = corpora.get(name)
            source = self.source(name)
            last = next(iter(self.store.list_jobs(None, name, 1)), None)
            rows.append(
                {
                    "name": name,
                    "tenant": source.tenant,
                    "source": sources.describe(source),
                    "version": info.version if info else None,
                    "chunks": info.chunk_count if info else 0,
                    "updated_at": info.updated_at if info else None,
                    "last_sync": None
                    if last is None
                    else {k: getattr(last, k) for k in ("id", "status", "trigger", "created_at", "finished_at", "error")},
                    "next_sync_at": source.next_sync_at,
                }
            )
        return rows

    # the work of one job -----------------------------------------------------------------------
    def execute(self, job: SyncJob, progress: ProgressFn | None = None) -> tuple[str, dict]:
        """Read the source again and ingest it; the final status and the job's report. Raises on a
        source, archive or ingest error (the live version is untouched: nothing was committed).
        One ``citedocs.job`` span (telemetry.py) carrying the job id; the ingest's steps are its children."""
        with telemetry.job("sync", job.id, **{"citedocs.corpus": job.corpus, "citedocs.trigger": job.trigger}):
            return self._execute(job, progress)

    def _execute(self, job: SyncJob, progress: ProgressFn | None) -> tuple[str, dict]:
        source = self.source(job.corpus)
        before = self.store.get_corpus(job.corpus)
        options = source.options
        base_url, docs_format = options.get("base_url"), options.get("format")
        incoming = None
        data = self.store.job_archive(job.id)
        if data is not None:  # an upload: unpack beside the folder the last upload was read from
            incoming = uploads_dir(job.corpus) / f"incoming-{job.id}"
            shutil.rmtree(incoming, ignore_errors=True)
            unpacked = archive.unpack(data, incoming, archive.Limits.from_settings())
            folder, note = incoming, f"unpacked a {unpacked.kind} upload: {unpacked.files} files, {unpacked.unpacked_bytes:,} bytes"
        elif source.kind == "crawl":
            crawled = self.services.crawl_mirror(source.location, job.corpus, _crawl_settings(options))
            folder, base_url, docs_format = crawled.folder, crawl_scope(source.location), "html"
            note = f"crawled {crawled.scope}: " + (", ".join(f"{n} {o}" for o, n in sorted(crawled.counts().items())) or "nothing")
        else:
            folder, note = sources.prepare_folder(source)
        target, tenant = job.corpus, source.tenant
        if options.get("eval"):  # the release gate: ingest beside the live version (see gate.py)
            target, tenant = gate.candidate_name(job.corpus), gate.GATE_TENANT
            if before is not None:
                gate.mirror(self.store, job.corpus, target, replace(before, name=target, tenant=tenant))
        status, gate_report, went_live = "succeeded", None, False
        held = self._new_in_inventory(job, folder, base_url, docs_format, before) if before is not None else []
        if held:  # the live version keeps serving until an admin approves what is new
            if incoming is not None:
                shutil.rmtree(incoming, ignore_errors=True)
            inventory.hold(job.corpus, held, job.id)
            report = job_report(source, note, before.version, IngestReport(corpus=job.corpus, version=before.version), None, False)
            return "held", report | {"inventory": {"new": [e.__dict__ for e in held], "approve": f"citedocs inventory approve {job.corpus} --all"}}
        inventory.clear_pending(job.corpus)
        try:
            result = self.services.ingest(
                folder, target, base_url, progress, tenant, admission=remembered_policy(job.corpus), format=docs_format
            )
            if target != job.corpus:
                held, gate_report = self._release_gate(job.corpus, target, options, before is not None, progress)
                if held:
                    status = "held"
                else:
                    promoted = replace(self.store.get_corpus(target), name=job.corpus, tenant=source.tenant)
                    gate.mirror(self.store, target, job.corpus, promoted)
            went_live = status == "succeeded"
        finally:
            if incoming is not None and incoming.exists():
                if went_live:
                    # the new version is live: its files become the folder a later sync re-reads
                    shutil.rmtree(source.location, ignore_errors=True)
                    incoming.rename(source.location)
                else:  # failed or held: the folder of the live version stays
                    shutil.rmtree(incoming, ignore_errors=True)
        return status, job_report(source, note, before.version if before else None, result, gate_report, went_live)

    def _new_in_inventory(self, job: SyncJob, folder: Path, base_url: str | None, docs_format: str | None, before) -> list[inventory.Entry]:
        """Hosts and risky steps the new docs name that the live version did not, from hosts nobody
        approved: a sync that adds one is held (the inventory is read before anything is written)."""
        base = base_url or before.base_url
        screen = inventory.screen_for(job.corpus, base, resolve_policy(job.corpus, remembered_policy(job.corpus)))
        scanned = inventory.scan_folder(folder, docs_format, base, (before.pipeline, before.base_url))
        return inventory.new_since_live(job.corpus, scanned, screen)

    def _release_gate(self, corpus: str, candidate: str, options: dict, has_live: bool, progress: ProgressFn | None) -> tuple[bool, dict]:
        """Run the eval on the candidate (and the live version); (held?, the gate's part of the report)."""
        eval_file = Path(options["eval"])
        if not eval_file.is_file():
            raise SourceError(f"the release gate's eval file is gone: {eval_file}; nothing was switched")
        step = (lambda done, total: progress("eval", done, total)) if progress else None
        new = gate.figures(self.services, eval_file, candidate, step)
        live = gate.figures(self.services, eval_file, corpus, step) if has_live else None
        ok, lines = gate.judge_release(options.get("floors", {}), new, live)
        floors = options.get("floors", {})
        return not ok, {
            "eval": str(eval_file),
            "floors": floors,
            "candidate": {m: new.get(m) for m in floors},
            "live": {m: live.get(m) for m in floors} if live else None,
            "passed": ok,
            "lines": lines,
        }

    # the inventory ---------------------------------------------------------------------------------
    def approve_hosts(
        self, corpus: str, hosts: list[str], by: ApiKey | None, all_pending: bool = False, tenant: str | None = None
    ) -> list[str]:
        """Approve hosts of ``corpus``'s inventory (``all_pending``: everything a held sync would
        add), or withheld sentences by their sha256 (a development-only TLS note); in the audit log. A host the inventory does not name is an error (a typo approves
        nothing). The caller then syncs, so the approved steps are answered."""
        source = self.source(corpus, tenant)
        known = {e.value for e in inventory.entries(corpus)} | {e.value for e in inventory.pending(corpus)}
        known |= {sentence_sha256(w["sentence"]) for w in inventory.withheld(corpus)}  # a withheld sentence, by its sha256
        wanted = [h.strip().lower() for h in hosts] + ([e.value for e in inventory.pending(corpus)] if all_pending else [])
        unknown = [h for h in wanted if h not in known]
        if unknown or not wanted:
            problem = f"not in the inventory of corpus {corpus!r}: {', '.join(unknown)}" if unknown else "no host named, and nothing is pending"
            self.services.audit(by, "inventory.approve", corpus, "rejected", problem, tenant=source.tenant)
            raise SourceError(f"{problem}; `citedocs inventory list {corpus}` shows the hosts it names")
        new = inventory.approve(corpus, wanted, by.key_id if by else "cli")
        self.services.audit(by, "inventory.approve", corpus, "ok", ", ".join(wanted)[:1000], tenant=source.tenant)
        return new

    def inventory_page(self, corpus: str, offset: int = 0, limit: int = 100, kind: str | None = None, tenant: str | None = None) -> dict:
        """One page of ``corpus``'s inventory (thousands of hosts are paged), each entry's status, and
        what a held sync would add."""
        source = self.source(corpus, tenant)
        info = self.store.get_corpus(corpus)
        base_url = info.base_url if info else source.options.get("base_url") or "https://invalid/"
        screen = inventory.screen_for(corpus, base_url, resolve_policy(corpus, remembered_policy(corpus)))
        listing = inventory.listing(corpus, screen, offset, limit, kind)
        return listing | {"corpus": corpus, "pending": [e.__dict__ for e in inventory.pending(corpus)]}

    # webhooks ------------------------------------------------------------------------------------
    def webhook(
        self, corpus: str, body: bytes, headers: dict[str, str], admit: Callable[[], None] = lambda: None
    ) -> tuple[SyncJob, bool]:
        """Start a sync for a signed, fresh, first-seen delivery; else ``webhook.Refused`` (nothing changes).
        ``admit`` runs once the signature holds, before the delivery id is spent (the per-corpus rate
        limit: requests nobody signed cannot use up a corpus's allowance). The audit log gets the
        outcome, in the corpus's tenant."""
        owner = self.store.get_source(corpus)
        return self._audited(
            "webhook", corpus, None, owner.tenant if owner else None, "webhook", lambda: self._webhook(corpus, body, headers, admit)
        )

    def _webhook(self, corpus: str, body: bytes, headers: dict[str, str], admit: Callable[[], None]) -> tuple[SyncJob, bool]:
        stored = self.store.get_source(corpus)
        if stored is None or stored.webhook_secret is None:
            # the same answer for a corpus without a webhook and one that does not exist
            raise webhook.Refused(404, "no_webhook", f"corpus {corpus!r} has no webhook; the operator enables one with `citedocs sources webhook-secret {corpus}`")
        window = config.setting("webhook_replay_window_s")
        delivery = webhook.verify(stored.webhook_secret, body, headers, window)
        admit()
        at = now()
        if not self.store.record_delivery(corpus, delivery, stamp(at), stamp(at - timedelta(seconds=max(window, 86400)))):
            raise webhook.Refused(409, "replayed_delivery", f"delivery {delivery!r} was received already; nothing was changed")
        return self._start(corpus, "webhook")

    # the audit log -------------------------------------------------------------------------------
    def _audited(
        self,
        action: str,
        corpus: str,
        by: ApiKey | None,
        tenant: str | None,
        actor: str,
        run: Callable[[], tuple[SyncJob, bool]],
        detail: Callable[[SyncJob], str] = lambda job: job.id,
    ) -> tuple[SyncJob, bool]:
        """``run()``, with its outcome in the audit log: ok (or already_active: the corpus's running
        job came back), or the error it raised, which is then raised on."""
        try:
            job, created = run()
        except Exception as exc:
            self.services.audit(by, action, corpus, audit_outcome(exc), str(exc)[:1000], tenant=tenant, actor=actor)
            raise
        self.services.audit(by, action, corpus, "ok" if created else "already_active", detail(job), tenant=tenant, actor=actor)
        return job, created


def audit_outcome(exc: Exception) -> str:
    """How the audit log names a refused sync request."""
    if isinstance(exc, webhook.Refused):
        return exc.error
    for kinds, outcome in (
        (UnknownCorpus, "unknown_corpus"),
        (RateLimited, "rate_limited"),
        (JobBusy, "busy"),
        ((archive.ArchiveRejected, InvalidName, CorpusOwnedByOtherTenant, SourceError), "rejected"),
    ):
        if isinstance(exc, kinds):
            return outcome
    return "error"


class JobBusy(RuntimeError):
    """A sync of the corpus is queued or running; an upload waits for it to end."""

    def __init__(self, job: SyncJob) -> None:
        super().__init__(f"corpus {job.corpus!r} has a {job.status} sync ({job.id}); upload again when it has ended")
        self.job = job


FLOOR_METRICS = (
    "cite_coverage",
    "cite_correctness",
    "refusal_precision",
    "refusal_recall",
    "refusal_f1",
    "keyword_correctness",
    "retrieval_recall@1",
    "retrieval_recall@5",
    "retrieval_recall@8",
    "mrr",
)


def release_floors(items: list[str], eval_file: Path | None) -> dict[str, float]:
    """``metric=value`` floors of a release gate (``citedocs sources set --eval FILE --floor ...``)."""
    if items and eval_file is None:
        raise SourceError("--floor needs --eval: the case file the floors are measured on")
    floors = {}
    for item in items:
        name, _, value = item.partition("=")
        if name.strip() not in FLOOR_METRICS:
            raise SourceError(f"unknown floor metric {name.strip()!r} in {item!r}; use one of {', '.join(FLOOR_METRICS)}")
        try:
            floors[name.strip()] = float(value)
        except ValueError:
            raise SourceError(f"floor {item!r} needs a number after '=', e.g. {name.strip()}=0.8") from None
    if eval_file is not None and not floors:
        raise SourceError("--eval needs at least one --floor metric=value, e.g. --floor retrieval_recall@8=0.9")
    return floors


def worker_name(kind: str) -> str:
    import os
    import socket

    return f"{kind}:{socket.gethostname()}:{os.getpid()}"


def _crawl_settings(options: dict) -> CrawlSettings:
    names = ("max_pages", "concurrency", "rate", "timeout_s")
    return CrawlSettings(**{k: options[k] for k in names if k in options})


def job_report(
    source: CorpusSource,
    note: str,
    version_before: str | None,
    result: IngestReport,
    gate_report: dict | None = None,
    went_live: bool = True,
) -> dict:
    """What a finished sync reports (GET /admin/jobs/{id}): the source step, the ingest's counts,
    the chunk ids that changed or vanished (to find the answers a docs change affected), and the
    release gate's figures beside the live version's. A held version is not live: ``version`` stays
    the live one, ``candidate_version`` is the one held back."""
    return {
        "source": {"kind": source.kind, "location": source.location, "note": note},
        "version_before": version_before,
        "version": result.version if went_live else version_before,
        "candidate_version": result.version,
        "switched": went_live and result.version != version_before,
        "gate": gate_report,
        "files_seen": result.files_seen,
        "files_parsed": result.files_parsed,
        "chunks": {"added": result.added, "changed": result.changed, "removed": result.removed, "unchanged": result.unchanged},
        "skipped": [{"path": s.path, "reason": s.reason, "kept_previous": s.kept_previous} for s in result.skipped],
        "rejected": dict(result.rejected_by_reason()),
        "plan": result.plan,
        "seconds": round(result.seconds, 3),
        "changed_chunk_ids": result.changed_ids,
        "removed_chunk_ids": result.removed_ids,
    }

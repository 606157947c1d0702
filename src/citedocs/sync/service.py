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

from .. import config, metrics, telemetry
from ..auth import RateLimited
from ..index.store import ApiKey, CorpusOwnedByOtherTenant, CorpusSource, SyncJob
from ..ingest.crawl import CrawlSettings, crawl_scope
from ..ingest import inventory
from ..ingest.admission import remembered_policy, resolve_policy
from ..ingest.planted import sentence_sha256
from ..ingest.pipeline import ChunkQuota, IngestReport, ProgressFn
from ..service import InvalidName, Services, UnknownCorpus, check_name
from . import archive, gate, sources, webhook
from .sources import SourceError

TRIGGERS = ("cli", "admin", "webhook", "schedule", "upload")


KEPT_ON_REPLACE = ("every", "eval", "floors")  # a source replaced by `ingest --replace-source` keeps its schedule and gate


class SourceConflict(SourceError):
    """An ingest would read a corpus from somewhere else than its remembered source; nothing was changed."""

    def __init__(self, current: CorpusSource, location: str) -> None:
        options = current.options
        extra = ", ".join(
            said for said, on in (
                (f"branch {options.get('branch')}", options.get("branch")), ("pulled at each sync", options.get("pull")),
                (f"every {options.get('every')}", options.get("every")), ("a release gate", options.get("eval")),
            ) if on
        )  # fmt: skip
        super().__init__(
            f"corpus {current.corpus!r} is read from {current.kind} {current.location}{f' ({extra})' if extra else ''}; "
            f"reading {location} into it would replace that source and remove the pages only the source has. "
            f"Nothing was changed. Read {current.location} again, pick another corpus name (--corpus), or pass "
            "--replace-source to make this its source (its schedule and release gate stay)"
        )


def check_corpus_name(corpus: str) -> str:
    """A corpus name a tenant or the operator may use: a valid name, not one the release gate reserves."""
    check_name("corpus", corpus)
    if corpus.endswith(gate.CANDIDATE_SUFFIX):
        raise InvalidName(
            f"invalid corpus {corpus!r}: names ending in {gate.CANDIDATE_SUFFIX!r} are reserved for the release gate's "
            "candidate versions; pick another corpus name"
        )
    return corpus


def name_unavailable(corpus: str) -> CorpusOwnedByOtherTenant:
    """A name in use by another tenant: said without whose it is or what it holds (names are unique across tenants)."""
    return CorpusOwnedByOtherTenant(f"corpus name {corpus!r} is not available; pick another corpus name")


def _place(kind: str, location: str) -> str:
    """A location as a source remembers it: a resolved folder, or the URL as given."""
    return location if kind == "crawl" else str(Path(location).expanduser().resolve())


def _same_place(source: CorpusSource, kind: str, location: str) -> bool:
    """Whether ``location`` is where ``source`` reads from: the same site, or the same folder, one
    inside the other (a project and its docs/ folder hold the same docs)."""
    if (source.kind == "crawl") != (kind == "crawl"):
        return False
    if kind == "crawl":
        return source.location.rstrip("/") == location.rstrip("/")
    remembered, given = Path(_place(source.kind, source.location)), Path(_place(kind, location))
    return remembered == given or remembered.is_relative_to(given) or given.is_relative_to(remembered)


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
    """citedocs' own folder for ``corpus``'s uploads (under CITEDOCS_HOME): the only place an upload writes."""
    return (config.home() / "uploads" / corpus).resolve()


def upload_folder(corpus: str) -> Path:
    """Where the docs of ``corpus``'s live upload are kept, for a later sync to read again."""
    return uploads_dir(corpus) / "current"


class Syncs:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.store = services.store

    # sources -------------------------------------------------------------------------------------
    def set_source(
        self, corpus: str, kind: str, location: str, options: dict | None = None, tenant: str = config.DEFAULT_TENANT
    ) -> CorpusSource:
        """Remember where ``corpus`` is read from (replacing what was remembered; the webhook secret stays)."""
        check_corpus_name(corpus)
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

    def check_source_kept(self, corpus: str, kind: str, location: str, replace_source: bool = False) -> None:
        """Before `citedocs ingest` or `up` reads ``location`` into ``corpus``: refuse (SourceConflict)
        when the corpus is read from somewhere else, unless ``replace_source`` (the operator's
        --replace-source); an ingest of another folder would drop the pages the source has and it lacks."""
        check_corpus_name(corpus)
        if replace_source or (self.store.get_source(corpus) is None and self.store.get_corpus(corpus) is None):
            return
        current = self.source(corpus)
        if not _same_place(current, kind, location):
            raise SourceConflict(current, _place(kind, location))

    def remember_ingested(self, corpus: str, kind: str, location: str, tenant: str, options: dict, replace_source: bool = False) -> None:
        """After `citedocs ingest`: remember the folder or site it read. A corpus that already
        remembers that very location keeps its source as it is (a git source, a schedule, a gate);
        another location is refused unless ``replace_source``, which keeps the schedule and release gate."""
        location = _place(kind, location)
        previous = self.store.get_source(corpus)
        if previous is not None and _same_place(previous, kind, location):
            if previous.location != location:  # the project for its docs folder, or back: the source stays, re-pointed
                given = {k: v for k, v in options.items() if v is not None}
                self.store.save_source(replace(previous, location=location, options={**previous.options, **given}, updated_at=stamp()))
            return
        if previous is not None and not replace_source:
            raise SourceConflict(previous, location)
        kept = {k: v for k, v in (previous.options if previous else {}).items() if k in KEPT_ON_REPLACE}
        self.set_source(corpus, kind, location, {**kept, **options}, tenant)

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
        check_corpus_name(corpus)
        limit = config.setting("max_upload_bytes")
        if len(data) > limit:
            raise archive.ArchiveRejected(f"the archive is {len(data):,} bytes, over the {limit:,}-byte limit (max_upload_bytes)", [])
        inspected = archive.inspect(data, archive.Limits.from_settings())
        info = self.store.get_corpus(corpus)
        stored = self.store.get_source(corpus)
        owner = stored.tenant if stored else info.tenant if info else tenant
        if owner != tenant:
            raise name_unavailable(corpus)
        self._check_upload_quotas(corpus, tenant, inspected, new_corpus=stored is None and info is None)
        active = next((job for job in self.store.list_jobs(None, corpus, 1) if job.active), None)
        if active is not None:
            raise JobBusy(active)
        # the upload becomes where the docs come from; every other setting of the source stays
        previous = self.source(corpus) if stored or info else None
        given = {k: v for k, v in {"base_url": base_url, "format": docs_format}.items() if v}
        if previous is None:
            self.set_source(corpus, "archive", str(upload_folder(corpus)), given, tenant)
        else:
            options = {**previous.options, **given}
            self.store.save_source(replace(previous, kind="archive", location=str(upload_folder(corpus)), options=options, updated_at=stamp()))
        job, created = self._start(corpus, "upload", tenant, data)
        if not created:  # another sync was queued meanwhile: the upload is refused, the source as it was
            if previous is not None:
                self.store.save_source(previous)
            raise JobBusy(job)
        return job

    def _check_upload_quotas(self, corpus: str, tenant: str, inspected: archive.ArchiveReport, new_corpus: bool) -> None:
        """Raise QuotaExceeded if this upload takes ``tenant`` over its corpora or upload-bytes quota."""
        max_corpora = config.setting("tenant_max_corpora")
        if new_corpus and max_corpora:
            owned = {c.name for c in self.store.list_corpora(tenant)} | {s.corpus for s in self.store.list_sources(tenant)}
            if len(owned) >= max_corpora:
                raise QuotaExceeded(
                    409, f"tenant {tenant!r} has {len(owned):,} corpora, its quota of {max_corpora:,} corpus(es) (tenant_max_corpora): "
                    "upload to one of them, or ask the operator to raise the quota; nothing was changed",
                )  # fmt: skip
        max_bytes = config.setting("tenant_max_upload_bytes")
        if max_bytes:
            others = [s.corpus for s in self.store.list_sources(tenant) if s.kind == "archive" and s.corpus != corpus]
            used = sum(folder_bytes(upload_folder(name)) for name in others)  # this corpus's own folder is replaced
            if used + inspected.unpacked_bytes > max_bytes:
                raise QuotaExceeded(
                    413, f"this archive unpacks to {inspected.unpacked_bytes:,} bytes; with the {used:,} of tenant {tenant!r}'s other "
                    f"uploads that is over its quota of {max_bytes:,} bytes (tenant_max_upload_bytes); nothing was changed",
                )  # fmt: skip

    def chunk_quota(self, corpus: str, tenant: str) -> ChunkQuota | None:
        """The room ``corpus``'s next version has under its tenant's chunk quota (None: no quota)."""
        limit = config.setting("tenant_max_chunks")
        if not limit:
            return None
        others = sum(c.chunk_count for c in self.store.list_corpora(tenant) if c.name != corpus)
        return ChunkQuota(tenant, limit, others)

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
            if source.kind != "archive" or Path(source.location) != upload_folder(job.corpus):
                raise SourceError(
                    f"the source of corpus {job.corpus!r} was changed to {source.kind} {source.location} after this upload was "
                    "accepted; the upload was not applied (upload it again to make it the source)"
                )
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
                folder, target, base_url, progress, tenant, admission=remembered_policy(job.corpus), format=docs_format,
                chunk_quota=self.chunk_quota(job.corpus, source.tenant),
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
                if went_live:  # the new version is live: its files become the folder a later sync re-reads
                    _replace_folder(upload_folder(job.corpus), incoming)
                else:  # failed or held: the folder of the live version stays
                    shutil.rmtree(incoming, ignore_errors=True)
        report = job_report(source, note, before.version if before else None, result, gate_report, went_live)
        if report.get("switched"):  # a new version is live: the docs gaps it fills are marked with this job
            report["resolved_gaps"] = self.services.resolve_gaps(job.corpus, job.id)
        return status, report

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
        known |= set(inventory.approved_hosts(corpus))  # approved already (another admin was first): nothing new, no error
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
        A request whose signature does not hold is anyone's: it is counted by reason
        (``citedocs_webhooks_rejected_total``), never written to the audit log. Once it holds, ``admit``
        runs before the delivery id is spent (the per-corpus rate limit: requests nobody signed cannot
        use up a corpus's allowance), and the audit log gets the outcome, in the corpus's tenant."""
        try:
            stored, delivery = self._signed_delivery(corpus, body, headers)
        except webhook.Refused as exc:
            metrics.WEBHOOKS_REJECTED.labels(exc.error).inc()
            raise
        return self._audited("webhook", corpus, None, stored.tenant, "webhook", lambda: self._webhook(corpus, stored, delivery, admit))

    def _signed_delivery(self, corpus: str, body: bytes, headers: dict[str, str]) -> tuple[CorpusSource, webhook.Delivery]:
        stored = self.store.get_source(corpus)
        if stored is None or stored.webhook_secret is None:
            # the same answer for a corpus without a webhook and one that does not exist
            raise webhook.Refused(404, "no_webhook", f"corpus {corpus!r} has no webhook; the operator enables one with `citedocs sources webhook-secret {corpus}`")
        return stored, webhook.verify(stored.webhook_secret, body, headers, config.setting("webhook_replay_window_s"))

    def _webhook(self, corpus: str, stored: CorpusSource, delivery: webhook.Delivery, admit: Callable[[], None]) -> tuple[SyncJob, bool]:
        """A signed request that asks for no sync (a ping, another event, a push to another branch
        than the source's) raises ``webhook.Ignored``: no job, and its replay key is not spent."""
        window = config.setting("webhook_replay_window_s")
        admit()
        webhook.check_applies(delivery, stored.options.get("branch"))
        at = now()
        if not self.store.record_delivery(corpus, delivery.key, stamp(at), stamp(at - timedelta(seconds=webhook.remembered_s(window)))):
            raise webhook.Refused(409, "replayed_delivery", f"delivery {delivery.key!r} was received already; nothing was changed")
        return self._start(corpus, "webhook")

    # the audit log -------------------------------------------------------------------------------
    def record_ended(self, job: SyncJob | None, worker: str) -> SyncJob | None:
        """A job's outcome in its tenant's audit log (``job.ended``: succeeded, failed or held, with
        the job id and its error), so the log that shows who started a sync also shows how it ended."""
        if job is not None and job.status in ("succeeded", "failed", "held"):
            chunks = (job.report or {}).get("chunks") or {}
            counts = ", ".join(f"{chunks[k]} {k}" for k in ("added", "changed", "removed") if k in chunks)
            detail = f"job {job.id} ({job.trigger})" + (f": {job.error}" if job.error else f": chunks {counts}" if counts else "")
            self.services.audit(None, "job.ended", job.corpus, job.status, detail[:1000], tenant=job.tenant, actor=f"worker:{worker}")
        return job

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


def _replace_folder(folder: Path, new: Path) -> None:
    """Make ``new`` (a sibling) take the place of ``folder``; only ever called on citedocs' upload folders."""
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    new.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


def audit_outcome(exc: Exception) -> str:
    """How the audit log names a refused sync request."""
    if isinstance(exc, webhook.Refused):
        return exc.error
    for kinds, outcome in (
        (UnknownCorpus, "unknown_corpus"),
        (RateLimited, "rate_limited"),
        (JobBusy, "busy"),
        (QuotaExceeded, "quota_exceeded"),
        ((archive.ArchiveRejected, InvalidName, CorpusOwnedByOtherTenant, SourceError), "rejected"),
    ):
        if isinstance(exc, kinds):
            return outcome
    return "error"


class QuotaExceeded(ValueError):
    """A tenant's quota (a setting) would be exceeded; ``status`` is the HTTP answer. Nothing was changed."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status


def folder_bytes(folder: Path) -> int:
    """Bytes the files under ``folder`` take (0 if there is no such folder); an upload unpacks no links."""
    return sum(path.lstat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


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

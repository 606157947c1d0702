"""The HTTP side of keeping corpora in sync (docs/how-to/keep-in-sync.md), over ``citedocs.sync``:

- admin routes (an admin key, bounded to its tenant; every action in the audit log):
  ``GET /admin/corpora``, ``POST /admin/corpora/{name}/sync``, ``POST /admin/corpora/{name}/archive``,
  ``GET /admin/jobs``, ``GET /admin/jobs/{id}``, ``GET /admin/inventory/{name}``,
  ``POST /admin/inventory/{name}/approve``;
- the signed webhook ``POST /hooks/corpora/{name}`` (no key: the HMAC signature is the credential).

No ``from __future__ import annotations`` here: the routes' ``AdminKey`` is built inside
``create_router``, and FastAPI must see it as an object, not as a name to look up in this module.
"""


import math
from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from .. import config, metrics
from ..auth import RateLimited, RateLimiter, SharedRateLimiter, rate_limiter
from ..contract import ErrorBody
from ..index.store import ApiKey, CorpusOwnedByOtherTenant
from ..service import InvalidName, Services, UnknownCorpus
from ..sync import webhook
from ..sync.archive import ArchiveRejected
from ..sync.service import JobBusy, QuotaExceeded, Syncs, UnknownJob
from ..sync.sources import SourceError
from .openapi import BODY_ERRORS, ERRORS, GUARDED, _errors

ARCHIVE_ROUTE = r"^/admin/corpora/[^/]+/archive$"  # the one route whose body may exceed max_body_bytes
ACTIVE_JOB = {200: {"description": "The corpus already had a queued or running sync: that job (created: false)"}}
WEBHOOK_ERRORS = _errors(400, 401, 404, 409, 413, 429, 503)
HOOK_OK = {200: {"description": "The corpus's queued or running sync (created: false); or, for a signed request that asks "
                 "for no sync (a ping, another event, a push to another branch), no job and why: "
                 "{job: null, created: false, ignored: '...'}"}}


def _error(status: int, error: str, detail: str, headers: dict | None = None, **extra) -> JSONResponse:
    return JSONResponse(status_code=status, content=ErrorBody(error=error, detail=detail).model_dump() | extra, headers=headers)


def _limited(exc: RateLimited) -> JSONResponse:
    return _error(429, "rate_limited", f"webhook {exc}", {"Retry-After": str(math.ceil(exc.retry_after_s))})


class InventoryApproval(BaseModel):
    model_config = ConfigDict(extra="forbid")
    hosts: list[str] = Field(default_factory=list, max_length=1000)
    all_pending: bool = False


def create_router(services: Callable[[], Services], admin_caller: Callable[[Request], ApiKey]) -> APIRouter:
    router = APIRouter()
    AdminKey = Annotated[ApiKey, Depends(admin_caller)]
    made: list[RateLimiter | SharedRateLimiter] = []

    def hook_limiter() -> RateLimiter | SharedRateLimiter:
        """Made at the first webhook: shared by every server process on a PostgreSQL store (like the
        API's rate limit), per process on SQLite."""
        if not made:
            made.append(rate_limiter(config.setting("webhook_rate_per_minute"), services().store))
        return made[0]

    def syncs() -> Syncs:
        return Syncs(services())

    def job_body(job, created: bool | None = None) -> dict:
        body = {"job": job.as_dict()}
        if created is not None:
            body["created"] = created
        return body

    @router.get("/admin/corpora", responses=GUARDED)
    def admin_corpora(key: AdminKey) -> dict:
        """The key's tenant's corpora: source, live version, chunks, last sync, next scheduled sync."""
        return {"corpora": syncs().overview(key.tenant)}

    @router.post("/admin/corpora/{name}/sync", status_code=202, responses={**ACTIVE_JOB, **GUARDED, **ERRORS})
    def admin_sync(name: str, key: AdminKey):
        """Queue a sync of the corpus; a corpus with a queued or running sync returns that job (200)."""
        try:
            job, created = syncs().start(name, "admin", key.tenant, by=key)
        except UnknownCorpus as exc:
            return _error(404, "unknown_corpus", str(exc))
        return JSONResponse(job_body(job, created), status_code=202 if created else 200)

    @router.post("/admin/corpora/{name}/archive", status_code=202, responses={**BODY_ERRORS, **GUARDED, **ERRORS, **_errors(409, 413)})
    async def admin_archive(
        name: str,
        request: Request,
        key: AdminKey,
        base_url: Annotated[str | None, Query(description="Public URL of the docs (a new corpus needs it)")] = None,
        docs_format: Annotated[str | None, Query(alias="format", description="Docs format (default: detected)")] = None,
    ):
        """Upload a .zip or .tar.gz of docs as the corpus's new source (raw body); checked whole,
        then synced by a worker. The live version keeps serving until the new one is complete."""
        data = await request.body()
        try:  # the archive's check inflates data: in a worker thread, never on the event loop
            job = await run_in_threadpool(syncs().upload, name, data, key, base_url, docs_format)
        except ArchiveRejected as exc:
            return _error(422, "archive_rejected", exc.summary, problems=exc.problems)
        except InvalidName as exc:
            return _error(422, "invalid_corpus", str(exc))
        except CorpusOwnedByOtherTenant as exc:  # another tenant's: said without whose (docs: keep-in-sync.md)
            return _error(409, "name_unavailable", str(exc))
        except JobBusy as exc:
            return _error(409, "sync_in_progress", str(exc), job=exc.job.as_dict())
        except QuotaExceeded as exc:
            return _error(exc.status, "quota_exceeded", str(exc))
        return job_body(job)

    @router.get("/admin/jobs", responses={**GUARDED, **ERRORS})
    def admin_jobs(key: AdminKey, corpus: str | None = None, limit: int = 50) -> dict:
        """The tenant's sync jobs, newest first."""
        return {"jobs": [j.as_dict() for j in syncs().jobs(key.tenant, corpus, max(1, min(limit, 500)))]}

    @router.get("/admin/jobs/{job_id}", responses={**GUARDED, **ERRORS})
    def admin_job(job_id: str, key: AdminKey):
        """One job: status, attempts, progress, and when it ended its report (or error)."""
        try:
            return job_body(syncs().job(job_id, key.tenant))
        except UnknownJob as exc:
            return _error(404, "unknown_job", str(exc))

    @router.get("/admin/inventory/{name}", responses={**GUARDED, **ERRORS})
    def admin_inventory(name: str, key: AdminKey, offset: int = 0, limit: int = 100, kind: str | None = None):
        """The corpus's inventory, paged: every external host and risky step its docs name (page,
        line, commit), each trusted or awaiting approval, and what a held sync would add."""
        try:
            return syncs().inventory_page(name, max(0, offset), max(1, min(limit, 1000)), kind, key.tenant)
        except UnknownCorpus as exc:
            return _error(404, "unknown_corpus", str(exc))

    @router.post("/admin/inventory/{name}/approve", status_code=202, responses={**GUARDED, **ERRORS})
    def admin_inventory_approve(name: str, body: InventoryApproval, key: AdminKey):
        """Approve hosts of the inventory (or every one a held sync would add), then queue a sync so
        what they serve is answered; in the audit log."""
        try:
            approved = syncs().approve_hosts(name, body.hosts, key, body.all_pending, key.tenant)
            job, created = syncs().start(name, "admin", key.tenant, by=key)
        except UnknownCorpus as exc:
            return _error(404, "unknown_corpus", str(exc))
        except SourceError as exc:
            return _error(422, "not_in_inventory", str(exc))
        return JSONResponse({"approved": approved} | job_body(job, created), status_code=202)

    @router.post("/hooks/corpora/{name}", status_code=202, responses={**HOOK_OK, **WEBHOOK_ERRORS})
    async def corpus_webhook(name: str, request: Request):
        """Start a sync when signed with the corpus's webhook secret: X-Citedocs-Signature over
        timestamp, delivery id and raw body, or GitHub's X-Hub-Signature-256 over the raw body. A
        signed request that asks for no sync (GitHub's ping, another event, a push to another branch)
        answers 200 with ``ignored`` and makes no job."""
        # its own bucket names: on PostgreSQL the API's limit shares the same table, at another rate
        client = f"webhook-ip:{request.client.host if request.client else 'unknown'}"
        try:
            hook_limiter().take(client)  # every request, signed or not
        except RateLimited as exc:
            metrics.WEBHOOKS_REJECTED.labels("rate_limited").inc()
            return _limited(exc)
        body = await request.body()
        headers = {k.lower(): v for k, v in request.headers.items()}
        try:
            job, created = syncs().webhook(name, body, headers, lambda: hook_limiter().take(f"webhook-corpus:{name}"))
        except RateLimited as exc:
            return _limited(exc)
        except webhook.Ignored as exc:
            return JSONResponse({"job": None, "created": False, "ignored": exc.detail})
        except webhook.Refused as exc:
            return _error(exc.status, exc.error, exc.detail)
        except UnknownCorpus as exc:
            return _error(404, "unknown_corpus", str(exc))
        return JSONResponse(job_body(job, created), status_code=202 if created else 200)

    return router

"""HTTP API: a thin FastAPI adapter over citedocs.service."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Literal

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException

from .. import __version__, config
from ..generate.unit_features import configured_unit_scorer
from ..auth import AuthError, RateLimited, check_admin, check_publishable, rate_limiter
from ..capacity import capacity
from ..contract import AskRequest, AskResponse, DismissGapsRequest, ErrorBody, FeedbackRequest, NewKeyRequest
from ..i18n import choose_language, messages, requested_language
from ..index.store import ApiKey, StoreUnavailable
from ..insights import InvalidRange, gaps_markdown, report_rows
from ..models.encoders import ModelMissing
from ..service import EmptyQuestion, InvalidKeyOrigins, InvalidName, Services, UnknownCorpus, UnknownKey, UnknownTrace
from ..ui.charts import insights_charts
from . import chat_apps, cors, openai_facade, sync_routes
from .mcp_http import mount_mcp
from .middleware import BodyLimit, ConcurrencyGate, RequestLog, SecurityHeaders
from .openapi import BODY_ERRORS, ERRORS, GUARDED, EventStream, complete_openapi, framework_error

STATIC_DIR = Path(__file__).resolve().parent.parent / "ui" / "static"


def _error(status: int, error: str, detail: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse(status_code=status, content=ErrorBody(error=error, detail=detail).model_dump(), headers=headers)


def _describe_validation(exc: RequestValidationError) -> str:
    problems = []
    for item in exc.errors():
        where = ".".join(str(p) for p in item.get("loc", ()) if p != "body") or "body"
        problems.append(f"{where}: {item.get('msg')}")
    return "; ".join(problems) + ". Send JSON like {\"question\": \"How do I ...?\"}."


def _services(app: FastAPI) -> Services:
    if app.state.services is None:
        app.state.services = Services.open()
    return app.state.services


def _limiter(app: FastAPI):
    """The rate limiter, made at the first request: shared by every server process on a PostgreSQL
    store, per process on SQLite (auth.rate_limiter)."""
    if app.state.limiter is None:
        app.state.limiter = rate_limiter(app.state.rate_limit_per_minute, _services(app).store)
    return app.state.limiter


def _caller(request: Request) -> str | None:
    """The caller's tenant (None with auth off: one tenant sees everything); rate-limits the caller.

    A full key is limited per key; a publishable key (only on the widget's routes, from its own
    origins) per client IP, like auth off: every visitor of the page shares it.
    """
    state = request.app.state
    client_ip = f"ip:{request.client.host if request.client else 'unknown'}"
    if state.auth_required:
        key = _services(request.app).authenticate(request.headers.get("authorization"))
        route = getattr(request.scope.get("route"), "path", None)
        check_publishable(key, request.method, route, request.headers.get("origin"))
        request.state.tenant = key.tenant
        _limiter(request.app).take(client_ip if key.publishable else f"key:{key.key_id}")
        return key.tenant
    _limiter(request.app).take(client_ip)
    return None


Tenant = Annotated[str | None, Depends(_caller)]


def _admin_caller(request: Request) -> ApiKey:
    """The admin key behind the request. Admin routes take one whatever the ``auth`` setting: with auth
    off the question routes are open to the local user, but syncing, uploading and reading everyone's
    questions never are. The key's tenant bounds what it reaches; it is rate-limited per key."""
    key = _services(request.app).authenticate(request.headers.get("authorization"))
    check_admin(key)
    request.state.tenant = key.tenant
    _limiter(request.app).take(f"key:{key.key_id}")
    return key


AdminKey = Annotated[ApiKey, Depends(_admin_caller)]


def create_app(services: Services | None = None) -> FastAPI:
    """The API; auth, rate limit and body limit come from the settings (see config.SETTINGS)."""
    app = FastAPI(
        title="citedocs",
        version=__version__,
        description="Answers from your docs in which every claim cites a retrieved chunk, or an honest refusal.",
    )
    app.state.services = services
    app.state.auth_required = config.setting("auth") == "required"
    limits = capacity()
    app.state.rate_limit_per_minute = limits.rate_limit_per_minute
    app.state.limiter = None  # made at the first request (_limiter)
    complete_openapi(app)

    def svc() -> Services:
        return _services(app)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        """Unknown routes and methods, and bodies that cannot be read, answer in the {error, detail} shape."""
        allow = (exc.headers or {}).get("Allow")
        error, detail = framework_error(exc.status_code, request.method, request.url.path, allow)
        return _error(exc.status_code, error, detail, exc.headers)

    @app.exception_handler(AuthError)
    async def unauthorized(_: Request, exc: AuthError) -> JSONResponse:
        return _error(exc.status, exc.error, exc.detail, {"WWW-Authenticate": "Bearer"})

    @app.exception_handler(RateLimited)
    async def rate_limited(_: Request, exc: RateLimited) -> JSONResponse:
        return _error(429, "rate_limited", str(exc), {"Retry-After": str(math.ceil(exc.retry_after_s))})

    @app.exception_handler(StoreUnavailable)
    async def store_unavailable(_: Request, exc: StoreUnavailable) -> JSONResponse:
        """The database is down or unreachable: fail fast, and the client may retry (the pool reconnects)."""
        return _error(503, "store_unavailable", str(exc), {"Retry-After": "5"})

    # errors whose message is the whole answer: (status, error code)
    plain_errors: dict[type[Exception], tuple[int, str]] = {
        UnknownTrace: (404, "unknown_trace"),
        UnknownKey: (404, "unknown_key"),
        InvalidRange: (422, "invalid_range"),
        InvalidName: (422, "invalid_name"),
        EmptyQuestion: (422, "invalid_question"),
        ModelMissing: (503, "model_missing"),
        UnknownCorpus: (404, "unknown_corpus"),
    }

    async def plain_error(_: Request, exc: Exception) -> JSONResponse:
        status, error = next(plain_errors[c] for c in type(exc).__mro__ if c in plain_errors)  # subclasses too
        return _error(status, error, str(exc))

    for error_type in plain_errors:
        app.add_exception_handler(error_type, plain_error)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, "invalid_request", _describe_validation(exc))

    @app.get("/healthz")
    def healthz() -> dict:
        """Alive, the version, and how the extractive backend chooses sentences (a trained scorer whose
        file failed its check falls back to the hand-set score: said here, never silently)."""
        return {"status": "ok", "version": __version__, "unit_scorer": configured_unit_scorer()[1]}

    @app.get("/readyz", responses={503: {"model": ErrorBody}})
    def readyz():
        """200 when the store answers and the generation backend is reachable, else 503 naming why."""
        problems = svc().readiness()
        if problems:
            return _error(503, "not_ready", "; ".join(problems))
        return {"status": "ready"}

    @app.get("/metrics", include_in_schema=False)
    def prometheus_metrics() -> Response:
        """Prometheus text format. Open like /healthz (aggregates only, no tenant labels)."""
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/corpora", responses=GUARDED)
    def corpora(tenant: Tenant) -> dict:
        services = svc()
        return {
            "default": services.default_corpus(tenant),
            "corpora": [
                {"name": c.name, "version": c.version, "chunks": c.chunk_count, "updated_at": c.updated_at}
                for c in services.corpora(tenant)
            ],
        }

    @app.get("/admin/audit", responses=GUARDED)
    def admin_audit(key: AdminKey, limit: int = 100) -> dict:
        """The audit log of the admin key's tenant, newest first: who did what, on what, and how it ended."""
        return {"actions": [a.__dict__ for a in svc().admin_actions(key.tenant, max(1, min(limit, 1000)))]}

    @app.get("/admin/insights", responses=GUARDED)
    def admin_insights(
        key: AdminKey, corpus: str | None = None, since: str = "7d", until: str | None = None, gaps: bool = True
    ) -> dict:
        """What the tenant's users asked (see `citedocs insights`): counts, latency, feedback, pages,
        docs gaps grouped by topic and past answers a docs change affected."""
        return svc().insights(key.tenant, corpus or None, since, until or None, gaps)

    @app.get(
        "/admin/insights/gaps",
        responses={
            200: {"description": "The docs gaps (format: json, csv or markdown)",
                  "content": {"application/json": {}, "text/csv": {"schema": {"type": "string"}}, "text/markdown": {"schema": {"type": "string"}}}},
            **GUARDED,
        },
    )
    def admin_insights_gaps(
        key: AdminKey,
        corpus: str | None = None,
        since: str = "7d",
        until: str | None = None,
        format: Literal["json", "csv", "markdown"] = "json",
    ):
        """The docs gaps and the answers to review alone, to export: JSON, CSV rows (section, item,
        value, detail) or a Markdown issue body."""
        report = svc().insights(key.tenant, corpus or None, since, until or None)
        if format == "markdown":
            return Response(gaps_markdown(report), media_type="text/markdown; charset=utf-8")
        if format == "csv":
            out = io.StringIO()
            writer = csv.writer(out)
            writer.writerow(("section", "item", "value", "detail"))
            writer.writerows(r for r in report_rows(report) if r[0] in ("gap", "weak_answer"))
            return Response(out.getvalue(), media_type="text/csv; charset=utf-8",
                            headers={"Content-Disposition": 'attachment; filename="docs-gaps.csv"'})
        return {"range": report["range"], "gaps": report["gaps"], "weak_answers": report["weak_answers"]}

    @app.post("/admin/insights/gaps/dismiss", responses={404: {"model": ErrorBody}, **BODY_ERRORS, **GUARDED})
    def admin_dismiss_gaps(body: DismissGapsRequest, key: AdminKey) -> dict:
        """Take questions (their trace ids: a gap's ``trace_ids``) out of the docs gaps; audited."""
        return {"dismissed": svc().dismiss_gaps(body.trace_ids, key)}

    @app.get("/admin/insights/charts", responses=GUARDED)
    def admin_insights_charts(
        request: Request, key: AdminKey, corpus: str | None = None, since: str = "7d", until: str | None = None, language: str | None = None
    ) -> dict:
        """The insights' charts as SVG documents (questions per day, refusals by reason), their words in
        ``language`` (a tag such as ``ru``), else in ``Accept-Language``'s, else English."""
        chosen = _words_language(language, request)
        return insights_charts(svc().insights(key.tenant, corpus or None, since, until or None, gaps=False), chosen)

    @app.get("/admin/traces", responses=GUARDED)
    def admin_traces(
        key: AdminKey,
        corpus: str | None = None,
        limit: int = 50,
        outcome: Literal["refused", "answered", "thumbs_down"] | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> dict:
        """The tenant's newest traces with their feedback; only refused, answered or voted-down ones
        (``outcome``), of one corpus, in [since, until) (7d, 24h or an ISO date) when asked."""
        traces = svc().recent_traces(key.tenant, corpus or None, max(1, min(limit, 500)), outcome, since or None, until or None)
        return {"traces": traces}

    @app.get("/admin/traces/{trace_id}", responses={404: {"model": ErrorBody}, **GUARDED})
    def admin_trace(trace_id: str, key: AdminKey) -> dict:
        """One trace, with the passages it cited (``sources``; refused: the ``nearest`` it retrieved) as the corpus has them now."""
        return svc().trace_with_sources(trace_id, key.tenant)

    @app.get("/admin/keys", responses=GUARDED)
    def admin_keys(key: AdminKey) -> dict:
        """The tenant's API keys (never their secrets)."""
        return {"keys": [k.as_dict() for k in svc().keys(key.tenant)]}

    @app.post("/admin/keys", status_code=201, responses={**BODY_ERRORS, **GUARDED})
    def admin_create_key(body: NewKeyRequest, key: AdminKey) -> dict:
        """A new key for the admin key's own tenant; its secret is in this response only."""
        try:
            made, secret = svc().create_key(
                key.tenant, body.name, body.scope == "publishable", body.origins, admin=body.scope == "admin", by=key
            )
        except InvalidKeyOrigins as exc:
            return _error(422, "invalid_key_request", str(exc))
        return {"key": made.as_dict(), "secret": secret}

    @app.post("/admin/keys/{key_id}/revoke", responses={404: {"model": ErrorBody}, **GUARDED})
    def admin_revoke_key(key_id: str, key: AdminKey) -> dict:
        """Revoke one of the tenant's keys (another tenant's is unknown here)."""
        return {"key": svc().revoke_key(key_id, key.tenant, by=key).as_dict()}

    @app.post("/ask", response_model=AskResponse, responses={**BODY_ERRORS, **ERRORS, **GUARDED})
    def ask(body: AskRequest, request: Request, tenant: Tenant) -> AskResponse:
        """Answer from the corpus, or refuse. What citedocs says is in the request's `language`, else
        `Accept-Language`'s, else the question's (the response's `language` names it)."""
        response = svc().ask(_in_requested_language(body, request), tenant)
        request.state.trace_id = response.trace_id
        return response

    @app.post("/ask/stream", response_class=EventStream, responses={**BODY_ERRORS, **ERRORS, **GUARDED})
    def ask_stream(body: AskRequest, request: Request, tenant: Tenant) -> EventStream:
        """Server-Sent Events: `sentence` events as sentences pass validation, then one `final` event.
        A `restart` event means the provider writing the answer failed part-way: every sentence sent
        before it is void, and the answer starts again (on the next provider) or ends with `final`."""
        events = svc().ask_events(_in_requested_language(body, request), tenant)  # validation errors surface here starts

        def stream() -> Iterator[str]:
            for event in events:
                if event.kind == "sentence":
                    data = {"text": event.sentence.text, "ids": event.sentence.ids, "rendered": event.sentence.rendered()}
                    yield f"event: sentence\ndata: {json.dumps(data)}\n\n"
                elif event.kind == "restart":
                    data = {"failed": event.restart.failed, "next": event.restart.provider or None, "reason": event.restart.reason}
                    yield f"event: restart\ndata: {json.dumps(data)}\n\n"
                else:
                    request.state.trace_id = event.response.trace_id
                    yield f"event: final\ndata: {event.response.model_dump_json()}\n\n"

        return EventStream(stream(), headers={"Cache-Control": "no-cache"})

    @app.get("/traces/{trace_id}", responses={404: {"model": ErrorBody}, **GUARDED})
    def get_trace(trace_id: str, tenant: Tenant):
        return svc().trace(trace_id, tenant)

    @app.post("/traces/{trace_id}/feedback", responses={**BODY_ERRORS, **ERRORS, **GUARDED})
    def feedback(trace_id: str, body: FeedbackRequest, tenant: Tenant):
        svc().add_feedback(trace_id, body.verdict, body.comment, tenant)
        return {"status": "stored", "trace_id": trace_id, "verdict": body.verdict}

    app.include_router(openai_facade.create_router(svc, _caller))
    app.include_router(sync_routes.create_router(svc, _admin_caller))
    app.include_router(chat_apps.create_router(svc))
    mount_mcp(app, svc, _caller)

    if STATIC_DIR.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

        @app.get("/", include_in_schema=False)
        def index() -> FileResponse:
            return FileResponse(STATIC_DIR / "index.html")

        @app.get("/admin", include_in_schema=False)
        def admin_console() -> FileResponse:
            """The admin console (its data routes take the admin key the page asks for)."""
            return FileResponse(STATIC_DIR / "admin.html")

        @app.get("/ui/messages", include_in_schema=False)
        def ui_messages(request: Request, language: str | None = None) -> JSONResponse:
            """The browser side's strings in `language`, else in `Accept-Language`'s (English: none)."""
            chosen = _words_language(language, request)
            headers = {"Cache-Control": "max-age=3600", "Vary": "Accept-Language"}
            return JSONResponse({"language": chosen, "messages": messages(chosen)}, headers=headers)

        @app.get("/widget.js", include_in_schema=False)
        def widget() -> FileResponse:
            """The embeddable widget's loader (README: "Put it on your docs site")."""
            return FileResponse(STATIC_DIR / "widget.js", media_type="text/javascript")

    app.add_middleware(
        BodyLimit,
        max_bytes=config.setting("max_body_bytes"),
        routes=(
            (sync_routes.ARCHIVE_ROUTE, config.setting("max_upload_bytes"), "upload a smaller archive (max_upload_bytes)"),
            (r"^/hooks/", config.setting("max_body_bytes"), "a webhook payload that large is refused; nothing was changed"),
        ),
    )
    app.add_middleware(  # outside the body limit: an overloaded server refuses before reading a body
        ConcurrencyGate,
        max_in_flight=limits.max_in_flight,
        max_queue=limits.max_queue,
        max_wait_s=limits.max_queue_wait_s,
    )
    app.add_middleware(SecurityHeaders)
    key_origins = (lambda: svc().publishable_origins()) if app.state.auth_required else None
    cors.install(app, key_origins)  # outside the gate and the limits, so a 503 or 413 still carries CORS headers
    app.add_middleware(RequestLog)  # outermost: sees the 413s and 503s too
    return app


def _in_requested_language(body: AskRequest, request: Request) -> AskRequest:
    """The request with the language its `Accept-Language` header asks for, when its body names none."""
    language = requested_language(body.language, request.headers.get("accept-language"))
    return body if language == body.language else body.model_copy(update={"language": language})


def _words_language(language: str | None, request: Request) -> str:
    """The language of citedocs' own words on a page or chart: ``language`` (a query parameter), else
    ``Accept-Language``'s first that citedocs speaks, else English (there is no question to follow)."""
    return choose_language(requested_language(language, request.headers.get("accept-language")), "en")


def worker_app() -> FastAPI:
    """The app of one worker of a multi-worker ``citedocs serve`` (a uvicorn factory, called in each
    worker process): the serve command has checked the settings and passes the backend in
    ``CITEDOCS_BACKEND``; the models load here, before the worker accepts a request."""
    from .. import telemetry
    from ..logs import configure_json_logging

    configure_json_logging()
    telemetry.configure()
    services = Services.open()
    application = create_app(services)
    services.generator
    services.retriever
    return application

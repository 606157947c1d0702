"""HTTP API: a thin FastAPI adapter over citedocs.service."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles

from .. import __version__, config
from ..contract import AskRequest, AskResponse, ErrorBody, FeedbackRequest
from ..service import EmptyQuestion, Services, UnknownCorpus

STATIC_DIR = Path(__file__).resolve().parent.parent / "ui" / "static"


def _error(status: int, error: str, detail: str) -> JSONResponse:
    return JSONResponse(status_code=status, content=ErrorBody(error=error, detail=detail).model_dump())


def _describe_validation(exc: RequestValidationError) -> str:
    problems = []
    for item in exc.errors():
        where = ".".join(str(p) for p in item.get("loc", ()) if p != "body") or "body"
        problems.append(f"{where}: {item.get('msg')}")
    return "; ".join(problems) + ". Send JSON like {\"question\": \"How do I ...?\"}."


def create_app(services: Services | None = None) -> FastAPI:
    app = FastAPI(
        title="citedocs",
        version=__version__,
        description="Answers from your docs in which every claim cites a retrieved chunk, or an honest refusal.",
    )
    app.state.services = services

    def svc() -> Services:
        if app.state.services is None:
            app.state.services = Services.open()
        return app.state.services

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, "invalid_request", _describe_validation(exc))

    @app.exception_handler(EmptyQuestion)
    async def empty_question(_: Request, exc: EmptyQuestion) -> JSONResponse:
        return _error(422, "invalid_question", str(exc))

    @app.exception_handler(UnknownCorpus)
    async def unknown_corpus(_: Request, exc: UnknownCorpus) -> JSONResponse:
        return _error(404, "unknown_corpus", str(exc))

    @app.get("/healthz")
    def healthz() -> dict:
        return {"status": "ok", "version": __version__}

    @app.get("/corpora")
    def corpora() -> dict:
        return {
            "default": config.default_corpus(),
            "corpora": [
                {"name": c.name, "version": c.version, "chunks": c.chunk_count, "updated_at": c.updated_at}
                for c in svc().store.list_corpora()
            ],
        }

    @app.post("/ask", response_model=AskResponse, responses={404: {"model": ErrorBody}, 422: {"model": ErrorBody}})
    def ask(request: AskRequest) -> AskResponse:
        return svc().ask(request)

    @app.post("/ask/stream", responses={404: {"model": ErrorBody}, 422: {"model": ErrorBody}})
    def ask_stream(request: AskRequest) -> StreamingResponse:
        """Server-Sent Events: `sentence` events as sentences pass validation, then one `final` event."""
        events = svc().ask_events(request)  # validation errors surface here, before streaming starts

        def stream() -> Iterator[str]:
            for event in events:
                if event.kind == "sentence":
                    data = {"text": event.sentence.text, "ids": event.sentence.ids, "rendered": event.sentence.rendered()}
                    yield f"event: sentence\ndata: {json.dumps(data)}\n\n"
                else:
                    yield f"event: final\ndata: {event.response.model_dump_json()}\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    @app.get("/traces/{trace_id}", responses={404: {"model": ErrorBody}})
    def get_trace(trace_id: str):
        trace = svc().trace(trace_id)
        if trace is None:
            return _error(404, "unknown_trace", f"no trace with id {trace_id!r}")
        return trace

    @app.post("/traces/{trace_id}/feedback", responses={404: {"model": ErrorBody}})
    def feedback(trace_id: str, body: FeedbackRequest):
        services = svc()
        if services.trace(trace_id) is None:
            return _error(404, "unknown_trace", f"no trace with id {trace_id!r}")
        services.store.save_feedback(
            trace_id, body.verdict, body.comment, datetime.now(timezone.utc).isoformat(timespec="seconds")
        )
        return {"status": "stored", "trace_id": trace_id, "verdict": body.verdict}

    if STATIC_DIR.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

        @app.get("/", include_in_schema=False)
        def index() -> FileResponse:
            return FileResponse(STATIC_DIR / "index.html")

    return app

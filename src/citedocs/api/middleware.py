"""ASGI middleware: load shedding, security headers, request body size limit, and per-request
metrics plus one JSON log line."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..metrics import REQUEST_SECONDS, REQUESTS

log = logging.getLogger("citedocs.request")


# Paths never shed: probes must answer under load, and the chat page and its assets are static files.
UNGATED_PATHS = frozenset({"/healthz", "/readyz", "/metrics", "/", "/widget.js", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"})
UNGATED_PREFIXES = ("/static/",)


async def _send_json(send: Send, status: int, body: dict, extra_headers: list[tuple[bytes, bytes]] = ()) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()), *extra_headers]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413, whether or not Content-Length is sent.

    ``routes``: (path regex, limit, what to do instead) for the routes whose bodies are not questions
    (an uploaded docs archive may be larger; a webhook's hint differs)."""

    def __init__(self, app: ASGIApp, max_bytes: int, routes: tuple[tuple[str, int, str], ...] = ()) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.routes = tuple((re.compile(pattern), limit, hint) for pattern, limit, hint in routes)

    def _rule(self, path: str) -> tuple[int, str, str]:
        for pattern, limit, hint in self.routes:
            if pattern.match(path):
                return limit, hint, "a per-route limit"
        return self.max_bytes, "send a shorter question or less history", "max_body_bytes"

    @staticmethod
    def _too_large(size: str, limit: int, hint: str, setting: str) -> dict:
        return {
            "error": "body_too_large",
            "detail": f"the request body is {size} bytes; the limit is {limit} bytes ({setting}): {hint}",
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.max_bytes <= 0:
            await self.app(scope, receive, send)
            return
        limit, hint, setting = self._rule(scope.get("path", ""))
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared and declared.isdigit() and int(declared) > limit:
            await _send_json(send, 413, self._too_large(declared.decode(), limit, hint, setting))
            return
        received: list[Message] = []
        size = 0
        while True:  # buffer the body (at most max_bytes) and replay it to the app
            message = await receive()
            received.append(message)
            size += len(message.get("body", b""))
            if size > limit:
                await _send_json(send, 413, self._too_large(f"over {limit}", limit, hint, setting))
                return
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        replay = iter(received)

        async def replayed() -> Message:
            return next(replay, None) or await receive()

        await self.app(scope, replayed, send)


class RequestLog:
    """Count every request by route template and status, and log it as one JSON line.

    A handler can put ``trace_id`` (and ``tenant``) on ``request.state`` to have it logged.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        state = scope.setdefault("state", {})
        status = 500
        done = False

        def finish() -> None:
            nonlocal done
            if done:
                return
            done = True
            route = getattr(scope.get("route"), "path", None) or (
                "/static" if scope["path"].startswith("/static/") else "unmatched"
            )
            seconds = time.perf_counter() - started
            REQUESTS.labels(route, str(status)).inc()
            REQUEST_SECONDS.labels(route).observe(seconds)
            log.info(
                "request",
                extra={
                    "method": scope["method"],
                    "route": route,
                    "path": scope["path"],
                    "status": status,
                    "latency_ms": round(seconds * 1000, 1),
                    "trace_id": state.get("trace_id"),
                    "tenant": state.get("tenant"),
                },
            )

        async def observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                finish()

        try:
            await self.app(scope, receive, observed)
        finally:
            finish()


class ConcurrencyGate:
    """Admit at most ``max_in_flight`` requests at once and let at most ``max_queue`` more wait, each
    for at most ``max_wait_s``; refuse the rest at once with ``503 overloaded`` and ``Retry-After``.

    Why: past its capacity a server that queues without bound answers everyone slowly (at 64
    clients, 29 s p99 and 2 GB RSS) instead of answering most callers promptly and telling the
    rest to come back. A request holds its slot until its response (a stream too) has been sent.
    Probes and static files are never gated.
    """

    def __init__(self, app: ASGIApp, max_in_flight: int, max_queue: int, max_wait_s: float) -> None:
        self.app = app
        self.max_in_flight = max_in_flight
        self.max_queue = max_queue
        self.max_wait_s = max_wait_s
        self._slots: asyncio.Semaphore | None = None  # made on first use, inside the server's event loop
        self._waiting = 0

    def _overloaded(self, send: Send, why: str):
        body = {
            "error": "overloaded",
            "detail": f"the server is at capacity ({self.max_in_flight} requests in flight, {why}); "
            "retry after the Retry-After delay",
        }
        return _send_json(send, 503, body, [(b"retry-after", b"1")])

    async def _acquire_within(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for a slot. Never leaks one: a slot granted just as the wait ends,
        or as the client goes away, is given back (``asyncio.wait_for`` can drop it on Python 3.11)."""
        assert self._slots is not None
        attempt = asyncio.ensure_future(self._slots.acquire())
        try:
            done, _ = await asyncio.wait({attempt}, timeout=seconds)
        except asyncio.CancelledError:
            await self._abandon(attempt)
            raise
        if done:
            return True
        await self._abandon(attempt)
        return False

    async def _abandon(self, attempt: asyncio.Future) -> None:
        attempt.cancel()
        await asyncio.gather(attempt, return_exceptions=True)
        if not attempt.cancelled() and attempt.exception() is None:
            self._slots.release()  # it was granted before the cancel landed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in UNGATED_PATHS or path.startswith(UNGATED_PREFIXES):
            await self.app(scope, receive, send)
            return
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_in_flight)
        if self._slots.locked():
            if self._waiting >= self.max_queue:
                await self._overloaded(send, f"{self._waiting} waiting")
                return
            self._waiting += 1
            try:
                admitted = await self._acquire_within(self.max_wait_s)
            finally:
                self._waiting -= 1
            if not admitted:
                await self._overloaded(send, f"no slot freed within {self.max_wait_s:g}s")
                return
        else:
            await self._slots.acquire()
        try:
            await self.app(scope, receive, send)
        finally:
            self._slots.release()


# The chat page loads only its own scripts, styles and API; nothing may frame it.
CHAT_PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# The interactive API docs load Swagger UI/ReDoc from a CDN with inline scripts: only framing is refused.
API_DOCS_POLICY = "frame-ancestors 'none'"
API_DOCS_PATHS = frozenset({"/docs", "/redoc", "/docs/oauth2-redirect"})


class SecurityHeaders:
    """``nosniff`` and ``Referrer-Policy`` on every response; a Content-Security-Policy with
    ``frame-ancestors 'none'`` (and ``X-Frame-Options``) on citedocs' own HTML pages.

    Why only HTML: the policy protects pages a browser renders; scripts meant to be embedded by
    other sites (the chat widget) stay loadable cross-origin, so no Cross-Origin-Resource-Policy
    is set here.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = API_DOCS_POLICY if scope["path"] in API_DOCS_PATHS else CHAT_PAGE_POLICY

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                added = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]
                content_type = dict(headers).get(b"content-type", b"")
                if content_type.startswith(b"text/html"):
                    added += [(b"content-security-policy", policy.encode()), (b"x-frame-options", b"DENY")]
                headers += [(name, value) for name, value in added if name not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)

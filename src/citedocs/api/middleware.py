"""ASGI middleware: request body size limit, and per-request metrics plus one JSON log line."""

from __future__ import annotations

import json
import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..metrics import REQUEST_SECONDS, REQUESTS

log = logging.getLogger("citedocs.request")


async def _send_json(send: Send, status: int, body: dict) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413, whether or not Content-Length is sent."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _too_large(self, size: str) -> dict:
        return {
            "error": "body_too_large",
            "detail": f"the request body is {size} bytes; the limit is {self.max_bytes} bytes "
            "(max_body_bytes): send a shorter question or less history",
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.max_bytes <= 0:
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared and declared.isdigit() and int(declared) > self.max_bytes:
            await _send_json(send, 413, self._too_large(declared.decode()))
            return
        received: list[Message] = []
        size = 0
        while True:  # buffer the body (at most max_bytes) and replay it to the app
            message = await receive()
            received.append(message)
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await _send_json(send, 413, self._too_large(f"over {self.max_bytes}"))
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

"""Cross-origin access: which web pages (the embeddable widget's hosts) may call the API.

Policy, in one place:
* Public assets (`/widget.js`, `/static/...`, the UI strings `/ui/messages`) carry `Access-Control-Allow-Origin: *`: they hold no
  data, and a page embedding the widget must be able to load its ES modules cross-origin.
* Every other route answers a cross-origin call only from an origin in `cors_origins` (default:
  none). A preflight from any other origin gets 403 `origin_not_allowed` and no CORS headers, so the
  browser never sends the JSON request itself; an actual request from such an origin is answered
  without CORS headers, so the page cannot read it (same-origin pages are not affected).
* With keys required, an origin of a live publishable key is allowed too, except on `/mcp` (the
  key itself opens only the widget's routes, from its own origins: auth.check_publishable). The
  keys are read from the store on each such cross-origin request, so a revocation or a new key
  takes effect at once (browsers cache a preflight for MAX_AGE_S).
* `/mcp` refuses any request whose `Origin` is not allowed, preflight or not: MCP clients send no
  Origin, and a browser-borne request to a local server (DNS rebinding) must not reach the tools.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio.to_thread
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import config
from ..contract import ErrorBody

PUBLIC_PREFIXES = ("/static/", "/widget.js", "/ui/messages")
ALLOW_METHODS = "GET, POST, DELETE, OPTIONS"
ALLOW_HEADERS = "authorization, content-type, accept, accept-language, last-event-id, mcp-protocol-version, mcp-session-id"
EXPOSE_HEADERS = "retry-after, www-authenticate, mcp-session-id"
MAX_AGE_S = "600"


def _refusal(origin: str) -> JSONResponse:
    detail = (
        f"origin {origin} may not call this server; the operator adds it to cors_origins "
        "(config.toml or CITEDOCS_CORS_ORIGINS) to let pages there use the API or the widget"
    )
    return JSONResponse(status_code=403, content=ErrorBody(error="origin_not_allowed", detail=detail).model_dump())


class CrossOrigin:
    """ASGI middleware applying the policy above: the configured origins, plus live publishable keys' ones."""

    def __init__(
        self, app: ASGIApp, allowed: tuple[str, ...], key_origins: Callable[[], frozenset[str]] | None = None
    ) -> None:
        self.app = app
        self.allowed = frozenset(allowed)
        self.key_origins = key_origins  # live publishable keys' origins (None with auth off)

    async def origin_allowed(self, origin: str, path: str) -> bool:
        origin = origin.lower().rstrip("/")
        if origin in self.allowed:
            return True
        if self.key_origins is None or path == "/mcp":
            return False
        return origin in await anyio.to_thread.run_sync(self.key_origins)  # a store read: off the event loop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin is None:
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        public = path.startswith(PUBLIC_PREFIXES)
        allowed = public or await self.origin_allowed(origin, path)
        preflight = scope["method"] == "OPTIONS" and "access-control-request-method" in headers
        if not allowed and (preflight or path == "/mcp"):
            await _refusal(origin)(scope, receive, send)
            return
        cors = (
            [(b"access-control-allow-origin", b"*")]
            if public
            else [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]
            if allowed
            else []
        )
        if preflight:
            response_headers = cors + [
                (b"access-control-allow-methods", ALLOW_METHODS.encode()),
                (b"access-control-allow-headers", ALLOW_HEADERS.encode()),
                (b"access-control-max-age", MAX_AGE_S.encode()),
                (b"content-length", b"0"),
            ]
            await send({"type": "http.response.start", "status": 204, "headers": response_headers})
            await send({"type": "http.response.body", "body": b""})
            return

        async def with_cors(message: Message) -> None:
            if message["type"] == "http.response.start" and cors:
                message["headers"] = [*message.get("headers", []), *cors, (b"access-control-expose-headers", EXPOSE_HEADERS.encode())]
            await send(message)

        await self.app(scope, receive, with_cors)


def install(app: FastAPI, key_origins: Callable[[], frozenset[str]] | None = None) -> None:
    """Apply the policy for the configured `cors_origins`, plus ``key_origins()`` (the live publishable
    keys' origins) when given (added last, so it sees every response)."""
    app.state.cors_origins = config.setting("cors_origins")
    app.add_middleware(CrossOrigin, allowed=app.state.cors_origins, key_origins=key_origins)

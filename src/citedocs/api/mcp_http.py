"""`/mcp` on `citedocs serve`: the MCP server (mcp_server.py) over the streamable HTTP transport.

Stateless (every POST stands alone), so any number of `serve` processes behind a load balancer can
answer an agent. Before a request reaches the SDK it passes the same `caller` check as every REST
route (API key when auth is on, rate limit); failures raise the API's own AuthError/RateLimited,
answered by the app's handlers as `{error, detail}` with the usual status. The caller's tenant is
left on the request state for mcp_server's middleware. Origins are policed by api/cors.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI, Request
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from ..mcp_server import TENANT_STATE_KEY, build_server
from ..service import Services

MCP_PATH = "/mcp"


class _Guarded:
    """Authenticate and rate-limit like the REST API, then hand the request to the SDK."""

    def __init__(self, inner: StreamableHTTPASGIApp, caller: Callable[[Request], str | None]) -> None:
        self.inner = inner
        self.caller = caller

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        tenant = await anyio.to_thread.run_sync(self.caller, Request(scope))  # store lookup: off the event loop
        scope.setdefault("state", {})[TENANT_STATE_KEY] = tenant
        await self.inner(scope, receive, send)


def mount_mcp(app: FastAPI, services: Callable[[], Services], caller: Callable[[Request], str | None]) -> None:
    """Serve the MCP server at /mcp and run its session manager for the app's lifetime."""
    server = build_server(services)
    # Origin checks are api/cors.py's (DNS rebinding included); Host is the operator's to bind.
    server.streamable_http_app(
        stateless_http=True, transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    manager = server.session_manager
    app.router.add_route(MCP_PATH, _Guarded(StreamableHTTPASGIApp(manager), caller), include_in_schema=False)
    outer = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(application: FastAPI) -> AsyncIterator[object]:
        async with manager.run(), outer(application) as state:
            yield state

    app.router.lifespan_context = lifespan

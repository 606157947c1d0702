"""The MCP server for coding agents: tools `search_docs` and `ask_docs`, the corpora as a resource.

A thin adapter over `service.py`, built on the official `mcp` SDK (MCPServer). One server serves
both transports: `citedocs mcp` runs it over stdio, as the local operator who sees every corpus
(like the CLI); `citedocs serve` mounts it at `/mcp` (streamable HTTP, `api/mcp_http.py`), which
authenticates the request exactly like the REST API and leaves the caller's tenant on the request
state. A message-level middleware copies that tenant into a context variable for the handlers, so
an agent holding tenant A's key never sees tenant B's corpora, as with `/ask`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextvars import ContextVar
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field, ValidationError

from . import __version__
from .contract import MAX_HISTORY_TURNS, AskRequest, AskResponse, HistoryTurn, SearchResponse
from .service import EmptyQuestion, Services, UnknownCorpus

CORPORA_URI = "citedocs://corpora"

INSTRUCTIONS = (
    "citedocs answers questions from an indexed documentation corpus. Every sentence of an answer "
    "ends with the ids of the doc chunks that support it, each resolving to a docs URL; when the docs "
    "do not support an answer, citedocs refuses instead of guessing. Read the resource "
    f"{CORPORA_URI} to see which corpora exist."
)

SEARCH_DESCRIPTION = (
    "Search the documentation (hybrid BM25 + embeddings, reranked). Returns ranked chunks, each with "
    "its id, docs URL (with #anchor), page title, section and full text, plus `confidence` (best "
    "reranker similarity; below ~0.5 nothing matched well). Use it to read the docs yourself; use "
    "ask_docs for a verified, cited answer."
)

ASK_DESCRIPTION = (
    "Ask the documentation a question and get a validated answer. Every sentence of `answer` ends "
    "with [chunk-id] markers; `citations` lists those chunks (url, title, section, text), so quote "
    "the URLs when you use the answer. The answer MAY BE A REFUSAL: when `refused` is true the docs "
    "do not support an answer, `answer` says so and `refusal_reason` says why (e.g. "
    "`question_terms_not_in_docs: the docs don't mention X`, which often means the option or API "
    "does not exist; `terms_not_in_passages` means the docs mention X elsewhere: search_docs for it). "
    "Do not invent an answer after a refusal. Pass earlier turns in `history` for "
    "follow-up questions."
)

_tenant: ContextVar[str | None] = ContextVar("citedocs_mcp_tenant", default=None)
TENANT_STATE_KEY = "tenant"  # api/mcp_http.py puts the authenticated caller's tenant here on the request state


async def _tenant_from_request(ctx: Any, call_next: Callable) -> Any:
    """Expose the HTTP caller's tenant (set by api/mcp_http.py) to the handlers; stdio has none."""
    state = getattr(getattr(ctx, "request", None), "state", None)
    token = _tenant.set(getattr(state, TENANT_STATE_KEY, None))
    try:
        return await call_next(ctx)
    finally:
        _tenant.reset(token)


def build_server(services: Callable[[], Services]) -> MCPServer:
    """The MCP server over ``services()`` (called per request, so the HTTP app can open them lazily)."""
    server = MCPServer(name="citedocs", version=__version__, instructions=INSTRUCTIONS)
    server.middleware.append(_tenant_from_request)
    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    @server.tool(description=SEARCH_DESCRIPTION, annotations=read_only)
    def search_docs(
        query: Annotated[str, Field(description="What to look for, in your own words or with exact identifiers.")],
        corpus: Annotated[str | None, Field(description=f"Corpus name (see {CORPORA_URI}); the server's default when omitted.")] = None,
        k: Annotated[int, Field(ge=1, le=20, description="How many chunks to return.")] = 8,
    ) -> SearchResponse:
        try:
            return services().search_passages(query, corpus, k, _tenant.get())
        except (EmptyQuestion, UnknownCorpus) as exc:
            raise ToolError(str(exc)) from None

    @server.tool(description=ASK_DESCRIPTION, annotations=read_only)
    def ask_docs(
        question: Annotated[str, Field(description="The question, in the user's words (up to 2,000 characters).")],
        corpus: Annotated[str | None, Field(description=f"Corpus name (see {CORPORA_URI}); the server's default when omitted.")] = None,
        history: Annotated[
            list[HistoryTurn] | None,
            Field(description=f"Earlier turns, oldest first, as {{role: user|assistant, content}} (at most {MAX_HISTORY_TURNS})."),
        ] = None,
        language: Annotated[
            str | None,
            Field(description="The user's language (e.g. `ru`) for citedocs' own words (a refusal); the question's when omitted."),
        ] = None,
    ) -> AskResponse:
        try:
            request = AskRequest(question=question, corpus=corpus, history=history or [], language=language)
            return services().ask(request, _tenant.get())
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ToolError(f"invalid request: {problems}") from None
        except (EmptyQuestion, UnknownCorpus) as exc:
            raise ToolError(str(exc)) from None

    @server.resource(
        CORPORA_URI,
        name="corpora",
        title="Indexed documentation corpora",
        description="The corpora this caller can ask about (name, version, chunk count) and the default one.",
        mime_type="application/json",
    )
    def corpora() -> str:
        svc, tenant = services(), _tenant.get()
        listing = {
            "default": svc.default_corpus(tenant),
            "corpora": [c.model_dump() for c in svc.corpus_summaries(tenant)],
        }
        return json.dumps(listing, indent=2)

    return server

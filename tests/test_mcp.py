"""The MCP server end to end, driven by the official `mcp` SDK's own client over both transports:
stdio (`citedocs mcp` as a subprocess, as a coding agent launches it) and streamable HTTP (`/mcp` on
a real `citedocs serve`, with and without API keys)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from conftest import SMALL_CORPUS, TENANT_CORPORA, running_server

ANSWERABLE = "How do I deploy my Astro site to Heroku?"
FOLLOW_UP = "Which file do I create in the root of my project for it?"
OUT_OF_SCOPE = "How should I tune PostgreSQL autovacuum for a write-heavy table?"
MARKER = re.compile(r"\[([^\[\]\s]+#[^\[\]\s]*/\d+)\]")


async def agent_session(client: Client) -> dict:
    """What a coding agent does: discover the tools and corpora, search, ask, follow up, hit a refusal."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    resources = [str(r.uri) for r in (await client.list_resources()).resources]
    corpora = (await client.read_resource("citedocs://corpora")).contents[0].text
    search = await client.call_tool("search_docs", {"query": "deploy to Heroku", "k": 3})
    answer = await client.call_tool("ask_docs", {"question": ANSWERABLE})
    history = [{"role": "user", "content": ANSWERABLE}, {"role": "assistant", "content": answer.structured_content["answer"]}]
    follow_up = await client.call_tool("ask_docs", {"question": FOLLOW_UP, "history": history})
    refusal = await client.call_tool("ask_docs", {"question": OUT_OF_SCOPE, "corpus": SMALL_CORPUS})
    unknown = await client.call_tool("ask_docs", {"question": ANSWERABLE, "corpus": "no-such-docs"})
    empty = await client.call_tool("search_docs", {"query": "   "})
    return locals()


def check_agent_session(s: dict) -> None:
    assert set(s["tools"]) == {"search_docs", "ask_docs"}
    ask_description = s["tools"]["ask_docs"].description.lower()
    assert "refus" in ask_description and "citation" in ask_description  # the agent is told both
    assert s["resources"] == ["citedocs://corpora"]
    assert f'"default": "{SMALL_CORPUS}"' in s["corpora"] and '"chunks"' in s["corpora"]

    assert not s["search"].is_error
    hits = s["search"].structured_content["hits"]
    assert 1 <= len(hits) <= 3
    assert hits[0]["url"].startswith("https://docs.astro.build/en/guides/deploy/heroku/")
    assert all(h["id"] and h["title"] and h["section"] and h["text"] for h in hits)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)

    answer = s["answer"].structured_content
    assert answer["refused"] is False, answer
    cited = list(dict.fromkeys(MARKER.findall(answer["answer"])))
    assert cited and cited == [c["id"] for c in answer["citations"]]
    assert all(c["url"].startswith("https://docs.astro.build/en/") for c in answer["citations"])

    follow_up = s["follow_up"].structured_content
    assert follow_up["refused"] is False, follow_up
    assert "static.json" in follow_up["answer"]

    refusal = s["refusal"].structured_content
    assert refusal["refused"] is True and refusal["citations"] == [] and refusal["refusal_reason"]

    assert s["unknown"].is_error and "unknown corpus 'no-such-docs'" in s["unknown"].content[0].text
    assert s["empty"].is_error and "question is empty" in s["empty"].content[0].text


def test_coding_agent_over_stdio_gets_cited_answers_and_refusals(small_home: Path):
    env = {**os.environ, "CITEDOCS_HOME": str(small_home), "CITEDOCS_DATABASE_URL": ""}
    server = StdioServerParameters(command=sys.executable, args=["-m", "citedocs.cli", "mcp"], env=env)

    async def run() -> dict:
        async with Client(server, read_timeout_seconds=300) as client:
            return await agent_session(client)

    check_agent_session(anyio.run(run))


def test_coding_agent_over_streamable_http_gets_cited_answers_and_refusals(integration_server):
    async def run() -> dict:
        async with Client(f"{integration_server.base}/mcp", read_timeout_seconds=300) as client:
            return await agent_session(client)

    check_agent_session(anyio.run(run))


def test_mcp_over_http_refuses_a_browser_origin_not_in_cors_origins(integration_server):
    """A web page (e.g. via DNS rebinding) must not reach the tools; agents send no Origin."""
    response = httpx.post(
        f"{integration_server.base}/mcp",
        headers={"Origin": "http://evil.example", "Accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    assert response.status_code == 403
    assert response.json()["error"] == "origin_not_allowed"


@pytest.fixture(scope="module")
def guarded_mcp(tenant_services):
    """`citedocs serve` with auth required over the two-tenant index; yields (url, acme's key)."""
    secret = tenant_services.create_key("acme", "mcp test")[1]
    with running_server(tenant_services.store.path.parent, CITEDOCS_BACKEND="extractive", CITEDOCS_AUTH="required") as (base, _):
        yield base, secret


def test_mcp_over_http_needs_an_api_key_like_the_rest_api(guarded_mcp):
    base, _ = guarded_mcp
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    missing = httpx.post(f"{base}/mcp", json=request, headers=headers)
    assert missing.status_code == 401 and missing.json()["error"] == "missing_api_key"
    assert missing.headers["www-authenticate"] == "Bearer"
    wrong = httpx.post(f"{base}/mcp", json=request, headers={**headers, "Authorization": "Bearer cd_not-a-key"})
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_api_key"


def test_an_agent_sees_only_its_own_tenants_corpora(guarded_mcp):
    base, secret = guarded_mcp
    own, (other, _) = TENANT_CORPORA["acme"][0], TENANT_CORPORA["globex"]

    async def run() -> tuple:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=300)
        async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
            corpora = (await client.read_resource("citedocs://corpora")).contents[0].text
            theirs = await client.call_tool("search_docs", {"query": "sharp image service", "corpus": other})
            mine = await client.call_tool("search_docs", {"query": "deploy to Heroku"})
            return corpora, theirs, mine

    corpora, theirs, mine = anyio.run(run)
    assert own in corpora and other not in corpora
    assert theirs.is_error and f"unknown corpus '{other}'" in theirs.content[0].text
    assert other not in theirs.content[0].text.split("indexed corpora:")[1]  # the hint names only acme's corpora
    assert not mine.is_error and mine.structured_content["corpus"] == own

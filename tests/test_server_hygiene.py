"""Clean operations: the server logs nothing but JSON lines, its own pages carry security headers,
and an ingest whose output is not a terminal still shows progress, as plain lines."""

from __future__ import annotations

import json

import httpx
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from citedocs.api.app import create_app
from citedocs.cli import app as cli

from conftest import running_server

ANSWERABLE = "How do I deploy my Astro site to Heroku?"


def test_server_log_is_only_json_lines_while_models_encode(tenant_services):
    home = tenant_services.store.path.parent
    with running_server(home, CITEDOCS_BACKEND="extractive", CITEDOCS_CORPUS="acme-docs") as (base, log_path):
        assert httpx.post(f"{base}/ask", json={"question": ANSWERABLE}, timeout=60).status_code == 200
        with httpx.stream("POST", f"{base}/ask/stream", json={"question": ANSWERABLE}, timeout=60) as stream:
            assert "event: final" in stream.read().decode()
    log = log_path.read_text()
    assert "\r" not in log and "Batches" not in log  # no encoder progress bars
    records = [json.loads(line) for line in log.splitlines() if line.strip()]  # every line is one JSON object
    assert any(r["logger"] == "citedocs.serve" and r["msg"].startswith("citedocs on http://") for r in records)
    assert [r["route"] for r in records if r["logger"] == "citedocs.request"][-2:] == ["/ask", "/ask/stream"]


def test_chat_page_has_csp_and_refuses_framing_but_scripts_stay_embeddable(tenant_services):
    client = TestClient(create_app(tenant_services))
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    script = client.get("/static/app.js")
    assert script.status_code == 200 and script.headers["x-content-type-options"] == "nosniff"
    assert "content-security-policy" not in script.headers and "cross-origin-resource-policy" not in script.headers
    assert client.get("/healthz").headers["x-content-type-options"] == "nosniff"


def test_ingest_without_a_terminal_prints_plain_progress_lines(tmp_home, small_docs):
    result = CliRunner().invoke(cli, ["ingest", str(small_docs), "--corpus", "plain"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "parsing files: 4/4" in lines and any(line.startswith("embedding chunks: ") for line in lines)
    assert not any("\r" in line or "━" in line for line in lines)  # no bar redraws

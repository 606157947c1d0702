"""The OpenAPI document is the truth: every status a route answers is declared in the
{error, detail} shape, and schemathesis finds nothing against a real `citedocs serve`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from citedocs.api.app import create_app

from conftest import running_server

# The checks CI holds the server to; any finding fails the test.
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"


def client_for(services, monkeypatch, **settings: str) -> TestClient:
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    return TestClient(create_app(services))


@pytest.fixture
def client(tenant_services, monkeypatch) -> TestClient:
    return client_for(tenant_services, monkeypatch, CITEDOCS_CORPUS="acme-docs")


def assert_error_shape(response, status: int, error: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error", "detail"} and body["error"] == error and body["detail"]


def test_unknown_route_and_method_answer_in_the_error_shape(client):
    assert_error_shape(client.get("/no/such/route"), 404, "not_found")
    wrong_method = client.put("/ask", json={"question": "hi"})
    assert_error_shape(wrong_method, 405, "method_not_allowed")
    assert "POST" in wrong_method.json()["detail"]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"question": "\xff\xfe is not UTF-8"}', id="invalid-utf8"),
        pytest.param(b'{"question": "x", "history": ' + b"[" * 5000 + b"]" * 5000 + b"}", id="nested-too-deep"),
    ],
)
@pytest.mark.parametrize("route", ["/ask", "/ask/stream"])
def test_unreadable_body_is_a_declared_400_in_the_error_shape(client, route, body):
    response = client.post(route, content=body, headers={"content-type": "application/json"})
    assert_error_shape(response, 400, "unreadable_body")
    assert "UTF-8" in response.json()["detail"]


def test_every_error_status_is_declared_as_the_error_body(client):
    paths = client.get("/openapi.json").json()["paths"]
    error_body = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    for route in ("/ask", "/ask/stream"):
        responses = paths[route]["post"]["responses"]
        assert {"400", "401", "403", "404", "413", "422", "429", "503"} <= set(responses)
        for status, response in responses.items():
            if status != "200":
                assert response["content"] == error_body, (route, status)
    assert "503" in paths["/corpora"]["get"]["responses"]


def test_stream_is_declared_as_server_sent_events(client):
    declared = client.get("/openapi.json").json()["paths"]["/ask/stream"]["post"]["responses"]["200"]["content"]
    assert list(declared) == ["text/event-stream"]
    assert {"sentence", "final"} == {e["properties"]["event"]["const"] for e in declared["text/event-stream"]["itemSchema"]["oneOf"]}


def test_bearer_scheme_is_declared_when_keys_are_required(tenant_services, monkeypatch):
    guarded = client_for(tenant_services, monkeypatch, CITEDOCS_AUTH="required").get("/openapi.json").json()
    assert guarded["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key from `citedocs keys create` (`--admin` for the /admin routes).",
    }
    assert guarded["paths"]["/ask"]["post"]["security"] == [{"bearer": []}]
    assert "security" not in guarded["paths"]["/healthz"]["get"]
    open_server = client_for(tenant_services, monkeypatch, CITEDOCS_AUTH="off").get("/openapi.json").json()
    assert "security" not in open_server["paths"]["/ask"]["post"]
    assert open_server["paths"]["/admin/audit"]["get"]["security"] == [{"bearer": []}]  # admin routes: always a key


@pytest.mark.parametrize("auth", ["off", "required"])
def test_schemathesis_finds_nothing_against_a_real_server(tenant_services, tmp_path, auth):
    """Property-based requests (bounded: a few hundred per run) against `citedocs serve`, with an
    admin key: it opens the admin routes (which take one whatever the auth setting) and, with keys
    required, every other route like a full key."""
    home = tenant_services.store.path.parent
    headers = ["-H", f"Authorization: Bearer {tenant_services.create_key('acme', 'schemathesis', admin=True)[1]}"]
    env = {"CITEDOCS_BACKEND": "extractive", "CITEDOCS_AUTH": auth, "CITEDOCS_CORPUS": "acme-docs"}
    # No rate limit: the run must reach the routes, not only the (declared) 429.
    with running_server(home, **env, CITEDOCS_RATE_LIMIT_PER_MINUTE="0") as (base, _):
        run = subprocess.run(
            [str(SCHEMATHESIS), "run", f"{base}/openapi.json", "--checks", CHECKS, "--max-examples", "8",
             # one worker: with two threads, hypothesis's ast.parse of lambda sources trips CPython
             # 3.11's "AST constructor recursion depth mismatch" (a race in the interpreter, not a finding)
             "--seed", "1", "--workers", "1", "--request-timeout", "60", *headers,
             # every warning but validation_mismatch: /v1/chat/completions takes a corpus name as its
             # `model`, which no schema can enumerate, so random names are rightly answered 404
             "--warnings", "missing_auth,missing_test_data,base_url_mismatch,dictionary_mismatch",
             # the sync routes act on real corpus names, job ids and signed bodies, which random values
             # only reach as 404/401; tests/test_sync_http.py drives them against a real server. Key
             # revocation likewise needs a real key id (and could revoke the run's own admin key), and
             # dismissing docs gaps real trace ids: tests/test_admin_insights.py drives both; the
             # inventory routes need a corpus with an inventory: tests/test_inventory.py drives them
             "--exclude-path-regex", "^/(admin/(corpora|jobs|inventory)|hooks)/|^/admin/keys/[^/]+/revoke$|^/admin/insights/gaps/dismiss$"],
            cwd=tmp_path, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "No issues found" in run.stdout, run.stdout[-4000:]

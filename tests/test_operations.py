"""Operations: metrics, readiness, JSON logs, settings file, rate limit, body limit, trace retention."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from citedocs import config
from citedocs.api.app import create_app
from citedocs.auth import RateLimited, RateLimiter
from citedocs.cli import app as cli
from citedocs.contract import AskRequest
from citedocs.generate.openai_compat import EndpointConfig, OpenAICompatibleGenerator
from citedocs.service import Services, UnknownTrace

from conftest import TENANT_CORPORA, running_server
from fake_llm import free_port, running_fake_llm

ANSWERABLE = "How do I deploy my Astro site to Heroku?"
OUT_OF_SCOPE = "How should I tune PostgreSQL autovacuum for a write-heavy table?"


def client_for(services: Services, **settings: str) -> TestClient:
    """An app built under the given settings (env vars, e.g. CITEDOCS_RATE_LIMIT_PER_MINUTE="2")."""
    with pytest.MonkeyPatch.context() as env:
        for name, value in settings.items():
            env.setenv(name, value)
        return TestClient(create_app(services))


def samples(client: TestClient) -> dict[tuple[str, tuple], float]:
    text = client.get("/metrics").text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def delta(before: dict, after: dict, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


def services_with_endpoint(store, base_url: str) -> Services:
    """Real services whose generator talks to the given endpoint (a fake LLM, or nothing at all)."""
    services = Services(store=store)
    services.__dict__["generator"] = OpenAICompatibleGenerator(EndpointConfig(base_url, "fake", None, 2.0))
    return services


def test_metrics_count_requests_refusals_and_stage_latency(tenant_services):
    client = client_for(tenant_services)
    before = samples(client)
    assert client.post("/ask", json={"question": ANSWERABLE}).json()["refused"] is False
    refused = client.post("/ask", json={"question": OUT_OF_SCOPE}).json()
    assert client.post("/ask", json={"question": " "}).status_code == 422
    after = samples(client)
    reason = refused["refusal_reason"].split(":")[0]
    assert delta(before, after, "citedocs_http_requests_total", route="/ask", status="200") == 2
    assert delta(before, after, "citedocs_http_requests_total", route="/ask", status="422") == 1
    assert delta(before, after, "citedocs_refusals_total", reason=reason) == 1
    assert delta(before, after, "citedocs_answers_total", outcome="answered") == 1
    assert delta(before, after, "citedocs_stage_seconds_count", stage="retrieve") == 2
    assert delta(before, after, "citedocs_stage_seconds_count", stage="total") == 2


def test_llm_tokens_and_validator_drops_are_counted(tenant_services):
    with running_fake_llm() as (fake, url):
        fake.reply = (
            "Astro sites deploy to Heroku with a static buildpack [guides/deploy/heroku#/1]. "
            "Heroku gives every app a free PostgreSQL cluster."  # no citation: the validator drops it
        )
        client = client_for(services_with_endpoint(tenant_services.store, url))
        before = samples(client)
        client.post("/ask", json={"question": ANSWERABLE})
        after = samples(client)
    assert delta(before, after, "citedocs_llm_tokens_total", kind="prompt") == 10
    assert delta(before, after, "citedocs_llm_tokens_total", kind="completion") == 5
    assert delta(before, after, "citedocs_validator_drops_total", reason="no valid citation") >= 1


def test_readyz_is_ready_with_the_extractive_backend(tenant_services):
    response = client_for(tenant_services).get("/readyz")
    assert response.status_code == 200 and response.json() == {"status": "ready"}


def test_readyz_is_503_naming_an_unreachable_llm_endpoint(tenant_services):
    url = f"http://127.0.0.1:{free_port()}/v1"
    response = client_for(services_with_endpoint(tenant_services.store, url)).get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["error"] == "not_ready" and "backend" in body["detail"] and "unreachable" in body["detail"]


# on PostgreSQL the buckets live in the database (shared by every server process on it)
@pytest.mark.parametrize("store_backend", ["sqlite", "postgres"], scope="session")
def test_rate_limit_answers_429_with_retry_after(tenant_services):
    client = client_for(tenant_services, CITEDOCS_RATE_LIMIT_PER_MINUTE="2")
    assert [client.get("/corpora").status_code for _ in range(2)] == [200, 200]
    limited = client.get("/corpora")
    assert limited.status_code == 429
    assert limited.json()["error"] == "rate_limited" and "2 requests per minute" in limited.json()["detail"]
    assert int(limited.headers["retry-after"]) >= 1
    assert client.get("/healthz").status_code == 200  # probes are never limited


@pytest.mark.parametrize("store_backend", ["sqlite", "postgres"], scope="session")
def test_rate_limit_is_per_api_key(tenant_services):
    client = client_for(tenant_services, CITEDOCS_AUTH="required", CITEDOCS_RATE_LIMIT_PER_MINUTE="1")
    first, second = ({"Authorization": f"Bearer {tenant_services.create_key('acme')[1]}"} for _ in range(2))
    assert client.get("/corpora", headers=first).status_code == 200
    assert client.get("/corpora", headers=first).status_code == 429
    assert client.get("/corpora", headers=second).status_code == 200


def test_oversized_body_gets_413_with_or_without_content_length(tenant_services):
    client = client_for(tenant_services, CITEDOCS_MAX_BODY_BYTES="1024")
    declared = client.post("/ask", json={"question": "x" * 2000})
    chunked = client.post(
        "/ask", content=(b"x" * 512 for _ in range(4)), headers={"content-type": "application/json"}
    )
    for response in (declared, chunked):
        assert response.status_code == 413
        assert response.json()["error"] == "body_too_large" and "1024 bytes" in response.json()["detail"]
    assert client.post("/ask", json={"question": ANSWERABLE}).status_code == 200


def test_config_file_is_read_and_env_vars_override_it(tmp_home, monkeypatch):
    monkeypatch.delenv("CITEDOCS_AUTH", raising=False)
    (tmp_home / "config.toml").write_text('auth = "required"\nretention_days = 7\nllm_timeout = 5\n')
    assert config.setting("auth") == "required"
    assert config.setting("retention_days") == 7 and config.setting("llm_timeout") == 5.0
    assert config.setting("max_body_bytes") == 65536  # not in the file: the default
    monkeypatch.setenv("CITEDOCS_AUTH", "off")
    assert config.setting("auth") == "off"


@pytest.mark.parametrize(
    "content, needle",
    [
        ('auth = "sometimes"\n', "use one of off, required"),
        ("retention_days = -3\n", "must not be negative"),
        ("colour = 1\n", "unknown setting(s) colour"),
        ("auth = \n", "not valid TOML"),
    ],
)
def test_bad_config_file_is_reported_with_the_file_and_setting(tmp_home, content, needle):
    (tmp_home / "config.toml").write_text(content)
    with pytest.raises(config.ConfigError, match="config") as error:
        for name in config.SETTINGS:
            config.setting(name)
    assert needle in str(error.value) and str(tmp_home / "config.toml") in str(error.value)


def test_missing_config_file_named_by_env_is_an_error(tmp_home, monkeypatch):
    monkeypatch.setenv("CITEDOCS_CONFIG", str(tmp_home / "nope.toml"))
    with pytest.raises(config.ConfigError, match="does not exist"):
        config.setting("auth")


def backdated_trace(services: Services, days: int) -> str:
    """A real answer's trace, re-stored as created ``days`` ago, with one feedback entry; returns its id."""
    answer = services.ask(AskRequest(question=ANSWERABLE))
    trace = services.trace(answer.trace_id)
    trace.pop("feedback")
    created = (datetime.now(timezone.utc) - timedelta(days=days)).isoformat(timespec="seconds")
    services.store.save_trace(answer.trace_id, services.corpus(trace["corpus"]), created, trace)
    services.add_feedback(answer.trace_id, "up", "kept?")
    return answer.trace_id


def test_prune_deletes_expired_traces_with_their_feedback_and_reports_the_count(tenant_services, monkeypatch):
    expired, recent = backdated_trace(tenant_services, 400), backdated_trace(tenant_services, 2)
    monkeypatch.setenv("CITEDOCS_HOME", str(tenant_services.store.path.parent))
    result = CliRunner().invoke(cli, ["traces", "prune", "--older-than", "365"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "deleted 1 trace(s) older than 365 day(s)" in result.output
    with pytest.raises(UnknownTrace):
        tenant_services.trace(expired)
    assert tenant_services.trace(recent)["feedback"][0]["comment"] == "kept?"
    with sqlite3.connect(tenant_services.store.path) as db:
        assert db.execute("SELECT count(*) FROM feedback WHERE trace_id = ?", (expired,)).fetchone()[0] == 0


def test_prune_defaults_to_the_retention_setting(tenant_services, monkeypatch):
    expired = backdated_trace(tenant_services, 40)
    monkeypatch.setenv("CITEDOCS_RETENTION_DAYS", "30")
    assert tenant_services.prune_traces() >= 1
    with pytest.raises(UnknownTrace):
        tenant_services.trace(expired)


def test_a_running_server_keeps_pruning_expired_traces(tenant_services, monkeypatch):
    monkeypatch.setenv("CITEDOCS_RETENTION_DAYS", "30")
    expired, stop = backdated_trace(tenant_services, 31), threading.Event()
    thread = tenant_services.keep_pruning(0.05, stop)
    try:
        deadline = time.time() + 10
        while tenant_services.store.get_trace(expired) is not None and time.time() < deadline:
            time.sleep(0.05)
        assert tenant_services.store.get_trace(expired) is None
    finally:
        stop.set()
        thread.join(timeout=5)
    assert not thread.is_alive()


def test_prune_rejects_a_negative_age(tmp_home):
    result = CliRunner().invoke(cli, ["traces", "prune", "--older-than", "-1"], env={"COLUMNS": "200"})
    assert result.exit_code == 2 and "--older-than" in result.output


def test_real_server_requires_keys_and_logs_one_json_line_per_request(tenant_services):
    home = tenant_services.store.path.parent
    secret = tenant_services.create_key("acme", "server test")[1]
    with running_server(home, CITEDOCS_BACKEND="extractive", CITEDOCS_AUTH="required") as (base, log_path):
        assert httpx.post(f"{base}/ask", json={"question": ANSWERABLE}, timeout=60).status_code == 401
        answer = httpx.post(
            f"{base}/ask", json={"question": ANSWERABLE}, headers={"Authorization": f"Bearer {secret}"}, timeout=60
        ).json()
        assert answer["citations"] and {c["id"].split("#")[0] for c in answer["citations"]} <= {
            p.removesuffix(".mdx").removesuffix("/index") for p in TENANT_CORPORA["acme"][1]
        }
    stderr = log_path.read_text()
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    # the /ask lines only: a readiness poll the helper gave up on (1 s) may finish, and log, after them
    asks = [line for line in lines if line["logger"] == "citedocs.request" and line["route"] == "/ask"]
    assert [line["status"] for line in asks] == [401, 200]
    logged = asks[-1]
    assert logged["tenant"] == "acme"
    assert logged["trace_id"] == answer["trace_id"] and logged["latency_ms"] > 0


def test_rate_limiter_refills_and_forgets_idle_clients():
    now = [0.0]
    limiter = RateLimiter(60, clock=lambda: now[0], max_identities=2)
    for _ in range(60):
        limiter.take("a")
    with pytest.raises(RateLimited) as limited:
        limiter.take("a")
    assert limited.value.retry_after_s == pytest.approx(1.0)
    now[0] = 1.0
    limiter.take("a")  # one token back after a second
    now[0] = 120.0
    for client in ("b", "c", "d"):
        limiter.take(client)
    assert "a" not in limiter._buckets  # idle long enough to be full again: forgotten

"""Privacy and observability: opt-in redaction of what users type before a trace is stored, and
OpenTelemetry spans (the SDK's in-memory exporter) for each answer stage and ingest step."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from citedocs.contract import AskRequest
from citedocs.privacy import redact
from citedocs.service import Services

from conftest import ASTRO_BASE_URL, SMALL_CORPUS, copy_astro_pages, stored_rows

SECRETS_QUESTION = (
    "I am jane.doe+docs@example.co.uk, my key sk-proj-AbC123xyz456DEF789ghi and card 4111 1111 1111 1111: "
    "how do I deploy my Astro site to Heroku?"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail me at a.b-c@mail.example.org please", "mail me at [email] please"),
        ("Authorization: Bearer abc.def-ghi", "Authorization: [token]"),
        ("token ghp_16C7e42F292c6912E7710c838347Ae178B4a", "token [token]"),
        ("my cda_Zk3f9Q2mWbT8vL1xYp0sRr", "my [token]"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "jwt [token]"),
        ("id a1b2c3d4e5f6a7b8c9d0e1f2a3b4", "id [token]"),
        ("call +44 20 7946 0958 or 020-7946-0958", "call +[number] or [number]"),
        ("account 123456789", "account [number]"),
    ],
)
def test_redaction_replaces_emails_tokens_and_long_digit_runs(text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "How do I upgrade from Astro 4.16.2 to 5.0 on 2024-01-15?",
        "What does import.meta.env.PUBLIC_SITE_URL hold in getStaticPaths()?",
        "Is port 4321 the default, and does astro_check_types_in_build_mode exist?",
    ],
)
def test_redaction_leaves_ordinary_docs_questions_alone(text):
    assert redact(text) == text


@pytest.fixture
def services(tmp_path):
    services = Services.open(tmp_path / "citedocs.sqlite3", backend="extractive")
    services.ingest(copy_astro_pages(tmp_path / "docs", ("guides/deploy/heroku.mdx",)), "docs", ASTRO_BASE_URL)
    yield services
    services.store.close()


def test_with_redaction_on_no_stored_copy_holds_the_secrets_but_the_user_sees_their_own_words(services, monkeypatch):
    monkeypatch.setenv("CITEDOCS_REDACT_QUESTIONS", "on")
    response = services.ask(AskRequest(question=SECRETS_QUESTION, corpus="docs"))
    # the gate refuses: the docs never mention these; the user is told so in their own words
    assert response.refused and "jane.doe" in response.answer
    stored = services.trace(response.trace_id)
    assert stored["redacted"] is True
    assert stored["question"].startswith("I am [email], my key [token] and card [number]: how do I deploy")
    assert "[email]" in stored["refusal_reason"] and all("jane" not in t for t in stored["missing_terms"])
    raw = stored_rows(services, "SELECT payload, question FROM traces WHERE trace_id = ?", (response.trace_id,))
    for secret in ("jane.doe", "sk-proj", "4111"):
        assert secret not in raw[0][0] and secret not in raw[0][1]


def test_without_redaction_the_question_is_stored_as_asked(services, monkeypatch):
    monkeypatch.delenv("CITEDOCS_REDACT_QUESTIONS", raising=False)
    response = services.ask(AskRequest(question=SECRETS_QUESTION, corpus="docs"))
    assert services.trace(response.trace_id)["question"] == SECRETS_QUESTION


# Real IBANs (the banks' and the national registries' published examples, valid check digits), as
# printed (groups of four) and as stored (compact), from eleven countries and four alphabets of use
IBANS = [
    "DE89 3704 0044 0532 0130 00",
    "GB82WEST12345698765432",
    "FR14 2004 1010 0505 0001 3M02 606",
    "NL91ABNA0417164300",
    "ES91 2100 0418 4502 0005 1332",
    "IT60X0542811101000000123456",
    "PL61 1090 1014 0000 0712 1981 2874",
    "CH9300762011623852957",
    "BE71 0961 2345 6769",
    "SA03 8000 0000 6080 1016 7519",
    "UA213223130000026007233566001",
    "gb82 west 1234 5698 7654 32",  # typed in lower case
]


@pytest.mark.parametrize("iban", IBANS)
def test_redaction_replaces_an_iban_of_any_country(iban):
    assert redact(f"refund me to {iban} please") == "refund me to [iban] please"
    assert redact(f"Мой IBAN: {iban}. 请退款") == "Мой IBAN: [iban]. 请退款"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("part number US12 3456 7890 ABCD", "part number US12 3456 7890 ABCD"),  # IBAN-shaped; the US has no IBAN
        ("Set AB12CDEFGHIJKLMNOP in astro.config.mjs", "Set AB12CDEFGHIJKLMNOP in astro.config.mjs"),
        # a real IBAN's layout with wrong check digits: not an IBAN, though its long digit run is still hidden
        ("sample GB00 WEST 1234 5698 7654 32 fails", "sample GB00 WEST [number] fails"),
    ],
)
def test_an_iban_look_alike_that_fails_the_check_is_not_redacted_as_one(text, expected):
    assert redact(text) == expected


def test_with_redaction_on_a_feedback_comment_is_stored_and_shown_redacted(services, monkeypatch):
    monkeypatch.setenv("CITEDOCS_REDACT_QUESTIONS", "on")
    response = services.ask(AskRequest(question="How do I deploy my Astro site to Heroku?", corpus="docs"))
    comment = "Wrong! Write to jane.doe@example.com or refund DE89 3704 0044 0532 0130 00, key sk-proj-AbC123xyz456DEF789ghi"
    services.add_feedback(response.trace_id, "down", comment)
    expected = "Wrong! Write to [email] or refund [iban], key [token]"
    assert [f["comment"] for f in services.trace(response.trace_id)["feedback"]] == [expected]
    assert [f["comment"] for t in services.recent_traces(None) for f in t["feedback"]] == [expected]
    raw = stored_rows(services, "SELECT comment FROM feedback WHERE trace_id = ?", (response.trace_id,))
    assert raw == [(expected,)]


def test_without_redaction_a_feedback_comment_is_stored_as_written(services, monkeypatch):
    monkeypatch.delenv("CITEDOCS_REDACT_QUESTIONS", raising=False)
    response = services.ask(AskRequest(question="How do I deploy my Astro site to Heroku?", corpus="docs"))
    services.add_feedback(response.trace_id, "down", "mail jane.doe@example.com")
    assert services.trace(response.trace_id)["feedback"][0]["comment"] == "mail jane.doe@example.com"


@pytest.fixture(scope="module")
def spans():
    """The SDK's tracer provider with an in-memory exporter (installed once: the global provider is set once a process)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


def test_each_answer_stage_is_a_span_carrying_the_citedocs_trace_id(spans, services):
    spans.clear()
    response = services.ask(AskRequest(question="How do I deploy my Astro site to Heroku?", corpus="docs"))
    finished = spans.get_finished_spans()
    [root] = [s for s in finished if s.name == "citedocs.ask"]
    stages = {s.name.removeprefix("citedocs.ask."): s for s in finished if s.parent and s.parent.span_id == root.context.span_id}
    assert {"retrieve", "null_level", "question_gate", "generate", "validate"} <= stages.keys()
    for span in (root, *stages.values()):
        assert span.attributes["citedocs.trace_id"] == response.trace_id
        assert span.context.trace_id == root.context.trace_id
        assert root.start_time <= span.start_time <= span.end_time <= root.end_time
    assert root.attributes["citedocs.refused"] is False and root.attributes["citedocs.corpus"] == "docs"


def test_each_ingest_step_is_a_span_of_its_job(spans, tmp_path):
    spans.clear()
    services = Services.open(tmp_path / "job.sqlite3")
    try:
        services.ingest(copy_astro_pages(tmp_path / "job-docs", ("recipes/add-yaml-support.mdx",)), "job-docs", ASTRO_BASE_URL)
    finally:
        services.store.close()
    finished = spans.get_finished_spans()
    [job] = [s for s in finished if s.name == "citedocs.job"]
    assert job.attributes["citedocs.job_kind"] == "ingest" and job.attributes["citedocs.corpus"] == "job-docs"
    steps = [s.name for s in finished if s.parent and s.parent.span_id == job.context.span_id]
    assert steps == ["citedocs.job.parse", "citedocs.job.embed"]


class _Collector(BaseHTTPRequestHandler):
    """A stand-in OTLP/HTTP receiver (a real HTTP server): keeps each request's path and body."""

    received: list[tuple[str, bytes]] = []

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_with_an_otlp_endpoint_the_cli_exports_its_spans(small_home, tmp_path):
    from fake_llm import free_port

    port = free_port()
    receiver = ThreadingHTTPServer(("127.0.0.1", port), _Collector)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(small_home / "citedocs.sqlite3", home / "citedocs.sqlite3")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "citedocs.cli", "ask", "How do I deploy my Astro site to Heroku?", "--corpus", SMALL_CORPUS,
             "--backend", "extractive", "--json"],
            env={**os.environ, "CITEDOCS_HOME": str(home), "CITEDOCS_DATABASE_URL": "",
                 "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}", "OTEL_SERVICE_NAME": "docs-assistant"},
            capture_output=True, text=True, timeout=300,
        )
    finally:
        receiver.shutdown()
    assert done.returncode == 0, done.stderr
    trace_id = json.loads(done.stdout)["trace_id"]
    bodies = [body for path, body in _Collector.received if path == "/v1/traces"]
    assert bodies, _Collector.received
    exported = b"".join(bodies)  # OTLP protobuf: attribute strings travel as UTF-8
    for expected in (trace_id, "citedocs.ask.retrieve", "citedocs.ask.question_gate", "docs-assistant"):
        assert expected.encode() in exported


def test_a_sync_job_is_a_span_carrying_its_job_id_with_the_ingest_steps_below_it(spans, tmp_path):
    from citedocs.sync.service import Syncs
    from citedocs.sync.worker import JobRunner

    services = Services.open(tmp_path / "sync.sqlite3")
    try:
        docs = copy_astro_pages(tmp_path / "sync-docs", ("guides/deploy/heroku.mdx",))
        services.ingest(docs, "synced", ASTRO_BASE_URL)
        syncs = Syncs(services)
        syncs.remember_ingested("synced", "folder", str(docs), "default", {"base_url": ASTRO_BASE_URL})
        (docs / "guides/zebra.mdx").write_text("---\ntitle: Zebra\n---\n\n## Zebra crossing\n\nA striped crossing.\n")
        spans.clear()
        job, _ = syncs.start("synced", "cli", queue=False)
        JobRunner(syncs, job.worker).run(job)
    finally:
        services.store.close()
    finished = spans.get_finished_spans()
    [sync] = [s for s in finished if s.name == "citedocs.job" and s.attributes["citedocs.job_kind"] == "sync"]
    assert sync.attributes["citedocs.job_id"] == job.id and sync.attributes["citedocs.corpus"] == "synced"
    [ingest] = [s for s in finished if s.parent and s.parent.span_id == sync.context.span_id]
    assert ingest.attributes["citedocs.job_kind"] == "ingest"
    steps = [s.name for s in finished if s.parent and s.parent.span_id == ingest.context.span_id]
    assert "citedocs.job.parse" in steps

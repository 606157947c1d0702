"""Prometheus metrics (process-wide, in the default registry) and what feeds them."""

from __future__ import annotations

from functools import partial

from prometheus_client import Counter, Gauge, Histogram

from . import threads

REQUESTS = Counter("citedocs_http_requests_total", "HTTP requests by route template and status.", ["route", "status"])
REQUEST_SECONDS = Histogram("citedocs_http_request_seconds", "HTTP request latency by route template.", ["route"])
ANSWERS = Counter("citedocs_answers_total", "Answers produced, by outcome.", ["outcome"])
REFUSALS = Counter("citedocs_refusals_total", "Refusals by reason code.", ["reason"])
STAGE_SECONDS = Histogram(
    "citedocs_stage_seconds",
    "Latency per pipeline stage, from each trace's latency_ms.",
    ["stage"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
LLM_TOKENS = Counter("citedocs_llm_tokens_total", "LLM tokens, when the backend reports usage.", ["kind"])
VALIDATOR_DROPS = Counter("citedocs_validator_drops_total", "Sentences the citation validator dropped, by reason.", ["reason"])
EMBEDDING_CACHE = Counter(
    "citedocs_embedding_cache_total", "Docs sentences embedded (miss) or reused (hit), by cache.", ["cache", "result"]
)
WEBHOOKS_REJECTED = Counter(
    "citedocs_webhooks_rejected_total",
    "Webhook requests refused before a signature held, by reason (anyone can send them: counted, never in the audit log).",
    ["reason"],
)
THREADS = Gauge("citedocs_threads", "Threads each numeric library uses in this process (see threads.py).", ["library"])


def _threads_of(library: str) -> float:
    return threads.current()[library]


for _library in threads.LIBRARIES:  # read from the libraries at scrape time, not remembered
    THREADS.labels(_library).set_function(partial(_threads_of, _library))

_TOKEN_KINDS = ("prompt_tokens", "completion_tokens")


def _drop_reason(text: str) -> str:
    """The fixed part of a validator reason ("unsupported: coverage 0.2 < 0.5" -> "unsupported")."""
    return text.split(":")[0].split(" (")[0].strip() or "unknown"


def observe_trace(payload: dict) -> None:
    """Count one finished answer from its trace."""
    if payload.get("refused"):
        ANSWERS.labels("refused").inc()
        REFUSALS.labels((payload.get("refusal_reason") or "unknown").split(":")[0]).inc()
    else:
        ANSWERS.labels("answered").inc()
    for stage, ms in (payload.get("latency_ms") or {}).items():
        STAGE_SECONDS.labels(stage).observe(ms / 1000)
    usage = payload.get("usage") or {}
    for kind in _TOKEN_KINDS:
        if isinstance(usage.get(kind), int):
            LLM_TOKENS.labels(kind.removesuffix("_tokens")).inc(usage[kind])
    for decision in payload.get("validator_decisions") or []:
        if decision.get("action") == "dropped":
            VALIDATOR_DROPS.labels(_drop_reason(decision.get("reason", ""))).inc()

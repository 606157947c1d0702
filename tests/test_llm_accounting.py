"""What LLM answers cost: tokens from the provider's own ``usage`` (estimated, and said so, when it
sends none), priced by ``llm_prices``, summed by day, corpus, tenant, provider and route in the
insights, and a tenant's daily budget that, once spent, answers without the LLM and says so.
Against real stand-in provider processes (tests/openai_standin.py, fault injection only)."""

from __future__ import annotations

import csv
import io
import json

from typer.testing import CliRunner

from citedocs.cli import app
from citedocs.contract import AskRequest

from test_provider_fallback import QUESTION, chain_services, provider, standin  # noqa: F401 (a fixture)

PRICES = {"priced-model": {"prompt": 2.0, "completion": 8.0}}  # USD per million tokens


def test_each_answer_costs_the_providers_own_tokens_at_the_listed_price(chain_services, tmp_path):
    with standin(tmp_path, "priced") as (url, _, asked):
        services = chain_services([provider("priced", url, model="priced-model")], llm_prices=json.dumps(PRICES))
        traces = [services.trace(services.ask(AskRequest(question=QUESTION)).trace_id) for _ in range(2)]
        reported = [r["usage"] for r in asked()]
    for trace, usage in zip(traces, reported):
        cost = (usage["prompt_tokens"] * 2.0 + usage["completion_tokens"] * 8.0) / 1_000_000
        assert trace["provider"] == "priced" and trace["model"] == "priced-model" and trace["tenant"] == "default"
        assert (trace["llm_usage"]["prompt_tokens"], trace["llm_usage"]["completion_tokens"]) == (
            usage["prompt_tokens"], usage["completion_tokens"]
        )
        assert abs(trace["llm_usage"]["cost_usd"] - cost) < 1e-9
    spend = services.insights("default", gaps=False)["llm_usage"]
    total = sum(t["llm_usage"]["cost_usd"] for t in traces)
    assert spend["answers"] == 2 and abs(spend["cost_usd"] - total) < 1e-9
    assert [r["key"] for r in spend["per_tenant"]] == ["default"] and [r["key"] for r in spend["per_corpus"]] == ["small-docs"]
    assert [r["key"] for r in spend["per_provider"]] == ["priced / priced-model"]
    assert spend["per_day"][0]["prompt_tokens"] == sum(u["prompt_tokens"] for u in reported)
    rows = list(csv.reader(io.StringIO(CliRunner().invoke(app, ["insights", "--csv", "--no-gaps"]).output)))
    assert ["llm_cost_usd", "total", str(spend["cost_usd"])] == rows[[r[:2] for r in rows].index(["llm_cost_usd", "total"])][:3]
    assert ["llm_cost_usd_per_tenant", "default"] in [r[:2] for r in rows]


def test_tokens_a_provider_does_not_report_are_estimated_and_marked(chain_services, tmp_path):
    with standin(tmp_path, "silent", "nousage") as (url, _, asked):
        services = chain_services([provider("silent", url)])
        trace = services.trace(services.ask(AskRequest(question=QUESTION)).trace_id)
        assert asked()[0]["usage"] is None
    usage = trace["llm_usage"]
    assert usage["estimated"] is True and usage["prompt_tokens"] > 100 and usage["completion_tokens"] > 3


def test_a_tenant_past_its_daily_budget_is_answered_without_the_llm_and_told_so(chain_services, tmp_path):
    with standin(tmp_path, "priced") as (url, _, asked):
        services = chain_services(
            [provider("priced", url, model="priced-model")],
            llm_prices=json.dumps(PRICES),
            tenant_daily_budget_usd=json.dumps({"*": 0.0001}),  # one answer (~550 prompt tokens) spends it
        )
        first = services.ask(AskRequest(question=QUESTION))
        second = services.ask(AskRequest(question=QUESTION))
        assert len(asked()) == 1  # the second answer never reached the provider
    assert first.notice is None and first.refused is False
    assert second.notice.startswith("llm_budget_exhausted: tenant 'default' has spent US$")
    assert second.refused is False and second.citations  # answered, by the extractive backend
    trace = services.trace(second.trace_id)
    assert trace["backend"] == "extractive" and "llm_usage" not in trace and trace["notice"] == second.notice

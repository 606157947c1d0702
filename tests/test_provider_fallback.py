"""Several LLM providers in order: a provider that dies mid-answer, one that rate-limits, one that is
down, and the extractive backend last, against real stand-in provider processes on loopback
(tests/openai_standin.py: fault injection, never the answers' quality).

The promises: a client never gets half an answer presented as whole (a provider dying mid-stream
is a ``restart`` event, then the next provider's whole validated answer); a 429 is waited out as
its Retry-After asks; a dead provider is skipped by its breaker until a probe finds it back; every
trace says which provider and model answered, with the tokens the provider itself counted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from citedocs.api.app import create_app
from citedocs.config import ProviderSpec
from citedocs.contract import AskRequest
from citedocs.generate.base import GenerationFault
from citedocs.generate.fallback import Breaker
from citedocs.service import Services

from conftest import copy_of_small_home
from fake_llm import free_port

STANDIN = Path(__file__).with_name("openai_standin.py")
QUESTION = "How do I deploy my Astro site to Heroku?"


@contextmanager
def standin(tmp_path: Path, name: str, script: str = "", drip: float = 0.02):
    """A stand-in provider process; yields its base URL and the JSON lines of what it was asked."""
    port = free_port()
    log = tmp_path / f"{name}.jsonl"
    log.touch()
    process = subprocess.Popen(
        [sys.executable, str(STANDIN), "--port", str(port), "--script", script, "--log", str(log), "--drip", str(drip)],
        stdout=subprocess.PIPE,
    )
    assert process.stdout.readline().strip() == b"ready"
    try:
        yield f"http://127.0.0.1:{port}/v1", process, lambda: [json.loads(line) for line in log.read_text().splitlines()]
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def provider(name: str, base_url: str, **extra) -> dict:
    return {"name": name, "base_url": base_url, "model": f"{name}-model", "structured": "off", "timeout_s": 5, **extra}


@pytest.fixture
def chain_services(small_home, tmp_path, monkeypatch):
    """Services over a copy of the small corpus whose answers come from ``llm_providers`` (set by each test)."""
    home = copy_of_small_home(small_home, tmp_path / "home")
    monkeypatch.setenv("CITEDOCS_HOME", str(home))
    monkeypatch.setenv("CITEDOCS_DATABASE_URL", "")
    for name, value in {"BACKEND": "providers", "LLM_GRADE": "off", "LLM_VERIFY": "off", "LLM_ANSWER": "write"}.items():
        monkeypatch.setenv(f"CITEDOCS_{name}", value)

    def make(providers: list[dict], **settings: str) -> Services:
        monkeypatch.setenv("CITEDOCS_LLM_PROVIDERS", json.dumps(providers))
        for name, value in settings.items():
            monkeypatch.setenv(f"CITEDOCS_{name.upper()}", value)
        return Services.open(home / "citedocs.sqlite3")

    return make


def sse_events(response: httpx.Response) -> list[tuple[str, dict]]:
    events = []
    for block in response.text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_a_provider_killed_mid_stream_restarts_the_answer_on_the_next(chain_services, tmp_path):
    with standin(tmp_path, "first", "die:14", drip=0.05) as (first, first_process, _), standin(tmp_path, "second") as (second, _, asked):
        services = chain_services([provider("first", first), provider("second", second)])
        client = TestClient(create_app(services))
        response = client.post("/ask/stream", json={"question": QUESTION})
        assert first_process.wait(timeout=10) == 3  # the first provider's process really died
    events = sse_events(response)
    kinds = [kind for kind, _ in events]
    assert "restart" in kinds, events
    assert "sentence" in kinds[: kinds.index("restart")]  # a validated sentence was shown, then voided
    restart = events[kinds.index("restart")][1]
    assert restart["failed"] == "first" and restart["next"] == "second"
    final = events[-1][1]
    assert kinds[-1] == "final" and final["refused"] is False and final["citations"]
    # what is shown after the restart is the whole validated answer, and nothing shown before it stands
    after = [data["rendered"] for kind, data in events[kinds.index("restart") + 1 :] if kind == "sentence"]
    assert " ".join(after) and final["answer"].startswith(after[0].split(" [")[0])
    trace = services.trace(final["trace_id"])
    assert trace["provider"] == "second" and trace["model"] == "second-model"
    assert [a["outcome"] for a in trace["provider_attempts"]] == ["died_mid_stream"]
    spent = {m["provider"]: m for m in trace["llm_usage"]["by_model"]}
    assert (spent["second"]["completion_tokens"], spent["second"]["estimated"]) == (asked()[-1]["usage"]["completion_tokens"], False)
    # the dead provider's tokens are spent too: estimated (a dead stream sends no usage), never lost
    assert spent["first"]["estimated"] is True and spent["first"]["prompt_tokens"] > 100 and spent["first"]["completion_tokens"] >= 1
    assert trace["llm_usage"]["estimated"] is True


def test_a_rate_limited_provider_is_retried_after_its_retry_after(chain_services, tmp_path):
    with standin(tmp_path, "limited", "429:1") as (url, _, asked):
        services = chain_services([provider("limited", url)])
        started = time.monotonic()
        response = services.ask(AskRequest(question=QUESTION))
        elapsed = time.monotonic() - started
        requests = asked()
    assert response.refused is False, response.refusal_reason
    assert [r["step"] for r in requests] == ["429:1", "ok"]
    assert requests[1]["at"] - requests[0]["at"] >= 0.95  # Retry-After: 1 was honoured
    assert elapsed < 10
    trace = services.trace(response.trace_id)
    assert trace["provider"] == "limited"
    assert trace["provider_attempts"][0]["detail"].startswith("rate_limited")
    usage = requests[1]["usage"]
    assert (trace["llm_usage"]["prompt_tokens"], trace["llm_usage"]["completion_tokens"]) == (
        usage["prompt_tokens"], usage["completion_tokens"]
    )
    assert trace["llm_usage"]["estimated"] is False


def test_a_dead_provider_is_skipped_until_a_probe_finds_it_back(chain_services, tmp_path):
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with standin(tmp_path, "backup") as (backup, _, _asked):
        services = chain_services(
            [provider("main", dead, retries=0), provider("backup", backup)],
            llm_breaker_failures="2",
            llm_breaker_cooldown_s="1",
        )
        traces = [services.trace(services.ask(AskRequest(question=QUESTION)).trace_id) for _ in range(3)]
        assert [t["provider"] for t in traces] == ["backup"] * 3
        assert [a["outcome"] for a in traces[0]["provider_attempts"]] == ["failed"]
        assert [a["outcome"] for a in traces[2]["provider_attempts"]] == ["skipped"]  # open after two failures
        time.sleep(1.1)  # past the cooldown: the next call probes the dead provider (still dead: skipped again)
        probed = services.trace(services.ask(AskRequest(question=QUESTION)).trace_id)
        assert probed["provider"] == "backup" and probed["provider_attempts"][0]["outcome"] == "skipped"


def test_every_provider_down_ends_on_the_extractive_backend(chain_services, tmp_path):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    services = chain_services([provider("main", dead, retries=1), {"name": "quotes", "kind": "extractive"}])
    response = services.ask(AskRequest(question=QUESTION))
    assert response.refused is False and response.citations
    trace = services.trace(response.trace_id)
    assert trace["provider"] == "quotes" and trace["backend"] == "extractive"
    assert [a["outcome"] for a in trace["provider_attempts"]] == ["failed", "failed"]  # one retry, then on


def test_the_last_provider_dying_mid_stream_ends_as_a_refusal_never_half_an_answer(chain_services, tmp_path):
    with standin(tmp_path, "only", "die:4") as (url, _, _asked):
        client = TestClient(create_app(chain_services([provider("only", url)])))
        events = sse_events(client.post("/ask/stream", json={"question": QUESTION}))
    kinds = [kind for kind, _ in events]
    assert "restart" in kinds and kinds[-1] == "final"
    assert events[kinds.index("restart")][1]["next"] is None
    assert all(kind != "sentence" for kind in kinds[kinds.index("restart") :])
    final = events[-1][1]
    assert final["refused"] is True and final["refusal_reason"].startswith("backend_error")


def test_a_key_is_read_from_the_environment_variable_the_config_names(chain_services, tmp_path, monkeypatch):
    monkeypatch.setenv("STANDIN_KEY", "sk-from-env")
    with standin(tmp_path, "keyed") as (url, _, asked):
        services = chain_services([provider("keyed", url, api_key_env="STANDIN_KEY")])
        services.ask(AskRequest(question=QUESTION))
        assert asked()[-1]["authorization"] == "Bearer sk-from-env"


def test_a_key_written_in_the_config_is_refused_with_the_fix(monkeypatch):
    from citedocs import config

    monkeypatch.setenv("CITEDOCS_LLM_PROVIDERS", json.dumps([{"name": "x", "base_url": "http://h/v1", "api_key": "sk-1"}]))
    with pytest.raises(config.ConfigError, match="api_key_env"):
        config.setting("llm_providers")


@pytest.mark.parametrize("budget", [0, 8, "many", 100.5])
def test_a_providers_answer_budget_that_is_not_a_whole_number_of_at_least_16_tokens_is_refused(monkeypatch, budget):
    from citedocs import config

    monkeypatch.setenv("CITEDOCS_LLM_PROVIDERS", json.dumps([{"name": "x", "base_url": "http://h/v1", "max_tokens": budget}]))
    with pytest.raises(config.ConfigError, match="max_tokens must be a whole number of at least 16"):
        config.setting("llm_providers")


def test_a_providers_answer_budget_is_what_its_endpoint_is_asked_for():
    from citedocs.generate.fallback import endpoint_for

    assert endpoint_for(ProviderSpec(name="p", base_url="http://h/v1", max_tokens=96)).max_tokens == 96
    assert endpoint_for(ProviderSpec(name="p", base_url="http://h/v1")).max_tokens == 512


def test_a_half_open_breaker_lets_one_probe_through_and_closes_on_success():
    now = [0.0]
    breaker = Breaker(failures_to_open=2, cooldown_s=10.0, clock=lambda: now[0])
    breaker.failed()
    assert breaker.admit() == "closed"
    breaker.failed()
    assert breaker.state == "open" and breaker.admit() is None
    now[0] = 10.5
    assert breaker.admit() == "probe" and breaker.admit() is None  # one probe at a time
    breaker.failed()  # the probe failed: open for another cooldown
    assert breaker.admit() is None
    now[0] = 21.0
    assert breaker.admit() == "probe"
    breaker.succeeded()
    assert breaker.state == "closed" and breaker.admit() == "closed"


def test_a_long_retry_after_skips_the_provider_for_that_long():
    from citedocs.generate.fallback import Provider

    breaker = Breaker(failures_to_open=5, cooldown_s=1.0, clock=lambda: 0.0)
    spec = ProviderSpec(name="p", base_url="http://h/v1")
    held = Provider(spec, generator=None, breaker=breaker, max_wait_s=10.0)
    fault = GenerationFault("rate_limited", "HTTP 429", 429, retry_after_s=120.0)
    assert held.wait_before_retry(fault, 0) is None  # longer than llm_max_retry_wait_s: not waited for
    held.give_up(fault)
    assert breaker.open_until == 120.0


def test_routing_sends_an_easy_question_to_the_fast_model_and_a_hard_one_to_the_strong(chain_services, tmp_path):
    with standin(tmp_path, "fast") as (fast, _, _f), standin(tmp_path, "strong") as (strong, _, _s):
        services = chain_services(
            [provider("strong", strong, route="strong"), provider("fast", fast, route="fast")], llm_routing="on"
        )
        easy = services.trace(services.ask(AskRequest(question=QUESTION)).trace_id)
        history = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "Use the Heroku CLI."}]
        hard = services.trace(services.ask(AskRequest(question="And which buildpack does it use?", history=history)).trace_id)
    assert (easy["route"], easy["route_reasons"], easy["provider"]) == ("fast", [], "fast")
    assert hard["refusal_reason"] is None, hard["refusal_reason"]
    assert hard["route"] == "strong" and "follow_up" in hard["route_reasons"] and hard["provider"] == "strong"


def test_a_routed_question_falls_back_to_the_other_route_when_its_model_is_down(chain_services, tmp_path):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with standin(tmp_path, "strong") as (strong, _, _s):
        services = chain_services(
            [provider("strong", strong, route="strong"), provider("fast", dead, route="fast", retries=0)], llm_routing="on"
        )
        trace = services.trace(services.ask(AskRequest(question=QUESTION)).trace_id)
    assert trace["route"] == "fast" and trace["provider"] == "strong"
    assert [a["provider"] for a in trace["provider_attempts"]] == ["fast"]


def test_the_openai_facade_withdraws_in_words_what_a_dying_provider_wrote(chain_services, tmp_path):
    from citedocs.api.openai_facade import RESTARTED

    with standin(tmp_path, "first", "die:14", drip=0.05) as (first, _, _a), standin(tmp_path, "second") as (second, _, _b):
        client = TestClient(create_app(chain_services([provider("first", first), provider("second", second)])))
        body = {"model": "small-docs", "stream": True, "messages": [{"role": "user", "content": QUESTION}]}
        chunks = [
            json.loads(line.removeprefix("data: "))
            for line in client.post("/v1/chat/completions", json=body).text.splitlines()
            if line.startswith("data: {")
        ]
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    final = chunks[-1]["citedocs"]
    assert final["refused"] is False
    before, withdrawn, after = content.partition(RESTARTED)  # its first sentence was shown before it died
    assert withdrawn and before.strip() and "**Sources**" not in before and "**Sources**" in after

"""Provider fallback against REAL model servers: two llama.cpp servers (the shipped
Qwen2.5-Coder-1.5B, each its own child process, one thread each) as two OpenAI-compatible providers.

- a provider SIGKILLed while it streams an answer: the client gets a ``restart`` event and the whole
  answer from the other provider, never the dead one's half presented as whole;
- a provider that answers 429 with a Retry-After and then recovers (llama.cpp never sends 429, so a
  labelled fault-injection relay, tests/fault_proxy.py, refuses the first requests and then forwards
  them to the real server): the waits honour Retry-After, and the breaker opens, half-opens and
  closes at the times its settings say;
- the tokens a trace records are the server's own ``usage``, streamed and not; the tokens of an
  answer cut short by its budget, or of a provider that died writing (estimated), count too.

One pair of servers for the module (loading is the slow part; each keeps its prompt cache, so a
question asked again costs only its generation). Skips when the model is not installed; with
CITEDOCS_TEST_REQUIRE_LLM=1 (CI) that is a failure instead.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from citedocs.api.app import create_app
from citedocs.contract import AskRequest
from citedocs.generate.llm_server import ManagedServer, ServerConfig

from conftest import write_docs
from fake_llm import serving
from fault_proxy import fault_proxy
from test_local_llm import require_local_model

CORPUS = "lumen"
BASE_URL = "https://lumen.example.org/docs/"
# a tiny corpus keeps each prompt short: one thread evaluates ~25-35 prompt tokens a second
DOCS = {
    "deploy.md": "# Deploying a Lumen site\n\n## Build\n\nRun `lumen build` to write the site into the `public/` folder.\n\n"
    "## Upload\n\nCopy the `public/` folder to a static host, such as GitHub Pages or Netlify.\n",
    "install.md": "# Installing Lumen\n\nRun `pip install lumen-docs` to install Lumen. It needs Python 3.10 or newer.\n",
}
QUESTION = "How do I deploy a Lumen site?"
CONTEXT = 4096  # tokens, shared by the server's two slots: the answer prompt here is ~600
MAX_TOKENS = 160  # the answer's budget: long enough for the two or three sentences it needs
SETTINGS = {
    "BACKEND": "providers", "LLM_GRADE": "off", "LLM_VERIFY": "off", "LLM_ANSWER": "write",
    "SUGGESTED_QUESTIONS": "off", "DATABASE_URL": "", "CORPUS": CORPUS,
}


@dataclass
class Pair:
    home: Path
    servers: dict[str, ManagedServer]

    def url(self, name: str) -> str:
        server = self.servers[name]
        server.start()  # a no-op while it runs; a killed one comes back (with an empty prompt cache)
        return server.base_url

    def provider(self, name: str, server: str, via: str | None = None, **extra) -> dict:
        """Provider ``name``: ``server`` (a or b), or a relay in front of it at ``via``."""
        return {
            "name": name, "base_url": via or self.url(server), "model": "qwen2.5-coder-1.5b",
            "api_key_env": f"LLAMA_{server.upper()}_KEY", "structured": "llamacpp", "timeout_s": 300,
            "max_tokens": MAX_TOKENS, **extra,
        }


def _environment(mp: pytest.MonkeyPatch, pair: Pair, providers: list[dict], **settings: str) -> None:
    mp.setenv("CITEDOCS_HOME", str(pair.home))
    for name, server in pair.servers.items():
        mp.setenv(f"LLAMA_{name.upper()}_KEY", server.api_key)
    for name, value in {**SETTINGS, **{k.upper(): v for k, v in settings.items()}}.items():
        mp.setenv(f"CITEDOCS_{name}", value)
    mp.setenv("CITEDOCS_LLM_PROVIDERS", json.dumps(providers))


def _services(pair: Pair, providers: list[dict], mp: pytest.MonkeyPatch, **settings: str):
    from citedocs.service import Services

    _environment(mp, pair, providers, **settings)
    services = Services.open(pair.home / "citedocs.sqlite3")
    services.pipeline  # noqa: B018 (the chain reads its providers now, while this environment holds)
    return services


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Iterator[Pair]:
    require_local_model()
    from citedocs.models.llm_file import model_path
    from citedocs.service import Services

    home = tmp_path_factory.mktemp("providers-real")
    servers = {
        name: ManagedServer(ServerConfig(model=model_path(), threads=1, n_ctx=CONTEXT, log_file=home / f"llama-{name}.log"))
        for name in ("a", "b")
    }
    pair = Pair(home, servers)
    try:
        for server in servers.values():
            server.start()
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("CITEDOCS_HOME", str(home))
            mp.setenv("CITEDOCS_DATABASE_URL", "")
            services = Services.open(home / "citedocs.sqlite3")
            services.ingest(write_docs(home / "docs", DOCS), CORPUS, BASE_URL)
            services.close()
            # each server reads the question's prompt once, both at the same time, so the tests after
            # pay only for generation (llama.cpp reuses a cached prompt prefix)
            warm = [_services(pair, [pair.provider(name, name)], mp) for name in servers]
            answers: dict[str, object] = {}
            threads = [
                threading.Thread(target=lambda s=s, n=n: answers.__setitem__(n, s.ask(AskRequest(question=QUESTION))))
                for s, n in zip(warm, servers)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            for services in warm:
                services.close()
        assert all(not a.refused for a in answers.values()), {n: a.refusal_reason for n, a in answers.items()}
        yield pair
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture
def chain(pair, monkeypatch):
    """Services whose answers come from ``providers`` (with ``settings``), over the module's corpus."""
    opened = []

    def make(providers: list[dict], **settings: str):
        opened.append(_services(pair, providers, monkeypatch, **settings))
        return opened[-1]

    yield make
    for services in opened:
        services.close()


def _usage(entry: dict) -> tuple[int, int]:
    return entry["usage"]["prompt_tokens"], entry["usage"]["completion_tokens"]


def test_a_traces_tokens_are_the_servers_own_usage_streamed_and_not(pair, chain):
    """The grading calls (one non-streamed completion per passage) and the streamed answer, each as the
    server counted it, through a relay that only forwards and notes what the server said."""
    with fault_proxy(pair.url("b")) as relay:
        services = chain([pair.provider("b", "b", relay.base_url)], llm_grade="on")
        response = services.ask(AskRequest(question=QUESTION))
        trace = services.trace(response.trace_id)
        calls = relay.chat_requests()
    assert response.refused is False, response.refusal_reason
    graded, streamed = [c for c in calls if not c["stream"]], [c for c in calls if c["stream"]]
    assert len(graded) == len(trace["grades"]) >= 1 and len(streamed) == 1
    assert [g["prompt_tokens"] for g in trace["grades"]] == [_usage(c)[0] for c in graded]
    assert (trace["usage"]["prompt_tokens"], trace["usage"]["completion_tokens"]) == _usage(streamed[0])
    usage = trace["llm_usage"]
    assert usage["estimated"] is False and usage["by_model"][0]["calls"] == len(calls)
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == tuple(map(sum, zip(*(_usage(c) for c in calls))))


def test_a_rate_limited_provider_is_retried_as_its_retry_after_asks_then_answers(pair, chain):
    with fault_proxy(pair.url("a"), "429:1,429:1") as relay:
        services = chain([pair.provider("limited", "a", relay.base_url, retries=2)])
        response = services.ask(AskRequest(question=QUESTION))
        trace = services.trace(response.trace_id)
        calls = relay.chat_requests()
    assert response.refused is False, response.refusal_reason
    assert [c["step"] for c in calls] == ["429:1", "429:1", "ok"]
    waits = [later["at"] - earlier["at"] for earlier, later in zip(calls, calls[1:])]
    assert all(1.0 <= wait < 2.5 for wait in waits), waits  # Retry-After: 1, not the default back-off
    assert trace["provider"] == "limited"
    assert [a["detail"].split(":")[0] for a in trace["provider_attempts"]] == ["rate_limited", "rate_limited"]
    assert (trace["llm_usage"]["prompt_tokens"], trace["llm_usage"]["completion_tokens"]) == _usage(calls[-1])


def test_the_breaker_opens_after_repeated_429s_and_a_probe_after_the_cooldown_closes_it(pair, chain):
    """Cheap one-line completions through the chain (the client the grader and verifier use), so
    the timings are the breaker's, not the model's."""
    cooldown = 2.0
    with fault_proxy(pair.url("a"), "429:1,429:1") as relay:
        services = chain(
            [pair.provider("limited", "a", relay.base_url, retries=0), pair.provider("backup", "b")],
            llm_breaker_failures="2", llm_breaker_cooldown_s=str(cooldown),
        )
        providers = services.generator.providers
        breaker = providers[0].breaker
        messages = [{"role": "user", "content": "Say OK."}]
        states = []
        for _ in range(3):
            services.generator.chat(messages, 2)
            states.append(breaker.state)
            if len(states) == 2:
                reopens_at = breaker.open_until
        assert states == ["closed", "open", "open"] and len(relay.requests) == 2  # the third call never reached it
        second_refusal = relay.requests[1]["at"]
        time.sleep(max(0.0, reopens_at - time.monotonic()))
        assert breaker.state == "half_open"
        services.generator.chat(messages, 2)
        probe, answered = relay.requests[2:]
    assert cooldown <= reopens_at - second_refusal < cooldown + 1.0  # open for the cooldown from its second failure
    assert probe["at"] >= reopens_at and breaker.state == "closed"
    assert (probe["method"], probe["path"], probe["status"]) == ("GET", "/v1/models", 200)  # the probe, then the call
    assert answered["step"] == "ok" and answered["usage"]["completion_tokens"] >= 1


def test_an_answer_cut_short_by_its_budget_goes_to_the_next_provider_and_its_tokens_still_count(pair, chain):
    with fault_proxy(pair.url("a")) as relay:
        services = chain([pair.provider("short", "a", relay.base_url, max_tokens=16), {"name": "quotes", "kind": "extractive"}])
        response = services.ask(AskRequest(question=QUESTION))
        trace = services.trace(response.trace_id)
        [cut] = relay.chat_requests()
    assert response.refused is False and trace["provider"] == "quotes"  # the JSON cut at 16 tokens is no answer
    assert [(a["provider"], a["detail"].split(":")[0]) for a in trace["provider_attempts"]] == [("short", "garbage")]
    [spent] = trace["llm_usage"]["by_model"]  # the extractive answer costs nothing; the cut one was billed
    assert (spent["provider"], spent["prompt_tokens"], spent["completion_tokens"], spent["estimated"]) == ("short", *_usage(cut), False)
    assert _usage(cut)[1] == 16


def test_a_provider_killed_mid_stream_restarts_the_answer_on_the_other(pair, chain):
    services = chain([pair.provider("a", "a"), pair.provider("b", "b")])
    victim = pair.servers["a"].process
    events, killed_after = [], None
    with serving(create_app(services), start_s=30, stop_s=10) as base:
        with httpx.stream("POST", f"{base}/ask/stream", json={"question": QUESTION}, timeout=600) as response:
            kind = None
            for line in response.iter_lines():
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    events.append((kind, json.loads(line.removeprefix("data: "))))
                    if kind == "sentence" and killed_after is None:  # the first sentence is on screen: kill its writer
                        killed_after = len(events)
                        os.kill(victim.pid, signal.SIGKILL)
    assert victim.wait(timeout=10) == -signal.SIGKILL
    kinds = [kind for kind, _ in events]
    assert kinds.count("restart") == 1 and kinds.index("restart") >= killed_after, kinds
    restart = events[kinds.index("restart")][1]
    assert (restart["failed"], restart["next"]) == ("a", "b")
    kind, final = events[-1]
    assert kind == "final" and final["refused"] is False, final.get("refusal_reason")
    # what stands is what was sent after the restart, whole: nothing the dead provider wrote
    after = [data["rendered"] for kind, data in events[kinds.index("restart") + 1 :] if kind == "sentence"]
    assert after and " ".join(after).split() == final["answer"].split()
    trace = services.trace(final["trace_id"])
    assert trace["provider"] == "b" and [(a["provider"], a["outcome"]) for a in trace["provider_attempts"]] == [("a", "died_mid_stream")]
    assert trace["restarts"][0]["failed"] == "a"
    # both providers' tokens are counted: b's from its usage, the dead a's estimated from the same prompt
    spent = {m["provider"]: m for m in trace["llm_usage"]["by_model"]}
    assert (spent["b"]["prompt_tokens"], spent["b"]["completion_tokens"], spent["b"]["estimated"]) == (
        trace["usage"]["prompt_tokens"], trace["usage"]["completion_tokens"], False
    )
    assert spent["a"]["estimated"] is True and spent["a"]["completion_tokens"] >= 1
    assert 0.5 < spent["a"]["prompt_tokens"] / spent["b"]["prompt_tokens"] < 2  # an estimate of the same prompt
